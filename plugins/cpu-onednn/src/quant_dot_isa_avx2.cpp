// quant_dot_isa_avx2.cpp — quant_dot_kernels.inc and quant_dot8_kernels.inc on AVX2 and FMA
// (built with -mavx2 -mfma -mf16c).
#define WICK_QD_NS quant_isa_avx2
#include "quant_dot_kernels.inc"
#include "quant_dot8_kernels.inc"
