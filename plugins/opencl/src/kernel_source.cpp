#include "kernel_source.hpp"

namespace wick::opencl {

const char* const kKernelSource = R"CLC(
/* Mirrors wick::sdk::StridedArgs (wick/sdk/strided_args.hpp): all fields 64-bit, same order. */
typedef struct {
  long shape[WICK_MAX_RANK];
  long strides[3][WICK_MAX_RANK]; /* operand 0 is the output, then the inputs */
  long offsets[3];
  long rank;
  long numel;
} strided_args;

typedef struct {
  long at[3];
} element_offsets;

/* Element offsets of the i-th element, row-major over shape, in each operand. Strides may be
 * negative or 0, so everything stays signed. */
element_offsets offsets_of(const strided_args* a, long i) {
  element_offsets o;
  o.at[0] = a->offsets[0];
  o.at[1] = a->offsets[1];
  o.at[2] = a->offsets[2];
  for (long d = a->rank - 1; d >= 0; --d) {
    const long extent = a->shape[d];
    const long index = i % extent;
    i /= extent;
    o.at[0] += index * a->strides[0][d];
    o.at[1] += index * a->strides[1][d];
    o.at[2] += index * a->strides[2][d];
  }
  return o;
}

/* Grid-stride loop: the host caps the global size, so one work-item may handle many elements. */
#define FOR_EACH_ELEMENT(a) \
  for (long i = (long)get_global_id(0); i < (a).numel; i += (long)get_global_size(0))

/* Copy and fill move bits, so one kernel per element size serves every dtype. */
#define DEFINE_COPY_FILL(NAME, T)                                                      \
  __kernel void copy_##NAME(__global T* dst, __global const T* src, strided_args a) { \
    FOR_EACH_ELEMENT(a) {                                                              \
      const element_offsets o = offsets_of(&a, i);                                     \
      dst[o.at[0]] = src[o.at[1]];                                                     \
    }                                                                                  \
  }                                                                                    \
  __kernel void fill_##NAME(__global T* dst, T value, strided_args a) {               \
    FOR_EACH_ELEMENT(a) dst[offsets_of(&a, i).at[0]] = value;                          \
  }
DEFINE_COPY_FILL(u8, uchar)
DEFINE_COPY_FILL(u16, ushort)
DEFINE_COPY_FILL(u32, uint)
DEFINE_COPY_FILL(u64, ulong)

/* Binary ops: inputs arrive broadcast to the output's shape and in the output's dtype. */
#define DEFINE_BINARY(OP, NAME, T, EXPR)                                                   \
  __kernel void OP##_##NAME(__global T* out, __global const T* x, __global const T* y,     \
                            strided_args a) {                                               \
    FOR_EACH_ELEMENT(a) {                                                                   \
      const element_offsets o = offsets_of(&a, i);                                          \
      const T lhs = x[o.at[1]];                                                             \
      const T rhs = y[o.at[2]];                                                             \
      out[o.at[0]] = EXPR;                                                                  \
    }                                                                                       \
  }
/* Unary ops on floats. */
#define DEFINE_UNARY(OP, NAME, T, EXPR)                                                     \
  __kernel void OP##_##NAME(__global T* out, __global const T* x, strided_args a) {         \
    FOR_EACH_ELEMENT(a) {                                                                   \
      const element_offsets o = offsets_of(&a, i);                                          \
      const T v = x[o.at[1]];                                                               \
      out[o.at[0]] = EXPR;                                                                  \
    }                                                                                       \
  }

/* docs/ops.md: maximum and minimum propagate NaN (OpenCL's fmax would drop it). */
#define FLOAT_OPS(NAME, T)                                                     \
  DEFINE_BINARY(add, NAME, T, lhs + rhs)                                       \
  DEFINE_BINARY(sub, NAME, T, lhs - rhs)                                       \
  DEFINE_BINARY(mul, NAME, T, lhs * rhs)                                       \
  DEFINE_BINARY(div, NAME, T, lhs / rhs)                                       \
  DEFINE_BINARY(maximum, NAME, T, (isnan(lhs) || isnan(rhs)) ? (T)NAN : fmax(lhs, rhs)) \
  DEFINE_BINARY(minimum, NAME, T, (isnan(lhs) || isnan(rhs)) ? (T)NAN : fmin(lhs, rhs)) \
  DEFINE_BINARY(hypot, NAME, T, hypot(lhs, rhs))                               \
  DEFINE_UNARY(neg, NAME, T, -v)                                               \
  DEFINE_UNARY(abs, NAME, T, fabs(v))                                          \
  DEFINE_UNARY(exp, NAME, T, exp(v))                                           \
  DEFINE_UNARY(log, NAME, T, log(v))                                           \
  DEFINE_UNARY(sqrt, NAME, T, sqrt(v))                                         \
  DEFINE_UNARY(tanh, NAME, T, tanh(v))                                         \
  DEFINE_UNARY(sigmoid, NAME, T, (T)1 / ((T)1 + exp(-v)))                      \
  DEFINE_UNARY(relu, NAME, T, (isnan(v) || v > (T)0) ? v : (T)0)                             \
  DEFINE_UNARY(sin, NAME, T, sin(v))                                           \
  DEFINE_UNARY(cos, NAME, T, cos(v))

/* Integers wrap (computed unsigned: signed overflow is undefined in OpenCL C); division
 * truncates toward zero, x / 0 is 0 and MIN / -1 wraps to MIN (docs/ops.md). */
#define INT_OPS(NAME, T, U)                                                                  \
  DEFINE_BINARY(add, NAME, T, (T)((U)lhs + (U)rhs))                                          \
  DEFINE_BINARY(sub, NAME, T, (T)((U)lhs - (U)rhs))                                          \
  DEFINE_BINARY(mul, NAME, T, (T)((U)lhs * (U)rhs))                                          \
  DEFINE_BINARY(div, NAME, T, rhs == 0 ? (T)0 : rhs == (T)-1 ? (T)((U)0 - (U)lhs) : lhs / rhs) \
  DEFINE_BINARY(maximum, NAME, T, max(lhs, rhs))                                             \
  DEFINE_BINARY(minimum, NAME, T, min(lhs, rhs))

/* Matmul: the host views lhs over the output's shape with the column stride 0 and rhs with the
 * row stride 0, so offsets_of gives the start of row i of lhs and column j of rhs; the kernel
 * walks k. Accumulates in T (the CPU plugin is the accurate reference). */
#define DEFINE_MATMUL(NAME, T)                                                                  \
  __kernel void matmul_##NAME(__global T* out, __global const T* x, __global const T* y,        \
                              long k_extent, long x_k, long y_k, strided_args a) {               \
    FOR_EACH_ELEMENT(a) {                                                                        \
      const element_offsets o = offsets_of(&a, i);                                               \
      T acc = (T)0;                                                                              \
      for (long k = 0; k < k_extent; ++k) acc += x[o.at[1] + k * x_k] * y[o.at[2] + k * y_k];   \
      out[o.at[0]] = acc;                                                                        \
    }                                                                                            \
  }

FLOAT_OPS(f32, float)
DEFINE_MATMUL(f32, float)
INT_OPS(i32, int, uint)
INT_OPS(i64, long, ulong)
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
FLOAT_OPS(f64, double)
DEFINE_MATMUL(f64, double)
#endif
)CLC";

// The rows of the plugin's kernel table: one per op with kernels above, and their dtypes.
namespace {
constexpr sdk::DTypeSet kF = sdk::dtype_bit(WICK_DTYPE_F32) | sdk::dtype_bit(WICK_DTYPE_F64);
constexpr sdk::DTypeSet kFI = kF | sdk::dtype_bit(WICK_DTYPE_I32) | sdk::dtype_bit(WICK_DTYPE_I64);
constexpr sdk::DTypeSet kAll = sdk::dtypes_of(sdk::DTypeClass::ANY);
}  // namespace

const KernelRow kKernelRows[] = {
    {WICK_OP_COPY, kAll},  {WICK_OP_FILL, kAll},   {WICK_OP_MATMUL, kF},
    {WICK_OP_ADD, kFI},    {WICK_OP_SUB, kFI},     {WICK_OP_MUL, kFI},
    {WICK_OP_DIV, kFI},    {WICK_OP_MAXIMUM, kFI}, {WICK_OP_MINIMUM, kFI},
    {WICK_OP_NEG, kF},     {WICK_OP_ABS, kF},      {WICK_OP_EXP, kF},
    {WICK_OP_LOG, kF},     {WICK_OP_SQRT, kF},     {WICK_OP_TANH, kF},
    {WICK_OP_SIGMOID, kF}, {WICK_OP_RELU, kF},     {WICK_OP_SIN, kF},
    {WICK_OP_COS, kF},     {WICK_OP_HYPOT, kF},
};
const size_t kKernelRowCount = sizeof(kKernelRows) / sizeof(kKernelRows[0]);

}  // namespace wick::opencl
