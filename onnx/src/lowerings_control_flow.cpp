// lowerings_control_flow.cpp — ONNX ops with subgraphs: If, Loop, Scan (opset 8's batched
// form and 9's), SequenceMap. A subgraph runs in a scope of its own that sees the outer scope's
// values by name. The host reads back only what steers the control flow (If's condition, Loop's
// trip count and condition); each iteration's numeric work runs as the body's Wick ops.
#include "lowerings.hpp"

#include <algorithm>
#include <limits>

namespace wick::onnx {

std::vector<Value> OnnxLowering::run_graph(const onnx::GraphProto& graph,
                                           const std::vector<Value>& inputs) const {
  if (inputs.size() > graph.inputs.size())
    throw NotImportable("a subgraph of " + std::to_string(graph.inputs.size()) + " inputs given " +
                        std::to_string(inputs.size()));
  OnnxLowering scope(*this);
  for (const onnx::TensorProto& init : graph.initializers)
    scope.set(init.name, upload_proto(init, device_));
  for (size_t i = 0; i < inputs.size(); ++i) scope.set_value(graph.inputs[i].name, inputs[i]);
  for (const onnx::NodeProto& node : graph.nodes) scope.run(node);
  std::vector<Value> outs;
  for (const onnx::ValueInfo& o : graph.outputs) outs.push_back(scope.value(o.name));
  return outs;
}

const onnx::GraphProto& OnnxLowering::Impl::graph_attr(const char* name) const {
  const onnx::AttributeProto* a = attr(name);
  if (a == nullptr || !a->g) throw NotImportable(n.op_type + " without its graph '" + name + "'");
  return *a->g;
}
std::vector<Value> OnnxLowering::Impl::run_body(const onnx::GraphProto& body,
                                                const std::vector<Value>& inputs,
                                                size_t outputs) {
  std::vector<Value> outs = g.run_graph(body, inputs);
  if (outs.size() != outputs)
    throw NotImportable(n.op_type + "'s subgraph has " + std::to_string(outs.size()) +
                        " outputs, not " + std::to_string(outputs));
  return outs;
}
Tensor OnnxLowering::Impl::tensor_of(const Value& v, const char* what) const {
  if (v.kind != Value::Kind::Tensor)
    throw NotImportable(n.op_type + ": " + what + " is a " + kind_name(v.kind) + ", not a tensor");
  return v.tensor;
}
// Per-iteration outputs stacked along `axis` (in reverse order for a reverse scan). With no
// iterations the result is empty along that axis; its other extents are then unknown.
Tensor OnnxLowering::Impl::scan_output(std::vector<Tensor> parts, int64_t axis_attr, bool reverse,
                                       int32_t elem_type) {
  if (parts.empty()) return Tensor::empty({0}, onnx_dtype(elem_type), dev());
  if (reverse) std::reverse(parts.begin(), parts.end());
  for (const Tensor& p : parts) {
    if (p.shape() != parts[0].shape() || p.dtype() != parts[0].dtype())
      throw NotImportable(n.op_type + ": scan outputs differ in shape between iterations");
  }
  return stack(parts, norm_axis(axis_attr, parts[0].rank() + 1));
}

void OnnxLowering::Impl::lower_if() {
  const Tensor c = in(0);
  if (c.numel() != 1) throw NotImportable("If: the condition is not a single value");
  const bool cond = host_scalar(c) != 0;
  (void)graph_attr(cond ? "else_branch" : "then_branch");  // both branches must be there
  const std::vector<Value> outs =
      run_body(graph_attr(cond ? "then_branch" : "else_branch"), {}, n.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) out_value(i, outs[i]);
}

// Loop(M, cond, v...): the body takes (iteration, cond, v...) and gives (cond, v..., scan...);
// the loop runs while the iteration is below M (when given) and cond holds (when given).
void OnnxLowering::Impl::lower_loop() {
  const onnx::GraphProto& body = graph_attr("body");
  const bool has_max = has_in(0), has_cond = has_in(1);
  if (!has_max && !has_cond) throw NotImportable("Loop without a trip count or condition");
  const int64_t max = has_max ? host_ints(in(0)).at(0) : std::numeric_limits<int64_t>::max();
  bool cond = !has_cond || host_scalar(in(1)) != 0;
  std::vector<Value> carried;
  for (size_t i = 2; i < n.inputs.size(); ++i) carried.push_back(in_value(i));
  const size_t n_carried = carried.size();
  if (n.outputs.size() < n_carried || body.outputs.size() < 1 + n_carried)
    throw NotImportable("Loop: fewer outputs than loop-carried values");
  const size_t n_scan = body.outputs.size() - 1 - n_carried;
  std::vector<std::vector<Tensor>> scans(n_scan);
  for (int64_t i = 0; i < max && cond; ++i) {
    if (i == max_loop_steps())
      throw NotImportable("Loop still running after " + std::to_string(i) + " iterations" + limit_hint("max_loop_steps"));
    std::vector<Value> ins{Value::of(upload_i64({i}, {})),
                           Value::of(upload_values({cond ? 1.0 : 0.0}, {}, DType::Bool))};
    ins.insert(ins.end(), carried.begin(), carried.end());
    const std::vector<Value> outs = run_body(body, ins, body.outputs.size());
    const Tensor c = tensor_of(outs[0], "the body's condition");
    if (c.numel() != 1) throw NotImportable("Loop: the body's condition is not a single value");
    cond = host_scalar(c) != 0;
    for (size_t k = 0; k < n_carried; ++k) carried[k] = outs[1 + k];
    for (size_t k = 0; k < n_scan; ++k)
      scans[k].push_back(tensor_of(outs[1 + n_carried + k], "a scan output"));
  }
  for (size_t k = 0; k < n_carried; ++k) out_value(k, carried[k]);
  for (size_t k = 0; k < n_scan; ++k)
    out(n_carried + k, scan_output(scans[k], 0, false, body.outputs[1 + n_carried + k].elem_type));
}

// One Scan over its sequence axis: `states` carried through the body, `xs` cut along their axes
// into one slice per iteration.
std::vector<Tensor> OnnxLowering::Impl::scan(const onnx::GraphProto& body,
                                             std::vector<Value> states,
                                             const std::vector<Tensor>& xs,
                                             const std::vector<int64_t>& in_axes,
                                             const std::vector<int64_t>& in_dirs,
                                             const std::vector<int64_t>& out_axes,
                                             const std::vector<int64_t>& out_dirs) {
  const size_t n_state = states.size();
  if (body.outputs.size() < n_state) throw NotImportable("Scan: fewer body outputs than states");
  const size_t n_scan_out = body.outputs.size() - n_state;
  std::vector<int> axes;
  int64_t len = -1;
  for (size_t j = 0; j < xs.size(); ++j) {
    axes.push_back(norm_axis(j < in_axes.size() ? in_axes[j] : 0, xs[j].rank()));
    const int64_t l = xs[j].dim(axes[j]);
    if (len >= 0 && l != len) throw NotImportable("Scan: scan inputs differ in length");
    len = l;
  }
  if (len < 0) throw NotImportable("Scan without scan inputs");
  if (len > max_loop_steps())
    throw NotImportable("Scan of " + std::to_string(len) + " iterations" + limit_hint("max_loop_steps"));
  std::vector<std::vector<Tensor>> scans(n_scan_out);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value> ins = states;
    for (size_t j = 0; j < xs.size(); ++j) {
      const bool rev = j < in_dirs.size() && in_dirs[j] != 0;
      ins.push_back(Value::of(xs[j].narrow(axes[j], rev ? len - 1 - t : t, 1).squeeze(axes[j])));
    }
    const std::vector<Value> outs = run_body(body, ins, body.outputs.size());
    for (size_t k = 0; k < n_state; ++k) states[k] = outs[k];
    for (size_t k = 0; k < n_scan_out; ++k)
      scans[k].push_back(tensor_of(outs[n_state + k], "a scan output"));
  }
  std::vector<Tensor> result;
  for (const Value& s : states) result.push_back(tensor_of(s, "a scan state"));
  for (size_t k = 0; k < n_scan_out; ++k)
    result.push_back(scan_output(scans[k], k < out_axes.size() ? out_axes[k] : 0,
                                 k < out_dirs.size() && out_dirs[k] != 0,
                                 body.outputs[n_state + k].elem_type));
  return result;
}

// Scan from opset 9: inputs (states..., scan inputs...), num_scan_inputs of them scanned.
void OnnxLowering::Impl::lower_scan() {
  const int64_t m = attr_i("num_scan_inputs", 0);
  if (m < 1 || m > static_cast<int64_t>(n.inputs.size()))
    throw NotImportable("Scan: num_scan_inputs out of range");
  const size_t n_state = n.inputs.size() - static_cast<size_t>(m);
  std::vector<Value> states;
  std::vector<Tensor> xs;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (i < n_state) {
      states.push_back(in_value(i));
    } else {
      xs.push_back(in(i));
    }
  }
  const std::vector<int64_t> none;
  const std::vector<Tensor> outs =
      scan(graph_attr("body"), states, xs, attr_ints("scan_input_axes").value_or(none),
           attr_ints("scan_input_directions").value_or(none),
           attr_ints("scan_output_axes").value_or(none),
           attr_ints("scan_output_directions").value_or(none));
  for (size_t k = 0; k < outs.size(); ++k) out(k, outs[k]);
}

// Scan in opset 8: inputs (sequence_lens?, states..., scan inputs...), each with a leading batch
// axis and the scan inputs' sequence axis next; each batch entry is scanned on its own.
void OnnxLowering::Impl::lower_scan_8() {
  const int64_t m = attr_i("num_scan_inputs", 0);
  if (m < 1 || m + 1 > static_cast<int64_t>(n.inputs.size()))
    throw NotImportable("Scan: num_scan_inputs out of range");
  const size_t n_state = n.inputs.size() - 1 - static_cast<size_t>(m);
  std::vector<Tensor> ins;
  for (size_t i = 1; i < n.inputs.size(); ++i) ins.push_back(in(i));
  const int64_t batch = ins[0].rank() > 0 ? ins[0].dim(0) : 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].rank() < (i < n_state ? 1 : 2) || ins[i].dim(0) != batch)
      throw NotImportable("Scan: inputs differ in batch or lack the sequence axis");
  }
  // Each batch entry scanned on its own: the iterations of all of them count against the limit.
  if (n_state < ins.size() &&
      checked_mul(batch, std::max<int64_t>(ins[n_state].dim(1), 1)) > max_loop_steps())
    throw NotImportable("Scan of " + std::to_string(batch) + " batch entries of " +
                        std::to_string(ins[n_state].dim(1)) + " iterations" + limit_hint("max_loop_steps"));
  if (has_in(0)) {  // only sequences of the full length
    for (int64_t l : host_ints(in(0))) {
      if (l != ins[n_state].dim(1)) throw NotImportable("Scan with sequence_lens shorter than the input");
    }
  }
  const std::vector<int64_t> dirs = attr_ints("directions").value_or(std::vector<int64_t>{});
  const onnx::GraphProto& body = graph_attr("body");
  std::vector<std::vector<Tensor>> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> states;
    std::vector<Tensor> xs;
    for (size_t i = 0; i < ins.size(); ++i) {
      const Tensor slice = ins[i].narrow(0, b, 1).squeeze(0);
      if (i < n_state) {
        states.push_back(Value::of(slice));
      } else {
        xs.push_back(slice);
      }
    }
    per_batch.push_back(scan(body, states, xs, {}, dirs, {}, {}));
  }
  if (per_batch.empty()) throw NotImportable("Scan of an empty batch");
  for (size_t k = 0; k < per_batch[0].size(); ++k) {
    std::vector<Tensor> parts;
    for (const std::vector<Tensor>& outs : per_batch) parts.push_back(outs[k]);
    out(k, stack(parts, 0));
  }
}

// SequenceMap(sequence, more...): the body once per element of the sequence, given that element
// and, of each further input, its element at the same position (a sequence) or itself (a tensor);
// each body output gathered into a sequence.
void OnnxLowering::Impl::lower_sequence_map() {
  const onnx::GraphProto& body = graph_attr("body");
  std::vector<Value> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in_value(i));
  const Value first = in_sequence(0);
  const size_t len = first.items.size();
  for (const Value& v : ins) {
    if (v.kind == Value::Kind::Sequence && v.items.size() != len)
      throw NotImportable("SequenceMap: sequences differ in length");
  }
  std::vector<std::vector<Value>> results(body.outputs.size());
  for (size_t e = 0; e < len; ++e) {
    std::vector<Value> args;
    for (const Value& v : ins) args.push_back(v.kind == Value::Kind::Sequence ? v.items[e] : v);
    const std::vector<Value> outs = run_body(body, args, body.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k) results[k].push_back(outs[k]);
  }
  for (size_t k = 0; k < results.size(); ++k) out_value(k, Value::sequence(std::move(results[k])));
}

}  // namespace wick::onnx
