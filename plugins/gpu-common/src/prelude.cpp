// The dialect preludes and the common code every generated kernel uses: 64-bit types, bit casts,
// the strided-offset walk, f16/bf16 conversions (round to nearest even, as wick/sdk/dtype.hpp
// does), Philox-4x32-10 (as wick/sdk/philox.hpp), and the helpers of ops without a builtin.
#include "generator.hpp"

namespace wick::gpu::detail {

const char* const kOpenClPrelude = R"CLC(
#define WK_KERNEL __kernel void
#define WK_G __global
#define WK_FN inline
#define WK_GID ((long)get_global_id(0))
#define WK_GSIZE ((long)get_global_size(0))
#define WK_GID_Y ((long)get_global_id(1))
#define WK_GID_Z ((long)get_global_id(2))
#define WK_GSIZE_Z ((long)get_global_size(2))
#define WK_LID ((long)get_local_id(0))
#define WK_LSIZE ((long)get_local_size(0))
#define WK_GROUP ((long)get_group_id(0))
#define WK_GROUP_Y ((long)get_group_id(1))
#define WK_NGROUPS ((long)get_num_groups(0))
#define WK_LOCAL __local
#define WK_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
/* 16 floats as one value: the matmul kernel's row of accumulators. */
typedef float16 wk_f32x16;
#define WK_X16_ZERO ((float16)(0.0f))
#define WK_X16_LOAD(p) vload16(0, p)
#define WK_X16_STORE(v, p) vstore16(v, 0, p)
#define WK_X16_FMA(s, v, acc) fma((float16)(s), v, acc)
typedef char wk_i8;
typedef uchar wk_u8;
typedef short wk_i16;
typedef ushort wk_u16;
typedef int wk_i32;
typedef uint wk_u32;
typedef long wk_i64;
typedef ulong wk_u64;
#define WK_F32_BITS(f) as_uint(f)
#define WK_BITS_F32(u) as_float(u)
#define WK_POPCOUNT64(x) popcount(x)
#define WK_CLZ64(x) clz(x)
/* Results must not depend on contraction into fma (the CPU plugin does not contract). */
#pragma OPENCL FP_CONTRACT OFF
#define WK_MUL_RN(a, b) ((a) * (b))
#define WK_ADD_RN(a, b) ((a) + (b))
#define WK_SUB_RN(a, b) ((a) - (b))
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define WK_HAS_F64 1
#define WK_F64_BITS(d) as_ulong(d)
#endif
)CLC";

const char* const kCudaPrelude = R"CUDA(
#define WK_KERNEL extern "C" __global__ void
#define WK_G
#define WK_FN __device__ inline
#define WK_GID ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define WK_GSIZE ((long long)gridDim.x * blockDim.x)
#define WK_GID_Y ((long long)blockIdx.y * blockDim.y + threadIdx.y)
#define WK_GID_Z ((long long)blockIdx.z * blockDim.z + threadIdx.z)
#define WK_GSIZE_Z ((long long)gridDim.z * blockDim.z)
#define WK_LID ((long long)threadIdx.x)
#define WK_LSIZE ((long long)blockDim.x)
#define WK_GROUP ((long long)blockIdx.x)
#define WK_GROUP_Y ((long long)blockIdx.y)
#define WK_NGROUPS ((long long)gridDim.x)
#define WK_LOCAL __shared__
#define WK_MUL_RN(a, b) __fmul_rn(a, b)
#define WK_ADD_RN(a, b) __fadd_rn(a, b)
#define WK_SUB_RN(a, b) __fsub_rn(a, b)
#define WK_BARRIER() __syncthreads()
/* 16 floats as one value: the matmul kernel's row of accumulators. */
typedef struct { float v[16]; } wk_f32x16;
__device__ inline wk_f32x16 wk_x16_zero() { wk_f32x16 r; for (int i = 0; i < 16; ++i) r.v[i] = 0.0f; return r; }
__device__ inline wk_f32x16 wk_x16_load(const float* p) { wk_f32x16 r; for (int i = 0; i < 16; ++i) r.v[i] = p[i]; return r; }
__device__ inline void wk_x16_store(wk_f32x16 v, float* p) { for (int i = 0; i < 16; ++i) p[i] = v.v[i]; }
__device__ inline wk_f32x16 wk_x16_fma(float s, wk_f32x16 v, wk_f32x16 acc) { for (int i = 0; i < 16; ++i) acc.v[i] = fmaf(s, v.v[i], acc.v[i]); return acc; }
#define WK_X16_ZERO wk_x16_zero()
#define WK_X16_LOAD(p) wk_x16_load(p)
#define WK_X16_STORE(v, p) wk_x16_store(v, p)
#define WK_X16_FMA(s, v, acc) wk_x16_fma(s, v, acc)
typedef signed char wk_i8;
typedef unsigned char wk_u8;
typedef short wk_i16;
typedef unsigned short wk_u16;
typedef int wk_i32;
typedef unsigned int wk_u32;
typedef long long wk_i64;
typedef unsigned long long wk_u64;
#define WK_F32_BITS(f) __float_as_uint(f)
#define WK_BITS_F32(u) __uint_as_float(u)
#define WK_POPCOUNT64(x) __popcll(x)
#define WK_CLZ64(x) __clzll((long long)(x))
#define WK_HAS_F64 1
#define WK_F64_BITS(d) ((wk_u64)__double_as_longlong(d))
)CUDA";

// Common code: the same text for both dialects.
const char* const kCommon = R"GPU(
typedef wk_u8 wk_bool;
#define WK_INF_F WK_BITS_F32(0x7f800000u)
#define WK_NAN_F WK_BITS_F32(0x7fc00000u)

/* Mirrors wick::sdk::StridedArgs: all fields 64-bit, operand 0 the output, then the inputs. */
typedef struct {
  wk_i64 shape[WK_MAX_RANK];
  wk_i64 strides[WK_MAX_OPERANDS][WK_MAX_RANK];
  wk_i64 offsets[WK_MAX_OPERANDS];
  wk_i64 rank;
  wk_i64 numel;
} wk_args;

/* Element offsets of the i-th element (row-major over shape) in each operand; strides may be
 * negative or 0. */
WK_FN void wk_offsets(const wk_args* a, wk_i64 i, wk_i64* o) {
  for (int k = 0; k < WK_MAX_OPERANDS; ++k) o[k] = a->offsets[k];
  for (wk_i64 d = a->rank - 1; d > 0; --d) {
    const wk_i64 extent = a->shape[d];
    const wk_i64 index = i % extent;
    i /= extent;
    for (int k = 0; k < WK_MAX_OPERANDS; ++k) o[k] += index * a->strides[k][d];
  }
  /* The outermost axis needs no division: what is left of i is its index (i < numel). The host
   * merges contiguous axes, so a contiguous operation walks one axis and divides nothing. */
  if (a->rank > 0)
    for (int k = 0; k < WK_MAX_OPERANDS; ++k) o[k] += i * a->strides[k][0];
}

/* The geometry of a window op: per axis the operand's extent and strides, the window, its strides,
 * low padding and dilation, the output's extent and strides; taps = the window's element count. */
typedef struct {
  wk_i64 in[WK_MAX_RANK], xs[WK_MAX_RANK], win[WK_MAX_RANK], stride[WK_MAX_RANK];
  wk_i64 lo[WK_MAX_RANK], dil[WK_MAX_RANK], out[WK_MAX_RANK], ys[WK_MAX_RANK];
  wk_i64 rank, taps;
} wk_window;

/* The geometry of the indexed ops, over the output's own dims (not collapsed): per dim the strides
 * of out, x, ids and src (0 where a dim does not move that operand), their element offsets; n, the
 * extent indices address (negative ones count from its end); x's stride along it. Scatters loop
 * over ids along `axis`: k_extent positions, ids and src strides k_is and k_ss; positions off the
 * axis beyond `limit` get nothing. */
typedef struct {
  wk_i64 rank, shape[WK_MAX_RANK];
  wk_i64 os[WK_MAX_RANK], xs[WK_MAX_RANK], is[WK_MAX_RANK], ss[WK_MAX_RANK], limit[WK_MAX_RANK];
  wk_i64 off[4];
  wk_i64 axis, n, x_axis_stride, k_extent, k_is, k_ss;
} wk_index;

/* An index read as i64, resolved into [0, n) (negative counts from the end), or reported through
 * err (err[0] = 1, err[1] = the index) and -1 returned. */
WK_FN wk_i64 wk_resolve(wk_i64 id, wk_i64 n, WK_G wk_i64* err) {
  const wk_i64 r = id < 0 ? id + n : id;
  if (r < 0 || r >= n) {
    err[0] = 1;
    err[1] = id;
    return -1;
  }
  return r;
}

/* The geometry of a convolution: spatial rank r, batch n, output channels o, input channels per
 * group cg, output channels per group og; per spatial axis the input, kernel and output extents,
 * stride, low padding, dilation and input dilation; the full strides of x, w and y; offsets; the
 * kernel's element count taps. */
typedef struct {
  wk_i64 r, n, o, cg, og;
  wk_i64 in[WK_MAX_RANK], k[WK_MAX_RANK], out[WK_MAX_RANK], stride[WK_MAX_RANK];
  wk_i64 lo[WK_MAX_RANK], dil[WK_MAX_RANK], idil[WK_MAX_RANK];
  wk_i64 xs[WK_MAX_RANK], ws[WK_MAX_RANK], ys[WK_MAX_RANK];
  wk_i64 xoff, woff, yoff, taps;
} wk_conv;

/* Grid-stride loop: a work-item handles elements WK_GID, + WK_GSIZE, ... */
#define WK_FOR_EACH(a) for (wk_i64 i = WK_GID; i < (a).numel; i += WK_GSIZE)


/* ---- 16-bit floats, stored as bits, computed in f32 ---- */
WK_FN float wk_f16_to_f32(wk_u16 h) {
  const wk_u32 sign = (wk_u32)(h & 0x8000u) << 16;
  const wk_u32 e = (h >> 10) & 0x1fu;
  const wk_u32 m = h & 0x3ffu;
  if (e == 0x1fu) return WK_BITS_F32(sign | 0x7f800000u | (m << 13));
  if (e != 0) return WK_BITS_F32(sign | ((e + 112u) << 23) | (m << 13));
  return WK_BITS_F32(WK_F32_BITS((float)m * 5.9604644775390625e-8f) | sign);
}
WK_FN wk_u16 wk_f32_to_f16(float f) {
  const wk_u32 x = WK_F32_BITS(f);
  const wk_u32 sign = (x >> 16) & 0x8000u;
  const wk_u32 ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (wk_u16)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return (wk_u16)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    /* Subnormal or zero: adding 0.5 aligns the mantissa so the FPU rounds to nearest even. */
    const float r = WK_BITS_F32(ax) + 0.5f;
    return (wk_u16)(sign | (WK_F32_BITS(r) - 0x3f000000u));
  }
  wk_u32 m = ax + 0xc8000000u;
  m += 0x0fffu + ((m >> 13) & 1u);
  return (wk_u16)(sign | (m >> 13));
}
WK_FN float wk_bf16_to_f32(wk_u16 b) { return WK_BITS_F32((wk_u32)b << 16); }
/* An f16 stored little-endian at byte pointer p (GGML blocks' scales). */
#define wk_half_at(p) wk_f16_to_f32((wk_u16)((p)[0] | ((p)[1] << 8)))
WK_FN wk_u16 wk_f32_to_bf16(float f) {
  wk_u32 x = WK_F32_BITS(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (wk_u16)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (wk_u16)(x >> 16);
}

/* ---- integers ---- */
WK_FN wk_u64 wk_popcount(wk_u64 x) { return (wk_u64)WK_POPCOUNT64(x); }
WK_FN wk_u64 wk_clz(wk_u64 x, int bits) { return x == 0 ? (wk_u64)bits : (wk_u64)WK_CLZ64(x) - (wk_u64)(64 - bits); }
/* Exact modulo 2^64 (the caller truncates to its width); a negative exponent of a signed type:
 * 1 for a = 1, +-1 for a = -1, else 0 (docs/ops.md). */
WK_FN wk_u64 wk_ipow(wk_i64 a, wk_i64 b, int is_signed) {
  if (is_signed && b < 0) return a == 1 ? 1u : a == -1 ? ((b & 1) ? (wk_u64)-1 : 1u) : 0u;
  wk_u64 result = 1u, base = (wk_u64)a;
  for (wk_u64 e = (wk_u64)b; e != 0u; e >>= 1) {
    if (e & 1u) result *= base;
    base *= base;
  }
  return result;
}

/* ---- Philox-4x32-10, the stream every plugin shares ---- */
typedef struct {
  wk_u32 w[4];
} wk_philox;
WK_FN wk_philox wk_philox_for(wk_u64 seed, wk_u64 offset, wk_u64 index) {
  const wk_u64 lo = offset + index;
  wk_u32 c0 = (wk_u32)lo, c1 = (wk_u32)(lo >> 32), c2 = lo < offset ? 1u : 0u, c3 = 0u;
  wk_u32 k0 = (wk_u32)seed, k1 = (wk_u32)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const wk_u64 p0 = (wk_u64)0xD2511F53u * c0;
    const wk_u64 p1 = (wk_u64)0xCD9E8D57u * c2;
    const wk_u32 n0 = (wk_u32)(p1 >> 32) ^ c1 ^ k0, n1 = (wk_u32)p1;
    const wk_u32 n2 = (wk_u32)(p0 >> 32) ^ c3 ^ k1, n3 = (wk_u32)p0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  wk_philox r;
  r.w[0] = c0;
  r.w[1] = c1;
  r.w[2] = c2;
  r.w[3] = c3;
  return r;
}

/* ---- float helpers of ops without a builtin, in the widest float the device has ---- */
#ifdef WK_HAS_F64
typedef double wk_wide;
#else
typedef float wk_wide;
#endif
WK_FN wk_wide wk_round_even(wk_wide x) {
  const wk_wide r = round(x);
  return fabs(x - trunc(x)) == (wk_wide)0.5 ? (wk_wide)2 * round(x / (wk_wide)2) : r;
}
/* Giles' approximation, then Newton steps on erf (erfc near +-1, where erf is too flat). */
WK_FN wk_wide wk_erfinv(wk_wide y) {
  if (!(y >= (wk_wide)-1 && y <= (wk_wide)1)) return (wk_wide)WK_NAN_F;
  if (y == (wk_wide)1) return (wk_wide)WK_INF_F;
  if (y == (wk_wide)-1) return -(wk_wide)WK_INF_F;
  if (y == (wk_wide)0) return y;
  wk_wide w = -log(((wk_wide)1 - y) * ((wk_wide)1 + y));
  wk_wide p;
  if (w < (wk_wide)5) {
    w -= (wk_wide)2.5;
    p = (wk_wide)2.81022636e-08;
    p = (wk_wide)3.43273939e-07 + p * w;
    p = (wk_wide)-3.5233877e-06 + p * w;
    p = (wk_wide)-4.39150654e-06 + p * w;
    p = (wk_wide)0.00021858087 + p * w;
    p = (wk_wide)-0.00125372503 + p * w;
    p = (wk_wide)-0.00417768164 + p * w;
    p = (wk_wide)0.246640727 + p * w;
    p = (wk_wide)1.50140941 + p * w;
  } else {
    w = sqrt(w) - (wk_wide)3;
    p = (wk_wide)-0.000200214257;
    p = (wk_wide)0.000100950558 + p * w;
    p = (wk_wide)0.00134934322 + p * w;
    p = (wk_wide)-0.00367342844 + p * w;
    p = (wk_wide)0.00573950773 + p * w;
    p = (wk_wide)-0.0076224613 + p * w;
    p = (wk_wide)0.00943887047 + p * w;
    p = (wk_wide)1.00167406 + p * w;
    p = (wk_wide)2.83297682 + p * w;
  }
  wk_wide x = p * y;
  for (int i = 0; i < 8; ++i) {
    const wk_wide f = fabs(y) < (wk_wide)0.5 ? erf(x) - y
                      : y > (wk_wide)0       ? ((wk_wide)1 - y) - erfc(x)
                                             : erfc(-x) - ((wk_wide)1 + y);
    const wk_wide step = f / ((wk_wide)1.1283791670955125738961589031215 * exp(-x * x));
    x -= step;
    if (!(fabs(step) > (wk_wide)1e-17 * fabs(x))) break;
  }
  return x;
}
/* gelu in the wide type: x sigmoid(2u) and 0.5 x erfc(-x / sqrt 2), without cancellation. */
WK_FN wk_wide wk_gelu_tanh(wk_wide d) {
  const wk_wide u = (wk_wide)0.79788456080286535587989211986876 * (d + (wk_wide)0.044715 * d * d * d);
  return d / ((wk_wide)1 + exp((wk_wide)-2 * u));
}
WK_FN wk_wide wk_gelu_erf(wk_wide d) {
  return (wk_wide)0.5 * d * erfc(-d * (wk_wide)0.70710678118654752440084436210485);
}
)GPU";

}  // namespace wick::gpu::detail
