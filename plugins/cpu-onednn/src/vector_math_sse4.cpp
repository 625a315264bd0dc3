// vector_math_sse4.cpp — the vector math kernels on SSE4.1 (built with -msse4.1, CMakeLists.txt).
#define WICK_VM_NS vecmath_isa_sse4
#define WICK_VM_ISA sse4
#define WICK_VM_NF 4
#define WICK_VM_ND 2
#define WICK_VM_VF __m128
#define WICK_VM_VD __m128d
#include "vector_math_kernels.inc"
