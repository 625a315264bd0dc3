// ops_elementwise.cpp — see tensor.hpp for the API this file implements: creation (arange, iota,
// rand, randn, manual_seed), unary and binary elementwise ops, where, clamp and the scalar
// operators. The dtype rules are written down in docs/ops/elementwise.md.
#include <wick/dispatch.hpp>
#include "tensor/autograd_rules.hpp"
#include "tensor/ops_common.hpp"
#include <wick/random.hpp>
#include <wick/shape.hpp>

#include <wick/sdk/ops.hpp>

#include <cmath>
#include <limits>
#include <mutex>
#include <sstream>
#include <utility>

namespace wick {

using namespace detail;

namespace {

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

bool is_whole(double v) {
  return std::isfinite(v) && std::trunc(v) == v;
}

bool is_integer(DType t) {
  return !is_float(t) && t != DType::Bool;
}

// Whether the whole number v is a value of the integer dtype t.
bool fits(double v, DType t) {
  return sdk::visit_dtype(to_c(t), [v](auto tag) {
    using T = typename decltype(tag)::type;
    using L = std::numeric_limits<T>;
    const double lo = L::is_signed ? -std::ldexp(1.0, L::digits) : 0.0;
    return v >= lo && v < std::ldexp(1.0, L::digits);
  });
}

// A 0-d tensor holding v converted to dtype t (exactly, for whole v that fit an integer dtype).
Tensor typed_scalar(double v, DType t, const Device& device) {
  return sdk::visit_dtype(to_c(t), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value;
    if constexpr (std::is_same_v<T, bool>)
      value = v != 0.0;
    else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
      value = T(static_cast<float>(v));
    else
      value = static_cast<T>(v);
    return Tensor::from_bytes(&value, sizeof(T), Shape{}, t, device);
  });
}

// The 0-d operand a scalar becomes next to tensor t: t's dtype for float tensors and for whole
// scalars that fit an integer tensor; f32 for a fractional or non-finite scalar with an integer or
// bool tensor; i64 for a whole scalar with a bool tensor. A whole scalar outside an integer
// dtype's range is an error rather than a silent wrap.
Tensor scalar_operand(const Tensor& t, double v, const char* op) {
  require_defined(t, op);
  DType dt = t.dtype();
  if (!is_float(dt)) {
    if (!is_whole(v))
      dt = DType::F32;
    else if (dt == DType::Bool)
      dt = DType::I64;
  }
  if (is_integer(dt) && !fits(v, dt)) {
    throw Error(std::string(op) + ": the scalar " + format_number(v) + " does not fit " +
                dtype_name(dt) +
                ", the tensor's dtype; convert the tensor first, e.g. .to(DType::I64)");
  }
  return typed_scalar(v, dt, t.device());
}

[[noreturn]] void reject_dtype(const char* op, DType t, const char* defined_for) {
  throw Error(std::string(op) + ": not defined for " + dtype_name(t) + " tensors (only " +
              defined_for + "); convert with .to(DType::...) first");
}

wick_unary_params unary_params(double alpha, double beta = 0.0,
                               int32_t mode = WICK_ROUND_HALF_AWAY_FROM_ZERO) {
  wick_unary_params p{};
  p.struct_size = sizeof(p);
  p.alpha = alpha;
  p.beta = beta;
  p.mode = mode;
  return p;
}

// The dtype a and b meet in; both must be defined.
DType common_dtype(const char* op, const Tensor& a, const Tensor& b) {
  require_defined(a, op);
  require_defined(b, op);
  return promote_types(a.dtype(), b.dtype());
}

// The op table's dtype rules (wick_ops.h) for an elementwise op of dtype t: t itself when the op is
// defined for it; f32 for float math on integers and bool (exp of an integer is a float); else an
// error naming the dtypes the op takes.
DType table_dtype(const sdk::OpInfo& op, DType t) {
  if (sdk::has_dtype(sdk::dtypes_of(op.dtypes), to_c(t))) return t;
  if (op.dtypes == sdk::DTypeClass::FLOAT) return DType::F32;
  reject_dtype(op.name, t, sdk::dtype_class_words(op.dtypes));
}

// The output dtype the table gives an elementwise op computed in dtype t.
std::optional<DType> table_out(const sdk::OpInfo& op) {
  if (op.out == sdk::OutDType::BOOL) return DType::Bool;
  return std::nullopt;
}

Tensor table_unary(wick_op_code op, const Tensor& x, const wick_unary_params* params = nullptr) {
  if (grad::needs(x)) return grad::unary(op, x, params);
  const sdk::OpInfo& info = *sdk::op_info(op);
  require_defined(x, info.name);
  const DType t = table_dtype(info, x.dtype());
  return unary_op(op, t == x.dtype() ? x : x.to(t), params, table_out(info));
}

Tensor table_binary(wick_op_code op, const Tensor& a, const Tensor& b) {
  if (grad::needs({&a, &b})) return grad::binary(op, a, b);
  const sdk::OpInfo& info = *sdk::op_info(op);
  const DType t = table_dtype(info, common_dtype(info.name, a, b));
  if (t == promote_types(a.dtype(), b.dtype())) return binary_op(op, a, b, table_out(info));
  return binary_op(op, a.to(t), b.to(t), table_out(info));
}

// floor, ceil, round: integers and bool are already whole, so they come back unchanged.
Tensor rounding_unary(wick_op_code op, const Tensor& x, const wick_unary_params* params = nullptr) {
  if (grad::needs(x)) return grad::unary(op, x, params);
  require_defined(x, sdk::op_name(op));
  return is_float(x.dtype()) ? unary_op(op, x, params) : x;
}

// neg, abs, sign, sqr, relu on floats and integers. On bool, abs, sign, sqr and relu are the
// identity (each maps 0 to 0 and 1 to 1); neg has no bool meaning.
Tensor arith_unary(wick_op_code op, const Tensor& x) {
  require_defined(x, sdk::op_name(op));
  if (x.dtype() != DType::Bool) return table_unary(op, x);
  if (op == WICK_OP_NEG) reject_dtype("neg", x.dtype(), "numbers; logical_not negates bool");
  return x;
}

// ---- random numbers
// -------------------------------------------------------------------------------

// The process generator: a seed and a counter offset that every draw without an explicit seed
// advances by its element count, so consecutive calls continue one stream.
struct Generator {
  std::mutex mutex;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

Generator& generator() {
  static Generator g;
  return g;
}

wick_rng_params rng_params(std::optional<uint64_t> seed, int64_t n, double a, double b) {
  wick_rng_params p{};
  p.struct_size = sizeof(p);
  p.a = a;
  p.b = b;
  if (seed) {
    p.seed = *seed;
    p.offset = 0;
  } else {
    Generator& g = generator();
    std::lock_guard<std::mutex> lock(g.mutex);
    p.seed = g.seed;
    p.offset = g.offset;
    g.offset += static_cast<uint64_t>(n);
  }
  return p;
}

Tensor random(wick_op_code op, const Shape& shape, double a, double b, DType dtype,
              const Device& device, std::optional<uint64_t> seed) {
  const char* name = op == WICK_OP_RNG_UNIFORM ? "rand" : "randn";
  if (!is_float(dtype)) reject_dtype(name, dtype, "f32, f64, f16 and bf16");
  Tensor out = Tensor::empty(shape, dtype, device);
  const wick_rng_params p = rng_params(seed, out.numel(), a, b);
  if (out.numel() > 0) dispatch(op, &p, {}, {out});
  return out;
}

// start + step * (index along axis), or the flat index for axis == -1.
Tensor make_iota(const Shape& shape, int axis, double start, double step, DType dtype,
                 const Device& device, const char* op) {
  if (dtype == DType::Bool) reject_dtype(op, dtype, "numbers");
  const int rank = static_cast<int>(shape.size());
  if (axis < -1 || axis >= rank) {
    throw Error(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for shape " +
                shape_to_string(shape) + " (an axis in [0, " + std::to_string(rank) +
                "), or -1 for the C-order flat index)");
  }
  Tensor out = Tensor::empty(shape, dtype, device);
  wick_iota_params p{};
  p.struct_size = sizeof(p);
  p.axis = axis;
  p.float_start = start;
  p.float_step = step;
  // Integer dtypes only reach here with whole start and step inside int64 (see arange).
  p.int_start = static_cast<int64_t>(start);
  p.int_step = static_cast<int64_t>(step);
  if (out.numel() > 0) dispatch(WICK_OP_IOTA, &p, {}, {out});
  return out;
}

}  // namespace

// ---- creation
// -------------------------------------------------------------------------------------

Tensor Tensor::arange(double start, double stop, double step, DType dtype, const Device& device) {
  const std::string args = "arange(" + format_number(start) + ", " + format_number(stop) + ", " +
                           format_number(step) + ", " + dtype_name(dtype) + ")";
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step) || step == 0.0) {
    throw Error(args + ": start, stop and step must be finite and step non-zero");
  }
  const double count = std::max(0.0, std::ceil((stop - start) / step));
  if (count > 0x1p62) throw Error(args + ": " + format_number(count) + " elements is too many");
  const auto n = static_cast<int64_t>(count);
  if (is_integer(dtype)) {
    const double last = start + step * static_cast<double>(std::max<int64_t>(n - 1, 0));
    if (!is_whole(start) || !is_whole(step))
      throw Error(args + ": an integer dtype needs whole start and step");
    if (!fits(start, dtype) || !fits(last, dtype) || !fits(step, DType::I64)) {
      throw Error(args + ": the values run from " + format_number(start) + " to " +
                  format_number(last) + ", outside " + dtype_name(dtype));
    }
  }
  return make_iota(Shape{n}, 0, start, step, dtype, device, "arange");
}

Tensor Tensor::iota(const Shape& shape, int axis, DType dtype, const Device& device) {
  return make_iota(shape, axis, 0.0, 1.0, dtype, device, "iota");
}

Tensor Tensor::rand(const Shape& shape, double lo, double hi, DType dtype, const Device& device,
                    std::optional<uint64_t> seed) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi)) {
    throw Error("rand: needs finite lo <= hi, got [" + format_number(lo) + ", " +
                format_number(hi) + ")");
  }
  return random(WICK_OP_RNG_UNIFORM, shape, lo, hi, dtype, device, seed);
}

Tensor Tensor::randn(const Shape& shape, double mean, double std, DType dtype, const Device& device,
                     std::optional<uint64_t> seed) {
  if (!(std::isfinite(mean) && std::isfinite(std) && std >= 0.0)) {
    throw Error("randn: needs a finite mean and a finite std >= 0, got mean " +
                format_number(mean) + ", std " + format_number(std));
  }
  return random(WICK_OP_RNG_NORMAL, shape, mean, std, dtype, device, seed);
}

void manual_seed(uint64_t seed) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.seed = seed;
  g.offset = 0;
}

GeneratorState generator_state() {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  return GeneratorState{g.seed, g.offset};
}

void set_generator_state(const GeneratorState& state) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.seed = state.seed;
  g.offset = state.offset;
}

// ---- unary
// ----------------------------------------------------------------------------------------

Tensor Tensor::neg() const {
  return arith_unary(WICK_OP_NEG, *this);
}
Tensor Tensor::abs() const {
  return arith_unary(WICK_OP_ABS, *this);
}
Tensor Tensor::sign() const {
  return arith_unary(WICK_OP_SIGN, *this);
}
Tensor Tensor::sqr() const {
  return arith_unary(WICK_OP_SQR, *this);
}
Tensor Tensor::relu() const {
  return arith_unary(WICK_OP_RELU, *this);
}

Tensor Tensor::exp() const {
  return table_unary(WICK_OP_EXP, *this);
}
Tensor Tensor::log() const {
  return table_unary(WICK_OP_LOG, *this);
}
Tensor Tensor::sqrt() const {
  return table_unary(WICK_OP_SQRT, *this);
}
Tensor Tensor::rsqrt() const {
  return table_unary(WICK_OP_RSQRT, *this);
}
Tensor Tensor::recip() const {
  return table_unary(WICK_OP_RECIP, *this);
}
Tensor Tensor::tanh() const {
  return table_unary(WICK_OP_TANH, *this);
}
Tensor Tensor::erf() const {
  return table_unary(WICK_OP_ERF, *this);
}
Tensor Tensor::sigmoid() const {
  return table_unary(WICK_OP_SIGMOID, *this);
}
Tensor Tensor::sin() const {
  return table_unary(WICK_OP_SIN, *this);
}
Tensor Tensor::cos() const {
  return table_unary(WICK_OP_COS, *this);
}
Tensor Tensor::tan() const {
  return table_unary(WICK_OP_TAN, *this);
}
Tensor Tensor::asin() const {
  return table_unary(WICK_OP_ASIN, *this);
}
Tensor Tensor::acos() const {
  return table_unary(WICK_OP_ACOS, *this);
}
Tensor Tensor::atan() const {
  return table_unary(WICK_OP_ATAN, *this);
}
Tensor Tensor::sinh() const {
  return table_unary(WICK_OP_SINH, *this);
}
Tensor Tensor::cosh() const {
  return table_unary(WICK_OP_COSH, *this);
}
Tensor Tensor::asinh() const {
  return table_unary(WICK_OP_ASINH, *this);
}
Tensor Tensor::acosh() const {
  return table_unary(WICK_OP_ACOSH, *this);
}
Tensor Tensor::atanh() const {
  return table_unary(WICK_OP_ATANH, *this);
}
Tensor Tensor::expm1() const {
  return table_unary(WICK_OP_EXPM1, *this);
}
Tensor Tensor::log1p() const {
  return table_unary(WICK_OP_LOG1P, *this);
}
Tensor Tensor::cbrt() const {
  return table_unary(WICK_OP_CBRT, *this);
}
Tensor Tensor::erfc() const {
  return table_unary(WICK_OP_ERFC, *this);
}
Tensor Tensor::erfinv() const {
  return table_unary(WICK_OP_ERFINV, *this);
}
Tensor Tensor::gelu() const {
  return table_unary(WICK_OP_GELU_TANH, *this);
}
Tensor Tensor::gelu_erf() const {
  return table_unary(WICK_OP_GELU_ERF, *this);
}
Tensor Tensor::silu() const {
  return table_unary(WICK_OP_SILU, *this);
}

Tensor Tensor::elu(double alpha) const {
  const wick_unary_params p = unary_params(alpha);
  return table_unary(WICK_OP_ELU, *this, &p);
}

Tensor Tensor::powf(double exponent) const {
  const wick_unary_params p = unary_params(exponent);
  return table_unary(WICK_OP_POWF, *this, &p);
}

Tensor Tensor::floor() const {
  return rounding_unary(WICK_OP_FLOOR, *this);
}
Tensor Tensor::ceil() const {
  return rounding_unary(WICK_OP_CEIL, *this);
}

Tensor Tensor::round(bool half_to_even) const {
  const wick_unary_params p = unary_params(
      0.0, 0.0, half_to_even ? WICK_ROUND_HALF_TO_EVEN : WICK_ROUND_HALF_AWAY_FROM_ZERO);
  return rounding_unary(WICK_OP_ROUND, *this, &p);
}

Tensor Tensor::affine(double mul, double add) const {
  require_defined(*this, "affine");
  const wick_unary_params p = unary_params(mul, add);
  if (grad::needs(*this)) return grad::unary(WICK_OP_AFFINE, *this, &p);
  if (is_float(dtype_)) return unary_op(WICK_OP_AFFINE, *this, &p);
  // On integers whole scalars keep the dtype and wrap modulo 2^bits, like the arithmetic; a
  // fractional one gives f32 (as x * 2.5 does). Bool computes in i64, as bool + 2 does.
  const bool whole =
      is_whole(mul) && is_whole(add) && fits(mul, DType::I64) && fits(add, DType::I64);
  if (!whole) return unary_op(WICK_OP_AFFINE, to(DType::F32), &p);
  return unary_op(WICK_OP_AFFINE, dtype_ == DType::Bool ? to(DType::I64) : *this, &p);
}

Tensor Tensor::isnan() const {
  return table_unary(WICK_OP_IS_NAN, *this);
}
Tensor Tensor::isinf() const {
  return table_unary(WICK_OP_IS_INF, *this);
}
Tensor Tensor::logical_not() const {
  return table_unary(WICK_OP_LOGICAL_NOT, *this);
}
Tensor Tensor::bitwise_not() const {
  return table_unary(WICK_OP_BITWISE_NOT, *this);
}
Tensor Tensor::popcount() const {
  return table_unary(WICK_OP_POPCOUNT, *this);
}
Tensor Tensor::clz() const {
  return table_unary(WICK_OP_CLZ, *this);
}

Tensor Tensor::clamp(double lo, double hi) const {
  if (grad::needs(*this)) return grad::clamp(*this, lo, hi);
  require_defined(*this, "clamp");
  // A bound outside an integer dtype's range clamps nothing on its side.
  auto bound = [](const Tensor& x, double v) {
    if (is_integer(x.dtype()) && is_whole(v) && !fits(v, x.dtype())) {
      return sdk::visit_dtype(to_c(x.dtype()), [&](auto tag) {
        using L = std::numeric_limits<typename decltype(tag)::type>;
        return typed_scalar(
            v < 0 ? static_cast<double>(L::lowest()) : static_cast<double>(L::max()), x.dtype(),
            x.device());
      });
    }
    return scalar_operand(x, v, "clamp");
  };
  const Tensor low = maximum(bound(*this, lo));
  return low.minimum(bound(low, hi));
}

Tensor operator-(const Tensor& a) {
  return a.neg();
}

// ---- binary
// ---------------------------------------------------------------------------------------

Tensor Tensor::add(const Tensor& other) const {
  return table_binary(WICK_OP_ADD, *this, other);
}
Tensor Tensor::sub(const Tensor& other) const {
  return table_binary(WICK_OP_SUB, *this, other);
}
Tensor Tensor::mul(const Tensor& other) const {
  return table_binary(WICK_OP_MUL, *this, other);
}
Tensor Tensor::div(const Tensor& other) const {
  return table_binary(WICK_OP_DIV, *this, other);
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return a.add(b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return a.sub(b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return a.mul(b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return a.div(b);
}

Tensor Tensor::maximum(const Tensor& other) const {
  return table_binary(WICK_OP_MAXIMUM, *this, other);
}
Tensor Tensor::minimum(const Tensor& other) const {
  return table_binary(WICK_OP_MINIMUM, *this, other);
}
Tensor Tensor::pow(const Tensor& other) const {
  return table_binary(WICK_OP_POW, *this, other);
}
Tensor Tensor::rem(const Tensor& other) const {
  return table_binary(WICK_OP_REM, *this, other);
}

// Float math: operands that meet in an integer or bool dtype are computed in f32.
Tensor Tensor::atan2(const Tensor& other) const {
  return table_binary(WICK_OP_ATAN2, *this, other);
}

// ---- any elementwise op of the op table, by code
// ---------------------------------------------------

Tensor Tensor::apply(wick_op_code op, const wick_unary_params* params) const {
  const sdk::OpInfo* info = sdk::op_info(op);
  if (info == nullptr || info->kind != sdk::OpKind::UNARY) {
    throw Error(std::string("apply: ") + sdk::op_name(op) + " (" + std::to_string(op) +
                ") is not a unary elementwise op of the op table (wick/wick_ops.h)");
  }
  return table_unary(op, *this, params);
}

Tensor Tensor::apply(wick_op_code op, const Tensor& other) const {
  const sdk::OpInfo* info = sdk::op_info(op);
  if (info == nullptr ||
      (info->kind != sdk::OpKind::BINARY && info->kind != sdk::OpKind::COMPARE)) {
    throw Error(std::string("apply: ") + sdk::op_name(op) + " (" + std::to_string(op) +
                ") is not a binary elementwise op or comparison of the op table (wick/wick_ops.h)");
  }
  return table_binary(op, *this, other);
}

Tensor Tensor::eq(const Tensor& other) const {
  return table_binary(WICK_OP_EQ, *this, other);
}
Tensor Tensor::ne(const Tensor& other) const {
  return table_binary(WICK_OP_NE, *this, other);
}
Tensor Tensor::lt(const Tensor& other) const {
  return table_binary(WICK_OP_LT, *this, other);
}
Tensor Tensor::le(const Tensor& other) const {
  return table_binary(WICK_OP_LE, *this, other);
}
Tensor Tensor::gt(const Tensor& other) const {
  return table_binary(WICK_OP_GT, *this, other);
}
Tensor Tensor::ge(const Tensor& other) const {
  return table_binary(WICK_OP_GE, *this, other);
}

Tensor Tensor::bitwise_and(const Tensor& other) const {
  return table_binary(WICK_OP_BITWISE_AND, *this, other);
}
Tensor Tensor::bitwise_or(const Tensor& other) const {
  return table_binary(WICK_OP_BITWISE_OR, *this, other);
}
Tensor Tensor::bitwise_xor(const Tensor& other) const {
  return table_binary(WICK_OP_BITWISE_XOR, *this, other);
}
Tensor Tensor::shl(const Tensor& other) const {
  return table_binary(WICK_OP_SHL, *this, other);
}
Tensor Tensor::shr(const Tensor& other) const {
  return table_binary(WICK_OP_SHR, *this, other);
}

// Logical ops see x != 0 (NaN is true), like a cast to bool.
Tensor Tensor::logical_and(const Tensor& other) const {
  common_dtype("logical_and", *this, other);
  return binary_op(WICK_OP_BITWISE_AND, to(DType::Bool), other.to(DType::Bool));
}
Tensor Tensor::logical_or(const Tensor& other) const {
  common_dtype("logical_or", *this, other);
  return binary_op(WICK_OP_BITWISE_OR, to(DType::Bool), other.to(DType::Bool));
}
Tensor Tensor::logical_xor(const Tensor& other) const {
  common_dtype("logical_xor", *this, other);
  return binary_op(WICK_OP_BITWISE_XOR, to(DType::Bool), other.to(DType::Bool));
}

Tensor Tensor::where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (grad::needs({&a, &b})) return grad::where(cond, a, b);
  require_defined(cond, "where");
  const DType t = common_dtype("where", a, b);
  if (cond.dtype() != DType::Bool) {
    throw Error(std::string("where: the condition must be bool, got ") + dtype_name(cond.dtype()) +
                "; compare first (x.ne(zero)) or convert with .to(DType::Bool)");
  }
  require_same_device(cond, a, "where");
  require_same_device(cond, b, "where");
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, t, cond.device());
  if (out.numel() > 0) {
    dispatch(WICK_OP_WHERE, nullptr,
             {cond.broadcast_to(shape), a.to(t).broadcast_to(shape), b.to(t).broadcast_to(shape)},
             {out});
  }
  return out;
}

// ---- scalar operators
// -----------------------------------------------------------------------------

Tensor operator+(const Tensor& a, double b) {
  return a.add(scalar_operand(a, b, "add"));
}
Tensor operator-(const Tensor& a, double b) {
  return a.sub(scalar_operand(a, b, "sub"));
}
Tensor operator*(const Tensor& a, double b) {
  return a.mul(scalar_operand(a, b, "mul"));
}
Tensor operator/(const Tensor& a, double b) {
  return a.div(scalar_operand(a, b, "div"));
}
Tensor operator+(double a, const Tensor& b) {
  return scalar_operand(b, a, "add").add(b);
}
Tensor operator-(double a, const Tensor& b) {
  return scalar_operand(b, a, "sub").sub(b);
}
Tensor operator*(double a, const Tensor& b) {
  return scalar_operand(b, a, "mul").mul(b);
}
Tensor operator/(double a, const Tensor& b) {
  return scalar_operand(b, a, "div").div(b);
}

}  // namespace wick
