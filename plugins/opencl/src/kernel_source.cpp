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

#define DEFINE_ADD(NAME, T, SUM)                                                       \
  __kernel void add_##NAME(__global T* out, __global const T* x, __global const T* y, \
                           strided_args a) {                                           \
    FOR_EACH_ELEMENT(a) {                                                              \
      const element_offsets o = offsets_of(&a, i);                                     \
      const T lhs = x[o.at[1]];                                                        \
      const T rhs = y[o.at[2]];                                                        \
      out[o.at[0]] = SUM;                                                              \
    }                                                                                  \
  }
DEFINE_ADD(f32, float, lhs + rhs)
/* Signed overflow is undefined in OpenCL C; add as unsigned to get the two's-complement wrap. */
DEFINE_ADD(i32, int, as_int(as_uint(lhs) + as_uint(rhs)))
DEFINE_ADD(i64, long, as_long(as_ulong(lhs) + as_ulong(rhs)))
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
DEFINE_ADD(f64, double, lhs + rhs)
#endif
)CLC";

}  // namespace wick::opencl
