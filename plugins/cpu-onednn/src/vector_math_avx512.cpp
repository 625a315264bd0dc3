// vector_math_avx512.cpp — the vector math kernels on AVX-512F (built with -mavx512f, CMakeLists.txt).
#define WICK_VM_NS vecmath_isa_avx512
#define WICK_VM_ISA avx512f
#define WICK_VM_NF 16
#define WICK_VM_ND 8
#define WICK_VM_VF __m512
#define WICK_VM_VD __m512d
#define WICK_VM_FMAF _mm512_fmadd_ps
#define WICK_VM_RCPF(d) recip_avx512(d)
#define WICK_VM_EXPF(x) exp_avx512(x)
#define WICK_VM_DIVF(n, d) div_avx512(n, d)
#define WICK_VM_POOL_2X2 1  // max_pool_2x2 and max_pool_2x2_grad below
#define WICK_VM_HSUM4 hsum4
#include <immintrin.h>

namespace wick::cpu::vecmath_isa_avx512 {
namespace {

constexpr __mmask16 kAll = 0xFFFF;  // the masked forms: GCC 12 warns of the unmasked ones' source

// 1 / d for 1 <= d <= 2^126: the 14-bit estimate and one Newton step (relative error about 2^-28
// before the step's own rounding: within 1 ULP).
inline __m512 recip_avx512(__m512 d) {
  const __m512 q = _mm512_maskz_rcp14_ps(kAll, d);
  return _mm512_fmadd_ps(q, _mm512_fnmadd_ps(d, q, _mm512_set1_ps(1.0f)), q);
}

// exp(x) in f32, inline: x held to [-104, 89] first (exp is 0 or Inf beyond; max and min keep a
// NaN), then x = n ln 2 + r with n = round(x log2 e) and r by Cody and Waite's two-part ln 2
// (|r| <= ln 2 / 2), e^r by its Taylor series to r^7 (truncation 5e-9, under 0.1 ULP), then 2^n by
// vscalefps, which rounds once into the subnormals and overflows to Inf. Within 1 ULP of the exact
// value over every 7th f32 bit pattern; 1.5x SLEEF's u10, which is a call through the GOT.
inline __m512 exp_avx512(__m512 x) {
  x = _mm512_maskz_min_ps(kAll, _mm512_set1_ps(89.0f), _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);  // ln 2's top 16 bits
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);  // and the rest
  constexpr float kTaylor[] = {float(1.0 / 720), float(1.0 / 120), float(1.0 / 24),
                               float(1.0 / 6), 0.5f, 1.0f, 1.0f};  // 1/6! ... 1/0!
  __m512 p = _mm512_set1_ps(float(1.0 / 5040));                    // 1/7!
  for (const float c : kTaylor) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// n / d for d >= 1: the 14-bit estimate r of 1 / d, q = n r, then one correction of the quotient
// itself, q - (d q - n) r (about 2^-28 before its own rounding: within an ULP of the quotient of
// n and d, one rounding fewer than n times a refined reciprocal). Written d q - n so that n = -0
// gives -0.
inline __m512 div_avx512(__m512 n, __m512 d) {
  const __m512 r = _mm512_maskz_rcp14_ps(kAll, d);
  const __m512 q = _mm512_mul_ps(n, r);
  return _mm512_fnmadd_ps(_mm512_fmsub_ps(d, q, n), r, q);
}

// out[0..3] = the lane sums of a, b, c and d: each one's four 128-bit quarters added (two
// shuffles of the quarters), then two horizontal adds of the four together.
inline void hsum4(__m512 a, __m512 b, __m512 c, __m512 d, float* out) {
  auto fold = [](__m512 v) {
    v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0x4E));  // quarters 2 3 0 1
    v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0xB1));  // quarters 1 0 3 2
    return _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  };
  _mm_storeu_ps(out, _mm_hadd_ps(_mm_hadd_ps(fold(a), fold(b)), _mm_hadd_ps(fold(c), fold(d))));
}

// ---- 2x2, stride-2 max pooling of f32 planes (vector_math.hpp's Kernels::max_pool_2x2*) ----------
// Each window's taps a b / c d are taken in that order and the first maximum wins, as in the
// plugin's loops (window.cpp): ties keep the earlier tap, and the first NaN wins over everything.

// The lanes of a row's 32 values from `p`, 2 * t of them (t < 16 windows: the rest masked off).
struct Pairs {
  __m512 even, odd;  // taps 2j and 2j + 1 of the windows j
};
inline Pairs load_pairs(const float* p, int t) {
  const __mmask16 lo = static_cast<__mmask16>(t >= 8 ? 0xFFFFu : (1u << (2 * t)) - 1);
  const __mmask16 hi = static_cast<__mmask16>(t >= 16 ? 0xFFFFu : t > 8 ? (1u << (2 * t - 16)) - 1 : 0);
  const __m512 a = _mm512_maskz_loadu_ps(lo, p), b = _mm512_maskz_loadu_ps(hi, p + 16);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return {_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b)};
}

// The earlier of `first` and `later` unless `later` is larger or the first NaN of the two.
inline __m512 first_max(__m512 first, __m512 later) {
  const __m512 m = _mm512_maskz_max_ps(kAll, later, first);  // later > first ? later : first (first on NaN)
  const __mmask16 take = _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(later, later, _CMP_UNORD_Q), m, m, _CMP_ORD_Q);
  return _mm512_mask_mov_ps(m, take, later);
}

inline __mmask16 tail_mask(int64_t t) {
  return static_cast<__mmask16>(t >= 16 ? 0xFFFFu : (1u << t) - 1);
}

// y[i][j] = the maximum of x[2i .. 2i + 1][2j .. 2j + 1] for i < oh, j < ow; rows xrow and yrow
// floats apart.
void max_pool_2x2(const float* x, int64_t xrow, float* y, int64_t yrow, int64_t oh, int64_t ow) {
  for (int64_t i = 0; i < oh; ++i) {
    const float* r0 = x + 2 * i * xrow;
    const float* r1 = r0 + xrow;
    for (int64_t j = 0; j < ow; j += 16) {
      const int t = ow - j >= 16 ? 16 : static_cast<int>(ow - j);  // no std::min: see the .inc
      const Pairs top = load_pairs(r0 + 2 * j, t), bottom = load_pairs(r1 + 2 * j, t);
      const __m512 m = first_max(first_max(top.even, top.odd), first_max(bottom.even, bottom.odd));
      _mm512_mask_storeu_ps(y + i * yrow + j, tail_mask(t), m);
    }
  }
}

// Max pooling's backward over one [h, w] plane (window_scatter_max with 2x2 windows of stride 2,
// no padding, oh * 2 <= h, ow * 2 <= w): y = fill everywhere but at each window's first maximum
// (its first NaN, when it has one), which gets fill + s[i][j].
void max_pool_2x2_grad(const float* x, int64_t xrow, const float* s, int64_t srow, float* y, int64_t yrow,
                       int64_t h, int64_t w, int64_t oh, int64_t ow, float fill) {
  const __m512 f = _mm512_set1_ps(fill);
  // Interleaving a row's two taps back: lanes 0..15 and 16..31 of (even, odd).
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  for (int64_t i = 0; i < oh; ++i) {
    const float* r0 = x + 2 * i * xrow;
    float* y0 = y + 2 * i * yrow;
    for (int64_t j = 0; j < ow; j += 16) {
      const int t = ow - j >= 16 ? 16 : static_cast<int>(ow - j);  // no std::min: see the .inc
      const Pairs top = load_pairs(r0 + 2 * j, t), bottom = load_pairs(r0 + xrow + 2 * j, t);
      const __m512 m = _mm512_maskz_max_ps(kAll, _mm512_maskz_max_ps(kAll, top.even, top.odd),
                                           _mm512_maskz_max_ps(kAll, bottom.even, bottom.odd));
      const __m512 tap[4] = {top.even, top.odd, bottom.even, bottom.odd};
      __mmask16 nan = 0, won = 0, wins[4];
      for (int k = 0; k < 4; ++k) nan |= _mm512_cmp_ps_mask(tap[k], tap[k], _CMP_UNORD_Q);
      for (int k = 0; k < 3; ++k) {
        const __mmask16 is_nan = _mm512_cmp_ps_mask(tap[k], tap[k], _CMP_UNORD_Q);
        const __mmask16 is_max = _mm512_cmp_ps_mask(tap[k], m, _CMP_EQ_OQ);
        wins[k] = static_cast<__mmask16>(~won & ((nan & is_nan) | (~nan & is_max)));
        won |= wins[k];
      }
      wins[3] = static_cast<__mmask16>(~won);
      const __m512 v = _mm512_add_ps(f, _mm512_maskz_loadu_ps(tail_mask(t), s + i * srow + j));
      for (int k = 0; k < 2; ++k) {
        const __m512 a = _mm512_mask_mov_ps(f, wins[2 * k], v), b = _mm512_mask_mov_ps(f, wins[2 * k + 1], v);
        float* out = y0 + k * yrow + 2 * j;
        _mm512_mask_storeu_ps(out, tail_mask(2 * t), _mm512_permutex2var_ps(a, lo, b));
        if (t > 8) _mm512_mask_storeu_ps(out + 16, tail_mask(2 * t - 16), _mm512_permutex2var_ps(a, hi, b));
      }
    }
    for (int64_t r = 2 * i; r < 2 * i + 2; ++r)  // a column beyond the last window
      for (int64_t q = 2 * ow; q < w; ++q) y[r * yrow + q] = fill;
  }
  for (int64_t r = 2 * oh; r < h; ++r)  // rows beyond the last window
    for (int64_t q = 0; q < w; ++q) y[r * yrow + q] = fill;
}

}  // namespace
}  // namespace wick::cpu::vecmath_isa_avx512

#include "vector_math_kernels.inc"
