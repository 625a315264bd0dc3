// lowerings_creation.cpp — tensors made from attributes, sizes and positions: Constant,
// ConstantOfShape, Range, the window functions (HannWindow, HammingWindow, BlackmanWindow), and the
// masks of OneHot, EyeLike and Trilu; positions(), the IOTA that many lowerings use.
#include "lowerings.hpp"

#include <cmath>
#include <vector>

namespace wick::onnx {

void OnnxLowering::Impl::lower_constant() {
  if (const onnx::AttributeProto* v = attr("value"); v != nullptr && !v->t.empty())
    return out(0, upload_proto(v->t[0], dev()));
  if (const onnx::AttributeProto* v = attr("value_float"))
    return out(0, scalar(v->f, DType::F32));
  if (const onnx::AttributeProto* v = attr("value_int"))
    return out(0, upload_i64({v->i}, {}));
  if (const onnx::AttributeProto* v = attr("value_ints"))
    return out(0, upload_i64(v->ints, {static_cast<int64_t>(v->ints.size())}));
  if (const onnx::AttributeProto* v = attr("value_floats")) {
    std::vector<double> d(v->floats.begin(), v->floats.end());
    return out(0, upload_values(d, {static_cast<int64_t>(d.size())}, DType::F32));
  }
  throw NotImportable("Constant of a kind without a Wick dtype (strings, sparse)");
}
void OnnxLowering::Impl::lower_constant_of_shape() {
  const std::vector<int64_t> s = host_ints(in(0));
  DType t = DType::F32;
  double value = 0;
  const onnx::AttributeProto* v = attr("value");
  if (v != nullptr && !v->t.empty()) {
    const Tensor c = upload_proto(v->t[0], dev());
    t = c.dtype();
    value = host_scalar(c);
  }
  out(0, filled(s, t, value));
}
void OnnxLowering::Impl::lower_range() {
  const Tensor s = in(0);
  const double start = host_scalar(s), limit = host_scalar(in(1)), delta = host_scalar(in(2));
  const double c = std::ceil((limit - start) / delta);
  const int64_t count = c <= 0 ? 0 : host_count(c, "Range's element count");  // NaN: an error
  Tensor o = Tensor::empty({count}, s.dtype(), dev());
  const wick_iota_params p{sizeof(wick_iota_params), 0, start, delta, saturating_i64(start), saturating_i64(delta)};
  exec(WICK_OP_IOTA, &p, {}, {o});
  out(0, o);
}
// The window functions: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the size when periodic
// (the default), else size - 1; computed on the host in f64, stored in output_datatype.
void OnnxLowering::Impl::lower_window_function() {
  const int64_t size = host_count(host_scalar(in(0)), "window size");
  const bool periodic = attr_i("periodic", 1) != 0;
  const DType t = onnx_dtype(static_cast<int32_t>(attr_i("output_datatype", 1)));
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (n.op_type == "HammingWindow") {
    a0 = 25.0 / 46;
    a1 = 21.0 / 46;
  } else if (n.op_type == "BlackmanWindow") {
    a0 = 0.42;
    a2 = 0.08;
  }
  const double N = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (size_t i = 0; i < w.size(); ++i) {
    const double x = 2 * M_PI * static_cast<double>(i) / N;
    w[i] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  out(0, upload_values(w, {size}, t));
}
// Positions along `axis` of a tensor of `shape` (i64), from IOTA.
Tensor OnnxLowering::Impl::positions(const Shape& shape, int axis) {
  Tensor o = Tensor::empty(shape, DType::I64, dev());
  const wick_iota_params ip{sizeof(wick_iota_params), axis, 0, 1, 0, 1};
  exec(WICK_OP_IOTA, &ip, {}, {o});
  return o;
}
// OneHot: values[1] where the position along the new axis equals the index (negative ones count
// from the end of depth), values[0] elsewhere.
void OnnxLowering::Impl::lower_one_hot() {
  const Tensor idx = cast(in(0), DType::I64);
  const int64_t depth = host_count(host_scalar(in(1)), "OneHot depth");
  const Tensor values = in(2);
  const int axis = norm_axis(attr_i("axis", -1), idx.rank() + 1);
  Shape os = idx.shape();
  os.insert(os.begin() + axis, depth);
  Shape is = idx.shape();
  is.insert(is.begin() + axis, 1);
  const Tensor wrapped = where(op2(WICK_OP_LT, idx, scalar(0, DType::I64), DType::Bool),
                               affine(idx, 1, static_cast<double>(depth)), idx);
  const Tensor hot = op2(WICK_OP_EQ, positions(os, axis), reshape(wrapped, is).broadcast_to(os), DType::Bool);
  out(0, where(hot, values.slice(0, 1, 2, 1).reshape({}), values.slice(0, 0, 1, 1).reshape({})));
}
// EyeLike: ones where column - row == k, in `dtype` (else the input's).
void OnnxLowering::Impl::lower_eye_like() {
  const Tensor x = in(0);
  if (x.rank() != 2) throw NotImportable("EyeLike of rank other than 2");
  const DType t = attr("dtype") != nullptr ? onnx_dtype(static_cast<int32_t>(attr_i("dtype", 1)))
                                                  : x.dtype();
  const Tensor diff = op2(WICK_OP_SUB, positions(x.shape(), 1), positions(x.shape(), 0));
  out(0, cast(op2(WICK_OP_EQ, diff, scalar(static_cast<double>(attr_i("k", 0)), DType::I64), DType::Bool), t));
}
void OnnxLowering::Impl::lower_trilu() {
  const Tensor x = in(0);
  const int64_t k = has_in(1) ? host_ints(in(1)).at(0) : 0, rows = x.dim(-2), cols = x.dim(-1);
  const bool upper = attr_i("upper", 1) != 0;
  std::vector<double> mask(static_cast<size_t>(host_count(static_cast<double>(checked_mul(rows, cols)), "Trilu's mask size")));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      mask[static_cast<size_t>(i * cols + j)] = upper ? (j - i >= k) : (j - i <= k);
  }
  out(0, where(upload_values(mask, {rows, cols}, DType::Bool), x, scalar(0, x.dtype())));
}

}  // namespace wick::onnx
