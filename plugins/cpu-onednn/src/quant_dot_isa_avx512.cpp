// quant_dot_isa_avx512.cpp — quant_dot_kernels.inc on AVX-512F (built with -mavx512f -mfma, 512-bit vectors preferred).
#define WICK_QD_NS quant_isa_avx512
// GCC 12 takes the _mm512_undefined_* operands inside its own widening intrinsics for
// maybe-uninitialized values (a false positive of the compiler's headers).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "quant_dot_kernels.inc"
