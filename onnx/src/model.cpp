// model.cpp — wick::onnx::Model: a parsed graph with its initializers on the device, run node by
// node through OnnxLowering.
#include <wick/onnx/model.hpp>

#include <stdexcept>
#include <utility>

namespace wick::onnx {

namespace {

ModelValue model_value(const onnx::ValueInfo& v, const char* what) {
  if (!v.type.tensor)
    throw NotImportable(std::string(what) + " '" + v.name + "' is not a tensor, sequence or optional (map, sparse)");
  ModelValue m;
  m.name = v.name;
  const char outer = v.type.wrappers.empty() ? 't' : v.type.wrappers[0];
  m.kind = outer == 's' ? Value::Kind::Sequence : outer == 'o' ? Value::Kind::Optional : Value::Kind::Tensor;
  m.onnx_elem_type = v.type.elem_type;
  m.dtype = v.type.elem_type == onnx::kUint16 ? DType::U32 : onnx_dtype(v.type.elem_type);
  m.has_shape = v.type.has_shape;
  m.shape = v.type.dims;
  return m;
}

// An input tensor against its declaration: dtype, rank and fixed extents.
void check_input(const ModelValue& want, const Tensor& t) {
  const std::string where = "input '" + want.name + "' (" + want.describe() + ")";
  if (!t.defined()) throw std::invalid_argument(where + " is not given");
  if (want.kind != Value::Kind::Tensor) throw std::invalid_argument(where + " is not a tensor: use run_values");
  if (t.dtype() != want.dtype)
    throw std::invalid_argument(where + " given a tensor of dtype " + dtype_name(t.dtype()));
  if (!want.has_shape) return;
  bool ok = want.shape.size() == t.shape().size();
  for (size_t i = 0; ok && i < want.shape.size(); ++i) ok = want.shape[i] < 0 || want.shape[i] == t.shape()[i];
  if (!ok) throw std::invalid_argument(where + " given a tensor of shape " + shape_to_string(t.shape()));
}

}  // namespace

std::string ModelValue::describe() const {
  std::string s;
  if (kind == Value::Kind::Sequence) s.append("sequence of ");
  if (kind == Value::Kind::Optional) s.append("optional ");
  s.append(onnx_elem_type == onnx::kUint16 ? "uint16" : dtype_name(dtype));
  if (has_shape) s.append(" ").append(shape_to_string(shape));
  return s;
}

Model Model::load(const std::string& path, const Device& device) {
  return from_proto(onnx::read_model(path), device);
}

Model Model::from_proto(onnx::ModelProto proto, const Device& device) {
  Model m;
  m.proto_ = std::move(proto);
  m.device_ = device;
  OnnxLowering check(device, m.proto_.opset, m.proto_.training_opset);
  for (const onnx::NodeProto& node : m.proto_.graph.nodes) check.check(node);
  for (const onnx::TensorProto& init : m.proto_.graph.initializers)
    m.initializers_.emplace_back(init.name, upload_proto(init, device));
  for (const onnx::ValueInfo& v : m.proto_.graph.inputs) {
    bool initialized = false;
    for (const auto& init : m.initializers_) initialized = initialized || init.first == v.name;
    if (!initialized) m.inputs_.push_back(model_value(v, "graph input"));
  }
  for (const onnx::ValueInfo& v : m.proto_.graph.outputs) m.outputs_.push_back(model_value(v, "graph output"));
  return m;
}

std::vector<Value> Model::run_values(const std::vector<Value>& inputs) const {
  if (inputs.size() != inputs_.size())
    throw std::invalid_argument("the model takes " + std::to_string(inputs_.size()) + " inputs, given " +
                                std::to_string(inputs.size()));
  OnnxLowering low(device_, proto_.opset, proto_.training_opset);
  for (const auto& [name, t] : initializers_) low.set(name, t);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].kind == Value::Kind::Tensor) check_input(inputs_[i], inputs[i].tensor);
    else if (inputs[i].kind != inputs_[i].kind)
      throw std::invalid_argument("input '" + inputs_[i].name + "' (" + inputs_[i].describe() + ") given a " +
                                  kind_name(inputs[i].kind));
    Value v = inputs[i];
    v.u16 = inputs_[i].onnx_elem_type == onnx::kUint16;
    low.set_value(inputs_[i].name, std::move(v));
  }
  for (const onnx::NodeProto& node : proto_.graph.nodes) low.run(node);
  std::vector<Value> outs;
  for (const ModelValue& o : outputs_) outs.push_back(low.value(o.name));
  return outs;
}

std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const {
  std::vector<Value> ins;
  for (const Tensor& t : inputs) ins.push_back(Value::of(t));
  std::vector<Tensor> outs;
  const std::vector<Value> values = run_values(ins);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].kind != Value::Kind::Tensor)
      throw NotImportable("output '" + outputs_[i].name + "' is a " + kind_name(values[i].kind) +
                          ", not a tensor: use run_values");
    outs.push_back(values[i].tensor);
  }
  return outs;
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& feeds) const {
  std::vector<Tensor> ins;
  for (const ModelValue& in : inputs_) {
    const auto it = feeds.find(in.name);
    if (it == feeds.end()) throw std::invalid_argument("input '" + in.name + "' (" + in.describe() + ") is not given");
    ins.push_back(it->second);
  }
  for (const auto& feed : feeds) {
    bool known = false;
    for (const ModelValue& in : inputs_) known = known || in.name == feed.first;
    if (!known) throw std::invalid_argument("'" + feed.first + "' is not an input of the model");
  }
  const std::vector<Tensor> outs = run(ins);
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < outs.size(); ++i) by_name.emplace(outputs_[i].name, outs[i]);
  return by_name;
}

}  // namespace wick::onnx
