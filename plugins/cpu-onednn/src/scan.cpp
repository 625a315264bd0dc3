// Cumulative sum, product, max and min along one axis; flag bit 0 scans from the end, bit 1 makes
// the scan exclusive (element i combines the elements before it; the first is the identity).
//
// Lines along the axis are independent. When the axis is an outer one and another axis is
// contiguous, a block of lines is scanned together so that the inner loop runs over contiguous
// memory; otherwise each line is scanned on its own. Lines are spread over threads.
#include "reduce_common.hpp"

#include <algorithm>

namespace wick::cpu {

namespace {

template <int Code>
wick_support scan_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1 || op.params == nullptr)
    return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  if (p.struct_size < sizeof(wick_axis_params) || !same_shape(in, out) || p.axis < 0 ||
      p.axis >= in.rank || p.flag < 0 || p.flag > 3)
    return WICK_SUPPORT_NO_PARAMS;
  // The output dtype (the input's, or its 64-bit widening for sums and products) is the op
  // table's rule, checked before this (sdk::check_signature).
  return WICK_SUPPORT_YES;
}

constexpr int64_t kColumns = 512;

// acc combines x; out receives acc before (exclusive) or after (inclusive) it.
template <class Op, bool Exclusive, class A, class T, class O>
inline void scan_step(A& acc, T x, O& out) {
  if constexpr (Exclusive) {
    out = cast_value<O>(acc);
    acc = Op::combine(acc, Op::template enter<A>(x));
  } else {
    acc = Op::combine(acc, Op::template enter<A>(x));
    out = cast_value<O>(acc);
  }
}

template <class Op, bool Exclusive, class T, class O>
void scan_typed(const Context& ctx, const wick_tensor_desc& in, const wick_tensor_desc& out,
                int axis, bool reverse) {
  using A = typename Op::template acc<T>;
  const int64_t n = in.shape[axis];
  int64_t in_base = 0, out_base = 0;
  int64_t ax_in = in.strides[axis], ax_out = out.strides[axis];
  if (reverse) {
    in_base += (n - 1) * ax_in;
    out_base += (n - 1) * ax_out;
    ax_in = -ax_in;
    ax_out = -ax_out;
  }
  std::vector<Dim> lines;
  for (int i = 0; i < in.rank; ++i) {
    if (i == axis || in.shape[i] == 1) continue;
    Dim d{in.shape[i], in.strides[i], out.strides[i]};
    if (d.in < 0) {
      in_base += (d.n - 1) * d.in;
      out_base += (d.n - 1) * d.out;
      d.in = -d.in;
      d.out = -d.out;
    }
    lines.push_back(d);
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Dim& a, const Dim& b) { return a.in > b.in; });
  lines = merge_dims(lines);
  const T* src = data_of<const T>(in) + in_base;
  O* dst = data_of<O>(out) + out_base;

  const bool columns =
      !lines.empty() && lines.back().in == 1 && std::abs(ax_in) != 1 && lines.back().n >= 8;
  if (!columns) {
    parallel_for(ctx, count_of(lines), n, [&](int64_t begin, int64_t end) {
      Walker w(lines);
      w.seek(begin);
      for (int64_t l = begin; l < end; ++l, w.next()) {
        const T* x = src + w.in;
        O* y = dst + w.out;
        A acc = Op::template identity<A>();
        if (ax_in == 1 && ax_out == 1) {
          for (int64_t i = 0; i < n; ++i) scan_step<Op, Exclusive>(acc, x[i], y[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            scan_step<Op, Exclusive>(acc, x[i * ax_in], y[i * ax_out]);
        }
      }
    });
    return;
  }
  const Dim cols = lines.back();
  const std::vector<Dim> outer(lines.begin(), lines.end() - 1);
  const int64_t blocks = (cols.n + kColumns - 1) / kColumns;
  parallel_for(ctx, count_of(outer) * blocks, n * std::min(cols.n, kColumns),
               [&](int64_t begin, int64_t end) {
                 Walker w(outer);
                 A acc[kColumns];
                 for (int64_t item = begin; item < end; ++item) {
                   const int64_t c0 = (item % blocks) * kColumns,
                                 width = std::min(kColumns, cols.n - c0);
                   w.seek(item / blocks);
                   for (int64_t j = 0; j < width; ++j) acc[j] = Op::template identity<A>();
                   for (int64_t i = 0; i < n; ++i) {
                     const T* x = src + w.in + i * ax_in + c0;
                     O* y = dst + w.out + i * ax_out + c0 * cols.out;
                     if (cols.out == 1) {
                       for (int64_t j = 0; j < width; ++j)
                         scan_step<Op, Exclusive>(acc[j], x[j], y[j]);
                     } else {
                       for (int64_t j = 0; j < width; ++j)
                         scan_step<Op, Exclusive>(acc[j], x[j], y[j * cols.out]);
                     }
                   }
                 }
               });
}

template <class Op>
void scan_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  if (numel_of(out) == 0) return;
  visit_accumulating<Op>(in.dtype, out.dtype, [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using O = typename decltype(out_tag)::type;
    if (p.flag & 2)
      scan_typed<Op, true, T, O>(ctx, in, out, p.axis, (p.flag & 1) != 0);
    else
      scan_typed<Op, false, T, O>(ctx, in, out, p.axis, (p.flag & 1) != 0);
  });
}

}  // namespace

Kernel scan_kernel(int op) {
  switch (op) {
    case WICK_OP_CUMSUM: return {&scan_execute<SumOp>, &scan_supports<WICK_OP_CUMSUM>};
    case WICK_OP_CUMPROD: return {&scan_execute<ProdOp>, &scan_supports<WICK_OP_CUMPROD>};
    case WICK_OP_CUMMAX: return {&scan_execute<MaxOp>, &scan_supports<WICK_OP_CUMMAX>};
    case WICK_OP_CUMMIN: return {&scan_execute<MinOp>, &scan_supports<WICK_OP_CUMMIN>};
    default: return {};
  }
}

}  // namespace wick::cpu
