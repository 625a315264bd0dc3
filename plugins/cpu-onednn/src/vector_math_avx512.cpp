// vector_math_avx512.cpp — the vector math kernels on AVX-512F (built with -mavx512f, CMakeLists.txt).
#define WICK_VM_NS vecmath_isa_avx512
#define WICK_VM_ISA avx512f
#define WICK_VM_NF 16
#define WICK_VM_ND 8
#define WICK_VM_VF __m512
#define WICK_VM_VD __m512d
#define WICK_VM_FMAF _mm512_fmadd_ps
#include "vector_math_kernels.inc"
