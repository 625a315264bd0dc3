// Sort along one axis: out[0] the values, out[1] their indices along the axis (i32 or i64).
// Always stable (a valid answer to an unstable request too): equal elements, -0.0 and +0.0
// included, keep their order. NaN sorts after every number ascending and before every number
// descending (docs/ops.md). Lines are sorted independently, spread over threads.
#include "reduce_common.hpp"

#include <algorithm>

namespace wick::cpu {

namespace {

wick_support sort_supports(const wick_op_desc& op) {
  const auto* p = static_cast<const wick_sort_params*>(op.params);
  if (op.num_inputs != 1 || op.num_outputs != 2 || p == nullptr ||
      p->struct_size < sizeof(wick_sort_params))
    return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &values = op.outputs[0], &indices = op.outputs[1];
  if (p->axis < 0 || p->axis >= x.rank || !same_shape(x, values) || !same_shape(x, indices))
    return WICK_SUPPORT_NO_PARAMS;
  if (values.dtype != x.dtype || sdk::dtype_size(x.dtype) == 0 || !is_index_dtype(indices.dtype))
    return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

template <class T, class I>
void sort_typed(const Context& ctx, const wick_op_desc& op, const wick_sort_params& p) {
  using C = compute_t<T>;
  const wick_tensor_desc &x = op.inputs[0], &values = op.outputs[0], &indices = op.outputs[1];
  const int64_t n = x.shape[p.axis];
  const int64_t x_ax = x.strides[p.axis], v_ax = values.strides[p.axis],
                i_ax = indices.strides[p.axis];
  const T* src = data_of<const T>(x);
  T* vals = data_of<T>(values);
  I* idx = data_of<I>(indices);
  const bool descending = p.descending != 0;
  const std::array<const int64_t*, 3> strides{x.strides, values.strides, indices.strides};
  int64_t log_n = 1;
  while ((int64_t(1) << log_n) < n) ++log_n;
  parallel_for(ctx, LineWalker(x, p.axis, strides).count(), n * log_n,
               [&](int64_t begin, int64_t end) {
                 std::vector<std::pair<C, int64_t>> keyed(static_cast<size_t>(n));
                 LineWalker lines(x, p.axis, strides);
                 lines.seek(begin);
                 for (int64_t l = begin; l < end; ++l, lines.next()) {
                   const std::array<int64_t, 3> at = lines.offsets();
                   const T* line = src + at[0];
                   for (int64_t k = 0; k < n; ++k)
                     keyed[static_cast<size_t>(k)] = {load(line[k * x_ax]), k};
                   if (descending)
                     std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
                       return less_nan_last(b.first, a.first);
                     });
                   else
                     std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
                       return less_nan_last(a.first, b.first);
                     });
                   T* v = vals + at[1];
                   I* ix = idx + at[2];
                   // Values are copied from the input, not from the keys, so that every bit
                   // survives.
                   for (int64_t k = 0; k < n; ++k) {
                     const int64_t from = keyed[static_cast<size_t>(k)].second;
                     v[k * v_ax] = line[from * x_ax];
                     ix[k * i_ax] = static_cast<I>(from);
                   }
                 }
               });
}

void sort_execute(Context& ctx, const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_sort_params*>(op.params);
  if (numel_of(op.inputs[0]) == 0) return;
  sdk::visit_dtype(op.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (op.outputs[1].dtype == WICK_DTYPE_I32)
      sort_typed<T, int32_t>(ctx, op, p);
    else
      sort_typed<T, int64_t>(ctx, op, p);
  });
}

}  // namespace

Kernel sort_kernel(int op) {
  switch (op) {
    case WICK_OP_SORT: return {&sort_execute, &sort_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
