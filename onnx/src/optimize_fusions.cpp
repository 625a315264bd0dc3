// optimize_fusions.cpp — the optimiser's fusions (optimize.hpp): decompositions that exporters
// emit, each matched exactly (axes, constants within kTol, single-consumer intermediates, shapes
// that cannot broadcast beyond the input's) and replaced by one standard ONNX op in kFusedDomain;
// and Conv followed by Relu, replaced by Wick's FusedConv.
#include "optimize_internal.hpp"

#include <algorithm>
#include <cmath>

namespace wick::onnx::opt {

namespace {

// Constants match the exact value within this relative tolerance (float32 rounding of sqrt(2),
// 1/sqrt(2), sqrt(2/pi) is below 1e-7).
constexpr double kTol = 1e-6;

bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= kTol * std::fabs(want);
}

bool is_op(const NodeProto* n, const char* op) {
  return n != nullptr && (n->domain.empty() || n->domain == "ai.onnx") && n->op_type == op &&
         n->inputs.size() >= 1 && n->outputs.size() >= 1;
}

// The one node reading `name`, when it is a single-use intermediate; else nullptr.
const NodeProto* sole_user(const GraphProto& g, const Index& ix, const std::string& name,
                           size_t* index = nullptr) {
  if (!single_use(ix, name)) return nullptr;
  const size_t i = ix.users.at(name)[0];
  if (index != nullptr) *index = i;
  return &g.nodes[i];
}

// Of a binary node with `name` as one operand, the other operand; nullopt otherwise.
std::optional<std::string> other(const NodeProto* n, const std::string& name) {
  if (n == nullptr || n->inputs.size() != 2) return std::nullopt;
  if (n->inputs[0] == name) return n->inputs[1];
  if (n->inputs[1] == name) return n->inputs[0];
  return std::nullopt;
}

size_t index_of(const GraphProto& g, const NodeProto* n) {
  return static_cast<size_t>(n - g.nodes.data());
}

// A chain being matched: the nodes taken so far.
struct Chain {
  const GraphProto& g;
  const Index& ix;
  std::vector<size_t> nodes;
  // The single-use value's consumer if it has op type `op`, taken into the chain.
  const NodeProto* next(const std::string& value, const char* op) {
    size_t i = 0;
    const NodeProto* n = sole_user(g, ix, value, &i);
    if (!is_op(n, op)) return nullptr;
    nodes.push_back(i);
    return n;
  }
  void take(const NodeProto* n) { nodes.push_back(index_of(g, n)); }
};

// ReduceMean's axes (the attribute before opset 18, the constant input from 18), when keepdims is
// 1 and they are given; nullopt otherwise.
std::optional<std::vector<int64_t>> mean_axes(const NodeProto& n, const Index& ix) {
  const AttributeProto* kd = n.attribute("keepdims");
  if (kd != nullptr && kd->i != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (n.inputs.size() >= 2 && !n.inputs[1].empty()) {
    const auto v = i64_values(ix, n.inputs[1]);
    if (!v) return std::nullopt;
    axes = *v;
  } else if (const AttributeProto* a = n.attribute("axes")) {
    axes = a->ints;
  }
  if (axes.empty()) return std::nullopt;
  return axes;
}

// -k when `axes` are exactly the last k axes (negative, or positive with the rank known).
std::optional<int64_t> trailing(std::vector<int64_t> axes, int rank) {
  for (int64_t& a : axes) {
    if (a >= 0 && rank < 0) return std::nullopt;
    if (a >= 0) a -= rank;
  }
  std::sort(axes.begin(), axes.end());
  const auto k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i)
    if (axes[static_cast<size_t>(i)] != i - k) return std::nullopt;
  if (rank >= 0 && k > rank) return std::nullopt;
  return -k;
}

// A float32 weight over the k normalised axes: an initializer of rank k whose extents are not 1
// (so that it neither broadcasts the output beyond x nor depends on x's extents to mean the same).
bool norm_weight(const Index& ix, const std::string& name, int64_t k) {
  const auto it = ix.inits.find(name);
  if (it == ix.inits.end() || ix.inputs.count(name) != 0) return false;
  const TensorProto& t = *it->second;
  if (t.data_type != kFloat || static_cast<int64_t>(t.dims.size()) != k) return false;
  return std::all_of(t.dims.begin(), t.dims.end(), [](int64_t d) { return d > 1; });
}

NodeProto fused_node(const char* op, std::vector<std::string> inputs, const std::string& output,
                     const std::string& name) {
  NodeProto n;
  n.op_type = op;
  n.domain = kFusedDomain;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  n.name = std::string("wick_fused_") + op + (name.empty() ? "" : "_" + name);
  return n;
}

// The Mul by weight (and, for LayerNorm, the Add of bias) after a normalisation whose output is
// `y`: appends the weight (bias) to `inputs` and returns the chain's final output; nullopt when
// the weight is missing or not exact.
std::optional<std::string> affine_tail(Chain& c, const std::string& y, int64_t k, bool bias,
                                       std::vector<std::string>& inputs) {
  const NodeProto* mul = c.next(y, "Mul");
  const auto w = other(mul, y);
  if (!w || !norm_weight(c.ix, *w, k)) return std::nullopt;
  inputs.push_back(*w);
  std::string out = mul->outputs[0];
  if (!bias) return out;
  const size_t before = c.nodes.size();
  const NodeProto* add = c.next(out, "Add");
  const auto b = other(add, out);
  if (b && norm_weight(c.ix, *b, k) && c.ix.inits.at(*b)->dims == c.ix.inits.at(*w)->dims) {
    inputs.push_back(*b);
    return add->outputs[0];
  }
  c.nodes.resize(before);  // no bias: LayerNormalization without B
  return out;
}

// From `s` = Sqrt(...): the node dividing `num` by it (Div(num, s), or Mul by Reciprocal(s)).
const NodeProto* divide_by(Chain& c, const std::string& s, const std::string& num) {
  size_t i = 0;
  const NodeProto* n = sole_user(c.g, c.ix, s, &i);
  if (is_op(n, "Div") && n->inputs.size() == 2 && n->inputs[0] == num && n->inputs[1] == s) {
    c.nodes.push_back(i);
    return n;
  }
  if (!is_op(n, "Reciprocal")) return nullptr;
  c.nodes.push_back(i);
  const NodeProto* mul = c.next(n->outputs[0], "Mul");
  const auto o = other(mul, n->outputs[0]);
  return o && *o == num ? mul : nullptr;
}

// Pow(v, 2) or Mul(v, v).
bool is_square_of(const NodeProto* n, const Index& ix, const std::string& v) {
  if (is_op(n, "Pow") && n->inputs.size() == 2 && n->inputs[0] == v)
    return near(f32_scalar(ix, n->inputs[1]), 2.0);
  return is_op(n, "Mul") && n->inputs.size() == 2 && n->inputs[0] == v && n->inputs[1] == v;
}

// ReduceMean(sq) -> Add eps -> Sqrt, from the squared value `sq`: the eps and Sqrt's output.
std::optional<std::pair<double, std::string>> mean_eps_sqrt(Chain& c, const std::string& sq,
                                                            int64_t axis, int rank) {
  const NodeProto* var = c.next(sq, "ReduceMean");
  if (var == nullptr) return std::nullopt;
  const auto axes = mean_axes(*var, c.ix);
  if (!axes || trailing(*axes, rank) != axis) return std::nullopt;
  const NodeProto* add = c.next(var->outputs[0], "Add");
  const auto eps_name = other(add, var->outputs[0]);
  const std::optional<double> eps = eps_name ? f32_scalar(c.ix, *eps_name) : std::nullopt;
  if (!eps || *eps < 0) return std::nullopt;
  const NodeProto* sqrt = c.next(add->outputs[0], "Sqrt");
  if (sqrt == nullptr) return std::nullopt;
  return std::make_pair(*eps, sqrt->outputs[0]);
}

// LayerNorm from its ReduceMean(x) node `mean`.
std::optional<Fusion> layer_norm_at(const GraphProto& g, const Index& ix, size_t at) {
  const NodeProto& mean = g.nodes[at];
  const std::string& x = mean.inputs[0];
  const int rank = known_rank(g, ix, x);
  const auto axes = mean_axes(mean, ix);
  const std::optional<int64_t> axis = axes ? trailing(*axes, rank) : std::nullopt;
  if (!axis) return std::nullopt;
  Chain c{g, ix, {at}};
  const NodeProto* sub = c.next(mean.outputs[0], "Sub");
  if (sub == nullptr || sub->inputs.size() != 2 || sub->inputs[0] != x) return std::nullopt;
  const std::string& d = sub->outputs[0];
  // d feeds exactly the square and the division.
  const auto users = ix.users.find(d);
  if (ix.pinned.count(d) != 0 || users == ix.users.end()) return std::nullopt;
  const NodeProto* sq = nullptr;
  for (size_t u : users->second)
    if (is_square_of(&g.nodes[u], ix, d)) sq = &g.nodes[u];
  if (sq == nullptr || users->second.size() != (sq->op_type == "Mul" ? 3u : 2u)) return std::nullopt;
  c.take(sq);
  const auto es = mean_eps_sqrt(c, sq->outputs[0], *axis, rank);
  if (!es) return std::nullopt;
  const NodeProto* div = divide_by(c, es->second, d);
  if (div == nullptr) return std::nullopt;
  std::vector<std::string> inputs{x};
  const auto out = affine_tail(c, div->outputs[0], -*axis, true, inputs);
  if (!out) return std::nullopt;
  Fusion f{c.nodes, fused_node("LayerNormalization", inputs, *out, mean.name), "LayerNormalization"};
  f.fused.attributes = {attr_int("axis", *axis), attr_float("epsilon", static_cast<float>(es->first))};
  return f;
}

// RMSNorm from its square node Pow(x, 2) / Mul(x, x).
std::optional<Fusion> rms_norm_at(const GraphProto& g, const Index& ix, size_t at) {
  const NodeProto& sq = g.nodes[at];
  if (sq.inputs.empty() || !is_square_of(&sq, ix, sq.inputs[0])) return std::nullopt;
  const std::string& x = sq.inputs[0];
  const int rank = known_rank(g, ix, x);
  Chain c{g, ix, {at}};
  const NodeProto* mean = sole_user(g, ix, sq.outputs[0]);
  const auto axes = is_op(mean, "ReduceMean") ? mean_axes(*mean, ix) : std::nullopt;
  const std::optional<int64_t> axis = axes ? trailing(*axes, rank) : std::nullopt;
  if (!axis) return std::nullopt;
  const auto es = mean_eps_sqrt(c, sq.outputs[0], *axis, rank);
  if (!es) return std::nullopt;
  const NodeProto* div = divide_by(c, es->second, x);
  if (div == nullptr) return std::nullopt;
  std::vector<std::string> inputs{x};
  const auto out = affine_tail(c, div->outputs[0], -*axis, false, inputs);
  if (!out) return std::nullopt;
  Fusion f{c.nodes, fused_node("RMSNormalization", inputs, *out, sq.name), "RMSNormalization"};
  f.fused.attributes = {attr_int("axis", *axis), attr_float("epsilon", static_cast<float>(es->first))};
  return f;
}

bool free_of(const std::set<size_t>& claimed, const std::vector<size_t>& nodes) {
  return std::none_of(nodes.begin(), nodes.end(), [&](size_t i) { return claimed.count(i) != 0; });
}

void keep(std::optional<Fusion> f, std::vector<Fusion>& out, std::set<size_t>& claimed) {
  if (!f || !free_of(claimed, f->nodes)) return;
  claimed.insert(f->nodes.begin(), f->nodes.end());
  out.push_back(std::move(*f));
}

// Conv -> Relu at Conv node i: Wick's FusedConv (Conv's inputs and attributes, activation
// "Relu"), when the Conv's output feeds only that Relu (an attribute-free Relu: opset 1's
// consumed_inputs is left alone).
std::optional<Fusion> conv_relu_at(const GraphProto& g, const Index& ix, size_t i) {
  const NodeProto& conv = g.nodes[i];
  if (conv.outputs.size() != 1 || conv.inputs.size() < 2) return std::nullopt;
  Chain c{g, ix, {i}};
  const NodeProto* relu = c.next(conv.outputs[0], "Relu");
  if (relu == nullptr || !relu->attributes.empty() || relu->inputs.size() != 1 || relu->outputs.size() != 1)
    return std::nullopt;
  Fusion f{c.nodes, fused_node("FusedConv", conv.inputs, relu->outputs[0], conv.name), "FusedConv"};
  f.fused.attributes = conv.attributes;
  f.fused.attributes.push_back(attr_string("activation", "Relu"));
  return f;
}

}  // namespace

void match_conv_relu(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                     std::set<size_t>& claimed) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (claimed.count(i) == 0 && is_op(&g.nodes[i], "Conv")) keep(conv_relu_at(g, ix, i), out, claimed);
}

void match_layer_norm(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                      std::set<size_t>& claimed) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (claimed.count(i) == 0 && is_op(&g.nodes[i], "ReduceMean")) keep(layer_norm_at(g, ix, i), out, claimed);
}

void match_rms_norm(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                    std::set<size_t>& claimed) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (claimed.count(i) == 0 && (is_op(&g.nodes[i], "Pow") || is_op(&g.nodes[i], "Mul")))
      keep(rms_norm_at(g, ix, i), out, claimed);
}

}  // namespace wick::onnx::opt
