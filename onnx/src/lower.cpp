// lower.cpp — ONNX values on the device, and the helpers every node lowering uses. The
// lowerings themselves are in lowerings_*.cpp, and the table that maps op types to them in
// lowerings.cpp.
#include <wick/onnx/lower.hpp>
#include <wick/onnx/optimize.hpp>

#include "lowerings.hpp"

#include <wick/direct.hpp>
#include <wick/dispatch.hpp>
#include <wick/sdk/ops.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

namespace wick::onnx {

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

namespace {

struct Limits {
  std::atomic<int64_t> max_elements, max_host_elements, max_loop_steps;
};
int64_t from_env(const char* var, int64_t dflt) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == 0) return dflt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != 0 || n <= 0) throw NotImportable(std::string(var) + "='" + v + "' is not a positive integer");
  return n;
}
Limits& limits() {
  static Limits l{{from_env("WICK_ONNX_MAX_ELEMENTS", ImportLimits{}.max_elements)},
                  {from_env("WICK_ONNX_MAX_HOST_ELEMENTS", ImportLimits{}.max_host_elements)},
                  {from_env("WICK_ONNX_MAX_LOOP_STEPS", ImportLimits{}.max_loop_steps)}};
  return l;
}

void check_size(const Tensor& t, const char* what) {
  const int64_t limit = limits().max_elements.load(std::memory_order_relaxed);
  if (t.numel() > limit)
    throw NotImportable(std::string(what) + " of shape " + shape_to_string(t.shape()) + " has more than " +
                        std::to_string(limit) + " elements" + limit_hint("max_elements"));
}

// The product of a shape's non-zero extents: at most 2^40 in any value. A tensor with a zero
// extent is empty whatever its other extents, but stride arithmetic on them (Wick's and the
// plugins') must not overflow.
constexpr int64_t kMaxExtentProduct = int64_t{1} << 40;

void check_extents(const Shape& s, const std::string& what) {
  int64_t p = 1;
  for (int64_t d : s) {
    if (d == 0) continue;
    if (d < 0 || __builtin_mul_overflow(p, d, &p) || p > kMaxExtentProduct)
      throw NotImportable(what + " has the shape " + shape_to_string(s) +
                          ", whose extents multiply past 2^40 (the importer's limit)");
  }
}

void check_value(const Value& v, const std::string& name) {
  if (v.kind == Value::Kind::Tensor && v.tensor.defined()) check_extents(v.tensor.shape(), "value '" + name + "'");
  for (const Value& item : v.items) check_value(item, name);
}
}  // namespace

void OnnxLowering::set(const std::string& name, const Tensor& t) {
  if (t.defined()) check_extents(t.shape(), "value '" + name + "'");
  values_[name] = Value::of(t);
}
void OnnxLowering::set_value(const std::string& name, Value v) {
  check_value(v, name);
  values_[name] = std::move(v);
}

ImportLimits import_limits() {
  const Limits& l = limits();
  return {l.max_elements.load(), l.max_host_elements.load(), l.max_loop_steps.load()};
}
void set_import_limits(const ImportLimits& n) {
  Limits& l = limits();
  l.max_elements.store(n.max_elements);
  l.max_host_elements.store(n.max_host_elements);
  l.max_loop_steps.store(n.max_loop_steps);
}
std::string limit_hint(const char* name) {
  const ImportLimits l = import_limits();
  const std::string field(name);
  const int64_t v = field == "max_elements" ? l.max_elements
                    : field == "max_host_elements" ? l.max_host_elements : l.max_loop_steps;
  std::string var = "WICK_ONNX_" + field;
  std::transform(var.begin(), var.end(), var.begin(), [](unsigned char c) { return std::toupper(c); });
  return ", past the importer's limit " + field + " = " + std::to_string(v) + " (raise it with the environment variable " +
         var + " or wick::onnx::set_import_limits)";
}

Tensor upload_proto(const onnx::TensorProto& t, const Device& device) {
  if (t.has_strings) throw NotImportable("string tensors");
  const bool u16 = t.data_type == onnx::kUint16;
  const DType dt = u16 ? DType::U32 : onnx_dtype(t.data_type);
  Shape shape(t.dims.begin(), t.dims.end());
  check_extents(shape, "tensor '" + t.name + "'");
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw NotImportable("tensor '" + t.name + "' has the shape " + shape_to_string(shape));
  }
  const unsigned char* data = t.bytes();  // the parsed bytes, or a view into the mapped file
  const size_t bytes = t.nbytes();
  if (bytes / std::max<size_t>(onnx::element_size(t.data_type), 1) != static_cast<size_t>(n) ||
      bytes % std::max<size_t>(onnx::element_size(t.data_type), 1) != 0)
    throw NotImportable("tensor '" + t.name + "' has " + std::to_string(bytes) +
                        " bytes for its shape");
  if (u16) {  // Wick has no u16: held zero-extended to u32 (see Value::u16)
    std::vector<uint32_t> wide(static_cast<size_t>(n));
    for (size_t k = 0; k < wide.size(); ++k) {
      uint16_t v;
      std::memcpy(&v, data + 2 * k, 2);
      wide[k] = v;
    }
    return Tensor::from_bytes(wide.data(), wide.size() * 4, shape, dt, device);
  }
  if (dt == DType::Bool) {  // any non-zero byte is true; Wick's bool is 0 or 1
    std::vector<unsigned char> b(bytes);
    for (size_t k = 0; k < b.size(); ++k) b[k] = data[k] != 0;
    return Tensor::from_bytes(b.data(), b.size(), shape, dt, device);
  }
  return Tensor::from_bytes(data, bytes, shape, dt, device);
}

bool OnnxLowering::has(const std::string& name) const {
  return values_.count(name) != 0 || (outer_ != nullptr && outer_->has(name));
}
const Value& OnnxLowering::value(const std::string& name) const {
  for (const OnnxLowering* scope = this; scope != nullptr; scope = scope->outer_) {
    auto it = scope->values_.find(name);
    if (it != scope->values_.end()) return it->second;
  }
  throw NotImportable("value '" + name + "' is not defined");
}
Tensor OnnxLowering::get(const std::string& name) const {
  const Value& v = value(name);
  if (v.kind != Value::Kind::Tensor)
    throw NotImportable("value '" + name + "' is a " + kind_name(v.kind) + ", not a tensor");
  return v.tensor;
}

Tensor OnnxLowering::contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  check_size(t, "a copy");
  Tensor o = Tensor::empty(t.shape(), t.dtype(), device_);
  if (t.numel() == 0) return o;
  if (dispatch_) {
    dispatch(WICK_OP_COPY, nullptr, {t}, {o});
    return o;
  }
  const DirectResult r = run_op_direct(device_, WICK_OP_COPY, nullptr, {t}, {o});
  if (r.status == DirectResult::Status::Unsupported)
    throw Declined("copy (" + std::string(dtype_name(t.dtype())) + "): " + r.message);
  if (r.status == DirectResult::Status::Failed) throw ExecuteFailed("copy: " + r.message);
  return o;
}

namespace {
// The training domain's ops are in the table as "ai.onnx.preview.training.<op>", by its opset. A
// node the graph optimiser fused (kFusedDomain, optimize.hpp) is a standard ai.onnx op lowered at
// the newest opset checked, whatever the model's opset, or one of Wick's own fused ops, in the
// table as "com.wick.fused.<op>".
struct TableEntry {
  std::string type;
  int64_t version;
};
TableEntry table_entry(const NodeProto& node, int64_t opset, int64_t training_opset, int64_t checked) {
  const bool training = node.domain == onnx::kTrainingDomain;
  const bool fused = node.domain == kFusedDomain;
  if (!node.domain.empty() && node.domain != "ai.onnx" && !training && !fused)
    throw NotImportable("domain " + node.domain + " (op " + node.op_type + ")");
  if (training) return {node.domain + "." + node.op_type, training_opset};
  if (fused) return {is_wick_fused_op(node.op_type) ? node.domain + "." + node.op_type : node.op_type,
                     checked};
  return {node.op_type, opset};
}
}  // namespace

void OnnxLowering::check(const NodeProto& node) {
  const auto [type, version] = table_entry(node, opset_, training_opset_, Impl::kChecked);
  (void)Impl::lowering(type, version);
  const Impl impl{*this, node, version, {}, {}};
  impl.check_attributes_known(type);
}

void OnnxLowering::run(const NodeProto& node) {
  const auto [type, version] = table_entry(node, opset_, training_opset_, Impl::kChecked);
  const Impl::Lowering lower = Impl::lowering(type, version);
  Impl impl{*this, node, version, {}, {}};
  impl.check_attributes_known(type);
  impl.check_narrow_inputs(type);
  (impl.*lower)();
  impl.tag_narrow_outputs(type);
  // Outputs already set are dropped with the model: a refusal here ends the whole import.
  impl.check_attributes_read(type);
  impl.check_inputs_read();
  impl.narrow_u16_outputs();
}

// --- The node ---

int64_t OnnxLowering::Impl::attr_i(const char* name, int64_t dflt) const {
  const onnx::AttributeProto* a = attr(name);
  return a != nullptr ? a->i : dflt;
}
float OnnxLowering::Impl::attr_f(const char* name, float dflt) const {
  const onnx::AttributeProto* a = attr(name);
  return a != nullptr ? a->f : dflt;
}
std::string OnnxLowering::Impl::attr_s(const char* name, const std::string& dflt) const {
  const onnx::AttributeProto* a = attr(name);
  return a != nullptr ? a->s : dflt;
}
std::optional<std::vector<int64_t>> OnnxLowering::Impl::attr_ints(const char* name) const {
  const onnx::AttributeProto* a = attr(name);
  if (a == nullptr) return std::nullopt;
  return a->ints;
}
std::vector<int64_t> OnnxLowering::Impl::ints_from(From from, size_t input, const char* attr) {
  if (from == From::Input) return has_in(input) ? host_ints(in(input)) : std::vector<int64_t>{};
  return attr_ints(attr).value_or(std::vector<int64_t>{});
}

int OnnxLowering::Impl::norm_axis(int64_t axis, int rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw NotImportable("axis " + std::to_string(axis) + " out of range");
  return static_cast<int>(a);
}

std::vector<int64_t> OnnxLowering::Impl::attr_ints_n(const char* name, size_t count, int64_t dflt) const {
  std::vector<int64_t> v = attr_ints(name).value_or(std::vector<int64_t>(count, dflt));
  if (v.size() != count)
    throw NotImportable("malformed " + n.op_type + ": attribute '" + name + "' has " +
                        std::to_string(v.size()) + " values, expected " + std::to_string(count));
  return v;
}

int64_t OnnxLowering::Impl::checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw NotImportable("sizes overflow: " + std::to_string(a) + " * " + std::to_string(b));
  return r;
}

int64_t OnnxLowering::Impl::checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw NotImportable("sizes overflow: " + std::to_string(a) + " + " + std::to_string(b));
  return r;
}

int64_t OnnxLowering::Impl::host_count(double v, const char* what) {
  if (!(v >= 0)) throw NotImportable(std::string(what) + " " + std::to_string(v) + " is not a count");
  if (v > static_cast<double>(max_host_elements()))
    throw NotImportable(std::string(what) + " " + std::to_string(v) + " is more than " +
                        std::to_string(max_host_elements()) + limit_hint("max_host_elements"));
  return static_cast<int64_t>(v);
}
int64_t OnnxLowering::Impl::max_host_elements() { return import_limits().max_host_elements; }
int64_t OnnxLowering::Impl::max_loop_steps() { return import_limits().max_loop_steps; }

Shape OnnxLowering::Impl::broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) throw NotImportable("shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// --- Wick ops on the device ---

void OnnxLowering::Impl::exec(wick_op_code op, const void* params, const std::vector<Tensor>& ins,
                              const std::vector<Tensor>& outs) {
  if (!outs.empty() && outs[0].numel() == 0) return;
  for (const Tensor& o : outs) check_size(o, sdk::op_name(op));
  if (g.dispatching()) {  // the device, or the CPU where its plugin declines (strict: an error)
    dispatch(op, params, ins, outs);
    return;
  }
  const DirectResult r = run_op_direct(dev(), op, params, ins, outs);
  const std::string dt = ins.empty() ? dtype_name(outs[0].dtype()) : dtype_name(ins[0].dtype());
  if (r.status == DirectResult::Status::Unsupported)
    throw Declined(std::string(sdk::op_name(op)) + " (" + dt + "): " + r.message);
  if (r.status == DirectResult::Status::Failed)
    throw ExecuteFailed(std::string(sdk::op_name(op)) + " (" + dt + "): " + r.message);
}
Tensor OnnxLowering::Impl::op1(wick_op_code op, const Tensor& x, const void* params,
                               std::optional<DType> odt) {
  Tensor o = Tensor::empty(x.shape(), odt.value_or(x.dtype()), dev());
  exec(op, params, {x}, {o});
  return o;
}
Tensor OnnxLowering::Impl::op2(wick_op_code op, const Tensor& a, const Tensor& b,
                               std::optional<DType> odt) {
  if (a.dtype() != b.dtype()) throw NotImportable("mixed dtypes in " + n.op_type);
  const Shape s = broadcast(a.shape(), b.shape());
  Tensor o = Tensor::empty(s, odt.value_or(a.dtype()), dev());
  exec(op, nullptr, {a.broadcast_to(s), b.broadcast_to(s)}, {o});
  return o;
}
Tensor OnnxLowering::Impl::where(const Tensor& c, const Tensor& a, const Tensor& b) {
  const Shape s = broadcast(broadcast(c.shape(), a.shape()), b.shape());
  Tensor o = Tensor::empty(s, a.dtype(), dev());
  exec(WICK_OP_WHERE, nullptr, {c.broadcast_to(s), a.broadcast_to(s), b.broadcast_to(s)}, {o});
  return o;
}
Tensor OnnxLowering::Impl::cast(const Tensor& x, DType t) {
  return x.dtype() == t ? x : op1(WICK_OP_CAST, x, nullptr, t);
}
Tensor OnnxLowering::Impl::affine(const Tensor& x, double mul, double add) {
  const wick_unary_params p{sizeof(wick_unary_params), mul, add, 0};
  return op1(WICK_OP_AFFINE, x, &p);
}
// A tensor of one value, filled on the device.
Tensor OnnxLowering::Impl::filled(const Shape& s, DType t, double value) {
  Tensor o = Tensor::empty(s, t, dev());
  const wick_fill_params p{sizeof(wick_fill_params), value, saturating_i64(value)};
  exec(WICK_OP_FILL, &p, {}, {o});
  return o;
}
Tensor OnnxLowering::Impl::reshape(const Tensor& x, const Shape& s) {
  // An empty tensor (any layout) becomes a fresh empty one: its extents, from the model, may be
  // such that stride arithmetic on a view of them overflows.
  if (x.numel() == 0 && std::none_of(s.begin(), s.end(), [](int64_t d) { return d < 0; })) {
    check_extents(s, "a reshape");
    if (std::find(s.begin(), s.end(), 0) == s.end())
      throw NotImportable("reshape of an empty tensor to " + shape_to_string(s));
    return Tensor::empty(s, x.dtype(), dev());
  }
  return g.contiguous(x).reshape(s);
}

// --- Host read-backs and host-built constants ---

Tensor OnnxLowering::Impl::scalar(double v, DType t) {
  unsigned char buf[8] = {};
  store_value(t, v, buf);
  return Tensor::from_bytes(buf, dtype_size(t), Shape{}, t, dev());
}
std::vector<int64_t> OnnxLowering::Impl::host_ints(const Tensor& t) {
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
double OnnxLowering::Impl::host_scalar(const Tensor& t) {
  const Tensor f = g.contiguous(t);
  double v = 0;
  std::vector<unsigned char> raw(dtype_size(f.dtype()));
  f.copy_to_host(raw.data(), raw.size());
  sdk::visit_dtype(to_c(f.dtype()), [&](auto tag) {
    // A bool is read as its byte (any non-zero one true): a device's byte need not be 0 or 1.
    using T = std::conditional_t<std::is_same_v<typename decltype(tag)::type, bool>, unsigned char,
                                 typename decltype(tag)::type>;
    T x;
    std::memcpy(&x, raw.data(), sizeof(T));
    v = std::is_same_v<typename decltype(tag)::type, bool> ? (x != T(0) ? 1.0 : 0.0) : static_cast<double>(x);
  });
  return v;
}
std::vector<double> OnnxLowering::Impl::host_doubles(const Tensor& t) {
  const Tensor c = g.contiguous(t);
  std::vector<unsigned char> raw(static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  if (!raw.empty()) c.copy_to_host(raw.data(), raw.size());
  std::vector<double> v;
  sdk::visit_dtype(to_c(c.dtype()), [&](auto tag) {
    using T = std::conditional_t<std::is_same_v<typename decltype(tag)::type, bool>, unsigned char,
                                 typename decltype(tag)::type>;  // bool as its byte (see host_scalar)
    for (size_t k = 0; k < static_cast<size_t>(c.numel()); ++k) {
      T x;
      std::memcpy(&x, raw.data() + k * sizeof(T), sizeof(T));
      v.push_back(std::is_same_v<typename decltype(tag)::type, bool> ? (x != T(0) ? 1.0 : 0.0) : static_cast<double>(x));
    }
  });
  return v;
}
// A host-built constant (a mask, per-element weights) in dtype t.
Tensor OnnxLowering::Impl::upload_values(const std::vector<double>& v, const Shape& s, DType t) {
  std::vector<unsigned char> raw(v.size() * dtype_size(t));
  for (size_t k = 0; k < v.size(); ++k) store_value(t, v[k], raw.data() + k * dtype_size(t));
  return Tensor::from_bytes(raw.data(), raw.size(), s, t, dev());
}
Tensor OnnxLowering::Impl::upload_i64(const std::vector<int64_t>& v, const Shape& s) {
  return Tensor::from_bytes(v.data(), v.size() * 8, s, DType::I64, dev());
}
std::vector<int64_t> OnnxLowering::Impl::index_values(const Tensor& x, const Tensor& idx,
                                                      int axis) {
  std::vector<int64_t> ids = host_ints(idx);
  for (int64_t& i : ids) i = i < 0 ? i + x.dim(axis) : i;
  return ids;
}

// --- Composites several op types share ---

// Reduction over sorted axes, keeping them at extent 1, then dropping them unless keepdims.
Tensor OnnxLowering::Impl::reduce(wick_op_code op, const Tensor& x, std::vector<int32_t> axes,
                                  bool keepdims) {
  for (int32_t a : axes)
    if (a < 0 || a >= x.rank())
      throw NotImportable("malformed " + n.op_type + ": reduction axis " + std::to_string(a) + " of a rank-" +
                          std::to_string(x.rank()) + " tensor");
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Shape kept = x.shape(), dropped;
  for (int32_t a : axes) kept[static_cast<size_t>(a)] = 1;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int32_t>(i)) == axes.end())
      dropped.push_back(kept[i]);
  }
  Tensor o = Tensor::empty(kept, x.dtype(), dev());
  const wick_reduce_params p{sizeof(wick_reduce_params), axes.data(),
                             static_cast<int32_t>(axes.size())};
  if (x.numel() == 0) throw NotImportable("reduction of an empty tensor");
  exec(op, &p, {x}, {o});
  return keepdims ? o : o.reshape(dropped);
}
std::vector<int32_t> OnnxLowering::Impl::reduce_axes(const Tensor& x, From from, bool& noop) {
  const std::vector<int64_t> axes = ints_from(from, 1, "axes");
  noop = axes.empty() && attr_i("noop_with_empty_axes", 0) != 0;
  std::vector<int32_t> out;
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i) out.push_back(i);
  }
  for (int64_t a : axes) out.push_back(norm_axis(a, x.rank()));
  return out;
}
int64_t OnnxLowering::Impl::reduced_count(const Tensor& x, const std::vector<int32_t>& axes) {
  int64_t c = 1;
  for (int32_t a : axes) c *= x.shape()[static_cast<size_t>(a)];
  return c;
}

Tensor OnnxLowering::Impl::softmax(const Tensor& x, int axis, bool log) {
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  if (x.numel() == 0) return o;
  const DirectResult r =
      run_op_direct(dev(), log ? WICK_OP_LOG_SOFTMAX : WICK_OP_SOFTMAX, &p, {x}, {o});
  if (r.status == DirectResult::Status::Ran) return o;
  if (r.status == DirectResult::Status::Failed)
    throw ExecuteFailed(std::string(log ? "log_softmax: " : "softmax: ") + r.message);
  // The fused op is optional: lower to its composite, as the core does.
  const Tensor m = reduce(WICK_OP_REDUCE_MAX, x, {axis}, true);
  const Tensor d = op2(WICK_OP_SUB, x, m);
  const Tensor e = op1(WICK_OP_EXP, d);
  const Tensor s = reduce(WICK_OP_REDUCE_SUM, e, {axis}, true);
  return log ? op2(WICK_OP_SUB, d, op1(WICK_OP_LOG, s)) : op2(WICK_OP_DIV, e, s);
}

Tensor OnnxLowering::Impl::matmul(Tensor a, Tensor b) {
  if (a.rank() == 0 || b.rank() == 0) throw NotImportable("malformed " + n.op_type + ": a scalar operand");
  const bool va = a.rank() == 1, vb = b.rank() == 1;
  if (va) a = a.unsqueeze(0);
  if (vb) b = b.unsqueeze(-1);
  const Shape batch = broadcast(Shape(a.shape().begin(), a.shape().end() - 2),
                                Shape(b.shape().begin(), b.shape().end() - 2));
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {a.dim(-2), a.dim(-1)});
  sb.insert(sb.end(), {b.dim(-2), b.dim(-1)});
  so.insert(so.end(), {a.dim(-2), b.dim(-1)});
  Tensor o = Tensor::empty(so, a.dtype(), dev());
  exec(WICK_OP_MATMUL, nullptr, {a.broadcast_to(sa), b.broadcast_to(sb)}, {o});
  if (va && vb) return o.reshape({});  // a dot product: a scalar, as NumPy's matmul
  if (vb) o = o.squeeze(-1);
  if (va) o = o.squeeze(-2);
  return o;
}

// NegativeLogLikelihoodLoss on log-probabilities x [N, C, d...] and targets [N, d...].
Tensor OnnxLowering::Impl::nll(const Tensor& x, const Tensor& target,
                               const std::optional<Tensor>& weight, int64_t ignore,
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

OnnxLowering::Impl::Window OnnxLowering::Impl::window(const Tensor& x,
                                                      const std::vector<int64_t>& kernel,
                                                      bool ceil_mode) {
  const size_t r = kernel.size();
  if (x.rank() != static_cast<int>(r) + 2)
    throw NotImportable("malformed " + n.op_type + ": a kernel of " + std::to_string(r) +
                        " dims for an input of rank " + std::to_string(x.rank()));
  Window w;
  w.kernel = kernel;
  w.strides = attr_ints_n("strides", r, 1);
  w.dil = attr_ints_n("dilations", r, 1);
  const std::vector<int64_t> pads = attr_ints_n("pads", 2 * r, 0);
  for (size_t i = 0; i < r; ++i) {
    if (kernel[i] < 1 || w.strides[i] < 1 || w.dil[i] < 1 || pads[i] < 0 || pads[r + i] < 0)
      throw NotImportable("malformed " + n.op_type + ": kernel, strides, dilations or pads out of range");
    // Bounds every sum and product below (all terms are non-negative).
    (void)checked_add(checked_add(checked_add(x.shape()[2 + i], pads[i]),
                                  checked_add(pads[r + i], checked_mul(kernel[i], w.dil[i]))),
                      checked_mul(w.strides[i], 2));
  }
  w.lo.assign(pads.begin(), pads.begin() + static_cast<long>(r));
  w.hi.assign(pads.begin() + static_cast<long>(r), pads.end());
  w.ceil_extra.assign(r, 0);
  const std::string ap = attr_choice("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
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
      // The ONNX output size: rounded up, less a last window that would start past the input (in
      // the end padding); what that window reaches beyond the end padding is padded too.
      const int64_t span = in + w.lo[i] + w.hi[i] - ek;
      int64_t outn = (span + w.strides[i] - 1) / w.strides[i] + 1;
      if (outn > 1 && (outn - 1) * w.strides[i] >= in + w.lo[i]) --outn;
      w.ceil_extra[i] = std::max<int64_t>(0, (outn - 1) * w.strides[i] + ek - (in + w.lo[i] + w.hi[i]));
      w.hi[i] += w.ceil_extra[i];
    }
  }
  return w;
}
Tensor OnnxLowering::Impl::window_op(wick_op_code op, const Tensor& x, const Window& w,
                                     double init) {
  std::vector<int64_t> win{1, 1}, st{1, 1}, dl{1, 1}, lo{0, 0}, hi{0, 0};
  win.insert(win.end(), w.kernel.begin(), w.kernel.end());
  st.insert(st.end(), w.strides.begin(), w.strides.end());
  dl.insert(dl.end(), w.dil.begin(), w.dil.end());
  lo.insert(lo.end(), w.lo.begin(), w.lo.end());
  hi.insert(hi.end(), w.hi.begin(), w.hi.end());
  Shape os = x.shape();
  for (size_t i = 2; i < os.size(); ++i)
    os[i] = (os[i] + lo[i] + hi[i] - ((win[i] - 1) * dl[i] + 1)) / st[i] + 1;
  const wick_window_params p{sizeof(wick_window_params),
                             x.rank(),
                             win.data(),
                             st.data(),
                             lo.data(),
                             hi.data(),
                             dl.data(),
                             init};
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  exec(op, &p, {x}, {o});
  return o;
}

}  // namespace wick::onnx
