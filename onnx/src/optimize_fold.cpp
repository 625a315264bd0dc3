// optimize_fold.cpp — constant folding (optimize.hpp): a node whose inputs are all initializers
// (or outputs already folded) runs once through the lowering on the device, and its outputs become
// initializers; a Shape of a graph input whose declared shape is fully static folds on the host.
#include "optimize_internal.hpp"

#include <wick/onnx/lower.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <utility>

namespace wick::onnx::opt {

namespace {

// A folded tensor may have at most this many elements, or twice its inputs' total, whichever is
// larger: a ConstantOfShape, Expand, Tile or Range that makes a large tensor from small inputs
// stays a node, computed at each run rather than stored in the graph.
constexpr int64_t kFoldSmall = int64_t{1} << 14;

bool fold_allowed(int64_t out_elements, int64_t in_elements) {
  return out_elements <= std::max(kFoldSmall, 2 * in_elements);
}

// Nodes that are never folded: random ones, those with subgraphs, and those of other domains.
bool deterministic(const NodeProto& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  static const std::set<std::string> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
      "Multinomial",  "Bernoulli",     "Dropout"};
  if (kRandom.count(n.op_type) != 0) return false;
  for (const AttributeProto& a : n.attributes)
    if (a.has_graph) return false;
  return !n.outputs.empty();
}

int64_t elements(const std::vector<int64_t>& dims) {
  int64_t e = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(e, d, &e)) return -1;
  return e;
}

// The elements a ConstantOfShape, Expand or Tile would make, told from its constant inputs before
// it runs; -1 when unknown (the fold then checks the result).
int64_t predicted_elements(const NodeProto& n, const Index& ix) {
  const auto values = [&](size_t i) { return i < n.inputs.size() ? i64_values(ix, n.inputs[i]) : std::nullopt; };
  const auto dims = [&](size_t i) {
    const auto it = i < n.inputs.size() ? ix.inits.find(n.inputs[i]) : ix.inits.end();
    return it != ix.inits.end() ? std::optional<std::vector<int64_t>>(it->second->dims) : std::nullopt;
  };
  if (n.op_type == "ConstantOfShape") {
    const auto shape = values(0);
    return shape ? elements(*shape) : -1;
  }
  const auto x = dims(0);
  const auto s = values(1);
  if (!x || !s) return -1;
  std::vector<int64_t> out;
  if (n.op_type == "Expand") {
    const size_t r = std::max(x->size(), s->size());
    for (size_t k = 0; k < r; ++k) {
      const int64_t a = k + x->size() >= r ? (*x)[k + x->size() - r] : 1;
      const int64_t b = k + s->size() >= r ? (*s)[k + s->size() - r] : 1;
      out.push_back(std::max(a, b));
    }
  } else if (n.op_type == "Tile" && s->size() == x->size()) {
    for (size_t k = 0; k < x->size(); ++k) {
      int64_t d;
      if (__builtin_mul_overflow((*x)[k], (*s)[k], &d)) return -1;
      out.push_back(d);
    }
  } else {
    return -1;
  }
  return elements(out);
}

std::optional<int32_t> onnx_type(DType t, bool u16) {
  switch (t) {
    case DType::F32: return kFloat;
    case DType::F64: return kDouble;
    case DType::F16: return kFloat16;
    case DType::BF16: return kBfloat16;
    case DType::I8: return kInt8;
    case DType::U8: return kUint8;
    case DType::I16: return kInt16;
    case DType::I32: return kInt32;
    case DType::I64: return kInt64;
    case DType::U32: return u16 ? kUint16 : kUint32;
    case DType::U64: return kUint64;
    case DType::Bool: return kBool;
    default: return std::nullopt;
  }
}

// A tensor value as an initializer; nullopt for a sequence, an optional or a dtype ONNX lacks.
std::optional<TensorProto> to_proto(OnnxLowering& low, const Value& v, const std::string& name) {
  if (v.kind != Value::Kind::Tensor || !v.tensor.defined()) return std::nullopt;
  const std::optional<int32_t> type = onnx_type(v.tensor.dtype(), v.u16);
  if (!type) return std::nullopt;
  const Tensor t = low.contiguous(v.tensor);
  TensorProto p;
  p.name = name;
  p.data_type = *type;
  p.dims.assign(t.shape().begin(), t.shape().end());
  std::vector<unsigned char> bytes(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  if (!bytes.empty()) t.copy_to_host(bytes.data(), bytes.size());
  if (*type == kUint16) {  // held as u32 below 2^16 (Value::u16): stored as ONNX's 2-byte uint16
    p.data.resize(bytes.size() / 2);
    for (size_t k = 0; k < bytes.size() / 4; ++k) std::memcpy(&p.data[2 * k], &bytes[4 * k], 2);
  } else {
    p.data = std::move(bytes);
  }
  return p;
}

// Shape(x) of a graph input whose declared shape is static (Model checks a run's inputs against
// it): its extents, sliced by start and end as ONNX's Shape-15 does.
std::optional<TensorProto> static_shape(const NodeProto& n, const Index& ix) {
  if (n.op_type != "Shape" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1)
    return std::nullopt;
  const auto in = ix.inputs.find(n.inputs[0]);
  if (in == ix.inputs.end() || ix.inits.count(n.inputs[0]) != 0) return std::nullopt;
  const TypeInfo& t = in->second->type;
  if (!t.tensor || !t.wrappers.empty() || !t.has_shape || elements(t.dims) < 0) return std::nullopt;
  const auto r = static_cast<int64_t>(t.dims.size());
  const auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const AttributeProto* s = n.attribute("start");
  const AttributeProto* e = n.attribute("end");
  const int64_t start = clamp(s ? s->i : 0), end = clamp(e ? e->i : r);
  TensorProto p;
  p.name = n.outputs[0];
  p.data_type = kInt64;
  const std::vector<int64_t> dims(t.dims.begin() + start, t.dims.begin() + std::max(start, end));
  p.dims = {static_cast<int64_t>(dims.size())};
  p.data.resize(dims.size() * 8);
  if (!dims.empty()) std::memcpy(p.data.data(), dims.data(), p.data.size());
  return p;
}

struct Folder {
  const Device& device;
  int64_t opset;
  std::map<std::string, Value> uploaded;  // constants already on the device, by name

  // The node's outputs computed from its constant inputs; empty when it does not fold.
  std::vector<TensorProto> fold(const NodeProto& n, const Index& ix) {
    int64_t in_elements = 0;
    for (const std::string& in : n.inputs) {
      if (in.empty()) continue;
      const auto it = ix.inits.find(in);
      // A graph input with an initializer is a default a run may override: not a constant.
      if (it == ix.inits.end() || ix.inputs.count(in) != 0) return {};
      in_elements += std::max<int64_t>(elements(it->second->dims), 0);
    }
    if (n.op_type == "Constant") in_elements = std::numeric_limits<int64_t>::max() / 4;
    const int64_t predicted = predicted_elements(n, ix);
    if (predicted < 0 && (n.op_type == "ConstantOfShape" || n.op_type == "Expand" || n.op_type == "Tile"))
      return {};
    if (predicted >= 0 && !fold_allowed(predicted, in_elements)) return {};
    try {
      return run(n, ix, in_elements);
    } catch (const std::exception&) {
      return {};  // the runtime refuses it or fails: it stays a node, and fails there at the run
    }
  }

  std::vector<TensorProto> run(const NodeProto& n, const Index& ix, int64_t in_elements) {
    OnnxLowering low(device, opset);
    for (const std::string& in : n.inputs) {
      if (in.empty() || low.has(in)) continue;
      auto it = uploaded.find(in);
      if (it == uploaded.end()) {
        const TensorProto& t = *ix.inits.at(in);
        it = uploaded.emplace(in, Value::of(upload_proto(t, device), t.data_type == kUint16)).first;
      }
      low.set_value(in, it->second);
    }
    low.run(n);
    std::vector<TensorProto> outs;
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      if (!low.has(o)) return {};
      const Value& v = low.value(o);
      if (v.kind != Value::Kind::Tensor || !fold_allowed(v.tensor.numel(), in_elements)) return {};
      std::optional<TensorProto> p = to_proto(low, v, o);
      if (!p) return {};
      outs.push_back(std::move(*p));
      uploaded[o] = v;
    }
    return outs;
  }
};

}  // namespace

int fold_constants(GraphProto& g, int64_t opset, const Device& device) {
  Folder folder{device, opset, {}};
  int folded = 0;
  std::vector<NodeProto> nodes;
  std::deque<TensorProto> made;  // the folded outputs (a deque: the index points into it)
  Index ix = build_index(g);
  for (NodeProto& n : g.nodes) {
    std::vector<TensorProto> outs;
    if (std::optional<TensorProto> s = static_shape(n, ix)) outs.push_back(std::move(*s));
    else if (deterministic(n)) outs = folder.fold(n, ix);
    if (outs.empty()) {
      nodes.push_back(std::move(n));
      continue;
    }
    ++folded;
    for (TensorProto& t : outs) {
      made.push_back(std::move(t));
      ix.inits[made.back().name] = &made.back();
    }
  }
  g.nodes = std::move(nodes);
  for (TensorProto& t : made) g.initializers.push_back(std::move(t));
  return folded;
}

}  // namespace wick::onnx::opt
