// vector_math_sse2.cpp — the vector math kernels on baseline x86-64 (SSE2, no extra flags).
#define WICK_VM_NS vecmath_isa_sse2
#define WICK_VM_ISA sse2
#define WICK_VM_NF 4
#define WICK_VM_ND 2
#define WICK_VM_VF __m128
#define WICK_VM_VD __m128d
#include "vector_math_kernels.inc"
