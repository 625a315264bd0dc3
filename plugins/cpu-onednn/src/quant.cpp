// GGML block quantization (ABI 1.4): QUANTIZE and DEQUANTIZE on the SDK's reference code
// (wick/sdk/ggml_quants*.hpp: ggml's quantize_row_*_ref and dequantize_row_*, bit for bit), rows
// split over the threads; MATMUL_QUANT as blocks of weight rows dequantized into f32 and dotted
// with every row of x in f32 (x is not rounded to 8 bits, so the result is the f32 matmul of x
// by the dequantized weights, to f32 summation error).
#include "kernels.hpp"
#include "onednn.hpp"

#include <wick/sdk/ggml_quants.hpp>
#include <wick/sdk/ggml_quants_k.hpp>

#include <optional>

namespace wick::cpu {

namespace {

using sdk::ggml::Type;

struct QuantGeometry {
  Type type = Type::Q8_0;
  int64_t k = 0;          // values per row
  int64_t row_bytes = 0;  // bytes per row of blocks
  int64_t rows = 0;       // rows of the values operand
};

bool has_reference(Type t) {
  for (Type r : sdk::ggml::kReferenceTypes)
    if (r == t) return true;
  return false;
}

// The type and row length of the params, when the ops take them.
std::optional<QuantGeometry> quant_params(const wick_op_desc& op) {
  if (op.params == nullptr) return std::nullopt;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  const auto type = static_cast<Type>(p.type);
  if (p.type < 0 || !has_reference(type)) return std::nullopt;
  const sdk::ggml::TypeTraits t = sdk::ggml::traits(type);
  if (p.k <= 0 || p.k % t.block_size != 0) return std::nullopt;
  return QuantGeometry{type, p.k, p.k / t.block_size * t.type_size, 0};
}

// values [..., k] against blocks [..., row_bytes]: the same leading axes; blocks dense.
std::optional<QuantGeometry> row_geometry(const wick_op_desc& op, const wick_tensor_desc& values,
                                          const wick_tensor_desc& blocks) {
  std::optional<QuantGeometry> g = quant_params(op);
  if (!g || values.rank < 1 || blocks.rank != values.rank || blocks.dtype != WICK_DTYPE_U8 || !is_dense(blocks))
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
    sdk::ggml::dequantize_row(g.type, in + r * g.row_bytes, y + r * g.k, g.k);
  });
  if (scratch.bytes) scratch.store(op.outputs[0]);
}

template <class T>
T dot(const T* a, const T* b, int64_t k) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < k; ++i) s += a[i] * b[i];
  return s;
}

// Weight rows in blocks of kRowBlock, each dequantized once and dotted with every row of x; the
// blocks are split over the threads. T is the arithmetic: f64 for f64 x, f32 otherwise.
constexpr int64_t kRowBlock = 16;

template <class T>
void matmul_in(Context& ctx, const wick_op_desc& op, const QuantGeometry& g) {
  const int64_t n = op.inputs[1].shape[0];
  Dense xs, ys;
  const T* x = values_as<T>(op.inputs[0], xs);
  T* y = output_as<T>(op.outputs[0], ys);
  const auto* w = data_of<const unsigned char>(op.inputs[1]);
  const int64_t blocks = (n + kRowBlock - 1) / kRowBlock;
  parallel_items(ctx, blocks, kRowBlock * g.k * (g.rows + 1), [&](int64_t b) {
    const int64_t first = b * kRowBlock, count = std::min(kRowBlock, n - first);
    std::vector<float> rows(static_cast<size_t>(count * g.k));
    for (int64_t j = 0; j < count; ++j)
      sdk::ggml::dequantize_row(g.type, w + (first + j) * g.row_bytes, rows.data() + j * g.k, g.k);
    std::vector<T> wide;
    const T* wr = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      wr = rows.data();
    } else {
      wide.assign(rows.begin(), rows.end());
      wr = wide.data();
    }
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t j = 0; j < count; ++j) y[r * n + first + j] = dot(x + r * g.k, wr + j * g.k, g.k);
  });
  if (ys.bytes) ys.store(op.outputs[0]);
}

void matmul_run(Context& ctx, const wick_op_desc& op) {
  const QuantGeometry g = *matmul_geometry(op);
  if (op.inputs[0].dtype == WICK_DTYPE_F64)
    matmul_in<double>(ctx, op, g);
  else
    matmul_in<float>(ctx, op, g);
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
