// wick/onnx/lower.hpp — runs ONNX nodes as Wick ops on one device, directly through its plugin.
//
// Views (reshape, transpose, slice, expand, ...) are host metadata as in the core; composite ONNX
// ops are lowered to Wick ops here; shape-like inputs (Reshape's shape, Slice's starts, TopK's k,
// Gather's indices to normalise) are read back to the host.
#pragma once

#include <wick/onnx/proto.hpp>

#include <wick/device.hpp>
#include <wick/tensor.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace wick::onnx {

// The importer cannot map this node, attribute or dtype: the folder is SKIP, not run.
struct NotImportable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The plugin declined a Wick op the node needs: the folder is UNSUPPORTED.
struct Declined : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// op_execute returned an error: the folder is FAIL.
struct ExecuteFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

DType onnx_dtype(int32_t data_type);  // throws NotImportable for types Wick lacks

// The importer's bounds on what a model may make it allocate or repeat: a model past one is
// NotImportable naming the limit and how to raise it, so that a corrupt or hostile file cannot
// make the importer allocate or compute without bound. The defaults fit real models (AlexNet's
// and VGG-19's weights, a 4096 x 4096 ConstantOfShape); the fuzz target sets tight ones.
struct ImportLimits {
  // The most elements of any tensor the importer computes.
  int64_t max_elements = int64_t{1} << 28;
  // The most elements of a table built on the host from sizes in the model (a window function's
  // length, a Range, gather positions, a MaxPool's indices).
  int64_t max_host_elements = int64_t{1} << 24;
  // The most iterations of a Loop or Scan, time steps of RNN/GRU/LSTM, or device passes of a
  // composite that loops (a MaxPool's indices over its kernel offsets).
  int64_t max_loop_steps = 100000;
};
// The limits in force: the defaults above, each replaced by the environment variable
// WICK_ONNX_MAX_ELEMENTS, WICK_ONNX_MAX_HOST_ELEMENTS or WICK_ONNX_MAX_LOOP_STEPS (a positive
// integer) where set, until set_import_limits. Process-wide and thread-safe; a change applies to
// the nodes lowered after it.
ImportLimits import_limits();
void set_import_limits(const ImportLimits& limits);
// " (the importer's limit <name> = <value>; raise it with ...)": the end of a limit's refusal.
std::string limit_hint(const char* name);
Tensor upload_proto(const onnx::TensorProto& t, const Device& device);

// An ONNX value: a tensor, a sequence of values, or an optional that is empty or holds one value.
// Tensors are handles, so copying a Value copies no data.
struct Value {
  enum class Kind { Tensor, Sequence, Optional };
  Kind kind = Kind::Tensor;
  Tensor tensor;              // Kind::Tensor
  std::vector<Value> items;   // a sequence's elements; an optional's value, if it has one
  // An ONNX uint16 tensor, which Wick lacks: held as u32 with values below 2^16. A node with such
  // an input wraps its u32 outputs to 16 bits on the device, as uint16 arithmetic would.
  bool u16 = false;
  // An ONNX tensor of a narrow type Wick lacks (float8*, float4e2m1, float8e8m0, [u]int4, [u]int2:
  // its TensorProto.DataType; 0 for none), held exactly in a wider dtype (wick/onnx/narrow_types.hpp).
  // Only Cast, CastLike, DequantizeLinear and ops that only move values take one; any other op
  // given one is NotImportable naming the type.
  int32_t narrow = 0;
  static Value of(const Tensor& t, bool u16 = false) { return {Kind::Tensor, t, {}, u16}; }
  static Value narrow_of(const Tensor& t, int32_t type) { return {Kind::Tensor, t, {}, false, type}; }
  static Value sequence(std::vector<Value> items) { return {Kind::Sequence, {}, std::move(items), false}; }
  static Value optional(std::vector<Value> value) { return {Kind::Optional, {}, std::move(value), false}; }
};
const char* kind_name(Value::Kind kind);
// A tensor of a data file or an initializer on the device: narrow types decoded into their holder
// dtype and tagged (Value::narrow), uint16 as u32 (Value::u16).
Value upload_tensor_value(const onnx::TensorProto& t, const Device& device);
// A data file's value on the device (tensors uploaded, sequences and optionals kept as such).
Value upload_value(const onnx::ValueProto& v, const Device& device);

class OnnxLowering {
 public:
  // `opset` is the model's ai.onnx version, `training_opset` its ai.onnx.preview.training one.
  OnnxLowering(Device device, int64_t opset, int64_t training_opset = 0)
      : device_(std::move(device)), opset_(opset), training_opset_(training_opset) {}
  // A subgraph's scope (If's branches, Loop's body): its own values, and the outer scope's visible
  // by name. `outer` must outlive it.
  explicit OnnxLowering(const OnnxLowering& outer)
      : device_(outer.device_),
        opset_(outer.opset_),
        training_opset_(outer.training_opset_),
        outer_(&outer),
        dispatch_(outer.dispatch_) {}
  // With `on`, Wick ops go through the core's dispatcher (wick::dispatch): an op the device's
  // plugin declines runs on the CPU (counted, logged) or, in strict mode, is a wick::Error naming
  // it — how wick::onnx::Model runs a model. Off (the default), each op runs on the device alone
  // (run_op_direct) and a decline is Declined — how the conformance suite sees the plugin's own
  // support. Subgraph scopes inherit it.
  void set_dispatch(bool on) { dispatch_ = on; }
  bool dispatching() const { return dispatch_; }
  // A tensor whose extents other than 0 multiply past 2^40 (an empty tensor of absurd extents,
  // which only a corrupt model makes) is NotImportable: no value holds one.
  void set(const std::string& name, const Tensor& t);
  void set_value(const std::string& name, Value v);
  // Drops this scope's value `name`, if any (a model run frees each value after its last use).
  void release(const std::string& name) { values_.erase(name); }
  // This scope's values by name (not the outer scopes').
  const std::map<std::string, Value>& values() const { return values_; }
  bool has(const std::string& name) const;
  // The tensor of that name; NotImportable when it is undefined or not a tensor.
  Tensor get(const std::string& name) const;
  const Value& value(const std::string& name) const;
  void run(const onnx::NodeProto& node);
  // What can be told of a node before it runs: NotImportable when its domain, op type or opset
  // has no lowering or an attribute is not in its op's schema (run() checks the rest).
  void check(const onnx::NodeProto& node);
  // Runs `graph` in a new scope inside this one with its inputs bound to `inputs` (fewer inputs
  // than the graph declares leave the rest unbound); returns its outputs.
  std::vector<Value> run_graph(const onnx::GraphProto& graph, const std::vector<Value>& inputs) const;
  // A contiguous copy made on the device (COPY) when t is a strided view.
  Tensor contiguous(const Tensor& t);

 private:
  struct Impl;
  Device device_;
  int64_t opset_;
  int64_t training_opset_;
  const OnnxLowering* outer_ = nullptr;
  bool dispatch_ = false;
  std::map<std::string, Value> values_;
};

}  // namespace wick::onnx
