// GGML block quantization (ABI 1.4): QUANTIZE and DEQUANTIZE on the SDK's reference code
// (wick/sdk/ggml_quants*.hpp: ggml's quantize_row_*_ref and dequantize_row_*, bit for bit), rows
// split over the threads; MATMUL_QUANT with x in f32 (not rounded to 8 bits unless the host asks
// with WICK_QUANT_ROUND_X, ABI 1.6: the result is the f32 matmul of x, or of x rounded, by the
// dequantized weights, to f32 summation error): fused block dot products for a few rows of x
// (decoding, quant_dot.cpp; integer ones for rounded x), panels of weight rows widened to f32 for
// oneDNN's sgemm for more (a prompt), f64 dots for f64 x.
#include "kernels.hpp"
#include "onednn.hpp"
#include "quant_dot.hpp"

#include <wick/sdk/ggml_quants.hpp>
#include <wick/sdk/ggml_quants_k.hpp>

#include <atomic>
#include <cstring>
#include <optional>
#include <vector>

namespace wick::cpu {

namespace {

using sdk::ggml::Type;

struct QuantGeometry {
  Type type = Type::Q8_0;
  int64_t k = 0;          // values per row
  int64_t row_bytes = 0;  // bytes per row of blocks
  int64_t rows = 0;       // rows of the values operand
  uint32_t flags = 0;     // WICK_QUANT_* (1.6)
};

// The type and row length of the params, when the ops take them.
std::optional<QuantGeometry> quant_params(const wick_op_desc& op) {
  if (op.params == nullptr) return std::nullopt;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  const auto type = static_cast<Type>(p.type);
  if (p.type < 0 || !sdk::ggml::has_reference(type)) return std::nullopt;
  const sdk::ggml::TypeTraits t = sdk::ggml::traits(type);
  if (p.k <= 0 || p.k % t.block_size != 0) return std::nullopt;
  return QuantGeometry{type, p.k, p.k / t.block_size * t.type_size, 0, sdk::quant_flags(p)};
}

// values [..., k] against blocks [..., row_bytes]: the same leading axes; blocks dense.
std::optional<QuantGeometry> row_geometry(const wick_op_desc& op, const wick_tensor_desc& values,
                                          const wick_tensor_desc& blocks) {
  std::optional<QuantGeometry> g = quant_params(op);
  if (!g || g->flags != 0 || values.rank < 1 || blocks.rank != values.rank || blocks.dtype != WICK_DTYPE_U8 || !is_dense(blocks))
    return std::nullopt;
  const int last = values.rank - 1;
  for (int i = 0; i < last; ++i)
    if (values.shape[i] != blocks.shape[i]) return std::nullopt;
  if (values.shape[last] != g->k || blocks.shape[last] != g->row_bytes) return std::nullopt;
  g->rows = numel_of(values) / g->k;
  return g;
}

// x [..., M, k], w [N, row_bytes] dense, out [..., M, N].
std::optional<QuantGeometry> matmul_geometry(const wick_op_desc& op) {
  std::optional<QuantGeometry> g = quant_params(op);
  const wick_tensor_desc &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  if (!g || x.rank < 1 || y.rank != x.rank || w.rank != 2 || w.dtype != WICK_DTYPE_U8 || !is_dense(w))
    return std::nullopt;
  const int last = x.rank - 1;
  for (int i = 0; i < last; ++i)
    if (x.shape[i] != y.shape[i]) return std::nullopt;
  if (x.shape[last] != g->k || w.shape[1] != g->row_bytes || y.shape[last] != w.shape[0]) return std::nullopt;
  if (y.dtype != x.dtype) return std::nullopt;
  // WICK_QUANT_ROUND_X for f32, f16 and bf16 x (computed in f32); f64 x is declined (the host
  // composes it), as is any other bit.
  if ((g->flags & ~uint32_t{WICK_QUANT_ROUND_X}) != 0) return std::nullopt;
  if (g->flags != 0 && (x.dtype == WICK_DTYPE_F64 || !sdk::ggml::activation_type(g->type))) return std::nullopt;
  g->rows = numel_of(x) / g->k;
  return g;
}

wick_support quantize_check(const wick_op_desc& op) {
  return row_geometry(op, op.inputs[0], op.outputs[0]) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
}
wick_support dequantize_check(const wick_op_desc& op) {
  return row_geometry(op, op.outputs[0], op.inputs[0]) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
}
wick_support matmul_check(const wick_op_desc& op) {
  return matmul_geometry(op) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
}

// Runs f(i) for i < n on the context's threads when the work (n * per_item) is large.
template <class F>
void parallel_items(const Context& ctx, int64_t n, int64_t per_item, F&& f) {
  const bool split = ctx.threads > 1 && n > 1 && n * per_item >= (int64_t{1} << 15);
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (split)
  for (int64_t i = 0; i < n; ++i) f(i);
}

// A view of a float operand in T (f32 or f64): the operand itself when it is dense T, else a
// converted copy.
template <class T>
const T* values_as(const wick_tensor_desc& d, Dense& scratch) {
  constexpr wick_dtype t = sdk::dtype_of<T>;
  if (d.dtype == t && is_dense(d)) return data_of<const T>(d);
  scratch.load(d, t);
  return data_of<const T>(scratch.desc);
}

// Where a result in T goes: the output itself when it is dense T, else scratch (stored after).
template <class T>
T* output_as(const wick_tensor_desc& d, Dense& scratch) {
  constexpr wick_dtype t = sdk::dtype_of<T>;
  if (d.dtype == t && is_dense(d)) return data_of<T>(d);
  scratch.allocate(d, t);
  return data_of<T>(scratch.desc);
}

// ---- Dequantization of the common types, with each block's scales hoisted out of the element
// loops so that those vectorise. Every value is the reference's (wick/sdk/ggml_quants*.hpp)
// expression for expression, so the floats are bit-identical (the golden cases compare exactly);
// the other types take the reference itself.

inline float half_at(const uint8_t* p) {
  sdk::f16 h;
  std::memcpy(&h.bits, p, 2);
  return float(h);
}

inline void block_q8_0(const uint8_t* p, float* y) {  // d, qs[32]
  const float d = half_at(p);
  const auto* q = reinterpret_cast<const int8_t*>(p + 2);
  for (int j = 0; j < 32; ++j) y[j] = q[j] * d;
}

inline void block_q4_0(const uint8_t* p, float* y) {  // d, qs[16]: low nibbles first
  const float d = half_at(p);
  const uint8_t* q = p + 2;
  for (int j = 0; j < 16; ++j) y[j] = ((q[j] & 0x0F) - 8) * d;
  for (int j = 0; j < 16; ++j) y[16 + j] = ((q[j] >> 4) - 8) * d;
}

inline void block_q4_k(const uint8_t* p, float* y) {  // d, dmin, scales[12], qs[128]
  const float d = half_at(p), min = half_at(p + 2);
  const uint8_t *scales = p + 4, *qs = p + 16;
  for (int c = 0; c < 4; ++c) {  // 64 elements: sub-blocks 2c (low nibbles) and 2c + 1 (high)
    uint8_t sc0, m0, sc1, m1;
    sdk::ggml::detail::k4_scale_min(2 * c, scales, sc0, m0);
    sdk::ggml::detail::k4_scale_min(2 * c + 1, scales, sc1, m1);
    const float d0 = d * sc0, o0 = min * m0, d1 = d * sc1, o1 = min * m1;
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) y[64 * c + l] = d0 * (q[l] & 0xF) - o0;
    for (int l = 0; l < 32; ++l) y[64 * c + 32 + l] = d1 * (q[l] >> 4) - o1;
  }
}

inline void block_q6_k(const uint8_t* p, float* y) {  // ql[128], qh[64], scales[16], d
  const uint8_t *ql = p, *qh = p + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
  const float d = half_at(p + 208);
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k) {
      const uint8_t* lo = ql + 64 * h + 32 * (k % 2);
      const int shift = k < 2 ? 0 : 4;
      int8_t v[32];  // the integers first, then int8 -> float loops
      for (int l = 0; l < 32; ++l)
        v[l] = static_cast<int8_t>((((lo[l] >> shift) & 0xF) | (((qh[32 * h + l] >> (2 * k)) & 3) << 4)) - 32);
      for (int half = 0; half < 2; ++half) {
        const float ds = d * scales[8 * h + 2 * k + half];
        for (int l = 16 * half; l < 16 * half + 16; ++l) y[128 * h + 32 * k + l] = ds * v[l];
      }
    }
}

// The row loops and the dot product are compiled for AVX-512 and AVX2 too, picked when the
// process loads (GCC's target_clones); CMakeLists.txt keeps FMA contraction off for this file, so
// every clone computes the reference's floats.
#define WICK_QUANT_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))

template <void (*Block)(const uint8_t*, float*), int64_t kSize, int64_t kBytes>
inline void blocks(const uint8_t* in, float* y, int64_t k) {
  for (int64_t b = 0; b < k / kSize; ++b) Block(in + b * kBytes, y + b * kSize);
}

// One row of k values: the hoisted loops above where the type has one, the reference otherwise.
WICK_QUANT_CLONES void dequantize_row(Type type, const uint8_t* in, float* y, int64_t k) {
  switch (type) {
    case Type::Q8_0: return blocks<&block_q8_0, 32, 34>(in, y, k);
    case Type::Q4_0: return blocks<&block_q4_0, 32, 18>(in, y, k);
    case Type::Q4_K: return blocks<&block_q4_k, 256, 144>(in, y, k);
    case Type::Q6_K: return blocks<&block_q6_k, 256, 210>(in, y, k);
    default: return sdk::ggml::dequantize_row(type, in, y, k);
  }
}

void quantize_run(Context& ctx, const wick_op_desc& op) {
  const QuantGeometry g = *row_geometry(op, op.inputs[0], op.outputs[0]);
  Dense scratch;
  const float* x = values_as<float>(op.inputs[0], scratch);
  auto* out = data_of<unsigned char>(op.outputs[0]);
  parallel_items(ctx, g.rows, g.k, [&](int64_t r) {
    sdk::ggml::quantize_row(g.type, x + r * g.k, out + r * g.row_bytes, g.k);
  });
}

void dequantize_run(Context& ctx, const wick_op_desc& op) {
  const QuantGeometry g = *row_geometry(op, op.outputs[0], op.inputs[0]);
  const auto* in = data_of<const unsigned char>(op.inputs[0]);
  Dense scratch;
  float* y = output_as<float>(op.outputs[0], scratch);
  parallel_items(ctx, g.rows, g.k, [&](int64_t r) {
    dequantize_row(g.type, in + r * g.row_bytes, y + r * g.k, g.k);
  });
  if (scratch.bytes) scratch.store(op.outputs[0]);
}

template <class T>
inline T dot_of(const T* a, const T* b, int64_t k) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < k; ++i) s += a[i] * b[i];
  return s;
}
WICK_QUANT_CLONES float dot(const float* a, const float* b, int64_t k) { return dot_of(a, b, k); }
WICK_QUANT_CLONES double dot(const double* a, const double* b, int64_t k) { return dot_of(a, b, k); }

// f64 x: weight rows in blocks of kRowBlock, each dequantized once (f32, exact), widened and
// dotted in f64 with every row of x; the blocks are split over the threads.
constexpr int64_t kRowBlock = 16;

void matmul_f64(const Context& ctx, const double* x, const uint8_t* w, double* y, int64_t n,
                const QuantGeometry& g) {
  const int64_t blocks = (n + kRowBlock - 1) / kRowBlock;
  parallel_items(ctx, blocks, kRowBlock * g.k * (g.rows + 1), [&](int64_t b) {
    const int64_t first = b * kRowBlock, count = std::min(kRowBlock, n - first);
    std::vector<float> rows(static_cast<size_t>(count * g.k));
    for (int64_t j = 0; j < count; ++j)
      dequantize_row(g.type, w + (first + j) * g.row_bytes, rows.data() + j * g.k, g.k);
    const std::vector<double> wide(rows.begin(), rows.end());
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t j = 0; j < count; ++j)
        y[r * n + first + j] = dot(x + r * g.k, wide.data() + j * g.k, g.k);
  });
}

// Decoding (a few rows of x): each weight row's blocks dotted with each row of x without being
// widened into memory (quant_dot.hpp), the weight rows split over the threads; types without a
// fused dot widen one row into a buffer first.
void matmul_fused(const Context& ctx, const float* x, const uint8_t* w, float* y, int64_t n,
                  const QuantGeometry& g) {
  const bool fused = has_fused_dot(g.type);
  // Q4_K's dots take the sums of x per 32 values (quant_dot.hpp); the other types none.
  std::vector<float> xs(g.type == sdk::ggml::Type::Q4_K ? static_cast<size_t>(g.rows * (g.k / 32)) : 0);
  if (!xs.empty())
    for (int64_t r = 0; r < g.rows; ++r) group_sums(x + r * g.k, xs.data() + r * (g.k / 32), g.k);
  parallel_items(ctx, n, g.k * g.rows, [&](int64_t j) {
    const uint8_t* wr = w + j * g.row_bytes;
    if (fused) {
      for (int64_t r = 0; r < g.rows; ++r)
        y[r * n + j] = dot_blocks(g.type, wr, x + r * g.k,
                                  xs.empty() ? nullptr : xs.data() + r * (g.k / 32), g.k);
      return;
    }
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(g.k));
    dequantize_row(g.type, wr, row.data(), g.k);
    for (int64_t r = 0; r < g.rows; ++r) y[r * n + j] = dot(x + r * g.k, row.data(), g.k);
  });
}

// A prompt (more rows of x): panels of kPanel weight rows widened to f32 (exactly, as
// DEQUANTIZE), each multiplied by all of x with oneDNN's sgemm; the panels are split over the
// threads (each sgemm then runs on its thread alone).
constexpr int64_t kPanel = 128;

void matmul_panels(const Context& ctx, const float* x, const uint8_t* w, float* y, int64_t n,
                   const QuantGeometry& g) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  std::atomic<int> failed{dnnl_success};
  parallel_items(ctx, panels, kPanel * g.k * g.rows, [&](int64_t p) {
    thread_local std::vector<float> panel;
    panel.resize(static_cast<size_t>(kPanel * g.k));
    const int64_t first = p * kPanel, count = std::min(kPanel, n - first);
    for (int64_t j = 0; j < count; ++j)
      dequantize_row(g.type, w + (first + j) * g.row_bytes, panel.data() + j * g.k, g.k);
    const dnnl_status_t st = dnnl_sgemm('N', 'T', g.rows, count, g.k, 1.0f, x, g.k, panel.data(),
                                        g.k, 0.0f, y + first, n);
    if (st != dnnl_success) failed.store(st);
  });
  if (failed.load() != dnnl_success)
    throw sdk::Error(WICK_STATUS_INTERNAL, "matmul_quant: oneDNN's sgemm failed with status " +
                                                std::to_string(failed.load()));
}

// Rows of x up to which the fused decoding path beats widening panels for sgemm.
constexpr int64_t kFusedRows = 4;

// x and y as dense T (the operands themselves, or converted copies stored back after), for
// run(x, w, y, n).
template <class T, class F>
void with_dense(const wick_op_desc& op, F&& run) {
  Dense xs, ys;
  const T* x = values_as<T>(op.inputs[0], xs);
  T* y = output_as<T>(op.outputs[0], ys);
  run(x, data_of<const unsigned char>(op.inputs[1]), y, op.inputs[1].shape[0]);
  if (ys.bytes) ys.store(op.outputs[0]);
}

// WICK_QUANT_ROUND_X: each row of x quantized once to the activation type (the SDK's reference
// quantizer, as QUANTIZE); a few rows (decoding) then take the integer block dot products, the
// weight rows split over the threads; more rows, or a type without them, take the f32 paths on
// the rounded rows dequantized (the same definition: rounded x times the dequantized weights).
void matmul_rounded(const Context& ctx, const float* x, const uint8_t* w, float* y, int64_t n,
                    const QuantGeometry& g) {
  const Type act = *sdk::ggml::activation_type(g.type);
  const int64_t a_bytes = *sdk::ggml::row_bytes(act, static_cast<uint64_t>(g.k));
  std::vector<uint8_t> a(static_cast<size_t>(g.rows * a_bytes));
  for (int64_t r = 0; r < g.rows; ++r) sdk::ggml::quantize_row(act, x + r * g.k, a.data() + r * a_bytes, g.k);
  if (g.rows <= kFusedRows && has_dot8(g.type)) {
    // chunks of kDotRows weight rows (a chunk's blocks stay in L2 for the next row of x)
    constexpr int64_t kDotRows = 64;
    parallel_items(ctx, (n + kDotRows - 1) / kDotRows, kDotRows * g.k * g.rows, [&](int64_t c) {
      const int64_t first = c * kDotRows, count = std::min(kDotRows, n - first);
      for (int64_t r = 0; r < g.rows; ++r)
        dot8_rows(g.type, w + first * g.row_bytes, g.row_bytes, a.data() + r * a_bytes, g.k, y + r * n + first, count);
    });
    return;
  }
  std::vector<float> xr(static_cast<size_t>(g.rows * g.k));
  for (int64_t r = 0; r < g.rows; ++r) dequantize_row(act, a.data() + r * a_bytes, xr.data() + r * g.k, g.k);
  if (g.rows <= kFusedRows)
    matmul_fused(ctx, xr.data(), w, y, n, g);
  else
    matmul_panels(ctx, xr.data(), w, y, n, g);
}

void matmul_run(Context& ctx, const wick_op_desc& op) {
  const QuantGeometry g = *matmul_geometry(op);
  if (g.flags & WICK_QUANT_ROUND_X) {
    with_dense<float>(op, [&](const float* x, const uint8_t* w, float* y, int64_t n) {
      matmul_rounded(ctx, x, w, y, n, g);
    });
    return;
  }
  if (op.inputs[0].dtype == WICK_DTYPE_F64) {
    with_dense<double>(op, [&](const double* x, const uint8_t* w, double* y, int64_t n) {
      matmul_f64(ctx, x, w, y, n, g);
    });
    return;
  }
  with_dense<float>(op, [&](const float* x, const uint8_t* w, float* y, int64_t n) {
    if (g.rows <= kFusedRows)
      matmul_fused(ctx, x, w, y, n, g);
    else
      matmul_panels(ctx, x, w, y, n, g);
  });
}

}  // namespace

Kernel quant_kernel(int op) {
  switch (op) {
    case WICK_OP_QUANTIZE: return {&quantize_run, &quantize_check};
    case WICK_OP_DEQUANTIZE: return {&dequantize_run, &dequantize_check};
    case WICK_OP_MATMUL_QUANT: return {&matmul_run, &matmul_check};
    default: return {};
  }
}

}  // namespace wick::cpu
