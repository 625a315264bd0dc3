// wick/sdk/ops.hpp — the printable name of every op code, for messages and reports.
#pragma once

#include <wick/wick_plugin.h>

namespace wick::sdk {

inline const char* op_name(wick_op_code op) {
  switch (op) {
#define WICK_OP_NAME(code, text) \
  case WICK_OP_##code: return text;
    WICK_OP_NAME(COPY, "copy") WICK_OP_NAME(FILL, "fill") WICK_OP_NAME(IOTA, "iota")
    WICK_OP_NAME(CAST, "cast") WICK_OP_NAME(RNG_UNIFORM, "rng_uniform")
    WICK_OP_NAME(RNG_NORMAL, "rng_normal") WICK_OP_NAME(NEG, "neg") WICK_OP_NAME(ABS, "abs")
    WICK_OP_NAME(SIGN, "sign") WICK_OP_NAME(EXP, "exp") WICK_OP_NAME(LOG, "log")
    WICK_OP_NAME(SQRT, "sqrt") WICK_OP_NAME(RSQRT, "rsqrt") WICK_OP_NAME(RECIP, "recip")
    WICK_OP_NAME(SQR, "sqr") WICK_OP_NAME(TANH, "tanh") WICK_OP_NAME(ERF, "erf")
    WICK_OP_NAME(SIGMOID, "sigmoid") WICK_OP_NAME(SIN, "sin") WICK_OP_NAME(COS, "cos")
    WICK_OP_NAME(TAN, "tan") WICK_OP_NAME(ASIN, "asin") WICK_OP_NAME(ACOS, "acos")
    WICK_OP_NAME(ATAN, "atan") WICK_OP_NAME(SINH, "sinh") WICK_OP_NAME(COSH, "cosh")
    WICK_OP_NAME(ASINH, "asinh") WICK_OP_NAME(ACOSH, "acosh") WICK_OP_NAME(ATANH, "atanh")
    WICK_OP_NAME(EXPM1, "expm1") WICK_OP_NAME(LOG1P, "log1p") WICK_OP_NAME(CBRT, "cbrt")
    WICK_OP_NAME(ERFC, "erfc") WICK_OP_NAME(ERFINV, "erfinv") WICK_OP_NAME(FLOOR, "floor")
    WICK_OP_NAME(CEIL, "ceil") WICK_OP_NAME(ROUND, "round") WICK_OP_NAME(RELU, "relu")
    WICK_OP_NAME(GELU_TANH, "gelu_tanh") WICK_OP_NAME(GELU_ERF, "gelu_erf")
    WICK_OP_NAME(SILU, "silu") WICK_OP_NAME(ELU, "elu") WICK_OP_NAME(AFFINE, "affine")
    WICK_OP_NAME(POWF, "powf") WICK_OP_NAME(IS_NAN, "is_nan") WICK_OP_NAME(IS_INF, "is_inf")
    WICK_OP_NAME(LOGICAL_NOT, "logical_not") WICK_OP_NAME(BITWISE_NOT, "bitwise_not")
    WICK_OP_NAME(POPCOUNT, "popcount") WICK_OP_NAME(CLZ, "clz") WICK_OP_NAME(ADD, "add")
    WICK_OP_NAME(SUB, "sub") WICK_OP_NAME(MUL, "mul") WICK_OP_NAME(DIV, "div")
    WICK_OP_NAME(MAXIMUM, "maximum") WICK_OP_NAME(MINIMUM, "minimum") WICK_OP_NAME(POW, "pow")
    WICK_OP_NAME(REM, "rem") WICK_OP_NAME(ATAN2, "atan2") WICK_OP_NAME(EQ, "eq")
    WICK_OP_NAME(NE, "ne") WICK_OP_NAME(LT, "lt") WICK_OP_NAME(LE, "le") WICK_OP_NAME(GT, "gt")
    WICK_OP_NAME(GE, "ge") WICK_OP_NAME(BITWISE_AND, "bitwise_and")
    WICK_OP_NAME(BITWISE_OR, "bitwise_or") WICK_OP_NAME(BITWISE_XOR, "bitwise_xor")
    WICK_OP_NAME(SHL, "shl") WICK_OP_NAME(SHR, "shr") WICK_OP_NAME(WHERE, "where")
    WICK_OP_NAME(REDUCE_SUM, "reduce_sum") WICK_OP_NAME(REDUCE_PROD, "reduce_prod")
    WICK_OP_NAME(REDUCE_MAX, "reduce_max") WICK_OP_NAME(REDUCE_MIN, "reduce_min")
    WICK_OP_NAME(ARGMAX, "argmax") WICK_OP_NAME(ARGMIN, "argmin") WICK_OP_NAME(CUMSUM, "cumsum")
    WICK_OP_NAME(CUMPROD, "cumprod") WICK_OP_NAME(CUMMAX, "cummax") WICK_OP_NAME(CUMMIN, "cummin")
    WICK_OP_NAME(MATMUL, "matmul") WICK_OP_NAME(CONV, "conv")
    WICK_OP_NAME(WINDOW_SUM, "window_sum") WICK_OP_NAME(WINDOW_PROD, "window_prod")
    WICK_OP_NAME(WINDOW_MAX, "window_max") WICK_OP_NAME(WINDOW_MIN, "window_min")
    WICK_OP_NAME(WINDOW_SCATTER_MAX, "window_scatter_max")
    WICK_OP_NAME(WINDOW_SCATTER_MIN, "window_scatter_min")
    WICK_OP_NAME(INDEX_SELECT, "index_select") WICK_OP_NAME(INDEX_REDUCE, "index_reduce")
    WICK_OP_NAME(GATHER_ELEMENTS, "gather_elements")
    WICK_OP_NAME(SCATTER_ELEMENTS, "scatter_elements") WICK_OP_NAME(SORT, "sort")
    WICK_OP_NAME(SOFTMAX, "softmax") WICK_OP_NAME(LOG_SOFTMAX, "log_softmax")
    WICK_OP_NAME(LAYER_NORM, "layer_norm") WICK_OP_NAME(RMS_NORM, "rms_norm")
    WICK_OP_NAME(BATCH_NORM, "batch_norm") WICK_OP_NAME(ATTENTION, "attention")
#undef WICK_OP_NAME
    default: return "unknown-op";
  }
}

}  // namespace wick::sdk
