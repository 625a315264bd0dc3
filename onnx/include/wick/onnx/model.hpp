// wick/onnx/model.hpp — an ONNX model loaded for inference on one Wick device: its inputs and
// outputs as the graph declares them, and runs of the graph node by node through the lowering
// (lower.hpp), each node's Wick ops executed on that device.
//
//   const wick::onnx::Model m = wick::onnx::Model::load("mlp.onnx", device);
//   for (const auto& in : m.inputs()) std::cout << in.name << " " << in.describe() << "\n";
//   const std::vector<wick::Tensor> y = m.run({x});
//
// A model the importer cannot run exactly (an op, opset, attribute, value or dtype it does not
// implement; a limit of ImportLimits) throws NotImportable naming it, at load where the graph
// alone tells (ops, opsets, attribute names) and otherwise at the run. A Model is immutable after
// load and a run keeps its values to itself; runs at once from several threads are as safe as the
// device's plugin makes concurrent ops.
#pragma once

#include <wick/onnx/lower.hpp>
#include <wick/onnx/proto.hpp>

#include <wick/device.hpp>
#include <wick/tensor.hpp>

#include <map>
#include <string>
#include <vector>

namespace wick::onnx {

// A graph input or output as the model declares it.
struct ModelValue {
  std::string name;
  Value::Kind kind = Value::Kind::Tensor;  // a tensor, or a sequence or optional of tensors
  DType dtype = DType::F32;                // the element type (ONNX's uint16 is held as u32)
  int32_t onnx_elem_type = 0;              // ONNX's TensorProto.DataType
  bool has_shape = false;
  std::vector<int64_t> shape;  // -1 for a symbolic or unknown extent
  std::string describe() const;  // "f32 [-1, 3]", "sequence of i64", ...
};

class Model {
 public:
  // Reads `path` (ReadError naming it when it cannot be read or is malformed) and uploads the
  // initializers to `device` once; NotImportable when a node's op or opset has no lowering, or a
  // declared input or output type has no Wick dtype.
  static Model load(const std::string& path, const Device& device);
  // The same from a parsed model.
  static Model from_proto(onnx::ModelProto proto, const Device& device);

  // The inputs a run needs (graph inputs that are not initializers), in graph order.
  const std::vector<ModelValue>& inputs() const { return inputs_; }
  const std::vector<ModelValue>& outputs() const { return outputs_; }
  int64_t opset() const { return proto_.opset; }
  const Device& device() const { return device_; }

  // One tensor per input, in inputs() order; returns one tensor per output, in outputs() order.
  // A tensor of another dtype or of a rank or fixed extent the model does not declare is an
  // std::invalid_argument naming the input; an output that is not a tensor is NotImportable (use
  // run_values).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // By name; every input must be given.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds) const;
  // Any values (sequences, optionals) by input order; the outputs as values.
  std::vector<Value> run_values(const std::vector<Value>& inputs) const;

 private:
  Model() = default;
  onnx::ModelProto proto_;
  Device device_;
  std::vector<std::pair<std::string, Tensor>> initializers_;
  std::vector<ModelValue> inputs_, outputs_;
};

}  // namespace wick::onnx
