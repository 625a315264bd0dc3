// vector_math_avx2.cpp — the vector math kernels on AVX2 and FMA (built with -mavx2 -mfma, CMakeLists.txt).
#define WICK_VM_NS vecmath_isa_avx2
#define WICK_VM_ISA avx2
#define WICK_VM_NF 8
#define WICK_VM_ND 4
#define WICK_VM_VF __m256
#define WICK_VM_VD __m256d
#define WICK_VM_FMAF _mm256_fmadd_ps
#include "vector_math_kernels.inc"
