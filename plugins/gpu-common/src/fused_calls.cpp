// Launches of the fused kernels: softmax_*, norm_* (layer_norm, rms_norm), batch_norm_* and
// attention_*; and the check of the ops that walk lines of one axis (these and sort).
#include "calls.hpp"

#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/op_shapes.hpp>

#include <vector>

namespace wick::gpu::detail {

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

}  // namespace wick::gpu::detail
