// Binary elementwise kernels (docs/ops/elementwise.md): add, sub, mul, div, maximum, minimum, pow,
// rem, atan2, the comparisons (-> bool), bitwise and/or/xor and the shifts. Inputs arrive in one
// dtype, broadcast (stride 0) to the output's shape; f16/bf16 are computed in f32 and rounded once.
#include "elementwise_loops.hpp"

#include <cmath>

namespace wick::cpu {

namespace {

// Integer semantics of docs/ops.md, "Integers": no undefined behaviour for any operands.
template <class T>
struct IntOps {
  using U = std::make_unsigned_t<T>;
  using W = typename Wrap<T>::W;
  static constexpr T kBits = static_cast<T>(sizeof(T) * 8);

  // Truncates toward zero; x / 0 is 0; MIN / -1 wraps to MIN.
  static T div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return Wrap<T>::neg(a);
    }
    return static_cast<T>(a / b);
  }
  // The sign of the dividend (C %); x rem 0 is 0; MIN rem -1 is 0.
  static T rem(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return static_cast<T>(a % b);
  }
  // Exact modulo 2^bits for exponents >= 0; a negative exponent gives the truncated 1 / a^-b:
  // 1 for a == 1, +-1 for a == -1, and 0 otherwise (also for a == 0, like x / 0).
  static T pow(T a, T b) {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    W result = 1, base = W(U(a));
    for (U e = U(b); e != 0; e = static_cast<U>(e >> 1)) {
      if (e & 1u) result *= base;
      base *= base;
    }
    return static_cast<T>(result);
  }
  static bool in_range(T count) {
    if constexpr (std::is_signed_v<T>) return count >= 0 && count < kBits;
    else return count < kBits;
  }
  // A count outside [0, bits) shifts every bit out: 0, or -1 for shr of a negative value.
  static T shl(T a, T b) { return in_range(b) ? static_cast<T>(W(U(a)) << b) : T(0); }
  static T shr(T a, T b) {
    if (in_range(b)) return static_cast<T>(a >> b);  // arithmetic for signed (C++20), logical else
    if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
    else return T(0);
  }
};

constexpr bool is_compare(int code) { return code >= WICK_OP_EQ && code <= WICK_OP_GE; }

// The dtypes op Code runs on: the op table's (wick_ops.h), asked by supports and execute alike.
template <int Code, class T>
constexpr bool allowed() {
  return sdk::op_defined_for<Code, T>();
}

// Op Code on the compute type C of T.
// pow for floats, with the exponents exported models use most (GELU's x^3, variance's x^2) done
// without the libm call: x^2 as x * x (one rounding: what a correctly rounded pow gives), and for
// float x^3 in double (x * x exact, one more rounding to double, then to float), within the
// error of libm's powf; every other exponent through std::pow.
template <class C>
C pow_float(C a, C b) {
  if (b == C(2)) return a * a;
  if constexpr (std::is_same_v<C, float>) {
    if (b == 3.0f) return static_cast<float>(static_cast<double>(a) * a * a);
  }
  return std::pow(a, b);
}

template <int Code, class T, class C = compute_t<T>>
auto binary_fn(C a, C b) {
  if constexpr (is_compare(Code)) {
    if constexpr (Code == WICK_OP_EQ) return a == b;
    else if constexpr (Code == WICK_OP_NE) return a != b;
    else if constexpr (Code == WICK_OP_LT) return a < b;
    else if constexpr (Code == WICK_OP_LE) return a <= b;
    else if constexpr (Code == WICK_OP_GT) return a > b;
    else return a >= b;
  } else if constexpr (std::is_same_v<T, bool>) {
    // add is logical or, mul logical and; maximum is or, minimum is and.
    if constexpr (Code == WICK_OP_ADD || Code == WICK_OP_MAXIMUM || Code == WICK_OP_BITWISE_OR) return a || b;
    else if constexpr (Code == WICK_OP_MUL || Code == WICK_OP_MINIMUM || Code == WICK_OP_BITWISE_AND) return a && b;
    else return a != b;  // xor
  } else if constexpr (is_float_v<T>) {
    if constexpr (Code == WICK_OP_ADD) return a + b;
    else if constexpr (Code == WICK_OP_SUB) return a - b;
    else if constexpr (Code == WICK_OP_MUL) return a * b;
    else if constexpr (Code == WICK_OP_DIV) return a / b;
    else if constexpr (Code == WICK_OP_MAXIMUM) return (a > b || a != a) ? a : b;  // either NaN gives NaN
    else if constexpr (Code == WICK_OP_MINIMUM) return (a < b || a != a) ? a : b;
    else if constexpr (Code == WICK_OP_POW) return pow_float(a, b);
    else if constexpr (Code == WICK_OP_REM) return std::fmod(a, b);
    else if constexpr (Code == WICK_OP_HYPOT) return std::hypot(a, b);
    else {
      static_assert(Code == WICK_OP_ATAN2, "binary.cpp: no float function for this op");
      return std::atan2(a, b);
    }
  } else {
    using I = IntOps<T>;
    if constexpr (Code == WICK_OP_ADD) return Wrap<T>::add(a, b);
    else if constexpr (Code == WICK_OP_SUB) return Wrap<T>::sub(a, b);
    else if constexpr (Code == WICK_OP_MUL) return Wrap<T>::mul(a, b);
    else if constexpr (Code == WICK_OP_DIV) return I::div(a, b);
    else if constexpr (Code == WICK_OP_MAXIMUM) return a > b ? a : b;
    else if constexpr (Code == WICK_OP_MINIMUM) return a < b ? a : b;
    else if constexpr (Code == WICK_OP_POW) return I::pow(a, b);
    else if constexpr (Code == WICK_OP_REM) return I::rem(a, b);
    else if constexpr (Code == WICK_OP_BITWISE_AND) return static_cast<T>(a & b);
    else if constexpr (Code == WICK_OP_BITWISE_OR) return static_cast<T>(a | b);
    else if constexpr (Code == WICK_OP_BITWISE_XOR) return static_cast<T>(a ^ b);
    else if constexpr (Code == WICK_OP_SHL) return I::shl(a, b);
    else {
      static_assert(Code == WICK_OP_SHR, "binary.cpp: no integer function for this op");
      return I::shr(a, b);
    }
  }
}

template <int Code>
wick_support binary_supports(const wick_op_desc& op) {
  if (op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype t = op.inputs[0].dtype;
  if (op.outputs[0].dtype != (is_compare(Code) ? WICK_DTYPE_BOOL : t)) return WICK_SUPPORT_NO_DTYPE;
  if (const wick_support s = check_elementwise(op, 2, t); s != WICK_SUPPORT_YES) return s;
  const bool ok = sdk::visit_dtype(t, [](auto tag) { return allowed<Code, typename decltype(tag)::type>(); });
  return ok ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <int Code>
void binary_execute(Context& ctx, const wick_op_desc& op) {
  sdk::visit_dtype(op.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (!allowed<Code, T>()) {
      return;  // op_supports said no
    } else if constexpr (is_compare(Code)) {
      map_binary<bool, T>(ctx, op, [](T a, T b) { return binary_fn<Code, T>(static_cast<C>(a), static_cast<C>(b)); });
    } else {
      map_binary_same<T>(ctx, op, [](C a, C b) { return binary_fn<Code, T>(a, b); });
    }
  });
}

// The kernel of every binary and comparison op of the op table.
template <int Code>
struct BinaryFamily {
  static constexpr Kernel kernel() {
    constexpr sdk::OpKind kind = sdk::op_row<Code>().kind;
    if constexpr (kind == sdk::OpKind::BINARY || kind == sdk::OpKind::COMPARE)
      return {&binary_execute<Code>, &binary_supports<Code>};
    else
      return {};
  }
};

}  // namespace

Kernel binary_kernel(int op) {
  return kernel_of<BinaryFamily>(op);
}

}  // namespace wick::cpu
