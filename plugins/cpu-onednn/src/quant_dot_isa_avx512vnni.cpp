// quant_dot_isa_avx512vnni.cpp — quant_dot8_kernels.inc with AVX-512 VNNI's vpdpbusd on 256-bit
// vectors (built with -mavx2 -mfma -mf16c -mavx512f -mavx512vl -mavx512bw -mavx512vnni), for CPUs
// with avx512_vnni; the f32 kernels stay quant_dot_isa_avx512.cpp's.
#define WICK_QD_NS quant_isa_avx512vnni
// GCC 12 takes the _mm512_undefined_* operands inside its own widening intrinsics for
// maybe-uninitialized values (a false positive of the compiler's headers).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "quant_dot8_kernels.inc"
