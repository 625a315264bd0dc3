// Launches of the index kernels: sort_*, gather_* (index_select, gather_elements) and scatter_*
// (index_reduce, scatter_elements).
#include "calls.hpp"

#include <wick/sdk/elementwise.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace wick::gpu::detail {

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

namespace {

// Mirrors the kernels' wk_index (prelude.cpp): all fields 64-bit, same order.
struct IndexArgs {
  int64_t rank, shape[sdk::kMaxRank];
  int64_t os[sdk::kMaxRank], xs[sdk::kMaxRank], is[sdk::kMaxRank], ss[sdk::kMaxRank],
      limit[sdk::kMaxRank];
  int64_t off[4];
  int64_t axis, n, x_axis_stride, k_extent, k_is, k_ss;
};

}  // namespace

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

}  // namespace wick::gpu::detail
