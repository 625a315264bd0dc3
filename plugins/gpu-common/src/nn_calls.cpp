// Launches of the nn kernels: matmul_*, window_* and window_scatter_*, conv_* (direct) and
// im2col_* with matmul_* (convolution as GEMM).
#include "calls.hpp"
#include "generator.hpp"

#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/op_shapes.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace wick::gpu::detail {

wick_support check_matmul(const wick_op_desc& op) {
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &c = op.outputs[0];
  const int r = c.rank;
  if (c.rank < 2 || a.rank != r || b.rank != r) return WICK_SUPPORT_NO_PARAMS;
  for (int d = 0; d < r - 2; ++d)
    if (a.shape[d] != c.shape[d] || b.shape[d] != c.shape[d]) return WICK_SUPPORT_NO_PARAMS;
  if (a.shape[r - 2] != c.shape[r - 2] || b.shape[r - 1] != c.shape[r - 1] ||
      a.shape[r - 1] != b.shape[r - 2])
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

// Matmul: a 3-D launch of register tiles (x over N, y over M, z over the batch), the batch
// offsets of out, lhs and rhs from a geometry over the batch dims, M, N and K strides as scalars.
KernelCall plan_matmul(const wick_op_desc& op, const void* const* handles, size_t handle_size) {
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &c = op.outputs[0];
  const int r = c.rank;
  const int64_t m = c.shape[r - 2], n = c.shape[r - 1], k_extent = a.shape[r - 1];
  KernelCall call;
  if (k_extent == 0) {  // an empty inner dimension: the product is all zeros
    wick_op_desc fill = op;
    fill.num_inputs = 0;
    const sdk::StridedArgs zeros = sdk::make_strided_args(fill);
    call.kernel = kernel_name(WICK_OP_FILL, c.dtype);
    add_handles(call, handles, 1, handle_size);
    const uint64_t zero = 0;  // the fill value, at the element size
    call.add_bytes(&zero, sdk::dtype_size(c.dtype));
    call.add_bytes(&zeros, sizeof zeros);
    call.numel = zeros.numel;
    return call;
  }
  const sdk::StridedArgs whole = sdk::make_strided_args(op);  // operands inside their buffers
  if (whole.numel == 0) return call;                          // nothing to compute
  std::vector<int64_t> one(1, 1);
  std::vector<wick_tensor_desc> views = {c, a, b};
  for (wick_tensor_desc& v : views) v.rank = r - 2;
  const sdk::StridedArgs batch = line_geometry(op, r > 2 ? c.shape : one.data(), views, r - 2);
  call.kernel = "matmul_" + std::string(detail::type_info(c.dtype).name);
  add_handles(call, handles, 3, handle_size);
  for (int64_t v : {m, n, k_extent, a.strides[r - 2], a.strides[r - 1], b.strides[r - 2],
                    b.strides[r - 1], c.strides[r - 2], c.strides[r - 1]})
    call.add(v);
  call.add(batch);
  call.numel = batch.numel * m * n;
  const int64_t tiles_m = (m + kMatmulRows - 1) / kMatmulRows;
  call.dims = 3;
  call.global[0] = (n + kMatmulCols - 1) / kMatmulCols;
  call.global[1] = (tiles_m + kMatmulGroupRows - 1) / kMatmulGroupRows * kMatmulGroupRows;
  call.global[2] = std::min<int64_t>(batch.numel, 65535);
  call.local[1] = kMatmulGroupRows;
  return call;
}

namespace {

// Mirrors the kernels' wk_window (prelude.cpp): all fields 64-bit, same order.
struct WindowArgs {
  int64_t in[sdk::kMaxRank], xs[sdk::kMaxRank], win[sdk::kMaxRank], stride[sdk::kMaxRank];
  int64_t lo[sdk::kMaxRank], dil[sdk::kMaxRank], out[sdk::kMaxRank], ys[sdk::kMaxRank];
  int64_t rank, taps;
};

// The window geometry of a window op over the operand x and the window-shaped tensor `windows`
// (the output of a reduction, the source of a scatter).
WindowArgs window_args(const wick_op_desc& op, const wick_tensor_desc& x,
                       const wick_tensor_desc& windows) {
  const auto& p = *static_cast<const wick_window_params*>(op.params);
  WindowArgs w{};
  w.rank = std::max(p.rank, 1);
  w.taps = 1;
  for (int i = 0; i < w.rank; ++i) {
    const bool real = p.rank > 0;
    w.in[i] = real ? x.shape[i] : 1;
    w.xs[i] = real ? x.strides[i] : 1;
    w.win[i] = real ? p.window[i] : 1;
    w.stride[i] = real ? p.strides[i] : 1;
    w.lo[i] = real ? p.padding_lo[i] : 0;
    w.dil[i] = real ? p.dilations[i] : 1;
    w.out[i] = real ? windows.shape[i] : 1;
    w.ys[i] = real ? windows.strides[i] : 1;
    w.taps *= w.win[i];
  }
  return w;
}

}  // namespace

wick_support check_window(const wick_op_desc& op) {
  const bool scatter = op.op == WICK_OP_WINDOW_SCATTER_MAX || op.op == WICK_OP_WINDOW_SCATTER_MIN;
  const wick_tensor_desc &x = op.inputs[0], &y = scatter ? op.inputs[1] : op.outputs[0];
  if (scatter && !same_shape(x, op.outputs[0])) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_window_params*>(op.params);
  if (p.struct_size < sizeof(wick_window_params) || p.rank != x.rank || y.rank != x.rank)
    return WICK_SUPPORT_NO_PARAMS;
  if (p.rank > 0 && (p.window == nullptr || p.strides == nullptr || p.padding_lo == nullptr ||
                     p.padding_hi == nullptr || p.dilations == nullptr))
    return WICK_SUPPORT_NO_PARAMS;
  for (int i = 0; i < p.rank; ++i) {
    if (p.window[i] < 1 || p.strides[i] < 1 || p.dilations[i] < 1) return WICK_SUPPORT_NO_PARAMS;
    if (y.shape[i] != sdk::window_out_extent(x.shape[i], p.window[i], p.strides[i], p.padding_lo[i],
                                             p.padding_hi[i], p.dilations[i]))
      return WICK_SUPPORT_NO_PARAMS;
  }
  return WICK_SUPPORT_YES;
}

void plan_window(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                 size_t handle_size) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  add_handles(call, handles, 2, handle_size);
  call.add(static_cast<int32_t>(op.op));
  call.add(window_args(op, x, y));
  call.add(element_offset(x));
  call.add(element_offset(y));
  call.numel = sdk::shape_numel(y.shape, y.rank);
  call.add(call.numel);
}

// window_scatter: y (x's shape) from x and the source; the window geometry's output is the source.
void plan_window_scatter(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                         size_t handle_size, bool wide_is_double) {
  const wick_tensor_desc &x = op.inputs[0], &src = op.inputs[1], &y = op.outputs[0];
  const double init = static_cast<const wick_window_params*>(op.params)->init_value;
  add_handles(call, handles, 3, handle_size);
  call.add(static_cast<int32_t>(op.op == WICK_OP_WINDOW_SCATTER_MAX));
  if (!sdk::dtype_is_float(y.dtype)) {  // integers start at init_value converted as a cast does
    const int64_t i = std::isnan(init)  ? 0
                      : init <= -0x1p63 ? INT64_MIN
                      : init >= 0x1p63  ? INT64_MAX
                                        : static_cast<int64_t>(init);
    call.add(static_cast<uint64_t>(i));
  } else {
    add_wide(call, init, wide_is_double);
  }
  call.add(window_args(op, x, src));
  sdk::StridedArgs yg{};  // y's strides over x's dims, not collapsed
  yg.offsets[0] = element_offset(y);
  for (int d = 0; d < y.rank; ++d) yg.strides[0][d] = y.strides[d];
  if (y.rank == 0) yg.strides[0][0] = 1;
  call.add(yg);
  call.add(element_offset(x));
  call.add(element_offset(src));
  call.numel = sdk::shape_numel(y.shape, y.rank);
  call.add(call.numel);
}

namespace {

// Mirrors the kernels' wk_conv (prelude.cpp): all fields 64-bit, same order.
struct ConvArgs {
  int64_t r, n, o, cg, og;
  int64_t in[sdk::kMaxRank], k[sdk::kMaxRank], out[sdk::kMaxRank], stride[sdk::kMaxRank];
  int64_t lo[sdk::kMaxRank], dil[sdk::kMaxRank], idil[sdk::kMaxRank];
  int64_t xs[sdk::kMaxRank], ws[sdk::kMaxRank], ys[sdk::kMaxRank];
  int64_t xoff, woff, yoff, taps;
};

// The convolution's geometry (docs/ops.md), or nullopt when the operands and params disagree.
std::optional<ConvArgs> conv_args(const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_conv_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  const int r = p.spatial_rank;
  if (p.struct_size < sizeof(wick_conv_params) || r < 1 || r + 2 > sdk::kMaxRank ||
      x.rank != r + 2 || w.rank != r + 2 || y.rank != r + 2 || p.groups < 1 ||
      p.strides == nullptr || p.padding_lo == nullptr || p.padding_hi == nullptr ||
      p.dilations == nullptr)
    return std::nullopt;
  ConvArgs g{};
  g.r = r;
  g.n = x.shape[0];
  g.o = w.shape[0];
  if (g.o % p.groups != 0 || w.shape[1] * p.groups != x.shape[1] || y.shape[0] != g.n ||
      y.shape[1] != g.o)
    return std::nullopt;
  g.cg = w.shape[1];
  g.og = g.o / p.groups;
  g.taps = 1;
  for (int i = 0; i < r; ++i) {
    const int64_t idil = p.input_dilations != nullptr ? p.input_dilations[i] : 1;
    if (p.strides[i] < 1 || p.dilations[i] < 1 || idil < 1 || w.shape[2 + i] < 1)
      return std::nullopt;
    g.in[i] = x.shape[2 + i];
    g.k[i] = w.shape[2 + i];
    g.stride[i] = p.strides[i];
    g.lo[i] = p.padding_lo[i];
    g.dil[i] = p.dilations[i];
    g.idil[i] = idil;
    g.out[i] = sdk::window_out_extent(g.in[i], g.k[i], g.stride[i], p.padding_lo[i],
                                      p.padding_hi[i], g.dil[i], idil);
    if (y.shape[2 + i] != g.out[i]) return std::nullopt;
    g.taps *= g.k[i];
  }
  for (int d = 0; d < r + 2; ++d) {
    g.xs[d] = x.strides[d];
    g.ws[d] = w.strides[d];
    g.ys[d] = y.strides[d];
  }
  g.xoff = element_offset(x);
  g.woff = element_offset(w);
  g.yoff = element_offset(y);
  return g;
}

// Whether dims [from, to) of a tensor with `shape` and `strides` walk as one axis (each stride the
// next one's times its extent); `unit` gets the innermost stride.
bool flattens(const int64_t* shape, const int64_t* strides, int from, int to, int64_t& unit) {
  unit = strides[to - 1];
  for (int d = from; d + 1 < to; ++d)
    if (strides[d] != strides[d + 1] * shape[d + 1]) return false;
  return true;
}

}  // namespace

wick_support check_conv(const wick_op_desc& op) {
  return conv_args(op) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
}

void plan_conv(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size) {
  const ConvArgs g = *conv_args(op);
  add_handles(call, handles, 3, handle_size);
  call.add(g);
  int64_t numel = g.n * g.o;
  for (int d = 0; d < g.r; ++d) numel *= g.out[d];
  call.numel = numel;
}

// Convolution as GEMM for floats (im2col into scratch, then matmul_<dt> per batch item and group)
// when the weights' [cg, taps] and the output's spatial dims each walk as one axis and groups have
// at least 4 output channels; empty where the direct kernel serves instead. Batch items go in
// chunks whose columns fit kConvScratch bytes.
Launch plan_conv_gemm(const wick_op_desc& op, const void* const* handles, size_t handle_size) {
  constexpr int64_t kConvScratch = int64_t{64} << 20;
  const wick_tensor_desc &w = op.inputs[1], &y = op.outputs[0];
  Launch launch;
  if (!sdk::has_dtype(sdk::kFloatDTypes, y.dtype)) return launch;
  const ConvArgs g = *conv_args(op);
  const int r = static_cast<int>(g.r);
  int64_t w_unit = 0, y_unit = 0, p_extent = 1;
  for (int d = 0; d < r; ++d) p_extent *= g.out[d];
  if (g.og < 4 || g.n == 0 || p_extent == 0 || !flattens(w.shape, w.strides, 1, r + 2, w_unit) ||
      !flattens(y.shape, y.strides, 2, r + 2, y_unit))
    return launch;
  const int64_t groups = g.o / g.og, k_extent = g.cg * g.taps, elem = sdk::dtype_size(y.dtype);
  const int64_t per_item = groups * k_extent * p_extent * elem;
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(g.n, kConvScratch / per_item));
  const std::string dt = detail::type_info(y.dtype).name;
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - n0);
    KernelCall col;
    col.kernel = "im2col_" + dt;
    col.scratch_slot = 0;
    col.add_bytes(handles[1], handle_size);  // replaced by the scratch buffer
    col.add_bytes(handles[1], handle_size);  // x
    col.add(n0);
    col.add(nc);
    col.add(g);
    col.numel = nc * groups * k_extent;  // rows
    KernelCall mm;
    mm.kernel = "matmul_" + dt;
    mm.add_bytes(handles[0], handle_size);  // y
    mm.add_bytes(handles[2], handle_size);  // w (lhs)
    mm.scratch_slot = 2;
    mm.add_bytes(handles[2], handle_size);  // replaced by the scratch buffer (rhs)
    for (int64_t v : {g.og, p_extent, k_extent, g.ws[0], w_unit, p_extent, int64_t{1}, g.ys[1], y_unit})
      mm.add(v);
    sdk::StridedArgs batch{};  // over (batch item, group): y, w, col
    batch.rank = 2;
    batch.shape[0] = nc;
    batch.shape[1] = groups;
    batch.numel = nc * groups;
    const int64_t by[2] = {g.ys[0], g.og * g.ys[1]}, bw[2] = {0, g.og * g.ws[0]},
                  bc[2] = {groups * k_extent * p_extent, k_extent * p_extent};
    for (int d = 0; d < 2; ++d) {
      batch.strides[0][d] = by[d];
      batch.strides[1][d] = bw[d];
      batch.strides[2][d] = bc[d];
    }
    batch.offsets[0] = g.yoff + n0 * g.ys[0];
    batch.offsets[1] = g.woff;
    mm.add(batch);
    mm.numel = batch.numel * g.og * p_extent;
    const int64_t tiles_m = (g.og + kMatmulRows - 1) / kMatmulRows;
    mm.dims = 3;
    mm.global[0] = (p_extent + kMatmulCols - 1) / kMatmulCols;
    mm.global[1] = (tiles_m + kMatmulGroupRows - 1) / kMatmulGroupRows * kMatmulGroupRows;
    mm.global[2] = std::min<int64_t>(batch.numel, 65535);
    mm.local[1] = kMatmulGroupRows;
    launch.calls.push_back(std::move(col));
    launch.calls.push_back(std::move(mm));
  }
  launch.scratch_bytes = static_cast<size_t>(std::min(chunk, g.n) * per_item);
  return launch;
}

}  // namespace wick::gpu::detail
