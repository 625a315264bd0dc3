// Reductions over any set of axes. The output keeps the input's rank (reduced axes have extent 1).
#include "kernels.hpp"

#include <type_traits>

namespace wick::cpu {

namespace {

// The accumulator type: f64 for floats (NumPy's pairwise sum is about as exact), 64-bit for ints.
template <class T>
using Acc = std::conditional_t<std::is_integral_v<T>,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;

wick_support sum_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1 || op.params == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  if (in.dtype != out.dtype || in.rank != out.rank) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_reduce_params*>(op.params);
  for (int i = 0; i < in.rank; ++i) {
    bool reduced = false;
    for (int k = 0; k < p.num_axes; ++k) reduced = reduced || p.axes[k] == i;
    if (out.shape[i] != (reduced ? 1 : in.shape[i])) return WICK_SUPPORT_NO_PARAMS;
  }
  if (in.dtype == WICK_DTYPE_BOOL) return WICK_SUPPORT_NO_DTYPE;  // the host sums bool as i64
  return sdk::dtype_size(in.dtype) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

void sum_execute(Context& /*ctx*/, const wick_op_desc& op) {
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  sdk::visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return;
    } else {
      using A = Acc<T>;
      // Accumulate into a dense array indexed like the output, with stride 0 on reduced axes.
      const int64_t n_out = numel_of(out);
      std::vector<A> acc(static_cast<size_t>(n_out), A(0));
      std::vector<int64_t> acc_strides(static_cast<size_t>(in.rank));
      int64_t s = 1;
      for (int i = in.rank; i-- > 0;) {
        acc_strides[static_cast<size_t>(i)] = out.shape[i] == 1 && in.shape[i] != 1 ? 0 : s;
        s *= out.shape[i];
      }
      const T* src = data_of<const T>(in);
      sdk::for_each_row<2>(in.shape, in.rank, {acc_strides.data(), in.strides}, [&](const sdk::Row<2>& r) {
        const T* x = src + r.offset[1];
        if (r.stride[0] == 0) {
          A total = A(0);
          for (int64_t i = 0; i < r.length; ++i) total += static_cast<A>(x[i * r.stride[1]]);
          acc[static_cast<size_t>(r.offset[0])] += total;
        } else {
          A* a = acc.data() + r.offset[0];
          for (int64_t i = 0; i < r.length; ++i) a[i * r.stride[0]] += static_cast<A>(x[i * r.stride[1]]);
        }
      });
      // Store in the output's own layout.
      T* dst = data_of<T>(out);
      const std::vector<int64_t> dense = [&] {
        std::vector<int64_t> d(static_cast<size_t>(out.rank));
        int64_t m = 1;
        for (int i = out.rank; i-- > 0;) {
          d[static_cast<size_t>(i)] = m;
          m *= out.shape[i];
        }
        return d;
      }();
      sdk::for_each_row<2>(out.shape, out.rank, {out.strides, dense.data()}, [&](const sdk::Row<2>& r) {
        for (int64_t i = 0; i < r.length; ++i)
          dst[r.offset[0] + i * r.stride[0]] = cast_value<T>(acc[static_cast<size_t>(r.offset[1] + i * r.stride[1])]);
      });
    }
  });
}

}  // namespace

void register_reduce(KernelTable& table) { table[WICK_OP_REDUCE_SUM] = {&sum_supports, &sum_execute}; }

}  // namespace wick::cpu
