// Unary elementwise kernels (docs/ops/elementwise.md): math and activations on floats; neg, abs,
// sign, sqr, relu and affine on floats and integers; the predicates is_nan, is_inf and logical_not
// (any dtype -> bool); bitwise_not (integers, bool), popcount and clz (integers). f16/bf16 are
// computed in f32 and rounded once on store. The transcendental float ops run on SLEEF's vector
// functions (vector_math.hpp) where the plugin is built with them, by float_fn's formulas.
#include "elementwise_loops.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>

namespace wick::cpu {

namespace {

// Predicates (any dtype -> bool) are the unary ops whose output is bool.
constexpr bool is_predicate(int code) {
  return sdk::op_info(code)->out == sdk::OutDType::BOOL;
}

// The dtypes op Code runs on: the op table's (wick_ops.h), asked by supports and execute alike.
template <int Code, class T>
constexpr bool allowed() {
  return sdk::op_defined_for<Code, T>();
}

constexpr bool needs_params(int code) {
  return code == WICK_OP_ELU || code == WICK_OP_AFFINE || code == WICK_OP_POWF;
}

// The scalars of wick_unary_params; ROUND without params rounds half away from zero.
struct Scalars {
  double alpha = 0.0;
  double beta = 0.0;
  int32_t mode = WICK_ROUND_HALF_AWAY_FROM_ZERO;
};

bool read_scalars(const void* params, Scalars& s) {
  if (params == nullptr) return true;
  const auto& p = *static_cast<const wick_unary_params*>(params);
  // The host may be older: read only the fields inside the size it declared.
  if (p.struct_size < offsetof(wick_unary_params, beta) + sizeof(double)) return false;
  s.alpha = p.alpha;
  s.beta = p.beta;
  if (p.struct_size >= offsetof(wick_unary_params, mode) + sizeof(int32_t)) s.mode = p.mode;
  return true;
}

// Integer affine scalars are whole numbers that fit int64 (the host converts otherwise).
bool is_int64_integral(double v) {
  return std::isfinite(v) && std::trunc(v) == v && v >= -0x1p63 && v < 0x1p63;
}

template <class T>
using Lim = std::numeric_limits<T>;

// The inverse error function in double precision: Giles' single-precision approximation ("Approximating
// the erfinv function", GPU Gems 4, 2010) as a first guess, then Newton steps on erf, or on erfc
// near +-1 where erf is too flat to resolve the root.
double erfinv(double y) {
  if (!(y >= -1.0 && y <= 1.0)) return Lim<double>::quiet_NaN();
  if (y == 1.0) return Lim<double>::infinity();
  if (y == -1.0) return -Lim<double>::infinity();
  if (y == 0.0) return y;
  double w = -std::log((1.0 - y) * (1.0 + y));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  constexpr double kTwoOverSqrtPi = 1.1283791670955125738961589031215;
  for (int i = 0; i < 8; ++i) {
    // erf(x) - y, written so that no digits cancel: 1 - y and 1 + y are exact for |y| >= 0.5.
    const double f = std::abs(y) < 0.5 ? std::erf(x) - y
                     : y > 0.0         ? (1.0 - y) - std::erfc(x)
                                       : std::erfc(-x) - (1.0 + y);
    const double step = f / (kTwoOverSqrtPi * std::exp(-x * x));
    x -= step;
    if (!(std::abs(step) > 1e-17 * std::abs(x))) break;
  }
  return x;
}

template <class C>
C round_half_away(C x) {
  return std::round(x);
}
// Independent of the floating-point environment's rounding mode.
template <class C>
C round_half_even(C x) {
  const C r = std::round(x);
  return std::abs(x - std::trunc(x)) == C(0.5) ? C(2) * std::round(x / C(2)) : r;
}

// Float math, on the compute type C (f32 or f64).
template <int Code, class C>
C float_fn(C x, const Scalars& s) {
  constexpr C kInf = Lim<C>::infinity();
  if constexpr (Code == WICK_OP_NEG) return -x;
  else if constexpr (Code == WICK_OP_ABS) return std::abs(x);
  else if constexpr (Code == WICK_OP_SIGN) return x > C(0) ? C(1) : x < C(0) ? C(-1) : x;  // NaN, +-0 kept
  else if constexpr (Code == WICK_OP_EXP) return std::exp(x);
  else if constexpr (Code == WICK_OP_LOG) return std::log(x);
  else if constexpr (Code == WICK_OP_SQRT) return std::sqrt(x);
  else if constexpr (Code == WICK_OP_RSQRT) return C(1) / std::sqrt(x);
  else if constexpr (Code == WICK_OP_RECIP) return C(1) / x;
  else if constexpr (Code == WICK_OP_SQR) return x * x;
  else if constexpr (Code == WICK_OP_TANH) return std::tanh(x);
  else if constexpr (Code == WICK_OP_ERF) return std::erf(x);
  else if constexpr (Code == WICK_OP_SIGMOID) return C(1) / (C(1) + std::exp(-x));
  else if constexpr (Code == WICK_OP_SIN) return std::sin(x);
  else if constexpr (Code == WICK_OP_COS) return std::cos(x);
  else if constexpr (Code == WICK_OP_TAN) return std::tan(x);
  else if constexpr (Code == WICK_OP_ASIN) return std::asin(x);
  else if constexpr (Code == WICK_OP_ACOS) return std::acos(x);
  else if constexpr (Code == WICK_OP_ATAN) return std::atan(x);
  else if constexpr (Code == WICK_OP_SINH) return std::sinh(x);
  else if constexpr (Code == WICK_OP_COSH) return std::cosh(x);
  else if constexpr (Code == WICK_OP_ASINH) return std::asinh(x);
  else if constexpr (Code == WICK_OP_ACOSH) return std::acosh(x);
  else if constexpr (Code == WICK_OP_ATANH) return std::atanh(x);
  else if constexpr (Code == WICK_OP_EXPM1) return std::expm1(x);
  else if constexpr (Code == WICK_OP_LOG1P) return std::log1p(x);
  else if constexpr (Code == WICK_OP_CBRT) return std::cbrt(x);
  else if constexpr (Code == WICK_OP_ERFC) return std::erfc(x);
  else if constexpr (Code == WICK_OP_ERFINV) return static_cast<C>(erfinv(static_cast<double>(x)));
  else if constexpr (Code == WICK_OP_FLOOR) return std::floor(x);
  else if constexpr (Code == WICK_OP_CEIL) return std::ceil(x);
  else if constexpr (Code == WICK_OP_RELU) return x < C(0) ? C(0) : x;  // NaN propagates
  else if constexpr (Code == WICK_OP_GELU_TANH) {
    // 0.5 x (1 + tanh(u)) = x sigmoid(2u): the same function without the cancellation for x < 0.
    // In f64 for every dtype here (the scalar path); the vector kernels keep f32 in f32 (vector_math).
    const double d = static_cast<double>(x);
    const double u = 0.79788456080286535587989211986876 * (d + 0.044715 * d * d * d);
    return x == -kInf ? C(0) : static_cast<C>(d / (1.0 + std::exp(-2.0 * u)));
  } else if constexpr (Code == WICK_OP_GELU_ERF) {
    // 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), exact for x < 0 too; f64 as above.
    const double d = static_cast<double>(x);
    return x == -kInf ? C(0) : static_cast<C>(0.5 * d * std::erfc(-d * 0.70710678118654752440084436210485));
  } else if constexpr (Code == WICK_OP_SILU) {
    return x == -kInf ? C(0) : x / (C(1) + std::exp(-x));
  } else if constexpr (Code == WICK_OP_ELU) {
    return x > C(0) ? x : static_cast<C>(s.alpha) * std::expm1(x);
  } else if constexpr (Code == WICK_OP_AFFINE) {
    return x * static_cast<C>(s.alpha) + static_cast<C>(s.beta);
  } else if constexpr (Code == WICK_OP_POWF) {
    return std::pow(x, static_cast<C>(s.alpha));
  } else {
    static_assert(Code == WICK_OP_ROUND, "no float function for this op");
    return s.mode == WICK_ROUND_HALF_TO_EVEN ? round_half_even(x) : round_half_away(x);
  }
}

// The vector function computing float_fn<Code> (vector_math.hpp), or -1 where there is none.
template <int Code>
constexpr int vector_fn() {
  using vecmath::Fn;
  if constexpr (!vecmath::kAvailable) return -1;
  switch (Code) {
    case WICK_OP_EXP: return static_cast<int>(Fn::EXP);
    case WICK_OP_LOG: return static_cast<int>(Fn::LOG);
    case WICK_OP_TANH: return static_cast<int>(Fn::TANH);
    case WICK_OP_ERF: return static_cast<int>(Fn::ERF);
    case WICK_OP_ERFC: return static_cast<int>(Fn::ERFC);
    case WICK_OP_SIN: return static_cast<int>(Fn::SIN);
    case WICK_OP_COS: return static_cast<int>(Fn::COS);
    case WICK_OP_TAN: return static_cast<int>(Fn::TAN);
    case WICK_OP_ASIN: return static_cast<int>(Fn::ASIN);
    case WICK_OP_ACOS: return static_cast<int>(Fn::ACOS);
    case WICK_OP_ATAN: return static_cast<int>(Fn::ATAN);
    case WICK_OP_SINH: return static_cast<int>(Fn::SINH);
    case WICK_OP_COSH: return static_cast<int>(Fn::COSH);
    case WICK_OP_ASINH: return static_cast<int>(Fn::ASINH);
    case WICK_OP_ACOSH: return static_cast<int>(Fn::ACOSH);
    case WICK_OP_ATANH: return static_cast<int>(Fn::ATANH);
    case WICK_OP_EXPM1: return static_cast<int>(Fn::EXPM1);
    case WICK_OP_LOG1P: return static_cast<int>(Fn::LOG1P);
    case WICK_OP_CBRT: return static_cast<int>(Fn::CBRT);
    case WICK_OP_POWF: return static_cast<int>(Fn::POW);
    case WICK_OP_SIGMOID: return static_cast<int>(Fn::SIGMOID);
    case WICK_OP_SILU: return static_cast<int>(Fn::SILU);
    case WICK_OP_ELU: return static_cast<int>(Fn::ELU);
    case WICK_OP_GELU_TANH: return static_cast<int>(Fn::GELU_TANH);
    case WICK_OP_GELU_ERF: return static_cast<int>(Fn::GELU_ERF);
    default: return -1;
  }
}

// f16/bf16 and strided rows go through a block of this many compute-type values.
constexpr int64_t kVectorBlock = 256;

// out[i] = fn(in[i]) on the vector kernels: contiguous f32/f64 rows in place, others through a block.
template <class T>
void map_unary_vector(const Context& ctx, const wick_op_desc& op, vecmath::Fn fn, double alpha) {
  using C = compute_t<T>;
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  const T* pi = data_of<const T>(in);
  T* po = data_of<T>(out);
  const C a = static_cast<C>(alpha);
  parallel_rows<2>(ctx, out, {out.strides, in.strides}, [&](const sdk::Row<2>& r) {
    T* o = po + r.offset[0];
    const T* x = pi + r.offset[1];
    if constexpr (std::is_same_v<T, C>) {
      if (r.stride[0] == 1 && r.stride[1] == 1) return vecmath::apply(fn, x, o, r.length, a);
    }
    C block[kVectorBlock];
    for (int64_t s = 0; s < r.length; s += kVectorBlock) {
      const int64_t m = std::min(kVectorBlock, r.length - s);
      for (int64_t i = 0; i < m; ++i) block[i] = static_cast<C>(x[(s + i) * r.stride[1]]);
      vecmath::apply(fn, block, block, m, a);
      for (int64_t i = 0; i < m; ++i) o[(s + i) * r.stride[0]] = static_cast<T>(block[i]);
    }
  });
}

// Integer arithmetic (wraps, docs/ops.md): neg and abs of MIN give MIN, neg of unsigned wraps.
template <int Code, class T>
T int_fn(T x, T alpha, T beta) {
  using Wr = Wrap<T>;
  if constexpr (Code == WICK_OP_NEG) return Wr::neg(x);
  else if constexpr (Code == WICK_OP_ABS) {
    if constexpr (std::is_signed_v<T>) return x < 0 ? Wr::neg(x) : x;
    else return x;
  } else if constexpr (Code == WICK_OP_SIGN) {
    if constexpr (std::is_signed_v<T>) return static_cast<T>((x > 0) - (x < 0));
    else return static_cast<T>(x != 0);
  } else if constexpr (Code == WICK_OP_SQR) return Wr::mul(x, x);
  else if constexpr (Code == WICK_OP_RELU) {
    if constexpr (std::is_signed_v<T>) return x < 0 ? T(0) : x;
    else return x;
  } else if constexpr (Code == WICK_OP_AFFINE) return Wr::add(Wr::mul(x, alpha), beta);
  else if constexpr (Code == WICK_OP_BITWISE_NOT) return static_cast<T>(~x);
  else if constexpr (Code == WICK_OP_POPCOUNT) return static_cast<T>(std::popcount(static_cast<std::make_unsigned_t<T>>(x)));
  else {
    static_assert(Code == WICK_OP_CLZ, "no integer function for this op");
    return static_cast<T>(std::countl_zero(static_cast<std::make_unsigned_t<T>>(x)));
  }
}

template <int Code, class T>
bool predicate(T x) {
  if constexpr (is_float_v<T>) {
    const compute_t<T> v = static_cast<compute_t<T>>(x);
    if constexpr (Code == WICK_OP_IS_NAN) return v != v;
    else if constexpr (Code == WICK_OP_IS_INF) return std::isinf(v);
    else return v == compute_t<T>(0);  // logical_not; NaN is true, so its negation is false
  } else {
    if constexpr (Code == WICK_OP_LOGICAL_NOT) return x == T(0);
    else return false;  // integers and bool are never NaN or infinite
  }
}

template <int Code>
wick_support unary_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype in = op.inputs[0].dtype;
  const wick_dtype out = is_predicate(Code) ? WICK_DTYPE_BOOL : in;
  if (op.outputs[0].dtype != out) return WICK_SUPPORT_NO_DTYPE;
  if (const wick_support s = check_elementwise(op, 1, in); s != WICK_SUPPORT_YES) return s;
  const bool ok = sdk::visit_dtype(in, [](auto tag) { return allowed<Code, typename decltype(tag)::type>(); });
  if (!ok) return WICK_SUPPORT_NO_DTYPE;
  Scalars s;
  if (!read_scalars(op.params, s) || (needs_params(Code) && op.params == nullptr)) return WICK_SUPPORT_NO_PARAMS;
  if (Code == WICK_OP_ROUND && s.mode != WICK_ROUND_HALF_AWAY_FROM_ZERO && s.mode != WICK_ROUND_HALF_TO_EVEN)
    return WICK_SUPPORT_NO_PARAMS;
  if (Code == WICK_OP_AFFINE && is_int_dtype(in) && !(is_int64_integral(s.alpha) && is_int64_integral(s.beta)))
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

template <int Code>
void unary_execute(Context& ctx, const wick_op_desc& op) {
  Scalars s;
  read_scalars(op.params, s);
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  sdk::visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (!allowed<Code, T>()) {
      return;  // op_supports said no
    } else if constexpr (is_predicate(Code)) {
      map_unary<bool, T>(ctx, in, out, [](T x) { return predicate<Code>(x); });
    } else if constexpr (std::is_same_v<T, bool>) {
      map_unary<bool, bool>(ctx, in, out, [](bool x) { return !x; });  // bitwise_not
    } else if constexpr (is_int_v<T>) {
      // Integer scalars wrap modulo 2^bits, like the arithmetic (checked integral in supports).
      const T alpha = static_cast<T>(static_cast<int64_t>(s.alpha));
      const T beta = static_cast<T>(static_cast<int64_t>(s.beta));
      map_unary<T, T>(ctx, in, out, [alpha, beta](T x) { return int_fn<Code, T>(x, alpha, beta); });
    } else if constexpr (Code == WICK_OP_ROUND) {
      // Hoist the mode out of the loop.
      if (s.mode == WICK_ROUND_HALF_TO_EVEN) map_unary_same<T>(ctx, op, [](C x) { return round_half_even(x); });
      else map_unary_same<T>(ctx, op, [](C x) { return round_half_away(x); });
    } else if constexpr (vector_fn<Code>() >= 0) {
      map_unary_vector<T>(ctx, op, static_cast<vecmath::Fn>(vector_fn<Code>()), s.alpha);
    } else {
      map_unary_same<T>(ctx, op, [s](C x) { return float_fn<Code, C>(x, s); });
    }
  });
}

// The kernel of every unary op of the op table.
template <int Code>
struct UnaryFamily {
  static constexpr Kernel kernel() {
    if constexpr (sdk::op_row<Code>().kind == sdk::OpKind::UNARY)
      return {&unary_execute<Code>, &unary_supports<Code>};
    else
      return {};
  }
};

}  // namespace

Kernel unary_kernel(int op) {
  return kernel_of<UnaryFamily>(op);
}

}  // namespace wick::cpu
