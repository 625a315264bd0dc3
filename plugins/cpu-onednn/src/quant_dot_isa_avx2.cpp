// quant_dot_isa_avx2.cpp — quant_dot_kernels.inc on AVX2 and FMA (built with -mavx2 -mfma).
#define WICK_QD_NS quant_isa_avx2
#include "quant_dot_kernels.inc"
