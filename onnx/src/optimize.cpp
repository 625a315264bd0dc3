// optimize.cpp — the graph optimiser (optimize.hpp): the index its passes share, dead-node
// removal, constant folding through the lowering, and the driver. The fusions are in
// optimize_fusions.cpp.
#include <wick/onnx/optimize.hpp>

#include "optimize_internal.hpp"

#include <wick/onnx/lower.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <sstream>
#include <utility>

namespace wick::onnx {

std::string OptimizeReport::summary() const {
  std::ostringstream s;
  s << "folded " << folded << ", removed " << removed;
  if (!fused.empty()) {
    s << ", fused";
    const char* sep = " ";
    for (const auto& kv : fused) {
      s << sep << kv.first << " x" << kv.second;
      sep = ", ";
    }
  }
  return s.str();
}

namespace opt {

void outer_reads(const GraphProto& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const TensorProto& t : g.initializers) defined.insert(t.name);
  for (const NodeProto& n : g.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty() && defined.count(in) == 0) out.insert(in);
    for (const AttributeProto& a : n.attributes)
      if (a.has_graph && a.g) {
        std::set<std::string> inner;
        outer_reads(*a.g, inner);
        for (const std::string& name : inner)
          if (defined.count(name) == 0) out.insert(name);
      }
    for (const std::string& o : n.outputs) defined.insert(o);
  }
  for (const ValueInfo& v : g.outputs)
    if (defined.count(v.name) == 0) out.insert(v.name);
}

Index build_index(const GraphProto& g) {
  Index ix;
  for (const TensorProto& t : g.initializers) ix.inits[t.name] = &t;
  for (const ValueInfo& v : g.inputs) ix.inputs[v.name] = &v;
  for (const ValueInfo& v : g.outputs) ix.pinned.insert(v.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodeProto& n = g.nodes[i];
    for (const std::string& in : n.inputs)
      if (!in.empty()) ix.users[in].push_back(i);
    for (const std::string& o : n.outputs)
      if (!o.empty()) ix.producer[o] = i;
    for (const AttributeProto& a : n.attributes)
      if (a.has_graph && a.g) outer_reads(*a.g, ix.pinned);
  }
  return ix;
}

bool single_use(const Index& ix, const std::string& name) {
  if (ix.producer.count(name) == 0 || ix.pinned.count(name) != 0) return false;
  const auto it = ix.users.find(name);
  return it != ix.users.end() && it->second.size() == 1;
}

const NodeProto* producer_of(const GraphProto& g, const Index& ix, const std::string& name,
                             const char* op) {
  const auto it = ix.producer.find(name);
  if (it == ix.producer.end()) return nullptr;
  const NodeProto& n = g.nodes[it->second];
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  return n.op_type == op ? &n : nullptr;
}

std::optional<double> f32_scalar(const Index& ix, const std::string& name) {
  const auto it = ix.inits.find(name);
  if (it == ix.inits.end() || ix.inputs.count(name) != 0) return std::nullopt;
  const TensorProto& t = *it->second;
  if (t.data_type != kFloat || t.dims.size() > 1 || (t.dims.size() == 1 && t.dims[0] != 1) ||
      t.nbytes() != 4)
    return std::nullopt;
  float v;
  std::memcpy(&v, t.bytes(), 4);
  return static_cast<double>(v);
}

std::optional<std::vector<int64_t>> i64_values(const Index& ix, const std::string& name) {
  const auto it = ix.inits.find(name);
  if (it == ix.inits.end() || ix.inputs.count(name) != 0) return std::nullopt;
  const TensorProto& t = *it->second;
  if (t.data_type != kInt64 || t.dims.size() > 1 || t.nbytes() % 8 != 0) return std::nullopt;
  std::vector<int64_t> v(t.nbytes() / 8);
  if (!v.empty()) std::memcpy(v.data(), t.bytes(), t.nbytes());
  return v;
}

int known_rank(const GraphProto& g, const Index& ix, const std::string& name) {
  const auto in = ix.inputs.find(name);
  if (in != ix.inputs.end() && ix.inits.count(name) == 0) {
    const TypeInfo& t = in->second->type;
    return t.tensor && t.wrappers.empty() && t.has_shape ? static_cast<int>(t.dims.size()) : -1;
  }
  const auto init = ix.inits.find(name);
  if (init != ix.inits.end()) return static_cast<int>(init->second->dims.size());
  if (const NodeProto* t = producer_of(g, ix, name, "Transpose")) {
    const AttributeProto* perm = t->attribute("perm");
    return perm != nullptr ? static_cast<int>(perm->ints.size()) : -1;
  }
  if (const NodeProto* r = producer_of(g, ix, name, "Reshape")) {
    if (r->inputs.size() < 2) return -1;
    const auto shape = i64_values(ix, r->inputs[1]);
    return shape ? static_cast<int>(shape->size()) : -1;
  }
  return -1;
}

void apply_fusions(GraphProto& g, std::vector<Fusion> fusions, OptimizeReport& report) {
  if (fusions.empty()) return;
  std::vector<bool> removed(g.nodes.size(), false);
  std::map<size_t, size_t> placed;  // node index -> the fusion placed there
  for (size_t f = 0; f < fusions.size(); ++f) {
    for (size_t i : fusions[f].nodes) removed[i] = true;
    placed[*std::max_element(fusions[f].nodes.begin(), fusions[f].nodes.end())] = f;
    report.fused[fusions[f].pattern] += 1;
  }
  std::vector<NodeProto> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto p = placed.find(i);
    if (p != placed.end()) nodes.push_back(std::move(fusions[p->second].fused));
    else if (!removed[i]) nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
}

AttributeProto attr_int(const char* name, int64_t v) {
  AttributeProto a;
  a.name = name;
  a.type = 2;
  a.i = v;
  return a;
}
AttributeProto attr_float(const char* name, float v) {
  AttributeProto a;
  a.name = name;
  a.type = 1;
  a.f = v;
  return a;
}
AttributeProto attr_string(const char* name, const std::string& v) {
  AttributeProto a;
  a.name = name;
  a.type = 3;
  a.s = v;
  return a;
}

}  // namespace opt

namespace {

using opt::Index;

// --- Dead-node removal ---

// Removes the nodes none of whose outputs reach a graph output or a subgraph's read, and the
// initializers nothing reads (those that are also graph inputs stay: a run may name them).
int eliminate_dead(GraphProto& g) {
  const Index ix = opt::build_index(g);
  std::set<std::string> live = ix.pinned;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const NodeProto& n = g.nodes[k];
    for (const std::string& o : n.outputs) keep[k] = keep[k] || (!o.empty() && live.count(o) != 0);
    if (keep[k])
      for (const std::string& in : n.inputs) live.insert(in);
  }
  int removed = 0;
  std::vector<NodeProto> nodes;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (keep[k]) nodes.push_back(std::move(g.nodes[k]));
    else ++removed;
  }
  g.nodes = std::move(nodes);
  std::vector<TensorProto> inits;
  for (TensorProto& t : g.initializers)
    if (live.count(t.name) != 0 || ix.inputs.count(t.name) != 0) inits.push_back(std::move(t));
  g.initializers = std::move(inits);
  return removed;
}

}  // namespace

GraphProto optimize(const GraphProto& graph, int64_t opset, const Device& device,
                    const OptimizeOptions& options, OptimizeReport* report) {
  OptimizeReport local;
  OptimizeReport& r = report != nullptr ? *report : local;
  r = {};
  GraphProto g = graph;
  if (options.fold_constants) r.folded = opt::fold_constants(g, opset, device);
  if (options.eliminate_dead) r.removed += eliminate_dead(g);
  if (options.fuse) {
    Index ix = opt::build_index(g);
    ix.opset = opset;
    std::vector<opt::Fusion> fusions;
    std::set<size_t> claimed;
    opt::match_layer_norm(g, ix, fusions, claimed);
    opt::match_rms_norm(g, ix, fusions, claimed);
    opt::match_gelu(g, ix, fusions, claimed);
    opt::match_attention(g, ix, fusions, claimed);
    opt::match_conv_relu(g, ix, fusions, claimed);
    // Only fusions onto an op the lowering serves (helper rows land op by op).
    OnnxLowering probe(device, opset);
    std::vector<opt::Fusion> served;
    for (opt::Fusion& f : fusions) {
      try {
        probe.check(f.fused);
        served.push_back(std::move(f));
      } catch (const NotImportable&) {
      }
    }
    opt::apply_fusions(g, std::move(served), r);
    if (options.eliminate_dead) r.removed += eliminate_dead(g);
  }
  return g;
}

}  // namespace wick::onnx
