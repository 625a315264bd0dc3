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
#define WICK_VM_TANHF(x) tanh_avx512(x)
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

// exp(x) in f32 for x in [-104, 89], inline: x = n ln 2 + r with n = round(x log2 e) and r by Cody
// and Waite's two-part ln 2 (|r| <= ln 2 / 2), e^r by its Taylor series to r^7 (truncation 5e-9,
// under 0.1 ULP), then 2^n by vscalefps, which rounds once into the subnormals and overflows to Inf.
inline __m512 exp_held(__m512 x) {
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

// exp(x) for any x: held to [-104, 89] first (exp is 0 or Inf beyond; max and min keep a NaN).
// Within 1 ULP of the exact value over every 7th f32 bit pattern; 1.5x SLEEF's u10, which is a
// call through the GOT.
inline __m512 exp_avx512(__m512 x) {
  return exp_held(_mm512_maskz_min_ps(kAll, _mm512_set1_ps(89.0f),
                                      _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-104.0f), x)));
}

// tanh(x) in f32. For |x| >= 0.55 (tanh >= 0.5): 1 - 2 / (exp(2a) + 1) with a = min(|x|, 9)
// (tanh(9) rounds to 1) and x's sign; the subtraction loses nothing there, as the quotient is at
// most half the result, and the denominator is in [3, e^18 + 1], inside the reciprocal's range.
// Below: x + x^3 P(x^2), P of degree 4 fitted to tanh's relative error on [0, 0.55] by
// scripts/fit_tanh_poly.py (0.03 ULP there). Within 2 ULP; 0.6x the time of SLEEF's tanh (u35).
inline __m512 tanh_avx512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(int(0x80000000u)));
  const __m512 abs = _mm512_abs_ps(x);
  const __m512 a = _mm512_maskz_min_ps(kAll, _mm512_set1_ps(9.0f), abs);  // keeps a NaN
  const __m512 d = _mm512_add_ps(exp_held(_mm512_add_ps(a, a)), one);
  const __m512 big = _mm512_fnmadd_ps(_mm512_set1_ps(2.0f), recip_avx512(d), one);
  const __m512 z = _mm512_mul_ps(x, x);
  constexpr float kP[] = {0.02099551639473383f, -0.05383235867865929f, 0.13332376057704032f,
                          -0.33333310401675886f};
  __m512 p = _mm512_set1_ps(-0.006172904904849697f);
  for (const float c : kP) p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(c));
  const __m512 small = _mm512_mul_ps(x, _mm512_fmadd_ps(z, p, one));  // x (1 + z P) keeps -0
  // big with x's sign: (x & sign) | big, one ternary-logic op
  const __m512 signed_big = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
      _mm512_castps_si512(x), _mm512_castps_si512(sign), _mm512_castps_si512(big), 0xEA));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(abs, _mm512_set1_ps(0.55f), _CMP_LT_OQ),
                              signed_big, small);
}

}  // namespace
}  // namespace wick::cpu::vecmath_isa_avx512

#include "vector_math_kernels.inc"
