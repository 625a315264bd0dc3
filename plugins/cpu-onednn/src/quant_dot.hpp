// quant_dot.hpp — one row of GGML blocks dotted with f32 values, without widening the row into
// memory first: MATMUL_QUANT's decoding path (a few rows of x). The activations stay f32 (they are
// not rounded to 8 bits as llama.cpp rounds them), so the result is the f32 product of x and the
// dequantized weights, to f32 summation error. quant_dot.cpp.
#pragma once

#include <wick/sdk/ggml_types.hpp>

#include <cstdint>

namespace wick::cpu {

// Whether dot_blocks takes `type` (Q8_0, Q4_0, Q4_K, Q6_K); others go through dequantize_row.
bool has_fused_dot(sdk::ggml::Type type);

// The sums of x over each 32 values (k / 32 of them), which dot_blocks takes for the types whose
// blocks have offsets (Q4_K): computed once per row of x, not once per weight row.
void group_sums(const float* x, float* xs, int64_t k);

// sum_i w[i] * x[i] over k values, w the blocks of one row; xs: group_sums(x) for Q4_K (read by
// no other type: may be null).
float dot_blocks(sdk::ggml::Type type, const uint8_t* w, const float* x, const float* xs, int64_t k);

// WICK_QUANT_ROUND_X (ABI 1.6): whether dot8_rows takes `type` (Q8_0, Q4_0, Q4_K, Q6_K); other
// types dequantize x's rounded rows and take the f32 paths (the same definition).
bool has_dot8(sdk::ggml::Type type);

// y[j] = sum_i w_j[i] * a[i] over k values for `rows` weight rows w_j = w + j * row_bytes (blocks of
// `type`) and one row a of x quantized to sdk::ggml::activation_type(type) (Q8_0 or Q8_K blocks, as
// sdk::ggml::quantize_row makes them: quants in [-127, 127]). Integer products per block, scaled
// in f32 (quant_dot8_kernels.inc), on AVX-512 VNNI, AVX2 or baseline as the CPU and
// ONEDNN_MAX_CPU_ISA allow.
void dot8_rows(sdk::ggml::Type type, const uint8_t* w, int64_t row_bytes, const uint8_t* a, int64_t k, float* y,
               int64_t rows);

}  // namespace wick::cpu
