// Each elementwise op of the op table as an expression of the neutral kernel dialect, one row per
// op: on floats (computed in f32 for f16/bf16, f64 for f64), on integers (wrapping, through the
// wide unsigned type: no undefined behaviour for any operands) and on bool. The semantics are
// docs/ops.md's and match the CPU plugin's kernels.
#include "generator.hpp"

namespace wick::gpu::detail {

// Wrapping integer arithmetic.
#define WRAP(expr) "($T)(" expr ")"
#define WU(x) "($W)($U)" x

const OpExpr kOpExprs[] = {
    // ---- unary ----
    {WICK_OP_NEG, "-v", WRAP("($W)0 - " WU("v")), nullptr},
    {WICK_OP_ABS, "fabs(v)", "($S && v < 0) ? " WRAP("($W)0 - " WU("v")) " : v", nullptr},
    {WICK_OP_SIGN, "v > ($C)0 ? ($C)1 : v < ($C)0 ? ($C)-1 : v",
     "$S ? ($T)((v > 0) - (v < 0)) : ($T)(v != 0)", nullptr},
    {WICK_OP_EXP, "exp(v)", nullptr, nullptr},
    {WICK_OP_LOG, "log(v)", nullptr, nullptr},
    {WICK_OP_SQRT, "sqrt(v)", nullptr, nullptr},
    {WICK_OP_RSQRT, "($C)1 / sqrt(v)", nullptr, nullptr},
    {WICK_OP_RECIP, "($C)1 / v", nullptr, nullptr},
    {WICK_OP_SQR, "v * v", WRAP(WU("v") " * " WU("v")), nullptr},
    {WICK_OP_TANH, "tanh(v)", nullptr, nullptr},
    {WICK_OP_ERF, "erf(v)", nullptr, nullptr},
    {WICK_OP_SIGMOID, "($C)1 / (($C)1 + exp(-v))", nullptr, nullptr},
    {WICK_OP_SIN, "sin(v)", nullptr, nullptr},
    {WICK_OP_COS, "cos(v)", nullptr, nullptr},
    {WICK_OP_TAN, "tan(v)", nullptr, nullptr},
    {WICK_OP_ASIN, "asin(v)", nullptr, nullptr},
    {WICK_OP_ACOS, "acos(v)", nullptr, nullptr},
    {WICK_OP_ATAN, "atan(v)", nullptr, nullptr},
    {WICK_OP_SINH, "sinh(v)", nullptr, nullptr},
    {WICK_OP_COSH, "cosh(v)", nullptr, nullptr},
    {WICK_OP_ASINH, "asinh(v)", nullptr, nullptr},
    {WICK_OP_ACOSH, "acosh(v)", nullptr, nullptr},
    {WICK_OP_ATANH, "atanh(v)", nullptr, nullptr},
    {WICK_OP_EXPM1, "expm1(v)", nullptr, nullptr},
    {WICK_OP_LOG1P, "log1p(v)", nullptr, nullptr},
    {WICK_OP_CBRT, "cbrt(v)", nullptr, nullptr},
    {WICK_OP_ERFC, "erfc(v)", nullptr, nullptr},
    {WICK_OP_ERFINV, "($C)wk_erfinv((wk_wide)v)", nullptr, nullptr},
    {WICK_OP_FLOOR, "floor(v)", nullptr, nullptr},
    {WICK_OP_CEIL, "ceil(v)", nullptr, nullptr},
    {WICK_OP_ROUND, "mode == 1 ? ($C)wk_round_even((wk_wide)v) : round(v)", nullptr, nullptr},
    {WICK_OP_RELU, "v < ($C)0 ? ($C)0 : v", "($S && v < 0) ? ($T)0 : v", nullptr},
    {WICK_OP_GELU_TANH, "v == -($C)WK_INF_F ? ($C)0 : ($C)wk_gelu_tanh((wk_wide)v)", nullptr,
     nullptr},
    {WICK_OP_GELU_ERF, "v == -($C)WK_INF_F ? ($C)0 : ($C)wk_gelu_erf((wk_wide)v)", nullptr,
     nullptr},
    {WICK_OP_SILU, "v == -($C)WK_INF_F ? ($C)0 : v / (($C)1 + exp(-v))", nullptr, nullptr},
    {WICK_OP_ELU, "v > ($C)0 ? v : alpha * expm1(v)", nullptr, nullptr},
    {WICK_OP_AFFINE, "v * alpha + beta", WRAP(WU("v") " * " WU("($T)alpha") " + " WU("($T)beta")),
     nullptr},
    {WICK_OP_POWF, "pow(v, alpha)", nullptr, nullptr},
    {WICK_OP_IS_NAN, "isnan(v)", "0", "0"},
    {WICK_OP_IS_INF, "isinf(v)", "0", "0"},
    {WICK_OP_LOGICAL_NOT, "v == ($C)0", "v == 0", "v == 0"},
    {WICK_OP_BITWISE_NOT, nullptr, "($T)~v", "($T)(v == 0)"},
    {WICK_OP_POPCOUNT, nullptr, "($T)wk_popcount((wk_u64)($U)v)", nullptr},
    {WICK_OP_CLZ, nullptr, "($T)wk_clz((wk_u64)($U)v, $B)", nullptr},
    // ---- binary ----
    {WICK_OP_ADD, "a + b", WRAP(WU("a") " + " WU("b")), "($T)(a || b)"},
    {WICK_OP_SUB, "a - b", WRAP(WU("a") " - " WU("b")), nullptr},
    {WICK_OP_MUL, "a * b", WRAP(WU("a") " * " WU("b")), "($T)(a && b)"},
    {WICK_OP_DIV, "a / b",
     "b == 0 ? ($T)0 : ($S && b == ($T)-1) ? " WRAP("($W)0 - " WU("a")) " : ($T)(a / b)", nullptr},
    {WICK_OP_MAXIMUM, "(a > b || isnan(a)) ? a : b", "a > b ? a : b", "($T)(a || b)"},
    {WICK_OP_MINIMUM, "(a < b || isnan(a)) ? a : b", "a < b ? a : b", "($T)(a && b)"},
    {WICK_OP_POW, "pow(a, b)", "($T)wk_ipow((wk_i64)a, (wk_i64)b, $S)", nullptr},
    {WICK_OP_REM, "fmod(a, b)", "(b == 0 || ($S && b == ($T)-1)) ? ($T)0 : ($T)(a % b)", nullptr},
    {WICK_OP_ATAN2, "atan2(a, b)", nullptr, nullptr},
    {WICK_OP_HYPOT, "hypot(a, b)", nullptr, nullptr},
    {WICK_OP_BITWISE_AND, nullptr, "($T)(a & b)", "($T)(a && b)"},
    {WICK_OP_BITWISE_OR, nullptr, "($T)(a | b)", "($T)(a || b)"},
    {WICK_OP_BITWISE_XOR, nullptr, "($T)(a ^ b)", "($T)(a != b)"},
    // A count outside [0, bits) shifts every bit out: 0, or -1 for shr of a negative value.
    {WICK_OP_SHL, nullptr, "((wk_u64)b < (wk_u64)$B) ? " WRAP(WU("a") " << b") " : ($T)0", nullptr},
    {WICK_OP_SHR, nullptr,
     "((wk_u64)b < (wk_u64)$B) ? ($T)(a >> b) : ($S && a < 0) ? ($T)-1 : ($T)0", nullptr},
    // ---- comparisons (bool out) ----
    {WICK_OP_EQ, "a == b", "a == b", "a == b"},
    {WICK_OP_NE, "a != b", "a != b", "a != b"},
    {WICK_OP_LT, "a < b", "a < b", "a < b"},
    {WICK_OP_LE, "a <= b", "a <= b", "a <= b"},
    {WICK_OP_GT, "a > b", "a > b", "a > b"},
    {WICK_OP_GE, "a >= b", "a >= b", "a >= b"},
};
const size_t kOpExprCount = sizeof(kOpExprs) / sizeof(kOpExprs[0]);

#undef WRAP
#undef WU

const OpExpr* op_expr(wick_op_code op) {
  for (size_t i = 0; i < kOpExprCount; ++i)
    if (kOpExprs[i].op == op) return &kOpExprs[i];
  return nullptr;
}

}  // namespace wick::gpu::detail
