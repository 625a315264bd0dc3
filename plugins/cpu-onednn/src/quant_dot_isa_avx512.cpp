// quant_dot_isa_avx512.cpp — quant_dot_kernels.inc on AVX-512F (built with -mavx512f -mfma, 512-bit vectors preferred).
#define WICK_QD_NS quant_isa_avx512
#include "quant_dot_kernels.inc"
