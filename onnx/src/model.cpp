// model.cpp — wick::onnx::Model: a parsed graph with its initializers on the device, run node by
// node through OnnxLowering.
#include <wick/onnx/model.hpp>

#include "optimize_internal.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <set>
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

// Every name a node reads: its inputs, and the outer values its subgraphs read (the optimiser's
// outer_reads, which dead-node removal keeps alive for the same reason).
void names_read(const onnx::NodeProto& node, std::set<std::string>& out) {
  for (const std::string& i : node.inputs)
    if (!i.empty()) out.insert(i);
  for (const onnx::AttributeProto& a : node.attributes)
    if (a.has_graph && a.g) opt::outer_reads(*a.g, out);
}

// For each node, the values to free once it has run: those no later node reads and that are not
// graph outputs (a value no node reads is freed after the node that makes it).
std::vector<std::vector<std::string>> last_uses(const onnx::GraphProto& g) {
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<std::string> reads;
    names_read(g.nodes[i], reads);
    for (const std::string& r : reads) last[r] = i;
    for (const std::string& o : g.nodes[i].outputs)
      if (!o.empty() && !last.count(o)) last[o] = i;
  }
  for (const onnx::ValueInfo& v : g.outputs) last.erase(v.name);
  for (const onnx::TensorProto& t : g.initializers) last.erase(t.name);  // the model holds them
  std::vector<std::vector<std::string>> out(g.nodes.size());
  for (const auto& kv : last) out[kv.second].push_back(kv.first);
  return out;
}

// The bytes of the tensors in `v`, each storage once at its largest view.
void value_bytes(const Value& v, std::map<const void*, int64_t>& by_storage) {
  if (v.kind == Value::Kind::Tensor && v.tensor.defined()) {
    int64_t& b = by_storage[v.tensor.storage().get()];
    b = std::max<int64_t>(b, v.tensor.numel() * static_cast<int64_t>(dtype_size(v.tensor.dtype())));
  }
  for (const Value& item : v.items) value_bytes(item, by_storage);
}
int64_t live_bytes(const OnnxLowering& scope) {
  std::map<const void*, int64_t> by_storage;
  for (const auto& kv : scope.values()) value_bytes(kv.second, by_storage);
  int64_t total = 0;
  for (const auto& kv : by_storage) total += kv.second;
  return total;
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

Model Model::load(const std::string& path, const Device& device, const ModelOptions& options) {
  return from_proto(onnx::read_model(path), device, options);
}

Model Model::from_proto(onnx::ModelProto proto, const Device& device, const ModelOptions& options) {
  Model m;
  m.proto_ = std::move(proto);
  m.device_ = device;
  OnnxLowering check(device, m.proto_.opset, m.proto_.training_opset);
  for (const onnx::NodeProto& node : m.proto_.graph.nodes) check.check(node);
  m.graph_ = options.optimize ? optimize(m.proto_.graph, m.proto_.opset, device, options.passes, &m.report_)
                              : m.proto_.graph;
  m.release_after_ = last_uses(m.graph_);
  // The initializers, uploaded once, in the scope every run reads them from (read only there).
  auto weights = std::make_shared<OnnxLowering>(device, m.proto_.opset, m.proto_.training_opset);
  weights->set_dispatch(true);
  for (const onnx::TensorProto& init : m.graph_.initializers) weights->set(init.name, upload_proto(init, device));
  m.weights_ = std::move(weights);
  for (const onnx::ValueInfo& v : m.proto_.graph.inputs)
    if (!m.weights_->has(v.name)) m.inputs_.push_back(model_value(v, "graph input"));
  for (const onnx::ValueInfo& v : m.proto_.graph.outputs) m.outputs_.push_back(model_value(v, "graph output"));
  return m;
}

std::vector<Value> Model::run_values(const std::vector<Value>& inputs, RunStats* stats) const {
  const auto start = std::chrono::steady_clock::now();
  if (inputs.size() != inputs_.size())
    throw std::invalid_argument("the model takes " + std::to_string(inputs_.size()) + " inputs, given " +
                                std::to_string(inputs.size()));
  // The run's own values in a scope inside the initializers'.
  OnnxLowering low(*weights_);
  const bool memory = stats != nullptr && stats->measure_memory;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].kind == Value::Kind::Tensor) check_input(inputs_[i], inputs[i].tensor);
    else if (inputs[i].kind != inputs_[i].kind)
      throw std::invalid_argument("input '" + inputs_[i].name + "' (" + inputs_[i].describe() + ") given a " +
                                  kind_name(inputs[i].kind));
    Value v = inputs[i];
    v.u16 = inputs_[i].onnx_elem_type == onnx::kUint16;
    low.set_value(inputs_[i].name, std::move(v));
  }
  int64_t peak = memory ? live_bytes(low) : 0;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    low.run(graph_.nodes[i]);
    if (memory) peak = std::max(peak, live_bytes(low));
    for (const std::string& name : release_after_[i]) low.release(name);
  }
  std::vector<Value> outs;
  for (const ModelValue& o : outputs_) outs.push_back(low.value(o.name));
  if (stats) {
    device_.synchronize();  // the time of the work, not of its queueing
    stats->nodes = graph_.nodes.size();
    stats->initializer_bytes = memory ? live_bytes(*weights_) : 0;
    stats->peak_bytes = peak;
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
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
