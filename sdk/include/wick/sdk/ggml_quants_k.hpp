// wick/sdk/ggml_quants_k.hpp — GGML's K-quants (super-blocks of 256 weights in sub-blocks of 16 or
// 32, each with its own quantized scale): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and the activation format
// Q8_K; their block layouts, and reference (scalar, deterministic) quantize and dequantize that
// reproduce llama.cpp's ggml-quants.c (quantize_row_*_ref, dequantize_row_*) bit for bit. Also the
// pieces every format shares (rounding as ggml rounds, the row loops); <wick/sdk/ggml_quants.hpp>
// adds the 32-element formats and the dispatch on a ggml::Type.
//
// Bit-exactness: the float expressions below are ggml's, operation for operation, in the same
// order, evaluated in float (FLT_EVAL_METHOD 0: SSE, NEON) and never fused into multiply-adds
// (pragmas below; the fixtures come from llama.cpp's reference built for baseline x86-64, no FMA).
//
// Non-finite input: ggml's reference has no defined result for a NaN or infinity (its maxima drop a
// NaN or keep it depending on where it sits, and it converts NaN to integers, undefined in C). Here
// a block holding one quantizes to a block whose scales are NaN and whose quants are 0, so that
// every one of its elements dequantizes to NaN: the damage stays visible, and llama.cpp's loader
// (ggml_validate_row_data) refuses such a block.
#pragma once

#include <wick/sdk/dtype.hpp>
#include <wick/sdk/ggml_types.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

// Bit-exactness needs every float operation rounded as written, so these functions forbid
// fused multiply-adds whatever the including file's flags (Clang contracts by default, GCC
// under -std=gnu++NN or -ffp-contract=fast); only Clang's -ffp-contract=fast and -ffast-math
// override this.
#if defined(__clang__)
#pragma float_control(push)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace wick::sdk::ggml {

// Blocks are stored as GGUF stores them, little-endian, and these structs are their memory image.
static_assert(std::endian::native == std::endian::little, "GGML blocks are little-endian");

inline constexpr int kSuperBlock = 256;  // ggml's QK_K: the elements of one K-quant block

namespace detail {

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// The scale a block with a NaN or infinity gets (a function: f16's constructor is not constexpr).
inline f16 nan_half() {
  return f16(kNaN);
}
// ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it counts as all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// ggml's nearest_int: adding 1.5 * 2^23 leaves v rounded to an integer (ties to even, by the FPU)
// in the low mantissa bits. Exact for |v| <= 2^22; kept as ggml computes it beyond, where ggml's
// result (which its callers then clamp) is garbage but deterministic.
inline int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  return (std::bit_cast<int32_t>(shifted) & 0x007fffff) - 0x00400000;
}

// C's (int)v as x86 computes it (cvttss2si): NaN and values outside int32 give INT32_MIN. ggml's
// (int8_t)f and (uint8_t)f are this, then the low byte; only reached out of range when a block's
// arithmetic overflows.
inline int32_t trunc_int(float v) {
  if (!(v >= -2147483648.f && v < 2147483648.f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

inline bool all_finite(const float* x, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

// The blocks in a row of n elements; a partial block is refused (ggml asserts instead).
inline int64_t block_count(Type type, int64_t n, const char* what) {
  const TypeTraits t = traits(type);
  if (n < 0 || n % t.block_size != 0)
    throw std::invalid_argument("ggml " + std::string(what) + ": a row of " + std::string(t.name) +
                                " is whole blocks of " + std::to_string(t.block_size) +
                                " elements, but n = " + std::to_string(n));
  return n / static_cast<int64_t>(t.block_size);
}

}  // namespace detail

// The row of n elements (a whole number of blocks) at x, quantized into y[0 .. n / block size).
// quantize_block and dequantize_block are overloaded on each Block type of this header and of
// ggml_quants.hpp. Throws std::invalid_argument naming the type and n when n is not a whole number
// of blocks.
template <class Block>
void quantize_row(const float* x, Block* y, int64_t n) {
  constexpr int64_t kSize = traits(Block::kType).block_size;
  const int64_t blocks = detail::block_count(Block::kType, n, "quantize_row");
  for (int64_t i = 0; i < blocks; ++i) quantize_block(x + i * kSize, y[i]);
}

template <class Block>
void dequantize_row(const Block* x, float* y, int64_t n) {
  constexpr int64_t kSize = traits(Block::kType).block_size;
  const int64_t blocks = detail::block_count(Block::kType, n, "dequantize_row");
  for (int64_t i = 0; i < blocks; ++i) dequantize_block(x[i], y + i * kSize);
}

// ---- Block layouts. Within a super-block, element e (0..255) lies in sub-block e/16 or e/32. ----

// Q2_K: 16 sub-blocks of 16; w = d * sc - dmin * m, with q in 0..3 and 4-bit sc and m per
// sub-block.
struct BlockQ2_K {
  static constexpr Type kType = Type::Q2_K;
  uint8_t scales[16];  // sub-block j: its scale sc in the low nibble, its min m in the high nibble
  uint8_t qs[64];  // element 128h + 32k + l (h < 2, k < 4, l < 32): bits 2k..2k+1 of qs[32h + l]
  f16 d;           // scale of the sub-block scales
  f16 dmin;        // scale of the sub-block mins
};

// Q3_K: 16 sub-blocks of 16; w = d * (sc - 32) * q, with q in -4..3 and a 6-bit sc per sub-block.
struct BlockQ3_K {
  static constexpr Type kType = Type::Q3_K;
  uint8_t hmask[32];   // element e: bit e/32 of hmask[e % 32] is 1 where q >= 0 (0 subtracts 4)
  uint8_t qs[64];      // the low two bits of q + 4, laid out as Q2_K's qs
  uint8_t scales[12];  // sc of sub-block j: low 4 bits in the low (j < 8) or high (j >= 8) nibble
                       // of scales[j % 8], high 2 bits at bit 2(j/4) of scales[8 + j % 4]
  f16 d;
};

// Q4_K and Q5_K: 8 sub-blocks of 32; w = d * sc * q - dmin * m with 6-bit sc and m, packed in 12
// bytes: sub-block j < 4 has sc in the low 6 bits of byte j and m in those of byte j + 4; j >= 4
// has the low 4 bits of sc and m in the low and high nibble of byte j + 4, and their high 2 bits
// in the top 2 bits of byte j - 4 (sc) and of byte j (m).
struct BlockQ4_K {
  static constexpr Type kType = Type::Q4_K;
  f16 d;
  f16 dmin;
  uint8_t scales[12];
  uint8_t qs[128];  // q in 0..15: element 64p + l in the low nibble of qs[32p + l] (l < 32),
                    // element 64p + 32 + l in its high nibble
};

struct BlockQ5_K {
  static constexpr Type kType = Type::Q5_K;
  f16 d;
  f16 dmin;
  uint8_t scales[12];  // as Q4_K's
  uint8_t qh[32];  // bit 4 of q (0..31): element 64p + l at bit 2p of qh[l], 64p + 32 + l at 2p + 1
  uint8_t qs[128];  // bits 0..3 of q, laid out as Q4_K's qs
};

// Q6_K: 16 sub-blocks of 16; w = d * sc * (q - 32), q in 0..63, sc a signed 8-bit scale.
struct BlockQ6_K {
  static constexpr Type kType = Type::Q6_K;
  uint8_t ql[128];  // element 128h + 32k + l (k < 4): bits 0..3 of q in the low (k < 2) or high
                    // nibble of ql[64h + 32(k % 2) + l]
  uint8_t qh[64];   // bits 4..5 of q at bits 2k..2k+1 of qh[32h + l]
  int8_t scales[16];
  f16 d;
};

// Q8_K: what the K-quant dot products take the other operand in; w = d * q, d a full f32.
struct BlockQ8_K {
  static constexpr Type kType = Type::Q8_K;
  float d;
  int8_t qs[256];
  int16_t bsums[16];  // sum of qs[16j .. 16j + 16), which the dot products use for the mins
};

static_assert(sizeof(BlockQ2_K) == traits(Type::Q2_K).type_size);
static_assert(sizeof(BlockQ3_K) == traits(Type::Q3_K).type_size);
static_assert(sizeof(BlockQ4_K) == traits(Type::Q4_K).type_size);
static_assert(sizeof(BlockQ5_K) == traits(Type::Q5_K).type_size);
static_assert(sizeof(BlockQ6_K) == traits(Type::Q6_K).type_size);
static_assert(sizeof(BlockQ8_K) == traits(Type::Q8_K).type_size);

namespace detail {

// Q4_K's and Q5_K's 6-bit scale and min of sub-block j (ggml's get_scale_min_k4).
inline void k4_scale_min(int j, const uint8_t* s, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q3_K's scale of sub-block j, offset removed (-32..31).
inline int q3k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  return (low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

// Q2_K's and Q3_K's 2-bit fields: element 128h + 32k + l is bits 2k.. of qs[32h + l].
inline int q2_bits(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}

// Writes L (0..3 each) into qs in that layout.
inline void pack_q2_bits(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kSuperBlock; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
}

}  // namespace detail

// ---- Dequantization: each is ggml's dequantize_row_*, expression for expression. ----

inline void dequantize_block(const BlockQ2_K& b, float* y) {
  const float d = float(b.d), min = float(b.dmin);
  for (int e = 0; e < kSuperBlock; ++e) {
    const uint8_t sc = b.scales[e / 16];
    const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
    y[e] = dl * detail::q2_bits(b.qs, e) - ml;
  }
}

inline void dequantize_block(const BlockQ3_K& b, float* y) {
  const float d_all = float(b.d);
  for (int e = 0; e < kSuperBlock; ++e) {
    const float dl = d_all * detail::q3k_scale(b.scales, e / 16);
    const bool high = b.hmask[e % 32] & (1u << (e / 32));
    y[e] = dl * (detail::q2_bits(b.qs, e) - (high ? 0 : 4));
  }
}

inline void dequantize_block(const BlockQ4_K& b, float* y) {
  const float d = float(b.d), min = float(b.dmin);
  for (int e = 0; e < kSuperBlock; ++e) {
    uint8_t sc, m;
    detail::k4_scale_min(e / 32, b.scales, sc, m);
    const int q = (b.qs[32 * (e / 64) + e % 32] >> (e % 64 < 32 ? 0 : 4)) & 0xF;
    y[e] = d * sc * q - min * m;
  }
}

inline void dequantize_block(const BlockQ5_K& b, float* y) {
  const float d = float(b.d), min = float(b.dmin);
  for (int e = 0; e < kSuperBlock; ++e) {
    uint8_t sc, m;
    detail::k4_scale_min(e / 32, b.scales, sc, m);
    const int low = (b.qs[32 * (e / 64) + e % 32] >> (e % 64 < 32 ? 0 : 4)) & 0xF;
    const int high = (b.qh[e % 32] >> (e / 32)) & 1;
    y[e] = d * sc * (low + 16 * high) - min * m;
  }
}

inline void dequantize_block(const BlockQ6_K& b, float* y) {
  const float d = float(b.d);
  for (int e = 0; e < kSuperBlock; ++e) {
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    const int low = (b.ql[64 * h + 32 * (k % 2) + l] >> (k < 2 ? 0 : 4)) & 0xF;
    const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
    y[e] = d * b.scales[e / 16] * ((low | (high << 4)) - 32);
  }
}

inline void dequantize_block(const BlockQ8_K& b, float* y) {
  for (int e = 0; e < kSuperBlock; ++e) y[e] = b.d * b.qs[e];
}

// ---- Scale search (ggml's make_* helpers), float operation for float operation. ----

namespace detail {

// L[i] = x[i] on the grid min + l / iscale, l in 0..nmax.
inline void quantize_affine(int n, int nmax, const float* x, float iscale, float min, uint8_t* L) {
  for (int i = 0; i < n; ++i)
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min)))));
}

// The weighted error of x ~ scale * L + min: absolute (use_mad) or squared.
inline float affine_error(int n, const float* x, const float* w, const uint8_t* L, float scale,
                          float min, bool use_mad) {
  float error = 0;
  for (int i = 0; i < n; ++i) {
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    error += w[i] * diff;
  }
  return error;
}

// ggml's make_qkx2_quants: fits x (n <= 32) by scale * L + min with L in 0..nmax and min <= 0,
// trying nstep + 1 grids around nmax / (max - min) and keeping the least weighted error, each
// refit by weighted least squares. Returns the scale; the_min gets -min.
inline float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                              float& the_min, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  quantize_affine(n, nmax, x, iscale, min, L);
  float best_error = affine_error(n, x, weights, L, scale, min, use_mad);
  uint8_t Laux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    quantize_affine(n, nmax, x, iscale, min, Laux);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const float w = weights[i];
      const int l = Laux[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float cur_error = affine_error(n, x, weights, Laux, this_scale, this_min, use_mad);
    if (cur_error < best_error) {
      std::copy(Laux, Laux + n, L);
      best_error = cur_error;
      scale = this_scale;
      min = this_min;
    }
  }
  the_min = -min;
  return scale;
}

// The x[i] of largest magnitude, signed (the first, on a tie), or 0 when every x[i] is 0.
inline float signed_absmax(int n, const float* x) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

// The sums make_qx_quants weighs a grid by (weights x^2): sum w x l and sum w l^2, with
// l = nearest_int(iscale * x) clamped to -nmax..nmax-1; L (when given) gets l + nmax.
struct GridFit {
  float sumlx = 0, suml2 = 0;
};
inline GridFit symmetric_fit(int n, int nmax, const float* x, float iscale, int8_t* L) {
  GridFit f;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    if (L) L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    f.sumlx += w * x[i] * l;
    f.suml2 += w * l * l;
  }
  return f;
}

// ggml's make_qx_quants as Q6_K's reference calls it (rmse_type 1, no importance weights): a
// symmetric grid l in -nmax..nmax-1 (L = l + nmax), the best of 19 grids by weighted fit.
inline float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.f;
  }
  GridFit f = symmetric_fit(n, nmax, x, -nmax / max, L);
  float scale = f.suml2 ? f.sumlx / f.suml2 : 0.0f;
  float best = scale * f.sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(nmax + 0.1f * is) / max;
    f = symmetric_fit(n, nmax, x, iscale, nullptr);
    if (f.suml2 > 0 && f.sumlx * f.sumlx > best * f.suml2) {
      symmetric_fit(n, nmax, x, iscale, L);
      scale = f.sumlx / f.suml2;
      best = scale * f.sumlx;
    }
  }
  return scale;
}

// ggml's make_q3_quants with do_rmse: the grid of -nmax / max, then up to 5 sweeps that move one
// element to the level its removal's least-squares scale suggests, where that improves the fit.
inline float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.f;
  }
  const GridFit f = symmetric_fit(n, nmax, x, -nmax / max, L);
  float sumlx = f.sumlx, suml2 = f.suml2;
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] - nmax);
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      int new_l = nearest_int(x[i] * sl2 / slx);
      new_l = std::max(-nmax, std::min(nmax - 1, new_l));
      if (new_l == L[i]) continue;
      slx += w * x[i] * new_l;
      sl2 += w * new_l * new_l;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++n_changed;
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace detail

// ---- Quantization: each is ggml's quantize_row_*_ref for one super-block. ----

inline void quantize_block(const float* x, BlockQ2_K& b) {
  b = BlockQ2_K{};
  if (!detail::all_finite(x, kSuperBlock)) {
    b.d = b.dmin = detail::nan_half();
    return;
  }
  uint8_t L[kSuperBlock];
  float weights[16], mins[16], scales[16];
  const float q4scale = 15.f;
  float max_scale = 0, max_min = 0;  // scales and mins are >= 0: the mins are subtracted
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = detail::make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, mins[j], -0.5f,
                                         0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  if (max_scale > 0) {
    const float iscale = q4scale / max_scale;
    for (int j = 0; j < 16; ++j)
      b.scales[j] = static_cast<uint8_t>(detail::nearest_int(iscale * scales[j]));
    b.d = f16(max_scale / q4scale);
  } else {
    b.d = f16(0.f);
  }
  if (max_min > 0) {
    const float iscale = q4scale / max_min;
    for (int j = 0; j < 16; ++j)
      b.scales[j] =
          static_cast<uint8_t>(b.scales[j] | (detail::nearest_int(iscale * mins[j]) << 4));
    b.dmin = f16(max_min / q4scale);
  } else {
    b.dmin = f16(0.f);
  }
  // Requantize against the stored (rounded) scales; a sub-block of scale 0 keeps the fit's levels.
  for (int j = 0; j < 16; ++j) {
    const float d = float(b.d) * (b.scales[j] & 0xF);
    if (!d) continue;
    const float dm = float(b.dmin) * (b.scales[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      const int l = detail::nearest_int((x[16 * j + ii] + dm) / d);
      L[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
    }
  }
  detail::pack_q2_bits(L, b.qs);
}

namespace detail {

// Q3_K's 16 signed scales, quantized to 6 bits (offset 32) against d = max_scale / -32.
inline void quantize_q3k_scales(const float* scales, BlockQ3_K& b) {
  float max_scale = 0, amax = 0;
  for (int j = 0; j < 16; ++j) {
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (!max_scale) {
    b.d = f16(0.f);
    return;
  }
  const float iscale = -32.f / max_scale;
  for (int j = 0; j < 16; ++j) {
    int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
    l = static_cast<int8_t>(std::max(-32, std::min(31, static_cast<int>(l))) + 32);
    if (j < 8) {
      b.scales[j] = l & 0xF;
    } else {
      b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0xF) << 4));
    }
    l = static_cast<int8_t>(l >> 4);
    b.scales[j % 4 + 8] = static_cast<uint8_t>(b.scales[j % 4 + 8] | (l << (2 * (j / 4))));
  }
  b.d = f16(1 / iscale);
}

}  // namespace detail

inline void quantize_block(const float* x, BlockQ3_K& b) {
  b = BlockQ3_K{};
  if (!detail::all_finite(x, kSuperBlock)) {
    b.d = detail::nan_half();
    return;
  }
  int8_t L[kSuperBlock];
  float scales[16];
  for (int j = 0; j < 16; ++j) scales[j] = detail::make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
  detail::quantize_q3k_scales(scales, b);
  for (int j = 0; j < 16; ++j) {
    const float d = float(b.d) * detail::q3k_scale(b.scales, j);
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = detail::nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-4, std::min(3, l)) + 4);
    }
  }
  uint8_t low[kSuperBlock];
  for (int e = 0; e < kSuperBlock; ++e) {
    if (L[e] > 3) b.hmask[e % 32] = static_cast<uint8_t>(b.hmask[e % 32] | (1u << (e / 32)));
    low[e] = static_cast<uint8_t>(L[e] > 3 ? L[e] - 4 : L[e]);
  }
  detail::pack_q2_bits(low, b.qs);
}

namespace detail {

// Q4_K's and Q5_K's common part: fits each sub-block of 32 by make_qkx2_quants (weights
// rms + |x|), quantizes the 8 scales and mins to 6 bits against d and dmin, then requantizes
// each element to 0..nmax against its sub-block's stored scale and min.
inline void quantize_k4(const float* x, int nmax, float rmin, int nstep, f16& d, f16& dmin,
                        uint8_t* packed, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] =
        make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, mins[j], rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls =
        std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((ls >> 4) << 6));
      packed[j] = static_cast<uint8_t>(packed[j] | ((lm >> 4) << 6));
    }
  }
  d = f16(max_scale / 63.f);
  dmin = f16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    k4_scale_min(j, packed, sc, m);
    const float dj = float(d) * sc;
    if (!dj) continue;
    const float dm = float(dmin) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / dj);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

}  // namespace detail

inline void quantize_block(const float* x, BlockQ4_K& b) {
  b = BlockQ4_K{};
  if (!detail::all_finite(x, kSuperBlock)) {
    b.d = b.dmin = detail::nan_half();
    return;
  }
  uint8_t L[kSuperBlock];
  detail::quantize_k4(x, 15, -1.f, 20, b.d, b.dmin, b.scales, L);
  for (int j = 0; j < kSuperBlock; j += 64)
    for (int l = 0; l < 32; ++l)
      b.qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
}

inline void quantize_block(const float* x, BlockQ5_K& b) {
  b = BlockQ5_K{};
  if (!detail::all_finite(x, kSuperBlock)) {
    b.d = b.dmin = detail::nan_half();
    return;
  }
  uint8_t L[kSuperBlock];
  detail::quantize_k4(x, 31, -0.5f, 15, b.d, b.dmin, b.scales, L);
  for (int e = 0; e < kSuperBlock; ++e) {
    uint8_t& q = b.qs[32 * (e / 64) + e % 32];
    q = static_cast<uint8_t>(q | ((L[e] & 0xF) << (e % 64 < 32 ? 0 : 4)));
    b.qh[e % 32] = static_cast<uint8_t>(b.qh[e % 32] | ((L[e] >> 4) << (e / 32)));
  }
}

inline void quantize_block(const float* x, BlockQ6_K& b) {
  b = BlockQ6_K{};
  if (!detail::all_finite(x, kSuperBlock)) {
    b.d = detail::nan_half();
    return;
  }
  int8_t L[kSuperBlock];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = detail::make_qx_quants(16, 32, x + 16 * j, L + 16 * j);
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < detail::kGroupMaxEps) return;  // all zero: ggml writes a zero block
  const float iscale = -128.f / max_scale;
  b.d = f16(1 / iscale);
  for (int j = 0; j < 16; ++j)
    b.scales[j] = static_cast<int8_t>(std::min(127, detail::nearest_int(iscale * scales[j])));
  for (int j = 0; j < 16; ++j) {
    const float d = float(b.d) * b.scales[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = detail::nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  for (int e = 0; e < kSuperBlock; ++e) {
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    uint8_t& q = b.ql[64 * h + 32 * (k % 2) + l];
    q = static_cast<uint8_t>(q | ((L[e] & 0xF) << (k < 2 ? 0 : 4)));
    b.qh[32 * h + l] = static_cast<uint8_t>(b.qh[32 * h + l] | ((L[e] >> 4) << (2 * k)));
  }
}

// Q8_K: one scale for 256 values, d = max / -127 (not -128: ggml's IQ kernels rely on |q| <= 127).
inline void quantize_block(const float* x, BlockQ8_K& b) {
  b = BlockQ8_K{};
  if (!detail::all_finite(x, kSuperBlock)) {
    b.d = detail::kNaN;
    return;
  }
  const float max = detail::signed_absmax(kSuperBlock, x);
  if (!max) return;  // all zero: d = 0, qs and bsums 0 (ggml leaves this block's bsums unwritten)
  const float iscale = -127.f / max;
  for (int e = 0; e < kSuperBlock; ++e)
    b.qs[e] = static_cast<int8_t>(std::min(127, detail::nearest_int(iscale * x[e])));
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int ii = 0; ii < 16; ++ii) sum += b.qs[16 * j + ii];
    b.bsums[j] = static_cast<int16_t>(sum);
  }
  b.d = 1 / iscale;
}

}  // namespace wick::sdk::ggml

#if defined(__clang__)
#pragma float_control(pop)
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif
