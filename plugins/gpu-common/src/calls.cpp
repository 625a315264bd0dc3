// From an op descriptor to a launch of a generated kernel: which kernel, and its arguments.
#include "generator.hpp"

#include <wick/gpu/driver.hpp>

#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/op_shapes.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace wick::gpu {

void KernelCall::add_bytes(const void* data, size_t size) {
  offsets_.push_back(bytes_.size());
  sizes_.push_back(size);
  bytes_.resize(bytes_.size() + size);
  std::memcpy(bytes_.data() + offsets_.back(), data, size);
}

void KernelCall::replace(size_t i, const void* data, size_t size) {
  if (i >= sizes_.size() || sizes_[i] != size)
    throw std::logic_error("KernelCall::replace: no such argument");
  std::memcpy(bytes_.data() + offsets_[i], data, size);
}

namespace {

int64_t element_offset(const wick_tensor_desc& d) {
  return static_cast<int64_t>(d.byte_offset / sdk::dtype_size(d.dtype));
}

bool same_shape(const wick_tensor_desc& a, const wick_tensor_desc& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

// Reductions keep the input's rank (reduced axes extent 1, axes distinct and in range); scans keep
// its shape; arg-reductions keep its rank with the axis at extent 1.
wick_support check_lines(const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &out = op.outputs[0];
  if (x.rank != out.rank) return WICK_SUPPORT_NO_PARAMS;
  std::vector<bool> walked(static_cast<size_t>(x.rank), false);
  if (op.op >= WICK_OP_REDUCE_SUM && op.op <= WICK_OP_REDUCE_MIN) {
    const auto& p = *static_cast<const wick_reduce_params*>(op.params);
    if (p.struct_size < sizeof(wick_reduce_params) || p.num_axes < 0 ||
        (p.num_axes > 0 && p.axes == nullptr))
      return WICK_SUPPORT_NO_PARAMS;
    for (int k = 0; k < p.num_axes; ++k) {
      if (p.axes[k] < 0 || p.axes[k] >= x.rank || walked[static_cast<size_t>(p.axes[k])])
        return WICK_SUPPORT_NO_PARAMS;
      walked[static_cast<size_t>(p.axes[k])] = true;
    }
  } else {
    const auto& p = *static_cast<const wick_axis_params*>(op.params);
    if (p.struct_size < sizeof(wick_axis_params) || p.axis < 0 || p.axis >= x.rank)
      return WICK_SUPPORT_NO_PARAMS;
    const bool scan = sdk::op_info(op.op)->kind == sdk::OpKind::SCAN;
    if (scan ? (p.flag < 0 || p.flag > 3) : (p.flag < 0 || p.flag > 1))
      return WICK_SUPPORT_NO_PARAMS;
    if (scan) return same_shape(x, out) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
    walked[static_cast<size_t>(p.axis)] = true;
    if (x.shape[p.axis] == 0) return WICK_SUPPORT_NO_PARAMS;  // no element to point at
  }
  for (int d = 0; d < x.rank; ++d)
    if (out.shape[d] != (walked[static_cast<size_t>(d)] ? 1 : x.shape[d]))
      return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

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

// A float parameter in the kernels' wk_wide, or in the compute type of a unary kernel.
void add_wide(KernelCall& call, double v, bool as_double) {
  if (as_double)
    call.add(v);
  else
    call.add(static_cast<float>(v));
}

void add_handles(KernelCall& call, const void* const* handles, size_t count, size_t handle_size) {
  for (size_t k = 0; k < count; ++k) call.add_bytes(handles[k], handle_size);
}

void add_unary_params(KernelCall& call, const wick_op_desc& op, wick_dtype t) {
  double alpha = 0, beta = 0;
  int32_t mode = WICK_ROUND_HALF_AWAY_FROM_ZERO;
  if (op.params != nullptr) {
    const auto& p = *static_cast<const wick_unary_params*>(op.params);
    alpha = p.alpha;
    beta = p.beta;
    if (p.struct_size >= offsetof(wick_unary_params, mode) + sizeof(int32_t)) mode = p.mode;
  }
  call.add(static_cast<int32_t>(op.op));
  if (sdk::dtype_is_float(t)) {
    add_wide(call, alpha, t == WICK_DTYPE_F64);
    add_wide(call, beta, t == WICK_DTYPE_F64);
  } else {
    call.add(static_cast<int64_t>(alpha));
    call.add(static_cast<int64_t>(beta));
  }
  call.add(mode);
}

// The inner size and extent of the iota axis in the output's C order (extent 0: the flat index).
void add_iota_params(KernelCall& call, const wick_op_desc& op, bool wide_is_double) {
  const auto& p = *static_cast<const wick_iota_params*>(op.params);
  const wick_tensor_desc& out = op.outputs[0];
  int64_t inner = 1, extent = 0;
  if (p.axis >= 0 && p.axis < out.rank) {
    for (int d = out.rank - 1; d > p.axis; --d) inner *= out.shape[d];
    extent = out.shape[p.axis];
  }
  call.add(inner);
  call.add(extent);
  add_wide(call, p.float_start, wide_is_double);
  add_wide(call, p.float_step, wide_is_double);
  call.add(p.int_start);
  call.add(p.int_step);
}

void add_rng_params(KernelCall& call, const wick_op_desc& op, bool wide_is_double) {
  const auto& p = *static_cast<const wick_rng_params*>(op.params);
  call.add(p.seed);
  call.add(p.offset);
  add_wide(call, p.a, wide_is_double);
  add_wide(call, p.b, wide_is_double);
}

// The outer geometry of per-line ops over `line_shape`: `views` are the operands (the first as the
// output) seen over that shape with their own strides.
sdk::StridedArgs line_geometry(const wick_op_desc& op, const int64_t* line_shape,
                               std::vector<wick_tensor_desc> views, int rank = -1) {
  for (wick_tensor_desc& v : views) {
    v.shape = line_shape;
    if (rank >= 0) v.rank = rank;
  }
  wick_op_desc g = op;
  g.outputs = views.data();
  g.num_outputs = 1;
  g.inputs = views.data() + 1;
  g.num_inputs = views.size() - 1;
  return sdk::make_strided_args(g);
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

// A geometry over `shape` with operand 0's strides only (the inner loop of a reduction).
sdk::StridedArgs inner_geometry(const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& strides) {
  sdk::StridedArgs g{};
  g.numel = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.shape[g.rank] = shape[d];
    g.strides[0][g.rank] = strides[d];
    g.numel *= shape[d];
    ++g.rank;
  }
  return g;
}

// The outer geometry of an op that walks lines or reduced blocks: the output and the input viewed
// over `shape` (the input's strides; the walked axes have extent 1 there).
sdk::StridedArgs outer_geometry(const wick_op_desc& op, const int64_t* shape,
                                const wick_tensor_desc& out_view) {
  wick_tensor_desc in = op.inputs[0];
  in.shape = shape;
  wick_op_desc v = op;
  v.inputs = &in;
  v.num_inputs = 1;
  v.outputs = &out_view;
  return sdk::make_strided_args(v);
}

// The inner geometry of a reduction: the reduced axes with the input's strides.
sdk::StridedArgs reduce_inner(const wick_op_desc& op) {
  const wick_tensor_desc& x = op.inputs[0];
  const auto& p = *static_cast<const wick_reduce_params*>(op.params);
  std::vector<int64_t> shape, strides;
  for (int k = 0; k < p.num_axes; ++k) {
    shape.push_back(x.shape[p.axes[k]]);
    strides.push_back(x.strides[p.axes[k]]);
  }
  return inner_geometry(shape, strides);
}

// reduce_*: one work-item per output element, an inner loop over the reduced axes.
void plan_reduce(KernelCall& call, const wick_op_desc& op) {
  const wick_tensor_desc& out = op.outputs[0];
  const sdk::StridedArgs inner = reduce_inner(op);
  call.add(static_cast<int32_t>(op.op));
  call.add_bytes(&inner, sizeof inner);
  const sdk::StridedArgs outer = outer_geometry(op, out.shape, out);
  call.add_bytes(&outer, sizeof outer);
  call.numel = outer.numel;
}

// Few outputs, each over many elements: two passes (reduce_part_*, reduce_final_*) through
// kReduceParts partials per output in scratch, or nothing (empty) where one pass has enough
// work-items.
Launch plan_reduce_two_pass(const wick_op_desc& op, const void* const* handles,
                            size_t handle_size, const std::string& kernel) {
  const wick_tensor_desc& out = op.outputs[0];
  const sdk::StridedArgs inner = reduce_inner(op);
  const sdk::StridedArgs outer = outer_geometry(op, out.shape, out);
  Launch launch;
  if (inner.numel < 4 * kReduceGroup || outer.numel > 1024) return launch;
  const int64_t parts = std::min<int64_t>(kReduceParts, inner.numel / (4 * kReduceGroup));
  const std::string suffix = kernel.substr(std::string("reduce_").size());
  KernelCall first, last;
  first.kernel = "reduce_part_" + suffix;
  first.scratch_slot = 0;
  first.add_bytes(handles[0], handle_size);  // replaced by the scratch buffer
  first.add_bytes(handles[1], handle_size);
  last.kernel = "reduce_final_" + suffix;
  last.add_bytes(handles[0], handle_size);
  last.scratch_slot = 1;
  last.add_bytes(handles[1], handle_size);  // replaced by the scratch buffer
  for (KernelCall* c : {&first, &last}) {
    c->add(static_cast<int32_t>(op.op));
    c->add(parts);
    if (c == &first) c->add(inner);
    c->add(outer);
    c->numel = outer.numel;
    c->dims = 2;
    c->global[0] = (c == &first ? parts : 1) * kReduceGroup;
    c->global[1] = outer.numel;
    c->local[0] = kReduceGroup;
  }
  launch.calls = {first, last};
  launch.scratch_bytes = static_cast<size_t>(outer.numel * parts) * sizeof(double);
  return launch;
}

// Scans and arg-reductions: one work-item per line along the axis.
void plan_lines(KernelCall& call, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &out = op.outputs[0];
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  std::vector<int64_t> line_shape(x.shape, x.shape + x.rank);
  line_shape[static_cast<size_t>(p.axis)] = 1;
  wick_tensor_desc out_view = out;
  out_view.shape = line_shape.data();
  call.add(static_cast<int32_t>(op.op));
  const bool scan = sdk::op_info(op.op)->kind == sdk::OpKind::SCAN;
  call.add(static_cast<int32_t>(scan ? p.flag : p.flag == 1));
  call.add(x.shape[p.axis]);
  call.add(x.strides[p.axis]);
  if (scan) call.add(out.strides[p.axis]);
  const sdk::StridedArgs outer = outer_geometry(op, line_shape.data(), out_view);
  call.add_bytes(&outer, sizeof outer);
  call.numel = x.shape[p.axis] == 0 && scan ? 0 : outer.numel;
}

// sort: values (output 0), the input, indices (output 1), one line per work-group.
void plan_sort(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size) {
  const wick_tensor_desc &x = op.inputs[0], &vals = op.outputs[0], &idx = op.outputs[1];
  const auto& p = *static_cast<const wick_sort_params*>(op.params);
  for (int k : {0, 2, 1}) call.add_bytes(handles[k], handle_size);
  std::vector<int64_t> line(x.shape, x.shape + x.rank);
  line[static_cast<size_t>(p.axis)] = 1;
  call.add(static_cast<int32_t>(p.descending != 0));
  for (int64_t v : {x.shape[p.axis], x.strides[p.axis], vals.strides[p.axis], idx.strides[p.axis]})
    call.add(v);
  const sdk::StridedArgs g = line_geometry(op, line.data(), {vals, x, idx});
  call.add_bytes(&g, sizeof g);
  call.numel = x.shape[p.axis] == 0 ? 0 : g.numel;
  // A work-group per line; short lines take one work-item (a few compare-exchanges), long ones
  // kSortGroup. Few distinct group sizes: some drivers (PoCL) compile a kernel per size.
  const int64_t n = x.shape[p.axis];
  call.dims = 1;
  call.local[0] = n > 256 ? kSortGroup : n > 32 ? 32 : 1;
  call.global[0] = std::min<int64_t>(g.numel, 65535) * call.local[0];
}

void plan_softmax(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                  size_t handle_size) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  const int axis = static_cast<const wick_axis_params*>(op.params)->axis;
  add_handles(call, handles, 2, handle_size);
  std::vector<int64_t> line(x.shape, x.shape + x.rank);
  line[static_cast<size_t>(axis)] = 1;
  call.add(static_cast<int32_t>(op.op == WICK_OP_LOG_SOFTMAX));
  for (int64_t v : {x.shape[axis], x.strides[axis], y.strides[axis]}) call.add(v);
  const sdk::StridedArgs g = line_geometry(op, line.data(), {y, x});
  call.add_bytes(&g, sizeof g);
  call.numel = x.shape[axis] == 0 ? 0 : g.numel;
}

// layer_norm / rms_norm: rows over the leading axes, an inner geometry over the trailing ones with
// the strides of x, y, weight and bias (absent ones: x's handle and zero strides, unused).
void plan_norm(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size, bool wide_is_double) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  const auto& p = *static_cast<const wick_norm_params*>(op.params);
  const bool has_w = op.num_inputs > 1, has_b = op.op == WICK_OP_LAYER_NORM && op.num_inputs > 2;
  for (int k : {0, 1, has_w ? 2 : 1, has_b ? 3 : 1}) call.add_bytes(handles[k], handle_size);
  call.add(static_cast<int32_t>(op.op == WICK_OP_RMS_NORM));
  call.add(static_cast<int32_t>(has_w));
  call.add(static_cast<int32_t>(has_b));
  add_wide(call, p.epsilon, wide_is_double);
  const int lead = x.rank - p.num_axes;
  sdk::StridedArgs inner{};
  inner.numel = 1;
  for (int d = lead; d < x.rank; ++d, ++inner.rank) {
    inner.shape[inner.rank] = x.shape[d];
    inner.strides[0][inner.rank] = x.strides[d];
    inner.strides[1][inner.rank] = y.strides[d];
    inner.strides[2][inner.rank] = has_w ? op.inputs[1].strides[d - lead] : 0;
    inner.strides[3][inner.rank] = has_b ? op.inputs[2].strides[d - lead] : 0;
    inner.numel *= x.shape[d];
  }
  for (size_t k = 1; k <= (has_b ? 2u : has_w ? 1u : 0u); ++k)
    inner.offsets[k + 1] =
        static_cast<int64_t>(op.inputs[k].byte_offset / sdk::dtype_size(x.dtype));
  call.add_bytes(&inner, sizeof inner);
  std::vector<int64_t> rows(x.shape, x.shape + x.rank);
  for (int d = lead; d < x.rank; ++d) rows[static_cast<size_t>(d)] = 1;
  const sdk::StridedArgs g = line_geometry(op, rows.data(), {y, x});
  call.add_bytes(&g, sizeof g);
  call.numel = inner.numel == 0 ? 0 : g.numel;
}

// Mirrors the kernels' wk_window (prelude.cpp): all fields 64-bit, same order.
struct WindowArgs {
  int64_t in[sdk::kMaxRank], xs[sdk::kMaxRank], win[sdk::kMaxRank], stride[sdk::kMaxRank];
  int64_t lo[sdk::kMaxRank], dil[sdk::kMaxRank], out[sdk::kMaxRank], ys[sdk::kMaxRank];
  int64_t rank, taps;
};

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

void plan_conv(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size) {
  const ConvArgs g = *conv_args(op);
  add_handles(call, handles, 3, handle_size);
  call.add(g);
  int64_t numel = g.n * g.o;
  for (int d = 0; d < g.r; ++d) numel *= g.out[d];
  call.numel = numel;
}

// Whether dims [from, to) of a tensor with `shape` and `strides` walk as one axis (each stride the
// next one's times its extent); `unit` gets the innermost stride.
bool flattens(const int64_t* shape, const int64_t* strides, int from, int to, int64_t& unit) {
  unit = strides[to - 1];
  for (int d = from; d + 1 < to; ++d)
    if (strides[d] != strides[d + 1] * shape[d + 1]) return false;
  return true;
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

// Batch norm: x [N, C, ...] and four [C] vectors (mean, var, weight, bias).
wick_support check_batch_norm(const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (x.rank < 2 || !same_shape(x, y)) return WICK_SUPPORT_NO_PARAMS;
  for (size_t k = 1; k < op.num_inputs; ++k)
    if (op.inputs[k].rank != 1 || op.inputs[k].shape[0] != x.shape[1])
      return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

void plan_batch_norm(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                     size_t handle_size, bool wide_is_double) {
  const wick_tensor_desc& x = op.inputs[0];
  add_handles(call, handles, 6, handle_size);
  add_wide(call, static_cast<const wick_norm_params*>(op.params)->epsilon, wide_is_double);
  int64_t inner = 1;
  for (int d = 2; d < x.rank; ++d) inner *= x.shape[d];
  call.add(inner);
  call.add(x.shape[1]);
  sdk::StridedArgs vectors{};  // strides[0][k], offsets[k]: the k-th [C] vector
  for (size_t k = 1; k < 5; ++k) {
    const wick_tensor_desc& v = op.inputs[k];
    vectors.strides[0][k - 1] = v.strides[0];
    vectors.offsets[k - 1] = static_cast<int64_t>(v.byte_offset / sdk::dtype_size(v.dtype));
  }
  call.add(vectors);
  wick_op_desc xy = op;
  xy.num_inputs = 1;
  const sdk::StridedArgs g = sdk::make_strided_args(xy);
  call.add(g);
  call.numel = g.numel;
}

// Mirrors the kernels' wk_index (prelude.cpp): all fields 64-bit, same order.
struct IndexArgs {
  int64_t rank, shape[sdk::kMaxRank];
  int64_t os[sdk::kMaxRank], xs[sdk::kMaxRank], is[sdk::kMaxRank], ss[sdk::kMaxRank],
      limit[sdk::kMaxRank];
  int64_t off[4];
  int64_t axis, n, x_axis_stride, k_extent, k_is, k_ss;
};

wick_support check_index(const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &out = op.outputs[0];
  if (p.struct_size < sizeof(wick_axis_params) || p.axis < 0 || p.axis >= x.rank ||
      x.rank > sdk::kMaxRank)
    return WICK_SUPPORT_NO_PARAMS;
  if (ids.dtype != WICK_DTYPE_I32 && ids.dtype != WICK_DTYPE_I64) return WICK_SUPPORT_NO_DTYPE;
  if (op.op == WICK_OP_INDEX_SELECT) {
    if (out.rank != x.rank - 1 + ids.rank || out.rank > sdk::kMaxRank)
      return WICK_SUPPORT_NO_PARAMS;
    for (int i = 0; i < out.rank; ++i) {
      const int64_t want = i < p.axis              ? x.shape[i]
                           : i < p.axis + ids.rank ? ids.shape[i - p.axis]
                                                   : x.shape[i - ids.rank + 1];
      if (out.shape[i] != want) return WICK_SUPPORT_NO_PARAMS;
    }
    return WICK_SUPPORT_YES;
  }
  if (op.op == WICK_OP_INDEX_REDUCE) {
    const wick_tensor_desc& src = op.inputs[2];
    if (p.flag < WICK_REDUCE_MODE_SET || p.flag > WICK_REDUCE_MODE_MIN || ids.rank != 1 ||
        !same_shape(x, out) || src.rank != x.rank || src.dtype != x.dtype)
      return WICK_SUPPORT_NO_PARAMS;
    for (int i = 0; i < x.rank; ++i)
      if (src.shape[i] != (i == p.axis ? ids.shape[0] : x.shape[i])) return WICK_SUPPORT_NO_PARAMS;
    return WICK_SUPPORT_YES;
  }
  // gather_elements / scatter_elements: ids no larger than x off the axis.
  if (ids.rank != x.rank) return WICK_SUPPORT_NO_PARAMS;
  for (int i = 0; i < x.rank; ++i)
    if (i != p.axis && ids.shape[i] > x.shape[i]) return WICK_SUPPORT_NO_PARAMS;
  if (op.op == WICK_OP_GATHER_ELEMENTS)
    return same_shape(ids, out) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc& src = op.inputs[2];
  return p.flag >= WICK_REDUCE_MODE_SET && p.flag <= WICK_REDUCE_MODE_MIN && same_shape(ids, src) &&
                 same_shape(x, out) && src.dtype == x.dtype
             ? WICK_SUPPORT_YES
             : WICK_SUPPORT_NO_PARAMS;
}

void plan_index(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                size_t handle_size) {
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &out = op.outputs[0];
  const int axis = p.axis;
  IndexArgs g{};
  g.rank = out.rank;
  for (int d = 0; d < out.rank; ++d) {
    g.shape[d] = out.shape[d];
    g.os[d] = out.strides[d];
    g.limit[d] = INT64_MAX;
  }
  g.n = x.shape[axis];
  g.x_axis_stride = x.strides[axis];
  g.axis = -1;
  g.off[0] = element_offset(out);
  g.off[1] = element_offset(x);
  g.off[2] = element_offset(ids);
  const bool scatter = op.op == WICK_OP_INDEX_REDUCE || op.op == WICK_OP_SCATTER_ELEMENTS;
  if (op.op == WICK_OP_INDEX_SELECT) {
    for (int d = 0; d < out.rank; ++d) {
      if (d < axis)
        g.xs[d] = x.strides[d];
      else if (d < axis + ids.rank)
        g.is[d] = ids.strides[d - axis];
      else
        g.xs[d] = x.strides[d - ids.rank + 1];
    }
  } else if (op.op == WICK_OP_GATHER_ELEMENTS) {
    for (int d = 0; d < out.rank; ++d) {
      g.xs[d] = d == axis ? 0 : x.strides[d];
      g.is[d] = ids.strides[d];
    }
  } else {
    const wick_tensor_desc& src = op.inputs[2];
    g.axis = axis;
    g.off[3] = element_offset(src);
    for (int d = 0; d < out.rank; ++d) {
      g.xs[d] = x.strides[d];
      if (d == axis) continue;
      g.ss[d] = src.strides[d];
      if (op.op == WICK_OP_SCATTER_ELEMENTS) {
        g.is[d] = ids.strides[d];
        g.limit[d] = ids.shape[d];
      }
    }
    const bool elements = op.op == WICK_OP_SCATTER_ELEMENTS;
    g.k_extent = elements ? ids.shape[axis] : ids.shape[0];
    g.k_is = elements ? ids.strides[axis] : ids.strides[0];
    g.k_ss = src.strides[axis];
  }
  add_handles(call, handles, scatter ? 4 : 3, handle_size);  // out, x, ids[, src]
  if (scatter) call.add(static_cast<int32_t>(p.flag));
  call.error_slot = static_cast<int>(call.count());
  call.add_bytes(handles[0], handle_size);  // replaced by the error buffer's handle
  call.add(g);
  call.numel = sdk::shape_numel(out.shape, out.rank);
  call.context = std::string(sdk::op_name(op.op)) + " along axis " + std::to_string(axis) +
                 " of extent " + std::to_string(g.n);
}

// Attention: q [..., L, E], k [..., S, E], v [..., S, Ev], out [..., L, Ev], optional mask
// [..., L, S] (any strides, broadcast ones stride 0); S at most kMaxAttentionKeys.
wick_support check_attention(const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_attention_params*>(op.params);
  if (p.struct_size < sizeof(wick_attention_params) || !sdk::attention_shapes_ok(op))
    return WICK_SUPPORT_NO_PARAMS;
  return op.inputs[1].shape[op.inputs[1].rank - 2] <= kMaxAttentionKeys ? WICK_SUPPORT_YES
                                                                        : WICK_SUPPORT_NO_PARAMS;
}

void plan_attention(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                    size_t handle_size) {
  const auto& p = *static_cast<const wick_attention_params*>(op.params);
  const wick_tensor_desc &q = op.inputs[0], &k = op.inputs[1], &v = op.inputs[2],
                         &o = op.outputs[0];
  const bool has_mask = op.num_inputs == 4;
  const int r = q.rank;
  for (int h : {0, 1, 2, 3, has_mask ? 4 : 1}) call.add_bytes(handles[h], handle_size);
  call.add(static_cast<int32_t>(has_mask));
  call.add(static_cast<int32_t>(p.causal != 0));
  add_wide(call, p.scale, q.dtype == WICK_DTYPE_F64);
  for (int64_t x :
       {q.shape[r - 2], k.shape[r - 2], q.shape[r - 1], v.shape[r - 1], q.strides[r - 1],
        k.strides[r - 2], k.strides[r - 1], v.strides[r - 2], v.strides[r - 1], o.strides[r - 1],
        has_mask ? op.inputs[3].strides[r - 1] : int64_t{0}})
    call.add(x);
  // The query rows: the batch dims and L; k and v do not move along L.
  const std::vector<int64_t> rows(q.shape, q.shape + r - 1);
  std::vector<int64_t> ks(k.strides, k.strides + r - 1), vs(v.strides, v.strides + r - 1);
  ks[static_cast<size_t>(r - 2)] = 0;
  vs[static_cast<size_t>(r - 2)] = 0;
  wick_tensor_desc kv = k, vv = v;
  kv.strides = ks.data();
  vv.strides = vs.data();
  const sdk::StridedArgs g = line_geometry(op, rows.data(), {o, q, kv, vv}, r - 1);
  const sdk::StridedArgs gm = has_mask ? line_geometry(op, rows.data(), {op.inputs[3]}, r - 1) : g;
  call.add(g);
  call.add(gm);
  call.numel = o.shape[r - 1] == 0 ? 0 : g.numel;
}

// Sort, softmax and norms: the axis in range, the outputs shaped like the input, the norm's
// weight and bias shaped like the normalised trailing axes.
wick_support check_lines_of(const wick_op_desc& op) {
  const wick_tensor_desc& x = op.inputs[0];
  for (size_t k = 0; k < op.num_outputs; ++k)
    if (!same_shape(x, op.outputs[k])) return WICK_SUPPORT_NO_PARAMS;
  if (op.op == WICK_OP_SORT) {
    const auto& p = *static_cast<const wick_sort_params*>(op.params);
    return p.struct_size >= sizeof(wick_sort_params) && p.axis >= 0 && p.axis < x.rank
               ? WICK_SUPPORT_YES
               : WICK_SUPPORT_NO_PARAMS;
  }
  if (op.op == WICK_OP_SOFTMAX || op.op == WICK_OP_LOG_SOFTMAX) {
    const int axis = static_cast<const wick_axis_params*>(op.params)->axis;
    return axis >= 0 && axis < x.rank ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
  }
  const auto& p = *static_cast<const wick_norm_params*>(op.params);
  if (p.struct_size < sizeof(wick_norm_params) || p.num_axes < 1 || p.num_axes > x.rank)
    return WICK_SUPPORT_NO_PARAMS;
  for (size_t k = 1; k < op.num_inputs; ++k) {
    const wick_tensor_desc& v = op.inputs[k];
    if (v.rank != p.num_axes) return WICK_SUPPORT_NO_PARAMS;
    for (int d = 0; d < v.rank; ++d)
      if (v.shape[d] != x.shape[x.rank - p.num_axes + d]) return WICK_SUPPORT_NO_PARAMS;
  }
  return WICK_SUPPORT_YES;
}

}  // namespace

wick_support check_call(const wick_op_desc& op) {
  if (op.op == WICK_OP_MATMUL) return check_matmul(op);
  const sdk::OpKind kind = sdk::op_info(op.op)->kind;
  if (kind == sdk::OpKind::REDUCE || kind == sdk::OpKind::SCAN) return check_lines(op);
  if (op.op == WICK_OP_BATCH_NORM) return check_batch_norm(op);
  if (op.op == WICK_OP_ATTENTION) return check_attention(op);
  if (op.op == WICK_OP_CONV) return conv_args(op) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
  if (kind == sdk::OpKind::NN) return check_window(op);
  if (kind == sdk::OpKind::INDEX && op.op != WICK_OP_SORT) return check_index(op);
  if (kind == sdk::OpKind::INDEX || kind == sdk::OpKind::FUSED) return check_lines_of(op);
  for (size_t i = 0; i < op.num_inputs; ++i)
    if (!same_shape(op.inputs[i], op.outputs[0])) return WICK_SUPPORT_NO_PARAMS;
  if (op.op == WICK_OP_IOTA &&
      static_cast<const wick_iota_params*>(op.params)->axis >= op.outputs[0].rank)
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

static KernelCall plan_call(const wick_op_desc& op, const void* const* handles,
                            size_t handle_size, bool wide_is_double, int64_t flat_chunk) {
  if (op.op == WICK_OP_MATMUL) return plan_matmul(op, handles, handle_size);
  const wick_tensor_desc& out = op.outputs[0];
  const wick_dtype t = sdk::op_dtype(op);
  KernelCall call;
  // Index ops' kernels are named after their index dtype (sort's output 1, the others' input 1).
  const sdk::OpKind kind = sdk::op_info(op.op)->kind;
  const wick_dtype to = op.op == WICK_OP_SORT        ? op.outputs[1].dtype
                        : kind == sdk::OpKind::INDEX ? op.inputs[1].dtype
                                                     : out.dtype;
  call.kernel = kernel_name(op.op, t, to);
  if (call.kernel.empty())
    throw sdk::Error(WICK_STATUS_UNSUPPORTED, std::string("no generated kernel for ") +
                                                  sdk::op_name(op.op) + " on " +
                                                  sdk::dtype_name(t));
  const sdk::OpInfo& info = *sdk::op_info(op.op);
  if (info.kind == sdk::OpKind::REDUCE || info.kind == sdk::OpKind::SCAN) {
    sdk::check_operands_inside(op);
    add_handles(call, handles, 2, handle_size);
    if (info.kind == sdk::OpKind::REDUCE && op.op != WICK_OP_ARGMAX && op.op != WICK_OP_ARGMIN)
      plan_reduce(call, op);
    else
      plan_lines(call, op);
    return call;
  }
  if (info.kind == sdk::OpKind::INDEX || info.kind == sdk::OpKind::FUSED ||
      info.kind == sdk::OpKind::NN) {
    sdk::check_operands_inside(op);
    if (op.op == WICK_OP_CONV)
      plan_conv(call, op, handles, handle_size);
    else if (op.op == WICK_OP_WINDOW_SCATTER_MAX || op.op == WICK_OP_WINDOW_SCATTER_MIN)
      plan_window_scatter(call, op, handles, handle_size, wide_is_double);
    else if (info.kind == sdk::OpKind::NN)
      plan_window(call, op, handles, handle_size);
    else if (info.kind == sdk::OpKind::INDEX && op.op != WICK_OP_SORT)
      plan_index(call, op, handles, handle_size);
    else if (op.op == WICK_OP_BATCH_NORM)
      plan_batch_norm(call, op, handles, handle_size, wide_is_double);
    else if (op.op == WICK_OP_ATTENTION)
      plan_attention(call, op, handles, handle_size);
    else if (op.op == WICK_OP_SORT)
      plan_sort(call, op, handles, handle_size);
    else if (op.op == WICK_OP_SOFTMAX || op.op == WICK_OP_LOG_SOFTMAX)
      plan_softmax(call, op, handles, handle_size);
    else
      plan_norm(call, op, handles, handle_size, wide_is_double);
    return call;
  }
  const sdk::StridedArgs geometry = sdk::make_strided_args(op);
  add_handles(call, handles, 1 + op.num_inputs, handle_size);
  if (info.kind == sdk::OpKind::UNARY && info.out == sdk::OutDType::BOOL)
    call.add(static_cast<int32_t>(op.op));
  else if (info.kind == sdk::OpKind::UNARY)
    add_unary_params(call, op, t);
  else if (info.kind == sdk::OpKind::BINARY || info.kind == sdk::OpKind::COMPARE)
    call.add(static_cast<int32_t>(op.op));
  else if (op.op == WICK_OP_IOTA)
    add_iota_params(call, op, wide_is_double);
  else if (op.op == WICK_OP_RNG_UNIFORM || op.op == WICK_OP_RNG_NORMAL)
    add_rng_params(call, op, wide_is_double);
  else if (op.op == WICK_OP_FILL) {
    const auto pattern =
        sdk::fill_pattern(out.dtype, *static_cast<const wick_fill_params*>(op.params));
    call.add_bytes(pattern.data(), sdk::dtype_size(out.dtype));
  }
  // Every operand one contiguous run: the _flat kernel, `chunk` elements per work-item.
  bool flat = geometry.rank <= 1 && op.op != WICK_OP_IOTA && op.op != WICK_OP_RNG_UNIFORM &&
              op.op != WICK_OP_RNG_NORMAL;
  for (size_t k = 0; flat && geometry.rank == 1 && k <= op.num_inputs; ++k)
    flat = geometry.strides[k][0] == 1;
  call.numel = geometry.numel;
  if (flat) {
    call.kernel += "_flat";
    call.add(flat_chunk);
    call.numel = (geometry.numel + flat_chunk - 1) / flat_chunk;  // work-items
  }
  call.add_bytes(&geometry, sizeof geometry);
  return call;
}

Launch plan_launch(const wick_op_desc& op, const void* const* handles, size_t handle_size,
                   const Target& target) {
  if (op.op == WICK_OP_CONV) {
    sdk::check_operands_inside(op);
    Launch gemm = plan_conv_gemm(op, handles, handle_size);
    if (!gemm.calls.empty()) return gemm;
  }
  if (op.op >= WICK_OP_REDUCE_SUM && op.op <= WICK_OP_REDUCE_MIN) {
    sdk::check_operands_inside(op);
    const std::string kernel = kernel_name(op.op, sdk::op_dtype(op), op.outputs[0].dtype);
    if (!kernel.empty()) {
      Launch two = plan_reduce_two_pass(op, handles, handle_size, kernel);
      if (!two.calls.empty()) return two;
    }
  }
  Launch launch;
  launch.calls.push_back(
      plan_call(op, handles, handle_size, target.wide_is_double, std::max<int64_t>(target.flat_chunk, 1)));
  return launch;
}

void run_plan(Launch& plan, const Runner& runner) {
  const void* scratch = plan.scratch_bytes == 0 ? nullptr : runner.scratch(plan.scratch_bytes);
  for (KernelCall& call : plan.calls) {
    if (call.numel == 0) continue;
    if (call.scratch_slot >= 0)
      call.replace(static_cast<size_t>(call.scratch_slot), scratch, runner.handle_size);
    if (call.error_slot < 0) {
      runner.launch(call);
      continue;
    }
    int64_t report[2] = {0, 0};
    runner.launch_checked(call, report);
    if (report[0] != 0)
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "index " + std::to_string(report[1]) + " is out of range in " + call.context);
  }
}

}  // namespace wick::gpu
