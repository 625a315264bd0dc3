// lowerings_reduce.cpp — reductions along axes: the Reduce family (with an elementwise op before
// or after), ArgMax and ArgMin, CumSum, Hardmax and TopK; and the coercion to 2-D that Softmax,
// LogSoftmax and Hardmax see before opset 13.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>

namespace wick::onnx {

void OnnxLowering::Impl::reduction(From from, wick_op_code red, wick_op_code pre,
                                   wick_op_code post, bool mean) {
  Tensor x = in(0);
  bool noop = false;
  const std::vector<int32_t> axes = reduce_axes(x, from, noop);
  if (noop) return out(0, x);
  const bool keep = attr_i("keepdims", 1) != 0;
  if (x.numel() == 0) return out(0, empty_reduction(x, axes, keep, red, post, mean));
  if (pre != WICK_OP_INVALID) x = op1(pre, x);
  Tensor y = reduce(red, x, axes, keep);
  if (mean) y = affine(y, 1.0 / static_cast<double>(reduced_count(x, axes)), 0);
  if (post != WICK_OP_INVALID) y = op1(post, y);
  out(0, y);
}
// A reduction of an empty tensor: each output element reduces an empty set, the reduction's
// identity (a sum 0, a product 1, a maximum -inf, a minimum +inf; bool's false and true), then
// the op after it (ReduceL2's sqrt 0, ReduceLogSum's and ReduceLogSumExp's log -inf); a mean is
// 0 / 0, NaN. Where a kept axis is empty too, the output is empty.
Tensor OnnxLowering::Impl::empty_reduction(const Tensor& x, const std::vector<int32_t>& axes, bool keep,
                                           wick_op_code red, wick_op_code post, bool mean) {
  Shape kept = x.shape(), dropped;
  for (int32_t a : axes) kept[static_cast<size_t>(a)] = 1;
  for (size_t i = 0; i < kept.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int32_t>(i)) == axes.end()) dropped.push_back(kept[i]);
  const Shape os = keep ? kept : dropped;
  const DType t = x.dtype();
  if (std::find(os.begin(), os.end(), 0) != os.end()) return Tensor::empty(os, t, dev());
  const bool is_bool = t == DType::Bool;
  const bool is_float = t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
  const bool extreme = red == WICK_OP_REDUCE_MAX || red == WICK_OP_REDUCE_MIN;
  if ((extreme && !is_float && !is_bool) || (mean && !is_float) || (post != WICK_OP_INVALID && !is_float))
    throw NotImportable(node_context() + ": the reduction of an empty " + dtype_name(t) +
                        " tensor is not implemented by the importer");
  double v = red == WICK_OP_REDUCE_PROD ? 1.0 : 0.0;
  if (red == WICK_OP_REDUCE_MAX) v = is_bool ? 0.0 : -INFINITY;
  if (red == WICK_OP_REDUCE_MIN) v = is_bool ? 1.0 : INFINITY;
  if (mean) v = NAN;
  const Tensor y = filled(os, t, v);
  return post != WICK_OP_INVALID ? op1(post, y) : y;
}
void OnnxLowering::Impl::arg_reduce(wick_op_code op) {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  Shape kept = x.shape();
  kept[static_cast<size_t>(axis)] = 1;
  Tensor o = Tensor::empty(kept, DType::I64, dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis,
                           static_cast<int32_t>(attr_i("select_last_index", 0))};
  exec(op, &p, {x}, {o});
  out(0, attr_i("keepdims", 1) ? o : o.squeeze(axis));
}
void OnnxLowering::Impl::lower_cumsum() {
  const Tensor x = in(0);
  const int axis = norm_axis(host_ints(in(1)).at(0), x.rank());
  const int32_t flags = (attr_i("reverse", 0) ? 1 : 0) | (attr_i("exclusive", 0) ? 2 : 0);
  const wick_axis_params p{sizeof(wick_axis_params), axis, flags};
  out(0, op1(WICK_OP_CUMSUM, x, &p));
}
// Before opset 13, Softmax, LogSoftmax and Hardmax see their input coerced to 2-D at `axis`
// (default 1): the axes before it are the rows.
Tensor OnnxLowering::Impl::coerced_2d(const Tensor& x) {
  const int64_t a = attr_i("axis", 1), axis = a < 0 ? a + x.rank() : a;
  if (axis < 0 || axis > x.rank()) throw NotImportable("malformed " + n.op_type + ": axis " + std::to_string(a));
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows = checked_mul(rows, x.shape()[static_cast<size_t>(i)]);
  return reshape(x, {rows, rows == 0 ? 0 : x.numel() / rows});
}

// Hardmax: 1 where an element is its line's first maximum along `axis`, else 0 (argmax, then
// compared with positions from iota). Before opset 13 the input is coerced to 2-D at `axis`.
Tensor OnnxLowering::Impl::hardmax(const Tensor& x, int axis) {
  Shape kept = x.shape();
  kept[static_cast<size_t>(axis)] = 1;
  Tensor best = Tensor::empty(kept, DType::I64, dev());
  const wick_axis_params ap{sizeof(wick_axis_params), axis, 0};
  exec(WICK_OP_ARGMAX, &ap, {x}, {best});
  Tensor positions = Tensor::empty(x.shape(), DType::I64, dev());
  const wick_iota_params ip{sizeof(wick_iota_params), axis, 0, 1, 0, 1};
  exec(WICK_OP_IOTA, &ip, {}, {positions});
  return cast(op2(WICK_OP_EQ, positions, best.broadcast_to(x.shape()), DType::Bool), x.dtype());
}
void OnnxLowering::Impl::lower_hardmax() {
  const Tensor x = in(0);
  out(0, hardmax(x, norm_axis(attr_i("axis", -1), x.rank())));
}
void OnnxLowering::Impl::lower_hardmax_2d() {
  const Tensor x = in(0);
  if (x.numel() == 0) return out(0, x);
  out(0, hardmax(coerced_2d(x), 1).reshape(x.shape()));
}
// TopK's k: an attribute before opset 10, an input from 10.
void OnnxLowering::Impl::lower_top_k_attr() {
  top_k(attr_i("k", 1));
}
void OnnxLowering::Impl::lower_top_k() {
  top_k(host_ints(in(1)).at(0));
}
void OnnxLowering::Impl::top_k(int64_t k) {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", -1), x.rank());
  if (k < 0 || k > x.dim(axis)) throw NotImportable("malformed TopK: k " + std::to_string(k) + " for an axis of " + std::to_string(x.dim(axis)));
  const wick_sort_params p{sizeof(wick_sort_params), axis, attr_i("largest", 1) != 0 ? 1 : 0, 1};
  Tensor v = Tensor::empty(x.shape(), x.dtype(), dev());
  Tensor i = Tensor::empty(x.shape(), DType::I64, dev());
  exec(WICK_OP_SORT, &p, {x}, {v, i});
  out(0, g.contiguous(v.narrow(axis, 0, k)));
  out(1, g.contiguous(i.narrow(axis, 0, k)));
}

}  // namespace wick::onnx
