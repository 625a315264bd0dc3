// vector_math.hpp — transcendental functions over contiguous f32 and f64 runs on SLEEF's vector
// functions (libsleef, 1-ULP "u10" variants; erfc 1.5 ULP, tanh 3.5 ULP; on AVX2 and AVX-512 the
// f32 tanh and GELU (erf) as fitted rational functions, on AVX-512 an inline f32 exp of the
// plugin's own, vector_math_avx512.cpp, which also holds 2x2 max pooling), one translation unit
// per ISA (vector_math_{sse2,sse4,avx2,avx512}.cpp, each built with its own -m flags) and the
// widest the CPU has picked at run time, capped by ONEDNN_MAX_CPU_ISA as oneDNN is.
//
// Only the per-ISA files hold code beyond baseline x86-64, all of it in namespaces named
// vecmath_isa_* (tests/baseline_isa_test.sh allows ymm and zmm registers in those functions only).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace wick::cpu::vecmath {

// Whether the plugin is built with the vector kernels (x86-64 only; elsewhere the scalar loops).
#ifdef WICK_CPU_VECTOR_MATH
inline constexpr bool kAvailable = true;
#else
inline constexpr bool kAvailable = false;
#endif

// The ISA levels, narrowest first; each TU's kernels need the CPU features named.
enum class Isa : int {
  SSE2 = 0,  // baseline x86-64
  SSE41,     // SSE4.1
  AVX2,      // AVX2 and FMA
  AVX512,    // AVX-512F
};
inline constexpr int kIsaCount = 4;
const char* isa_name(Isa isa);

// The functions: libm's, and the activations the plugin's scalar path defines (unary.cpp
// float_fn) by the same formulas, on the vector functions; the f32 GELUs compute in f32 within
// 8 * 2^-24 |x| (docs/ops/elementwise.md). `alpha` is pow's exponent and elu's alpha.
enum class Fn : int {
  EXP, LOG, TANH, ERF, ERFC, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH,
  EXPM1, LOG1P, CBRT, POW, SIGMOID, SILU, ELU, GELU_TANH, GELU_ERF,
};
inline constexpr int kFnCount = static_cast<int>(Fn::GELU_ERF) + 1;
const char* fn_name(Fn fn);

// One ISA's kernels: out[i] = f(in[i]) for i < n. `in` may equal `out`. Thread-safe.
struct Kernels {
  void (*f32)(Fn fn, const float* in, float* out, int64_t n, float alpha);
  void (*f64)(Fn fn, const double* in, double* out, int64_t n, double alpha);
  // A softmax row's weights in place, x[i] = exp((x[i] - shift) * scale) for i < n, and their
  // sum (one vector accumulator, its lanes added at the end).
  float (*exp_shift_sum)(float* x, int64_t n, float shift, float scale);
  // The largest of x[0, n) ignoring NaN (-Inf for none), as a row's softmax wants it.
  float (*max_f32)(const float* x, int64_t n);
  // 2x2, stride-2 max pooling of one f32 plane and its backward (window_scatter_max), with the
  // plugin's loops' semantics (window.cpp: the first maximum of a b / c d, the first NaN before
  // it); null on ISAs without them (AVX-512 has them). Rows are xrow, srow and yrow floats apart.
  void (*max_pool_2x2)(const float* x, int64_t xrow, float* y, int64_t yrow, int64_t oh, int64_t ow);
  void (*max_pool_2x2_grad)(const float* x, int64_t xrow, const float* s, int64_t srow, float* y,
                            int64_t yrow, int64_t h, int64_t w, int64_t oh, int64_t ow, float fill);
  // z[j * on] = sum over p < k of x[p] * y[j * bn + p], for j < n: one row of x times W^T (W's
  // rows bn floats apart), the small matmuls' inner loop; null on ISAs without FMA.
  void (*dot_rows_f32)(const float* x, const float* y, int64_t bn, float* z, int64_t on,
                       int64_t n, int64_t k);
};

// Whether this CPU (and OS) can run `isa`'s kernels.
bool cpu_has(Isa isa);
// The kernels of `isa`; only call them where cpu_has(isa).
const Kernels& kernels_of(Isa isa);

// The cap an ONEDNN_MAX_CPU_ISA value sets (oneDNN's names, any case: SSE41, AVX, AVX2,
// AVX2_VNNI, AVX512_CORE, AVX512_CORE_AMX, ..., ALL, DEFAULT); nullopt for no cap (unset, empty,
// ALL, DEFAULT, or a name oneDNN does not know, which it ignores too).
std::optional<Isa> parse_isa_cap(std::string_view value);

// The ISA the plugin's kernels run on: the widest cpu_has, at most the cap of
// ONEDNN_MAX_CPU_ISA as read at the first call (oneDNN too reads it once).
Isa active_isa();

// active_isa()'s kernels.
const Kernels& active_kernels();

// Kernels::exp_shift_sum and max_f32 on active_isa()'s kernels.
float exp_shift_sum(float* x, int64_t n, float shift, float scale);
float max_f32(const float* x, int64_t n);

// f over a contiguous run on active_isa()'s kernels.
void apply(Fn fn, const float* in, float* out, int64_t n, float alpha = 0.0f);
void apply(Fn fn, const double* in, double* out, int64_t n, double alpha = 0.0);

}  // namespace wick::cpu::vecmath
