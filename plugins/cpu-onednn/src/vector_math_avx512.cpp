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

}  // namespace
}  // namespace wick::cpu::vecmath_isa_avx512

#include "vector_math_kernels.inc"
