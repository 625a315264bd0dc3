/* wick_ops.h — the op table: every op of the Wick plugin ABI, declared once.
 *
 * One row per op. Everything that needs to know the ops reads this list: the enum's names and
 * the op names (wick/sdk/ops.hpp), the arity and params-struct checks of the SDK's C++ bridge and
 * of the core's dispatch, the dtype rules of the core and of the CPU plugin, the conformance
 * suite's op enumeration and params builder, and the golden-data generator (which parses this
 * file). The numbers are the ABI's: each row's code is checked against the `wick_op_code` enum in
 * wick_plugin.h at compile time (wick/sdk/op_table.hpp), and every enum value must have a row.
 *
 * Columns of X(NAME, CODE, name, KIND, IN_MIN, IN_MAX, OUTS, PARAMS, DTYPES, OUT):
 *   NAME     the enum suffix: WICK_OP_<NAME>
 *   CODE     its stable number (never reused)
 *   name     the printable name (messages, reports, golden files)
 *   KIND     MEMORY (copy, fill, iota, cast, random numbers), UNARY, BINARY, COMPARE, SELECT,
 *            REDUCE, SCAN, INDEX, NN, FUSED
 *   IN_MIN, IN_MAX   the number of inputs (a range where some are optional)
 *   OUTS     the number of outputs
 *   PARAMS   the params struct: none (NULL params), fill, iota, rng, unary, reduce, axis, conv,
 *            window, sort, norm, attention, optim, quant (wick_<PARAMS>_params); unary params
 *            are optional
 *   DTYPES   the dtypes the op is defined for (the dtype of the op: its first input's, the values'
 *            for where, the output's for ops without inputs): ANY, NUM (floats and integers),
 *            FLOAT, INT (integers), INT_BOOL (integers and bool), U8 (bytes: block-quantized data)
 *   OUT      the first output's dtype: SAME (the op's dtype), BOOL, INDEX (i32 or i64), ANY (cast),
 *            ACC (the op's dtype, not bool, or its 64-bit widening: sums and products), U8, FLOAT
 *            (any float dtype)
 *
 * Ranges of codes: 1..99 data movement and creation (QUANTIZE, DEQUANTIZE: ABI 1.4, GGML blocks); 100..199 unary elementwise; 200..299 binary
 * elementwise (in[0], in[1] broadcast to out[0]; comparisons 220..229 give bool; bitwise 230..239,
 * SHR arithmetic for signed, logical for unsigned); 300..399 select (WHERE: in[0] bool condition,
 * in[1] if true, in[2] if false); 400..499 reductions (the output keeps the input's rank, reduced
 * axes extent 1; ARGMAX/ARGMIN give i32 or i64) and scans; 500..599 linear algebra and nn
 * (MATMUL: in[0] [..., M, K] x in[1] [..., K, N] -> out[0] [..., M, N], batch dims broadcast by
 * the host; CONV_GRAD_INPUT and CONV_GRAD_WEIGHT, ABI 1.3, conv's two gradients; MATMUL_QUANT,
 * ABI 1.4, x times GGML-quantized weights transposed: wick_plugin.h);
 * 600..699 indexing and sorting (indices i32 or i64; out of range is an
 * INVALID_ARGUMENT error); 700..799 optional fused ops, each with a composite in the host. Integer
 * division truncates toward zero and x / 0 is 0 on integers. Semantics: docs/ops.md.
 *
 * A plugin may support fewer dtypes than DTYPES (it answers WICK_SUPPORT_NO_DTYPE); the core
 * never asks for more. This header is plain C: one row per line, so that scripts can read it.
 */
#ifndef WICK_OPS_H
#define WICK_OPS_H

/* clang-format off */
#define WICK_OP_LIST(X) \
  X(COPY,               1,   copy,               MEMORY,  1, 1, 1, none,      ANY,      SAME) \
  X(FILL,               2,   fill,               MEMORY,  0, 0, 1, fill,      ANY,      SAME) \
  X(IOTA,               3,   iota,               MEMORY,  0, 0, 1, iota,      NUM,      SAME) \
  X(CAST,               4,   cast,               MEMORY,  1, 1, 1, none,      ANY,      ANY) \
  X(RNG_UNIFORM,        5,   rng_uniform,        MEMORY,  0, 0, 1, rng,       FLOAT,    SAME) \
  X(RNG_NORMAL,         6,   rng_normal,         MEMORY,  0, 0, 1, rng,       FLOAT,    SAME) \
  X(QUANTIZE,           7,   quantize,           MEMORY,  1, 1, 1, quant,     FLOAT,    U8) \
  X(DEQUANTIZE,         8,   dequantize,         MEMORY,  1, 1, 1, quant,     U8,       FLOAT) \
  X(NEG,                100, neg,                UNARY,   1, 1, 1, none,      NUM,      SAME) \
  X(ABS,                101, abs,                UNARY,   1, 1, 1, none,      NUM,      SAME) \
  X(SIGN,               102, sign,               UNARY,   1, 1, 1, none,      NUM,      SAME) \
  X(EXP,                103, exp,                UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(LOG,                104, log,                UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(SQRT,               105, sqrt,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(RSQRT,              106, rsqrt,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(RECIP,              107, recip,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(SQR,                108, sqr,                UNARY,   1, 1, 1, none,      NUM,      SAME) \
  X(TANH,               109, tanh,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ERF,                110, erf,                UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(SIGMOID,            111, sigmoid,            UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(SIN,                112, sin,                UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(COS,                113, cos,                UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(TAN,                114, tan,                UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ASIN,               115, asin,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ACOS,               116, acos,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ATAN,               117, atan,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(SINH,               118, sinh,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(COSH,               119, cosh,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ASINH,              120, asinh,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ACOSH,              121, acosh,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ATANH,              122, atanh,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(EXPM1,              123, expm1,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(LOG1P,              124, log1p,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(CBRT,               125, cbrt,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ERFC,               126, erfc,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ERFINV,             127, erfinv,             UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(FLOOR,              128, floor,              UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(CEIL,               129, ceil,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ROUND,              130, round,              UNARY,   1, 1, 1, unary,     FLOAT,    SAME) \
  X(RELU,               131, relu,               UNARY,   1, 1, 1, none,      NUM,      SAME) \
  X(GELU_TANH,          132, gelu_tanh,          UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(GELU_ERF,           133, gelu_erf,           UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(SILU,               134, silu,               UNARY,   1, 1, 1, none,      FLOAT,    SAME) \
  X(ELU,                135, elu,                UNARY,   1, 1, 1, unary,     FLOAT,    SAME) \
  X(AFFINE,             136, affine,             UNARY,   1, 1, 1, unary,     NUM,      SAME) \
  X(POWF,               137, powf,               UNARY,   1, 1, 1, unary,     FLOAT,    SAME) \
  X(IS_NAN,             138, is_nan,             UNARY,   1, 1, 1, none,      ANY,      BOOL) \
  X(IS_INF,             139, is_inf,             UNARY,   1, 1, 1, none,      ANY,      BOOL) \
  X(LOGICAL_NOT,        140, logical_not,        UNARY,   1, 1, 1, none,      ANY,      BOOL) \
  X(BITWISE_NOT,        141, bitwise_not,        UNARY,   1, 1, 1, none,      INT_BOOL, SAME) \
  X(POPCOUNT,           142, popcount,           UNARY,   1, 1, 1, none,      INT,      SAME) \
  X(CLZ,                143, clz,                UNARY,   1, 1, 1, none,      INT,      SAME) \
  X(ADD,                200, add,                BINARY,  2, 2, 1, none,      ANY,      SAME) \
  X(SUB,                201, sub,                BINARY,  2, 2, 1, none,      NUM,      SAME) \
  X(MUL,                202, mul,                BINARY,  2, 2, 1, none,      ANY,      SAME) \
  X(DIV,                203, div,                BINARY,  2, 2, 1, none,      NUM,      SAME) \
  X(MAXIMUM,            204, maximum,            BINARY,  2, 2, 1, none,      ANY,      SAME) \
  X(MINIMUM,            205, minimum,            BINARY,  2, 2, 1, none,      ANY,      SAME) \
  X(POW,                206, pow,                BINARY,  2, 2, 1, none,      NUM,      SAME) \
  X(REM,                207, rem,                BINARY,  2, 2, 1, none,      NUM,      SAME) \
  X(ATAN2,              208, atan2,              BINARY,  2, 2, 1, none,      FLOAT,    SAME) \
  X(HYPOT,              209, hypot,              BINARY,  2, 2, 1, none,      FLOAT,    SAME) \
  X(EQ,                 220, eq,                 COMPARE, 2, 2, 1, none,      ANY,      BOOL) \
  X(NE,                 221, ne,                 COMPARE, 2, 2, 1, none,      ANY,      BOOL) \
  X(LT,                 222, lt,                 COMPARE, 2, 2, 1, none,      ANY,      BOOL) \
  X(LE,                 223, le,                 COMPARE, 2, 2, 1, none,      ANY,      BOOL) \
  X(GT,                 224, gt,                 COMPARE, 2, 2, 1, none,      ANY,      BOOL) \
  X(GE,                 225, ge,                 COMPARE, 2, 2, 1, none,      ANY,      BOOL) \
  X(BITWISE_AND,        230, bitwise_and,        BINARY,  2, 2, 1, none,      INT_BOOL, SAME) \
  X(BITWISE_OR,         231, bitwise_or,         BINARY,  2, 2, 1, none,      INT_BOOL, SAME) \
  X(BITWISE_XOR,        232, bitwise_xor,        BINARY,  2, 2, 1, none,      INT_BOOL, SAME) \
  X(SHL,                233, shl,                BINARY,  2, 2, 1, none,      INT,      SAME) \
  X(SHR,                234, shr,                BINARY,  2, 2, 1, none,      INT,      SAME) \
  X(WHERE,              300, where,              SELECT,  3, 3, 1, none,      ANY,      SAME) \
  X(REDUCE_SUM,         400, reduce_sum,         REDUCE,  1, 1, 1, reduce,    ANY,      ACC)  \
  X(REDUCE_PROD,        401, reduce_prod,        REDUCE,  1, 1, 1, reduce,    ANY,      ACC)  \
  X(REDUCE_MAX,         402, reduce_max,         REDUCE,  1, 1, 1, reduce,    ANY,      SAME) \
  X(REDUCE_MIN,         403, reduce_min,         REDUCE,  1, 1, 1, reduce,    ANY,      SAME) \
  X(ARGMAX,             404, argmax,             REDUCE,  1, 1, 1, axis,      ANY,      INDEX) \
  X(ARGMIN,             405, argmin,             REDUCE,  1, 1, 1, axis,      ANY,      INDEX) \
  X(CUMSUM,             410, cumsum,             SCAN,    1, 1, 1, axis,      ANY,      ACC)  \
  X(CUMPROD,            411, cumprod,            SCAN,    1, 1, 1, axis,      ANY,      ACC)  \
  X(CUMMAX,             412, cummax,             SCAN,    1, 1, 1, axis,      ANY,      SAME) \
  X(CUMMIN,             413, cummin,             SCAN,    1, 1, 1, axis,      ANY,      SAME) \
  X(MATMUL,             500, matmul,             NN,      2, 2, 1, none,      ANY,      SAME) \
  X(CONV,               501, conv,               NN,      2, 2, 1, conv,      NUM,      SAME) \
  X(CONV_GRAD_INPUT,    502, conv_grad_input,    NN,      2, 2, 1, conv,      FLOAT,    SAME) \
  X(CONV_GRAD_WEIGHT,   503, conv_grad_weight,   NN,      2, 2, 1, conv,      FLOAT,    SAME) \
  X(MATMUL_QUANT,       504, matmul_quant,       NN,      2, 2, 1, quant,     FLOAT,    SAME) \
  X(WINDOW_SUM,         510, window_sum,         NN,      1, 1, 1, window,    NUM,      SAME) \
  X(WINDOW_PROD,        511, window_prod,        NN,      1, 1, 1, window,    NUM,      SAME) \
  X(WINDOW_MAX,         512, window_max,         NN,      1, 1, 1, window,    ANY,      SAME) \
  X(WINDOW_MIN,         513, window_min,         NN,      1, 1, 1, window,    ANY,      SAME) \
  X(WINDOW_SCATTER_MAX, 514, window_scatter_max, NN,      2, 2, 1, window,    NUM,      SAME) \
  X(WINDOW_SCATTER_MIN, 515, window_scatter_min, NN,      2, 2, 1, window,    NUM,      SAME) \
  X(INDEX_SELECT,       600, index_select,       INDEX,   2, 2, 1, axis,      ANY,      SAME) \
  X(INDEX_REDUCE,       601, index_reduce,       INDEX,   3, 3, 1, axis,      ANY,      SAME) \
  X(GATHER_ELEMENTS,    602, gather_elements,    INDEX,   2, 2, 1, axis,      ANY,      SAME) \
  X(SCATTER_ELEMENTS,   603, scatter_elements,   INDEX,   3, 3, 1, axis,      ANY,      SAME) \
  X(SORT,               604, sort,               INDEX,   1, 1, 2, sort,      ANY,      SAME) \
  X(SOFTMAX,            700, softmax,            FUSED,   1, 1, 1, axis,      FLOAT,    SAME) \
  X(LOG_SOFTMAX,        701, log_softmax,        FUSED,   1, 1, 1, axis,      FLOAT,    SAME) \
  X(LAYER_NORM,         702, layer_norm,         FUSED,   1, 3, 1, norm,      FLOAT,    SAME) \
  X(RMS_NORM,           703, rms_norm,           FUSED,   1, 2, 1, norm,      FLOAT,    SAME) \
  X(BATCH_NORM,         704, batch_norm,         FUSED,   5, 5, 1, norm,      FLOAT,    SAME) \
  X(ATTENTION,          705, attention,          FUSED,   3, 4, 1, attention, FLOAT,    SAME) \
  X(ADAM_UPDATE,        706, adam_update,        FUSED,   4, 4, 3, optim,     FLOAT,    SAME) \
  X(CONV_BIAS,          707, conv_bias,          FUSED,   3, 3, 1, conv,      FLOAT,    SAME) \
  X(CONV_BIAS_RELU,     708, conv_bias_relu,     FUSED,   3, 3, 1, conv,      FLOAT,    SAME)
/* clang-format on */

#endif /* WICK_OPS_H */
