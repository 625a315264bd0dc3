#include "onnx_lower.hpp"

#include "case.hpp"

#include <wick/direct.hpp>
#include <wick/sdk/ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

namespace wick::conformance {

using onnx::NodeProto;

DType onnx_dtype(int32_t t) {
  switch (t) {
    case onnx::kFloat: return DType::F32;
    case onnx::kDouble: return DType::F64;
    case onnx::kFloat16: return DType::F16;
    case onnx::kBfloat16: return DType::BF16;
    case onnx::kInt8: return DType::I8;
    case onnx::kUint8: return DType::U8;
    case onnx::kInt16: return DType::I16;
    case onnx::kInt32: return DType::I32;
    case onnx::kInt64: return DType::I64;
    case onnx::kUint32: return DType::U32;
    case onnx::kUint64: return DType::U64;
    case onnx::kBool: return DType::Bool;
    default: throw NotImportable("ONNX data type " + std::to_string(t) + " has no Wick dtype");
  }
}

Tensor upload_proto(const onnx::TensorProto& t, const Device& device) {
  if (t.has_strings) throw NotImportable("string tensors");
  const DType dt = onnx_dtype(t.data_type);
  Shape shape(t.dims.begin(), t.dims.end());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (t.data.size() != static_cast<size_t>(n) * dtype_size(dt))
    throw NotImportable("tensor '" + t.name + "' has " + std::to_string(t.data.size()) + " bytes for its shape");
  return Tensor::from_bytes(t.data.data(), t.data.size(), shape, dt, device);
}

Tensor OnnxLowering::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw NotImportable("value '" + name + "' is not defined");
  return it->second;
}

namespace {

int64_t attr_i(const NodeProto& n, const char* name, int64_t dflt) {
  const onnx::AttributeProto* a = n.attribute(name);
  return a != nullptr ? a->i : dflt;
}
float attr_f(const NodeProto& n, const char* name, float dflt) {
  const onnx::AttributeProto* a = n.attribute(name);
  return a != nullptr ? a->f : dflt;
}
std::string attr_s(const NodeProto& n, const char* name, const std::string& dflt) {
  const onnx::AttributeProto* a = n.attribute(name);
  return a != nullptr ? a->s : dflt;
}
std::optional<std::vector<int64_t>> attr_ints(const NodeProto& n, const char* name) {
  const onnx::AttributeProto* a = n.attribute(name);
  if (a == nullptr) return std::nullopt;
  return a->ints;
}

int norm_axis(int64_t axis, int rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max(rank, 1)) throw NotImportable("axis " + std::to_string(axis) + " out of range");
  return static_cast<int>(a);
}

Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) throw NotImportable("shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace

// All node lowerings; one member per helper, so that each reads as the composite it is.
struct OnnxLowering::Impl {
  OnnxLowering& g;
  const NodeProto& n;

  const Device& dev() const { return g.device_; }

  Tensor in(size_t i) const { return g.get(n.inputs.at(i)); }
  bool has_in(size_t i) const { return i < n.inputs.size() && !n.inputs[i].empty(); }
  void out(size_t i, const Tensor& t) {
    if (i < n.outputs.size() && !n.outputs[i].empty()) g.set(n.outputs[i], t);
  }

  // Runs one Wick op on the device; a decline or an error ends the folder.
  void exec(wick_op_code op, const void* params, const std::vector<Tensor>& ins, const std::vector<Tensor>& outs) {
    if (!outs.empty() && outs[0].numel() == 0) return;
    const DirectResult r = run_op_direct(dev(), op, params, ins, outs);
    const std::string dt = ins.empty() ? dtype_name(outs[0].dtype()) : dtype_name(ins[0].dtype());
    if (r.status == DirectResult::Status::Unsupported)
      throw Declined(std::string(sdk::op_name(op)) + " (" + dt + "): " + r.message);
    if (r.status == DirectResult::Status::Failed)
      throw ExecuteFailed(std::string(sdk::op_name(op)) + " (" + dt + "): " + r.message);
  }
  Tensor op1(wick_op_code op, const Tensor& x, const void* params = nullptr, std::optional<DType> odt = std::nullopt) {
    Tensor o = Tensor::empty(x.shape(), odt.value_or(x.dtype()), dev());
    exec(op, params, {x}, {o});
    return o;
  }
  Tensor op2(wick_op_code op, const Tensor& a, const Tensor& b, std::optional<DType> odt = std::nullopt) {
    if (a.dtype() != b.dtype()) throw NotImportable("mixed dtypes in " + n.op_type);
    const Shape s = broadcast(a.shape(), b.shape());
    Tensor o = Tensor::empty(s, odt.value_or(a.dtype()), dev());
    exec(op, nullptr, {a.broadcast_to(s), b.broadcast_to(s)}, {o});
    return o;
  }
  Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
    const Shape s = broadcast(broadcast(c.shape(), a.shape()), b.shape());
    Tensor o = Tensor::empty(s, a.dtype(), dev());
    exec(WICK_OP_WHERE, nullptr, {c.broadcast_to(s), a.broadcast_to(s), b.broadcast_to(s)}, {o});
    return o;
  }
  Tensor cast(const Tensor& x, DType t) { return x.dtype() == t ? x : op1(WICK_OP_CAST, x, nullptr, t); }
  Tensor affine(const Tensor& x, double mul, double add) {
    const wick_unary_params p{sizeof(wick_unary_params), mul, add, 0};
    return op1(WICK_OP_AFFINE, x, &p);
  }
  Tensor scalar(double v, DType t) {
    unsigned char buf[8] = {};
    store_value(t, v, buf);
    return Tensor::from_bytes(buf, dtype_size(t), Shape{}, t, dev());
  }
  Tensor reshape(const Tensor& x, const Shape& s) { return g.contiguous(x).reshape(s); }
  std::vector<int64_t> host_ints(const Tensor& t) {
    std::vector<int64_t> v;
    const Tensor c = g.contiguous(t);
    std::vector<unsigned char> raw(static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
    c.copy_to_host(raw.data(), raw.size());
    for (size_t k = 0; k < static_cast<size_t>(c.numel()); ++k) {
      if (c.dtype() == DType::I64) {
        int64_t x;
        std::memcpy(&x, raw.data() + k * 8, 8);
        v.push_back(x);
      } else if (c.dtype() == DType::I32) {
        int32_t x;
        std::memcpy(&x, raw.data() + k * 4, 4);
        v.push_back(x);
      } else {
        throw NotImportable("shape-like input of dtype " + std::string(dtype_name(c.dtype())));
      }
    }
    return v;
  }
  double host_scalar(const Tensor& t) {
    const Tensor f = g.contiguous(t);
    double v = 0;
    std::vector<unsigned char> raw(dtype_size(f.dtype()));
    f.copy_to_host(raw.data(), raw.size());
    sdk::visit_dtype(to_c(f.dtype()), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T x;
      std::memcpy(&x, raw.data(), sizeof(T));
      v = static_cast<double>(x);
    });
    return v;
  }
  std::vector<double> host_doubles(const Tensor& t) {
    const Tensor c = g.contiguous(t);
    std::vector<unsigned char> raw(static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
    if (!raw.empty()) c.copy_to_host(raw.data(), raw.size());
    std::vector<double> v;
    sdk::visit_dtype(to_c(c.dtype()), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t k = 0; k < static_cast<size_t>(c.numel()); ++k) {
        T x;
        std::memcpy(&x, raw.data() + k * sizeof(T), sizeof(T));
        v.push_back(static_cast<double>(x));
      }
    });
    return v;
  }
  // A host-built constant (a mask, per-element weights) in dtype t.
  Tensor upload_values(const std::vector<double>& v, const Shape& s, DType t) {
    std::vector<unsigned char> raw(v.size() * dtype_size(t));
    for (size_t k = 0; k < v.size(); ++k) store_value(t, v[k], raw.data() + k * dtype_size(t));
    return Tensor::from_bytes(raw.data(), raw.size(), s, t, dev());
  }
  // NegativeLogLikelihoodLoss on log-probabilities x [N, C, d...] and targets [N, d...].
  Tensor nll(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore,
             const std::string& reduction) {
    std::vector<int64_t> t = host_ints(target);
    const std::vector<double> w = weight ? host_doubles(*weight) : std::vector<double>{};
    std::vector<double> wt(t.size());
    for (size_t k = 0; k < t.size(); ++k) {
      const bool keep = t[k] != ignore;
      if (!keep) t[k] = 0;
      wt[k] = keep ? (weight ? w.at(static_cast<size_t>(t[k])) : 1.0) : 0.0;
    }
    Shape is = target.shape();
    is.insert(is.begin() + 1, 1);
    Tensor picked = Tensor::empty(is, x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), 1, 0};
    exec(WICK_OP_GATHER_ELEMENTS, &p, {x, upload_i64(t, is)}, {picked});
    const Tensor loss = op1(WICK_OP_NEG, op2(WICK_OP_MUL, picked.reshape(target.shape()),
                                             upload_values(wt, target.shape(), x.dtype())));
    if (reduction == "none") return loss;
    std::vector<int32_t> all(static_cast<size_t>(loss.rank()));
    std::iota(all.begin(), all.end(), 0);
    const Tensor sum = reduce(WICK_OP_REDUCE_SUM, loss, all, false);
    if (reduction == "sum") return sum;
    double total = 0;
    for (double v : wt) total += v;
    return op2(WICK_OP_DIV, sum, scalar(total, x.dtype()));
  }
  Tensor upload_i64(const std::vector<int64_t>& v, const Shape& s) {
    return Tensor::from_bytes(v.data(), v.size() * 8, s, DType::I64, dev());
  }

  // Reduction over sorted axes, keeping them at extent 1, then dropping them unless keepdims.
  Tensor reduce(wick_op_code op, const Tensor& x, std::vector<int32_t> axes, bool keepdims) {
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    Shape kept = x.shape(), dropped;
    for (int32_t a : axes) kept[static_cast<size_t>(a)] = 1;
    for (size_t i = 0; i < kept.size(); ++i) {
      if (std::find(axes.begin(), axes.end(), static_cast<int32_t>(i)) == axes.end()) dropped.push_back(kept[i]);
    }
    Tensor o = Tensor::empty(kept, x.dtype(), dev());
    const wick_reduce_params p{sizeof(wick_reduce_params), axes.data(), static_cast<int32_t>(axes.size())};
    if (x.numel() == 0) throw NotImportable("reduction of an empty tensor");
    exec(op, &p, {x}, {o});
    return keepdims ? o : o.reshape(dropped);
  }
  std::vector<int32_t> reduce_axes(const Tensor& x, bool& noop) {
    std::vector<int64_t> axes;
    if (n.op_type == "ReduceSum" && g.opset_ >= 13) {
      if (has_in(1)) axes = host_ints(in(1));
    } else if (auto a = attr_ints(n, "axes")) {
      axes = *a;
    }
    noop = axes.empty() && attr_i(n, "noop_with_empty_axes", 0) != 0;
    std::vector<int32_t> out;
    if (axes.empty()) {
      for (int i = 0; i < x.rank(); ++i) out.push_back(i);
    }
    for (int64_t a : axes) out.push_back(norm_axis(a, x.rank()));
    return out;
  }
  int64_t reduced_count(const Tensor& x, const std::vector<int32_t>& axes) {
    int64_t c = 1;
    for (int32_t a : axes) c *= x.shape()[static_cast<size_t>(a)];
    return c;
  }

  Tensor softmax(const Tensor& x, int axis, bool log) {
    const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
    Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
    if (x.numel() == 0) return o;
    const DirectResult r = run_op_direct(dev(), log ? WICK_OP_LOG_SOFTMAX : WICK_OP_SOFTMAX, &p, {x}, {o});
    if (r.status == DirectResult::Status::Ran) return o;
    if (r.status == DirectResult::Status::Failed) throw ExecuteFailed(std::string(log ? "log_softmax: " : "softmax: ") + r.message);
    // The fused op is optional: lower to its composite, as the core does.
    const Tensor m = reduce(WICK_OP_REDUCE_MAX, x, {axis}, true);
    const Tensor d = op2(WICK_OP_SUB, x, m);
    const Tensor e = op1(WICK_OP_EXP, d);
    const Tensor s = reduce(WICK_OP_REDUCE_SUM, e, {axis}, true);
    return log ? op2(WICK_OP_SUB, d, op1(WICK_OP_LOG, s)) : op2(WICK_OP_DIV, e, s);
  }

  Tensor matmul(Tensor a, Tensor b) {
    const bool va = a.rank() == 1, vb = b.rank() == 1;
    if (va) a = a.unsqueeze(0);
    if (vb) b = b.unsqueeze(-1);
    const Shape batch = broadcast(Shape(a.shape().begin(), a.shape().end() - 2), Shape(b.shape().begin(), b.shape().end() - 2));
    Shape sa = batch, sb = batch, so = batch;
    sa.insert(sa.end(), {a.dim(-2), a.dim(-1)});
    sb.insert(sb.end(), {b.dim(-2), b.dim(-1)});
    so.insert(so.end(), {a.dim(-2), b.dim(-1)});
    Tensor o = Tensor::empty(so, a.dtype(), dev());
    exec(WICK_OP_MATMUL, nullptr, {a.broadcast_to(sa), b.broadcast_to(sb)}, {o});
    if (vb) o = o.squeeze(-1);
    if (va) o = o.squeeze(-2);
    return o;
  }

  // Pads and output sizes of Conv and the pools, ONNX's auto_pad and ceil_mode included.
  struct Window {
    std::vector<int64_t> kernel, strides, dil, lo, hi;
  };
  Window window(const Tensor& x, const std::vector<int64_t>& kernel, bool ceil_mode) {
    const size_t r = kernel.size();
    Window w;
    w.kernel = kernel;
    w.strides = attr_ints(n, "strides").value_or(std::vector<int64_t>(r, 1));
    w.dil = attr_ints(n, "dilations").value_or(std::vector<int64_t>(r, 1));
    const std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * r, 0));
    w.lo.assign(pads.begin(), pads.begin() + static_cast<long>(r));
    w.hi.assign(pads.begin() + static_cast<long>(r), pads.end());
    const std::string ap = attr_s(n, "auto_pad", "NOTSET");
    for (size_t i = 0; i < r; ++i) {
      const int64_t in = x.shape()[2 + i], ek = (kernel[i] - 1) * w.dil[i] + 1;
      if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
        const int64_t outn = (in + w.strides[i] - 1) / w.strides[i];
        const int64_t total = std::max<int64_t>(0, (outn - 1) * w.strides[i] + ek - in);
        w.lo[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        w.hi[i] = total - w.lo[i];
      } else if (ap == "VALID") {
        w.lo[i] = w.hi[i] = 0;
      }
      if (ceil_mode) {
        const int64_t span = in + w.lo[i] + w.hi[i] - ek;
        const int64_t outn = (span + w.strides[i] - 1) / w.strides[i] + 1;
        w.hi[i] += std::max<int64_t>(0, (outn - 1) * w.strides[i] + ek - (in + w.lo[i] + w.hi[i]));
      }
    }
    return w;
  }
  Tensor window_op(wick_op_code op, const Tensor& x, const Window& w, double init) {
    std::vector<int64_t> win{1, 1}, st{1, 1}, dl{1, 1}, lo{0, 0}, hi{0, 0};
    win.insert(win.end(), w.kernel.begin(), w.kernel.end());
    st.insert(st.end(), w.strides.begin(), w.strides.end());
    dl.insert(dl.end(), w.dil.begin(), w.dil.end());
    lo.insert(lo.end(), w.lo.begin(), w.lo.end());
    hi.insert(hi.end(), w.hi.begin(), w.hi.end());
    Shape os = x.shape();
    for (size_t i = 2; i < os.size(); ++i) os[i] = (os[i] + lo[i] + hi[i] - ((win[i] - 1) * dl[i] + 1)) / st[i] + 1;
    const wick_window_params p{sizeof(wick_window_params), x.rank(), win.data(), st.data(), lo.data(), hi.data(), dl.data(), init};
    Tensor o = Tensor::empty(os, x.dtype(), dev());
    exec(op, &p, {x}, {o});
    return o;
  }

  void run();
};

Tensor OnnxLowering::contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor o = Tensor::empty(t.shape(), t.dtype(), device_);
  if (t.numel() == 0) return o;
  const DirectResult r = run_op_direct(device_, WICK_OP_COPY, nullptr, {t}, {o});
  if (r.status == DirectResult::Status::Unsupported) throw Declined("copy (" + std::string(dtype_name(t.dtype())) + "): " + r.message);
  if (r.status == DirectResult::Status::Failed) throw ExecuteFailed("copy: " + r.message);
  return o;
}

void OnnxLowering::run(const NodeProto& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") throw NotImportable("domain " + node.domain);
  Impl{*this, node}.run();
}

void OnnxLowering::Impl::run() {
  const std::string& op = n.op_type;
  static const std::map<std::string, wick_op_code> unary = {
      {"Abs", WICK_OP_ABS},     {"Neg", WICK_OP_NEG},     {"Exp", WICK_OP_EXP},     {"Log", WICK_OP_LOG},
      {"Sqrt", WICK_OP_SQRT},   {"Reciprocal", WICK_OP_RECIP}, {"Tanh", WICK_OP_TANH}, {"Sigmoid", WICK_OP_SIGMOID},
      {"Sin", WICK_OP_SIN},     {"Cos", WICK_OP_COS},     {"Tan", WICK_OP_TAN},     {"Asin", WICK_OP_ASIN},
      {"Acos", WICK_OP_ACOS},   {"Atan", WICK_OP_ATAN},   {"Sinh", WICK_OP_SINH},   {"Cosh", WICK_OP_COSH},
      {"Asinh", WICK_OP_ASINH}, {"Acosh", WICK_OP_ACOSH}, {"Atanh", WICK_OP_ATANH}, {"Erf", WICK_OP_ERF},
      {"Floor", WICK_OP_FLOOR}, {"Ceil", WICK_OP_CEIL},   {"Relu", WICK_OP_RELU},   {"Sign", WICK_OP_SIGN},
      {"Not", WICK_OP_LOGICAL_NOT}};
  static const std::map<std::string, std::pair<wick_op_code, bool>> binary = {  // (op, gives bool)
      {"Add", {WICK_OP_ADD, false}},  {"Sub", {WICK_OP_SUB, false}},  {"Mul", {WICK_OP_MUL, false}},
      {"Div", {WICK_OP_DIV, false}},  {"Equal", {WICK_OP_EQ, true}},  {"Less", {WICK_OP_LT, true}},
      {"Greater", {WICK_OP_GT, true}}, {"LessOrEqual", {WICK_OP_LE, true}}, {"GreaterOrEqual", {WICK_OP_GE, true}},
      {"And", {WICK_OP_BITWISE_AND, false}}, {"Or", {WICK_OP_BITWISE_OR, false}}, {"Xor", {WICK_OP_BITWISE_XOR, false}}};
  static const std::map<std::string, wick_op_code> variadic = {
      {"Max", WICK_OP_MAXIMUM}, {"Min", WICK_OP_MINIMUM}, {"Sum", WICK_OP_ADD}, {"Mean", WICK_OP_ADD}};

  if (auto u = unary.find(op); u != unary.end()) return out(0, op1(u->second, in(0)));
  if (auto b = binary.find(op); b != binary.end()) {
    return out(0, op2(b->second.first, in(0), in(1), b->second.second ? std::optional<DType>(DType::Bool) : std::nullopt));
  }
  if (auto v = variadic.find(op); v != variadic.end()) {
    Tensor acc = in(0);
    for (size_t i = 1; i < n.inputs.size(); ++i) acc = op2(v->second, acc, in(i));
    if (op == "Mean") acc = affine(acc, 1.0 / static_cast<double>(n.inputs.size()), 0);
    return out(0, acc);
  }
  if (op == "Identity") {
    return out(0, in(0));
  }
  if (op == "IsNaN") return out(0, op1(WICK_OP_IS_NAN, in(0), nullptr, DType::Bool));
  if (op == "IsInf") {
    const Tensor x = in(0);
    Tensor inf = op1(WICK_OP_IS_INF, x, nullptr, DType::Bool);
    const bool pos = attr_i(n, "detect_positive", 1) != 0, neg = attr_i(n, "detect_negative", 1) != 0;
    if (pos && neg) return out(0, inf);
    const Tensor side = op2(pos ? WICK_OP_GT : WICK_OP_LT, x, scalar(0, x.dtype()), DType::Bool);
    return out(0, pos || neg ? op2(WICK_OP_BITWISE_AND, inf, side) : op2(WICK_OP_BITWISE_AND, inf, op1(WICK_OP_LOGICAL_NOT, inf)));
  }
  if (op == "Round") {
    const wick_unary_params p{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
    return out(0, op1(WICK_OP_ROUND, in(0), &p));
  }
  if (op == "Pow") return out(0, op2(WICK_OP_POW, in(0), cast(in(1), in(0).dtype())));
  if (op == "BitShift") return out(0, op2(attr_s(n, "direction", "") == "LEFT" ? WICK_OP_SHL : WICK_OP_SHR, in(0), in(1)));
  if (op == "Mod") {
    const Tensor a = in(0), b = in(1);
    const Tensor r = op2(WICK_OP_REM, a, b);
    if (attr_i(n, "fmod", 0) != 0 || is_float(a.dtype())) return out(0, r);
    // Python-style modulo: the sign of the divisor.
    const Tensor zero = scalar(0, a.dtype());
    const Tensor fix = op2(WICK_OP_BITWISE_AND, op2(WICK_OP_NE, r, zero, DType::Bool),
                           op2(WICK_OP_NE, op2(WICK_OP_LT, r, zero, DType::Bool), op2(WICK_OP_LT, b, zero, DType::Bool), DType::Bool));
    return out(0, where(fix, op2(WICK_OP_ADD, r, b), r));
  }
  if (op == "Where") return out(0, where(in(0), in(1), in(2)));
  if (op == "Elu" || op == "Selu" || op == "Celu") {
    const double alpha = attr_f(n, "alpha", op == "Selu" ? 1.67326319217681884765625f : 1.0f);
    if (op == "Celu") {
      const wick_unary_params p{sizeof(wick_unary_params), 1.0, 0, 0};
      return out(0, affine(op1(WICK_OP_ELU, affine(in(0), 1.0 / alpha, 0), &p), alpha, 0));
    }
    const wick_unary_params p{sizeof(wick_unary_params), alpha, 0, 0};
    const Tensor e = op1(WICK_OP_ELU, in(0), &p);
    return out(0, op == "Selu" ? affine(e, attr_f(n, "gamma", 1.05070102214813232421875f), 0) : e);
  }
  if (op == "LeakyRelu" || op == "PRelu") {
    const Tensor x = in(0);
    const Tensor scaled = op == "LeakyRelu" ? affine(x, attr_f(n, "alpha", 0.01f), 0) : op2(WICK_OP_MUL, x, in(1));
    return out(0, where(op2(WICK_OP_LT, x, scalar(0, x.dtype()), DType::Bool), scaled, x));
  }
  if (op == "ThresholdedRelu") {
    const Tensor x = in(0);
    return out(0, where(op2(WICK_OP_GT, x, scalar(attr_f(n, "alpha", 1.0f), x.dtype()), DType::Bool), x, scalar(0, x.dtype())));
  }
  if (op == "HardSigmoid" || op == "HardSwish") {
    const Tensor x = in(0);
    const double a = op == "HardSwish" ? 1.0 / 6 : attr_f(n, "alpha", 0.2f), b = op == "HardSwish" ? 0.5 : attr_f(n, "beta", 0.5f);
    const Tensor h = op2(WICK_OP_MINIMUM, op2(WICK_OP_MAXIMUM, affine(x, a, b), scalar(0, x.dtype())), scalar(1, x.dtype()));
    return out(0, op == "HardSwish" ? op2(WICK_OP_MUL, x, h) : h);
  }
  if (op == "Softplus") return out(0, op1(WICK_OP_LOG1P, op1(WICK_OP_EXP, in(0))));
  if (op == "Softsign") return out(0, op2(WICK_OP_DIV, in(0), affine(op1(WICK_OP_ABS, in(0)), 1, 1)));
  if (op == "Clip") {
    Tensor x = in(0);
    const bool attrs = g.opset_ < 11;
    if (attrs ? n.attribute("min") != nullptr : has_in(1))
      x = op2(WICK_OP_MAXIMUM, x, attrs ? scalar(attr_f(n, "min", 0), x.dtype()) : in(1));
    if (attrs ? n.attribute("max") != nullptr : has_in(2))
      x = op2(WICK_OP_MINIMUM, x, attrs ? scalar(attr_f(n, "max", 0), x.dtype()) : in(2));
    return out(0, x);
  }
  if (op == "MatMul") return out(0, matmul(in(0), in(1)));
  if (op == "Gemm") {
    Tensor a = in(0), b = in(1);
    if (attr_i(n, "transA", 0)) a = a.t();
    if (attr_i(n, "transB", 0)) b = b.t();
    Tensor y = matmul(a, b);
    const double alpha = attr_f(n, "alpha", 1.0f), beta = attr_f(n, "beta", 1.0f);
    if (alpha != 1.0) y = affine(y, alpha, 0);
    if (has_in(2) && beta != 0.0) y = op2(WICK_OP_ADD, y, beta == 1.0 ? in(2) : affine(in(2), beta, 0));
    return out(0, y);
  }
  static const std::map<std::string, wick_op_code> reductions = {
      {"ReduceSum", WICK_OP_REDUCE_SUM}, {"ReduceProd", WICK_OP_REDUCE_PROD}, {"ReduceMax", WICK_OP_REDUCE_MAX},
      {"ReduceMin", WICK_OP_REDUCE_MIN}, {"ReduceMean", WICK_OP_REDUCE_SUM}, {"ReduceSumSquare", WICK_OP_REDUCE_SUM},
      {"ReduceL1", WICK_OP_REDUCE_SUM},  {"ReduceL2", WICK_OP_REDUCE_SUM},   {"ReduceLogSum", WICK_OP_REDUCE_SUM},
      {"ReduceLogSumExp", WICK_OP_REDUCE_SUM}};
  if (auto r = reductions.find(op); r != reductions.end()) {
    Tensor x = in(0);
    bool noop = false;
    const std::vector<int32_t> axes = reduce_axes(x, noop);
    if (noop) return out(0, x);
    const bool keep = attr_i(n, "keepdims", 1) != 0;
    if (op == "ReduceSumSquare" || op == "ReduceL2") x = op1(WICK_OP_SQR, x);
    if (op == "ReduceL1") x = op1(WICK_OP_ABS, x);
    if (op == "ReduceLogSumExp") x = op1(WICK_OP_EXP, x);
    Tensor y = reduce(r->second, x, axes, keep);
    if (op == "ReduceMean") y = affine(y, 1.0 / static_cast<double>(reduced_count(x, axes)), 0);
    if (op == "ReduceL2") y = op1(WICK_OP_SQRT, y);
    if (op == "ReduceLogSum" || op == "ReduceLogSumExp") y = op1(WICK_OP_LOG, y);
    return out(0, y);
  }
  if (op == "ArgMax" || op == "ArgMin") {
    const Tensor x = in(0);
    const int axis = norm_axis(attr_i(n, "axis", 0), x.rank());
    Shape kept = x.shape();
    kept[static_cast<size_t>(axis)] = 1;
    Tensor o = Tensor::empty(kept, DType::I64, dev());
    const wick_axis_params p{sizeof(wick_axis_params), axis, static_cast<int32_t>(attr_i(n, "select_last_index", 0))};
    exec(op == "ArgMax" ? WICK_OP_ARGMAX : WICK_OP_ARGMIN, &p, {x}, {o});
    return out(0, attr_i(n, "keepdims", 1) ? o : o.squeeze(axis));
  }
  if (op == "CumSum") {
    const Tensor x = in(0);
    const int axis = norm_axis(host_ints(in(1)).at(0), x.rank());
    const wick_axis_params p{sizeof(wick_axis_params), axis,
                             static_cast<int32_t>((attr_i(n, "reverse", 0) ? 1 : 0) | (attr_i(n, "exclusive", 0) ? 2 : 0))};
    return out(0, op1(WICK_OP_CUMSUM, x, &p));
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    const Tensor x = in(0);
    if (g.opset_ < 13) {
      // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
      const int axis = norm_axis(attr_i(n, "axis", 1), x.rank());
      int64_t rows = 1;
      for (int i = 0; i < axis; ++i) rows *= x.shape()[static_cast<size_t>(i)];
      const Tensor flat = reshape(x, {rows, rows == 0 ? 0 : x.numel() / std::max<int64_t>(rows, 1)});
      return out(0, softmax(flat, 1, op == "LogSoftmax").reshape(x.shape()));
    }
    return out(0, softmax(x, norm_axis(attr_i(n, "axis", -1), x.rank()), op == "LogSoftmax"));
  }
  if (op == "Reshape") {
    const Tensor x = in(0);
    std::vector<int64_t> s = host_ints(in(1));
    const bool allowzero = attr_i(n, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == 0 && !allowzero) s[i] = x.shape().at(i);
      if (s[i] == -1) infer = static_cast<int64_t>(i);
      else known *= s[i];
    }
    if (infer >= 0) s[static_cast<size_t>(infer)] = known == 0 ? 0 : x.numel() / known;
    return out(0, reshape(x, s));
  }
  if (op == "Flatten") {
    const Tensor x = in(0);
    const int64_t axis = attr_i(n, "axis", 1) < 0 ? attr_i(n, "axis", 1) + x.rank() : attr_i(n, "axis", 1);
    int64_t rows = 1;
    for (int64_t i = 0; i < axis; ++i) rows *= x.shape()[static_cast<size_t>(i)];
    return out(0, reshape(x, {rows, rows == 0 ? 0 : x.numel() / rows}));
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    Tensor x = in(0);
    std::vector<int64_t> axes = g.opset_ >= 13 ? (has_in(1) ? host_ints(in(1)) : std::vector<int64_t>{})
                                               : attr_ints(n, "axes").value_or(std::vector<int64_t>{});
    if (op == "Squeeze") {
      if (axes.empty()) return out(0, x.squeeze());
      for (int64_t& a : axes) a = norm_axis(a, x.rank());
      std::sort(axes.rbegin(), axes.rend());
      for (int64_t a : axes) x = x.squeeze(static_cast<int>(a));
      return out(0, x);
    }
    const int rank = x.rank() + static_cast<int>(axes.size());
    for (int64_t& a : axes) a = norm_axis(a, rank);
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes) x = x.unsqueeze(static_cast<int>(a));
    return out(0, x);
  }
  if (op == "Transpose") {
    const Tensor x = in(0);
    std::vector<int> perm(static_cast<size_t>(x.rank()));
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (auto p = attr_ints(n, "perm")) perm.assign(p->begin(), p->end());
    return out(0, x.permute(perm));
  }
  if (op == "Expand") {
    const Tensor x = in(0);
    return out(0, x.broadcast_to(broadcast(x.shape(), host_ints(in(1)))));
  }
  if (op == "Concat") {
    const int rank = in(0).rank();
    const int axis = norm_axis(attr_i(n, "axis", 0), rank);
    Shape s = in(0).shape();
    s[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) s[static_cast<size_t>(axis)] += in(i).dim(axis);
    Tensor o = Tensor::empty(s, in(0).dtype(), dev());
    int64_t at = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Tensor part = in(i);
      if (part.numel() > 0) exec(WICK_OP_COPY, nullptr, {part}, {o.narrow(axis, at, part.dim(axis))});
      at += part.dim(axis);
    }
    return out(0, o);
  }
  if (op == "Split") {
    const Tensor x = in(0);
    const int axis = norm_axis(attr_i(n, "axis", 0), x.rank());
    std::vector<int64_t> sizes = g.opset_ >= 13 ? (has_in(1) ? host_ints(in(1)) : std::vector<int64_t>{})
                                                : attr_ints(n, "split").value_or(std::vector<int64_t>{});
    if (sizes.empty()) sizes.assign(n.outputs.size(), x.dim(axis) / static_cast<int64_t>(n.outputs.size()));
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      out(i, g.contiguous(x.narrow(axis, at, sizes[i])));
      at += sizes[i];
    }
    return;
  }
  if (op == "Slice") {
    Tensor x = in(0);
    const std::vector<int64_t> starts = host_ints(in(1)), ends = host_ints(in(2));
    std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
    std::iota(axes.begin(), axes.end(), 0);
    if (has_in(3)) axes = host_ints(in(3));
    if (has_in(4)) steps = host_ints(in(4));
    for (size_t i = 0; i < starts.size(); ++i) {
      const int a = norm_axis(axes[i], x.rank());
      const int64_t big = int64_t{1} << 40;
      auto clip = [&](int64_t v) { return std::max(-big, std::min(big, v)); };
      x = x.slice(a, clip(starts[i]), clip(ends[i]), steps[i]);
    }
    return out(0, x);
  }
  if (op == "Shape" || op == "Size") {
    const Tensor x = in(0);
    if (op == "Size") return out(0, upload_i64({x.numel()}, {}));
    const int64_t r = x.rank();
    int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    std::vector<int64_t> s(x.shape().begin() + start, x.shape().begin() + std::max(start, end));
    return out(0, upload_i64(s, {static_cast<int64_t>(s.size())}));
  }
  if (op == "Constant") {
    if (const onnx::AttributeProto* v = n.attribute("value"); v != nullptr && !v->t.empty())
      return out(0, upload_proto(v->t[0], dev()));
    if (const onnx::AttributeProto* v = n.attribute("value_float")) return out(0, scalar(v->f, DType::F32));
    if (const onnx::AttributeProto* v = n.attribute("value_int")) return out(0, upload_i64({v->i}, {}));
    if (const onnx::AttributeProto* v = n.attribute("value_ints"))
      return out(0, upload_i64(v->ints, {static_cast<int64_t>(v->ints.size())}));
    if (const onnx::AttributeProto* v = n.attribute("value_floats")) {
      std::vector<double> d(v->floats.begin(), v->floats.end());
      return out(0, upload_values(d, {static_cast<int64_t>(d.size())}, DType::F32));
    }
    throw NotImportable("Constant of a kind without a Wick dtype (strings, sparse)");
  }
  if (op == "ConstantOfShape") {
    const std::vector<int64_t> s = host_ints(in(0));
    DType t = DType::F32;
    double value = 0;
    const onnx::AttributeProto* v = n.attribute("value");
    if (v != nullptr && !v->t.empty()) {
      const Tensor c = upload_proto(v->t[0], dev());
      t = c.dtype();
      value = host_scalar(c);
    }
    Tensor o = Tensor::empty(s, t, dev());
    const wick_fill_params p{sizeof(wick_fill_params), value, static_cast<int64_t>(value)};
    exec(WICK_OP_FILL, &p, {}, {o});
    return out(0, o);
  }
  if (op == "Cast") return out(0, cast(in(0), onnx_dtype(static_cast<int32_t>(attr_i(n, "to", 0)))));
  if (op == "CastLike") return out(0, cast(in(0), in(1).dtype()));
  if (op == "Gather") {
    const Tensor x = in(0), idx = in(1);
    const int axis = norm_axis(attr_i(n, "axis", 0), x.rank());
    std::vector<int64_t> ids = host_ints(idx);
    for (int64_t& i : ids) i = i < 0 ? i + x.dim(axis) : i;
    Shape os(x.shape().begin(), x.shape().begin() + axis);
    os.insert(os.end(), idx.shape().begin(), idx.shape().end());
    os.insert(os.end(), x.shape().begin() + axis + 1, x.shape().end());
    Shape flat = x.shape();
    flat[static_cast<size_t>(axis)] = static_cast<int64_t>(ids.size());
    Tensor o = Tensor::empty(flat, x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
    exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
    return out(0, o.reshape(os));
  }
  if (op == "GatherElements" || op == "ScatterElements" || op == "Scatter") {
    const Tensor x = in(0), idx = in(1);
    const int axis = norm_axis(attr_i(n, "axis", 0), x.rank());
    std::vector<int64_t> ids = host_ints(idx);
    for (int64_t& i : ids) i = i < 0 ? i + x.dim(axis) : i;
    const Tensor ix = upload_i64(ids, idx.shape());
    if (op == "GatherElements") {
      Tensor o = Tensor::empty(idx.shape(), x.dtype(), dev());
      const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
      exec(WICK_OP_GATHER_ELEMENTS, &p, {x, ix}, {o});
      return out(0, o);
    }
    const std::string red = attr_s(n, "reduction", "none");
    const int32_t mode = red == "add" ? WICK_REDUCE_MODE_ADD : red == "mul" ? WICK_REDUCE_MODE_MUL
                         : red == "max" ? WICK_REDUCE_MODE_MAX : red == "min" ? WICK_REDUCE_MODE_MIN : WICK_REDUCE_MODE_SET;
    Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), axis, mode};
    exec(WICK_OP_SCATTER_ELEMENTS, &p, {x, ix, in(2)}, {o});
    return out(0, o);
  }
  if (op == "Conv") {
    const Tensor x = in(0), w = in(1);
    std::vector<int64_t> k(w.shape().begin() + 2, w.shape().end());
    const Window win = window(x, k, false);
    const size_t r = k.size();
    std::vector<int64_t> idil(r, 1);
    Shape os{x.dim(0), w.dim(0)};
    for (size_t i = 0; i < r; ++i)
      os.push_back((x.shape()[2 + i] + win.lo[i] + win.hi[i] - ((k[i] - 1) * win.dil[i] + 1)) / win.strides[i] + 1);
    const wick_conv_params p{sizeof(wick_conv_params), static_cast<int32_t>(r), win.strides.data(), win.lo.data(),
                             win.hi.data(), win.dil.data(), idil.data(), attr_i(n, "group", 1)};
    Tensor o = Tensor::empty(os, x.dtype(), dev());
    exec(WICK_OP_CONV, &p, {x, w}, {o});
    if (has_in(2)) {
      Shape bs(static_cast<size_t>(o.rank()), 1);
      bs[1] = o.dim(1);
      o = op2(WICK_OP_ADD, o, reshape(in(2), bs));
    }
    return out(0, o);
  }
  if (op == "MaxPool" || op == "AveragePool") {
    if (n.outputs.size() > 1 && !n.outputs[1].empty()) throw NotImportable("MaxPool Indices output");
    const Tensor x = in(0);
    const std::vector<int64_t> k = attr_ints(n, "kernel_shape").value_or(std::vector<int64_t>{});
    const Window w = window(x, k, attr_i(n, "ceil_mode", 0) != 0);
    if (op == "MaxPool") return out(0, window_op(WICK_OP_WINDOW_MAX, x, w, -INFINITY));
    const Tensor sum = window_op(WICK_OP_WINDOW_SUM, x, w, 0);
    if (attr_i(n, "count_include_pad", 0) != 0) {
      return out(0, affine(sum, 1.0 / static_cast<double>(std::accumulate(k.begin(), k.end(), int64_t{1}, std::multiplies<>())), 0));
    }
    // Divide by the number of real (unpadded) elements in each window.
    Tensor ones = Tensor::empty(x.shape(), x.dtype(), dev());
    const wick_fill_params f{sizeof(wick_fill_params), 1.0, 1};
    exec(WICK_OP_FILL, &f, {}, {ones});
    return out(0, op2(WICK_OP_DIV, sum, window_op(WICK_OP_WINDOW_SUM, ones, w, 0)));
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    const Tensor x = in(0);
    std::vector<int32_t> axes;
    for (int i = 2; i < x.rank(); ++i) axes.push_back(i);
    const Tensor y = reduce(op == "GlobalMaxPool" ? WICK_OP_REDUCE_MAX : WICK_OP_REDUCE_SUM, x, axes, true);
    return out(0, op == "GlobalMaxPool" ? y : affine(y, 1.0 / static_cast<double>(reduced_count(x, axes)), 0));
  }
  if (op == "LayerNormalization") {
    for (size_t i = 1; i < n.outputs.size(); ++i) {
      if (!n.outputs[i].empty()) throw NotImportable("LayerNormalization Mean/InvStdDev outputs");
    }
    const Tensor x = in(0);
    const int axis = norm_axis(attr_i(n, "axis", -1), x.rank());
    const wick_norm_params p{sizeof(wick_norm_params), x.rank() - axis, attr_f(n, "epsilon", 1e-5f)};
    std::vector<Tensor> ins{x, in(1)};
    if (has_in(2)) ins.push_back(in(2));
    Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
    exec(WICK_OP_LAYER_NORM, &p, ins, {o});
    return out(0, o);
  }
  if (op == "BatchNormalization") {
    if (attr_i(n, "training_mode", 0) != 0 || n.outputs.size() > 1) throw NotImportable("BatchNormalization training mode");
    const Tensor x = in(0);
    const wick_norm_params p{sizeof(wick_norm_params), 0, attr_f(n, "epsilon", 1e-5f)};
    Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
    exec(WICK_OP_BATCH_NORM, &p, {x, in(3), in(4), in(1), in(2)}, {o});
    return out(0, o);
  }
  if (op == "TopK") {
    const Tensor x = in(0);
    const int axis = norm_axis(attr_i(n, "axis", -1), x.rank());
    const int64_t k = host_ints(in(1)).at(0);
    const wick_sort_params p{sizeof(wick_sort_params), axis, attr_i(n, "largest", 1) != 0 ? 1 : 0, 1};
    Tensor v = Tensor::empty(x.shape(), x.dtype(), dev()), i = Tensor::empty(x.shape(), DType::I64, dev());
    exec(WICK_OP_SORT, &p, {x}, {v, i});
    out(0, g.contiguous(v.narrow(axis, 0, k)));
    out(1, g.contiguous(i.narrow(axis, 0, k)));
    return;
  }
  if (op == "Range") {
    const Tensor s = in(0);
    const double start = host_scalar(s), limit = host_scalar(in(1)), delta = host_scalar(in(2));
    const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    Tensor o = Tensor::empty({count}, s.dtype(), dev());
    const wick_iota_params p{sizeof(wick_iota_params), 0, start, delta, static_cast<int64_t>(start), static_cast<int64_t>(delta)};
    exec(WICK_OP_IOTA, &p, {}, {o});
    return out(0, o);
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    const Tensor x = in(0);
    const int64_t b = attr_i(n, "blocksize", 1), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    if (op == "SpaceToDepth") {
      return out(0, reshape(reshape(x, {N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4}), {N, C * b * b, H / b, W / b}));
    }
    const bool crd = attr_s(n, "mode", "DCR") == "CRD";
    const Tensor t = crd ? reshape(x, {N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                         : reshape(x, {N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
    return out(0, reshape(t, {N, C / (b * b), H * b, W * b}));
  }
  if (op == "Tile") {
    const Tensor x = in(0);
    const std::vector<int64_t> reps = host_ints(in(1));
    Shape inter, bshape, final_shape;
    for (int i = 0; i < x.rank(); ++i) {
      inter.insert(inter.end(), {1, x.dim(i)});
      bshape.insert(bshape.end(), {reps[static_cast<size_t>(i)], x.dim(i)});
      final_shape.push_back(reps[static_cast<size_t>(i)] * x.dim(i));
    }
    return out(0, reshape(reshape(x, inter).broadcast_to(bshape), final_shape));
  }
  if (op == "NegativeLogLikelihoodLoss" || op == "SoftmaxCrossEntropyLoss") {
    const bool sce = op == "SoftmaxCrossEntropyLoss";
    const Tensor logp = sce ? softmax(in(0), 1, true) : in(0);
    const std::optional<Tensor> w = has_in(2) ? std::optional<Tensor>(in(2)) : std::nullopt;
    const int64_t ignore = attr_i(n, "ignore_index", std::numeric_limits<int64_t>::min());
    out(0, nll(logp, in(1), w, ignore, attr_s(n, "reduction", "mean")));
    if (sce) out(1, logp);
    return;
  }
  if (op == "Trilu") {
    const Tensor x = in(0);
    const int64_t k = has_in(1) ? host_ints(in(1)).at(0) : 0, rows = x.dim(-2), cols = x.dim(-1);
    const bool upper = attr_i(n, "upper", 1) != 0;
    std::vector<double> mask(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) mask[static_cast<size_t>(i * cols + j)] = upper ? (j - i >= k) : (j - i <= k);
    }
    return out(0, where(upload_values(mask, {rows, cols}, DType::Bool), x, scalar(0, x.dtype())));
  }
  if (op == "Dropout") {
    if (has_in(2) && host_scalar(in(2)) != 0) throw NotImportable("Dropout in training mode (random)");
    out(0, in(0));
    if (n.outputs.size() > 1) {
      Tensor mask = Tensor::empty(in(0).shape(), DType::Bool, dev());
      const wick_fill_params f{sizeof(wick_fill_params), 1.0, 1};
      exec(WICK_OP_FILL, &f, {}, {mask});
      out(1, mask);
    }
    return;
  }
  throw NotImportable("ONNX op " + op + " is not mapped onto Wick ops");
}

}  // namespace wick::conformance
