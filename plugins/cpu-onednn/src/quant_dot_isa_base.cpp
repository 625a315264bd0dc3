// quant_dot_isa_base.cpp — quant_dot_kernels.inc and quant_dot8_kernels.inc on baseline x86-64
// (SSE2).
#define WICK_QD_NS quant_isa_base
#include "quant_dot_kernels.inc"
#include "quant_dot8_kernels.inc"
