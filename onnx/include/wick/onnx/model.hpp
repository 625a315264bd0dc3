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
#include <wick/onnx/optimize.hpp>
#include <wick/onnx/proto.hpp>

#include <wick/device.hpp>
#include <wick/tensor.hpp>

#include <map>
#include <memory>
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

struct ModelOptions {
  // The graph optimiser (optimize.hpp) runs once at load unless turned off here; its passes can be
  // chosen one by one.
  bool optimize = true;
  OptimizeOptions passes;
};

// What one run did: its time, how many nodes ran, and, when `measure_memory` is set (it costs a
// walk of the live values after each node), the most bytes of tensors it held at once (each
// storage counted once; the initializers, which every run shares, apart).
struct RunStats {
  bool measure_memory = false;
  double seconds = 0;
  size_t nodes = 0;
  int64_t peak_bytes = 0;
  int64_t initializer_bytes = 0;
};

class Model {
 public:
  // Reads `path` (ReadError naming it when it cannot be read or is malformed; the file is mapped
  // and large initializers and external data are uploaded from the mapping), optimises the graph
  // and uploads the initializers to `device` once; NotImportable when a node's op or opset has no
  // lowering, or a declared input or output type has no Wick dtype. Ops run through the core's
  // dispatcher: one the device's plugin declines runs on the CPU, or is an error in strict mode.
  static Model load(const std::string& path, const Device& device, const ModelOptions& options = {});
  // The same from a parsed model.
  static Model from_proto(onnx::ModelProto proto, const Device& device, const ModelOptions& options = {});

  // The inputs a run needs (graph inputs that are not initializers), in graph order.
  const std::vector<ModelValue>& inputs() const { return inputs_; }
  const std::vector<ModelValue>& outputs() const { return outputs_; }
  int64_t opset() const { return proto_.opset; }
  const Device& device() const { return device_; }
  // The model as read (its graph before optimisation: nodes, initializers, opset imports).
  const onnx::ModelProto& proto() const { return proto_; }
  // The graph that runs, and what the optimiser did to get it.
  const onnx::GraphProto& graph() const { return graph_; }
  const OptimizeReport& optimize_report() const { return report_; }

  // One tensor per input, in inputs() order; returns one tensor per output, in outputs() order.
  // A tensor of another dtype or of a rank or fixed extent the model does not declare is an
  // std::invalid_argument naming the input; an output that is not a tensor is NotImportable (use
  // run_values).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // By name; every input must be given.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds) const;
  // Any values (sequences, optionals) by input order; the outputs as values.
  // Each value is freed after the last node that reads it (subgraphs' reads included); `stats`,
  // when given, receives the run's time and peak memory.
  std::vector<Value> run_values(const std::vector<Value>& inputs, RunStats* stats = nullptr) const;

 private:
  Model() = default;
  onnx::ModelProto proto_;
  onnx::GraphProto graph_;  // optimised
  OptimizeReport report_;
  Device device_;
  std::shared_ptr<const OnnxLowering> weights_;  // the initializers on the device, shared by every run
  std::vector<ModelValue> inputs_, outputs_;
  std::vector<std::vector<std::string>> release_after_;  // per node of graph_: values last used there
};

}  // namespace wick::onnx
