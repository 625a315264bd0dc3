// optimize_transformer.cpp — the optimiser's GELU and attention fusions (optimize.hpp), matched
// exactly as optimize_fusions.cpp's are: constants within kTol, single-use intermediates, ranks
// known where a broadcast could otherwise change the result's shape.
#include "optimize_internal.hpp"

#include <cmath>

namespace wick::onnx::opt {

namespace {

constexpr double kTol = 1e-6;

bool near(const Index& ix, const std::string& name, double want) {
  const std::optional<double> v = f32_scalar(ix, name);
  return v && std::fabs(*v - want) <= kTol * std::fabs(want);
}

// The node producing a single-use `name` with op type `op`, taken into `nodes`; else nullptr.
const NodeProto* from(const GraphProto& g, const Index& ix, const std::string& name, const char* op,
                      std::vector<size_t>& nodes) {
  if (!single_use(ix, name)) return nullptr;
  const NodeProto* n = producer_of(g, ix, name, op);
  if (n == nullptr || n->inputs.size() != (std::string(op) == "Transpose" ? 1u : 2u)) return nullptr;
  nodes.push_back(ix.producer.at(name));
  return n;
}

// The consumer of a single-use `name` with op type `op` (binary), taken into `nodes`.
const NodeProto* to(const GraphProto& g, const Index& ix, const std::string& name, const char* op,
                    std::vector<size_t>& nodes) {
  if (!single_use(ix, name)) return nullptr;
  const size_t i = ix.users.at(name)[0];
  const NodeProto& n = g.nodes[i];
  if ((!n.domain.empty() && n.domain != "ai.onnx") || n.op_type != op || n.inputs.size() != 2 ||
      n.outputs.size() != 1)
    return nullptr;
  nodes.push_back(i);
  return &n;
}

std::optional<std::string> other(const NodeProto* n, const std::string& name) {
  if (n == nullptr || n->inputs.size() != 2) return std::nullopt;
  if (n->inputs[0] == name) return n->inputs[1];
  if (n->inputs[1] == name) return n->inputs[0];
  return std::nullopt;
}

// Whether binary node n is op(a, b) in either order, with b checked by `is_b`.
template <class F>
std::optional<std::string> operand_with(const NodeProto* n, F is_b) {
  if (n == nullptr || n->inputs.size() != 2) return std::nullopt;
  if (is_b(n->inputs[1])) return n->inputs[0];
  if (is_b(n->inputs[0])) return n->inputs[1];
  return std::nullopt;
}

// From `e` (Erf's or Tanh's output): Add 1, then the product with x and 0.5 in any grouping
// torch exports. Returns the final output.
std::optional<std::string> gelu_tail(const GraphProto& g, const Index& ix, const std::string& e,
                                     const std::string& x, std::vector<size_t>& nodes) {
  const NodeProto* add = to(g, ix, e, "Add", nodes);
  const auto one = other(add, e);
  if (!one || !near(ix, *one, 1.0)) return std::nullopt;
  const std::string& a = add->outputs[0];
  const NodeProto* m = to(g, ix, a, "Mul", nodes);
  const auto o = other(m, a);
  if (!o) return std::nullopt;
  if (*o == x || near(ix, *o, 0.5)) {  // (x * a) * 0.5 or x * (a * 0.5)
    const bool half_last = *o == x;
    const NodeProto* m2 = to(g, ix, m->outputs[0], "Mul", nodes);
    const auto o2 = other(m2, m->outputs[0]);
    if (!o2 || (half_last ? !near(ix, *o2, 0.5) : *o2 != x)) return std::nullopt;
    return m2->outputs[0];
  }
  const NodeProto* h = from(g, ix, *o, "Mul", nodes);  // (x * 0.5) * a
  const auto hx = operand_with(h, [&](const std::string& v) { return near(ix, v, 0.5); });
  if (!hx || *hx != x) return std::nullopt;
  return m->outputs[0];
}

NodeProto gelu_node(const std::string& x, const std::string& out, const char* approximate) {
  NodeProto n;
  n.op_type = "Gelu";
  n.domain = kFusedDomain;
  n.inputs = {x};
  n.outputs = {out};
  n.name = "wick_fused_Gelu_" + out;
  n.attributes = {attr_string("approximate", approximate)};
  return n;
}

// x * 0.5 * (1 + erf(x / sqrt(2))), from the Erf node.
std::optional<Fusion> gelu_erf_at(const GraphProto& g, const Index& ix, size_t at) {
  const NodeProto& erf = g.nodes[at];
  std::vector<size_t> nodes{at};
  const std::string& u = erf.inputs[0];
  std::optional<std::string> x;
  if (const NodeProto* d = from(g, ix, u, "Div", nodes)) {
    if (near(ix, d->inputs[1], std::sqrt(2.0))) x = d->inputs[0];
  } else if (const NodeProto* m = from(g, ix, u, "Mul", nodes)) {
    x = operand_with(m, [&](const std::string& v) { return near(ix, v, 1.0 / std::sqrt(2.0)); });
  }
  if (!x) return std::nullopt;
  const auto out = gelu_tail(g, ix, erf.outputs[0], *x, nodes);
  if (!out) return std::nullopt;
  return Fusion{nodes, gelu_node(*x, *out, "none"), "Gelu"};
}

// x^3 as Pow(x, 3) or Mul(Mul(x, x), x): whether `x3` is that of `x`.
bool cube_of(const GraphProto& g, const Index& ix, const std::string& x3, const std::string& x,
             std::vector<size_t>& nodes) {
  const size_t before = nodes.size();
  if (const NodeProto* p = from(g, ix, x3, "Pow", nodes)) {
    if (p->inputs[0] == x && near(ix, p->inputs[1], 3.0)) return true;
  } else if (const NodeProto* m = from(g, ix, x3, "Mul", nodes)) {
    const auto xx = other(m, x);
    const NodeProto* sq = xx ? from(g, ix, *xx, "Mul", nodes) : nullptr;
    if (sq != nullptr && sq->inputs[0] == x && sq->inputs[1] == x) return true;
  }
  nodes.resize(before);
  return false;
}

// x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), from the Tanh node.
std::optional<Fusion> gelu_tanh_at(const GraphProto& g, const Index& ix, size_t at) {
  const NodeProto& t = g.nodes[at];
  std::vector<size_t> nodes{at};
  const NodeProto* arg = from(g, ix, t.inputs[0], "Mul", nodes);
  const auto inner = operand_with(arg, [&](const std::string& v) { return near(ix, v, std::sqrt(2.0 / 3.14159265358979323846)); });
  const NodeProto* add = inner ? from(g, ix, *inner, "Add", nodes) : nullptr;
  if (add == nullptr) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& x = add->inputs[static_cast<size_t>(side)];
    const std::string& kx3 = add->inputs[static_cast<size_t>(1 - side)];
    std::vector<size_t> taken = nodes;
    const NodeProto* k = from(g, ix, kx3, "Mul", taken);
    const auto x3 = operand_with(k, [&](const std::string& v) { return near(ix, v, 0.044715); });
    if (!x3 || !cube_of(g, ix, *x3, x, taken)) continue;
    const auto out = gelu_tail(g, ix, t.outputs[0], x, taken);
    if (out) return Fusion{taken, gelu_node(x, *out, "tanh"), "Gelu"};
  }
  return std::nullopt;
}

bool free_of(const std::set<size_t>& claimed, const std::vector<size_t>& nodes) {
  for (size_t i : nodes)
    if (claimed.count(i) != 0) return false;
  return true;
}

void keep(std::optional<Fusion> f, std::vector<Fusion>& out, std::set<size_t>& claimed) {
  if (!f || !free_of(claimed, f->nodes)) return;
  claimed.insert(f->nodes.begin(), f->nodes.end());
  out.push_back(std::move(*f));
}

bool is_node(const NodeProto& n, const char* op) {
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == op && !n.inputs.empty() &&
         n.outputs.size() == 1;
}

// An additive mask that cannot broadcast the scores beyond [B, H, L, S]: an initializer or a
// graph input of declared rank at most 4 whose extents before the last two are 1.
bool mask_ok(const Index& ix, const std::string& name) {
  std::vector<int64_t> dims;
  if (const auto it = ix.inits.find(name); it != ix.inits.end()) {
    if (it->second->data_type != kFloat) return false;
    dims = it->second->dims;
  } else if (const auto in = ix.inputs.find(name); in != ix.inputs.end()) {
    const TypeInfo& t = in->second->type;
    if (!t.tensor || !t.wrappers.empty() || !t.has_shape || t.elem_type != kFloat) return false;
    dims = t.dims;
  } else {
    return false;
  }
  if (dims.size() > 4) return false;
  for (size_t k = 0; k + 2 < dims.size(); ++k)
    if (dims[k] != 1) return false;
  return true;
}

// Softmax over the last axis: axis -1 (or 3 of the 4-D scores), or absent from opset 13.
bool last_axis_softmax(const NodeProto& sm, int64_t opset) {
  const AttributeProto* a = sm.attribute("axis");
  if (a == nullptr) return opset >= 13;
  return a->i == -1 || a->i == 3;
}

// softmax(MatMul(Q, Transpose(K, [0, 1, 3, 2])) * scale (+ mask)) V, from the Softmax node; Q
// and V of rank 4 as the graph tells.
std::optional<Fusion> attention_at(const GraphProto& g, const Index& ix, size_t at) {
  const NodeProto& sm = g.nodes[at];
  if (!last_axis_softmax(sm, ix.opset)) return std::nullopt;
  std::vector<size_t> nodes{at};
  std::string scaled = sm.inputs[0];
  std::optional<std::string> mask;
  if (single_use(ix, scaled) && producer_of(g, ix, scaled, "Add") != nullptr) {
    const NodeProto* add = from(g, ix, scaled, "Add", nodes);
    for (size_t side = 0; side < 2 && !mask; ++side) {
      const NodeProto* p = producer_of(g, ix, add->inputs[side], "Mul");
      if (p == nullptr) p = producer_of(g, ix, add->inputs[side], "Div");
      if (p != nullptr && mask_ok(ix, add->inputs[1 - side])) {
        mask = add->inputs[1 - side];
        scaled = add->inputs[side];
      }
    }
    if (!mask) return std::nullopt;
  }
  std::optional<std::string> qk;
  double scale = 0;
  if (const NodeProto* d = from(g, ix, scaled, "Div", nodes)) {
    const std::optional<double> c = f32_scalar(ix, d->inputs[1]);
    if (c && *c > 0) qk = d->inputs[0], scale = 1.0 / *c;
  } else if (const NodeProto* m = from(g, ix, scaled, "Mul", nodes)) {
    for (size_t side = 0; side < 2 && !qk; ++side) {
      const std::optional<double> c = f32_scalar(ix, m->inputs[1 - side]);
      if (c && *c > 0) qk = m->inputs[side], scale = *c;
    }
  }
  const NodeProto* mm = qk ? from(g, ix, *qk, "MatMul", nodes) : nullptr;
  const NodeProto* kt = mm ? from(g, ix, mm->inputs[1], "Transpose", nodes) : nullptr;
  const AttributeProto* perm = kt ? kt->attribute("perm") : nullptr;
  if (perm == nullptr || perm->ints != std::vector<int64_t>{0, 1, 3, 2}) return std::nullopt;
  const NodeProto* pv = to(g, ix, sm.outputs[0], "MatMul", nodes);
  if (pv == nullptr || pv->inputs[0] != sm.outputs[0]) return std::nullopt;
  const std::string &q = mm->inputs[0], &k = kt->inputs[0], &v = pv->inputs[1];
  if (known_rank(g, ix, q) != 4 || known_rank(g, ix, v) != 4) return std::nullopt;
  NodeProto n;
  n.op_type = "Attention";
  n.domain = kFusedDomain;
  n.inputs = {q, k, v};
  if (mask) n.inputs.push_back(*mask);
  n.outputs = {pv->outputs[0]};
  n.name = "wick_fused_Attention_" + pv->outputs[0];
  n.attributes = {attr_float("scale", static_cast<float>(scale))};
  return Fusion{nodes, n, "Attention"};
}

}  // namespace

void match_gelu(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                std::set<size_t>& claimed) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (claimed.count(i) != 0) continue;
    if (is_node(g.nodes[i], "Erf")) keep(gelu_erf_at(g, ix, i), out, claimed);
    else if (is_node(g.nodes[i], "Tanh")) keep(gelu_tanh_at(g, ix, i), out, claimed);
  }
}

void match_attention(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                     std::set<size_t>& claimed) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (claimed.count(i) == 0 && is_node(g.nodes[i], "Softmax")) keep(attention_at(g, ix, i), out, claimed);
}

}  // namespace wick::onnx::opt
