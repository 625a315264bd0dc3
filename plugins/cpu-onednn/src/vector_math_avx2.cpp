// vector_math_avx2.cpp — the vector math kernels on AVX2 and FMA (built with -mavx2 -mfma, CMakeLists.txt).
#define WICK_VM_NS vecmath_isa_avx2
#define WICK_VM_ISA avx2
#define WICK_VM_NF 8
#define WICK_VM_ND 4
#define WICK_VM_VF __m256
#define WICK_VM_VD __m256d
#define WICK_VM_FMAF _mm256_fmadd_ps
#define WICK_VM_HSUM4 hsum4
#include <immintrin.h>

namespace wick::cpu::vecmath_isa_avx2 {
namespace {

// out[0..3] = the lane sums of a, b, c and d: three horizontal adds of the four together, then one
// of the halves.
inline void hsum4(__m256 a, __m256 b, __m256 c, __m256 d, float* out) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

}  // namespace
}  // namespace wick::cpu::vecmath_isa_avx2

#include "vector_math_kernels.inc"
