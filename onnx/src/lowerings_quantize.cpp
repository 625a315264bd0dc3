// lowerings_quantize.cpp — 8-bit quantization: QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear, and the products on quantized inputs, MatMulInteger, QLinearMatMul,
// ConvInteger and QLinearConv (their convolution is conv(), lowerings_nn.cpp).
#include "lowerings.hpp"

#include <wick/onnx/narrow_types.hpp>

#include <numeric>
#include <vector>

namespace wick::onnx {

// A per-axis parameter ([C] along `axis` of x) shaped to broadcast against x; scalars as they are.
Tensor OnnxLowering::Impl::along_axis(const Tensor& v, const Tensor& x, int64_t axis_attr) {
  if (v.rank() == 0 || v.numel() == 1 || x.rank() < 2) return v;
  const int axis = norm_axis(axis_attr, x.rank());
  Shape s(static_cast<size_t>(x.rank()), 1);
  s[static_cast<size_t>(axis)] = v.numel();
  return reshape(v, s);
}
// QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), in the zero point's dtype
// (u8 without one); the saturation is the cast's (docs/ops.md).
void OnnxLowering::Impl::lower_quantize_linear() {
  const Tensor x = in(0);
  for (const char* name : {"block_size", "output_dtype"})
    if (const onnx::AttributeProto* a = attr(name); a != nullptr && a->i != 0)
      refuse_attr(*a, "is not implemented by the importer (only its default, 0)");
  (void)attr("saturate");  // for the float8 outputs only (quantize_narrow)
  const int64_t axis = attr_i("axis", 1);
  const Tensor xf = x.dtype() == DType::F32 ? x : cast(x, DType::F32);
  const Tensor scale = along_axis(cast(in(1), DType::F32), x, axis);
  const wick_unary_params even{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
  if (has_in(2) && in_value(2).narrow != 0) {  // to a narrow type: saturate(x / scale + zero point)
    const int32_t narrow_to = in_value(2).narrow;
    Tensor y = op2(WICK_OP_DIV, xf, scale);
    if (!narrow::is_float(narrow_to)) y = op1(WICK_OP_ROUND, y, &even);
    y = op2(WICK_OP_ADD, y, along_axis(cast(in(2), DType::F32), x, axis));
    out_value(0, quantize_narrow(y, narrow_to, attr_i("saturate", 1) != 0));
    return;
  }
  Tensor q = op1(WICK_OP_ROUND, op2(WICK_OP_DIV, xf, scale), &even);
  DType to = DType::U8;
  if (has_in(2)) {
    to = in(2).dtype();
    q = op2(WICK_OP_ADD, q, along_axis(cast(in(2), DType::F32), x, axis));
  }
  if (to != DType::U8 && to != DType::I8) throw NotImportable("QuantizeLinear to a non-8-bit type");
  out(0, cast(q, to));
}
// DequantizeLinear: (x - zero_point) * scale, in f32.
void OnnxLowering::Impl::lower_dequantize_linear() {
  const Tensor x = in(0);
  if (const onnx::AttributeProto* a = attr("block_size"); a != nullptr && a->i != 0)
    refuse_attr(*a, "is not implemented by the importer (only its default, 0)");
  const int64_t axis = attr_i("axis", 1);
  Tensor v = cast(x, DType::F32);
  if (has_in(2)) v = op2(WICK_OP_SUB, v, along_axis(cast(in(2), DType::F32), x, axis));
  // In x_scale's dtype, as the spec's output type (f32 arithmetic, rounded once).
  out(0, cast(op2(WICK_OP_MUL, v, along_axis(cast(in(1), DType::F32), x, axis)), in(1).dtype()));
}
// DynamicQuantizeLinear: u8 with scale (max(0, max x) - min(0, min x)) / 255 and zero point
// saturate(round(-min / scale)); y = saturate(round(x / scale) + zero point).
void OnnxLowering::Impl::lower_dynamic_quantize_linear() {
  const Tensor x = cast(in(0), DType::F32);
  std::vector<int32_t> all(static_cast<size_t>(x.rank()));
  std::iota(all.begin(), all.end(), 0);
  const Tensor zero = scalar(0, DType::F32);
  const Tensor hi = op2(WICK_OP_MAXIMUM, reduce(WICK_OP_REDUCE_MAX, x, all, false), zero);
  const Tensor lo = op2(WICK_OP_MINIMUM, reduce(WICK_OP_REDUCE_MIN, x, all, false), zero);
  const Tensor scale = affine(op2(WICK_OP_SUB, hi, lo), 1.0 / 255, 0);
  const wick_unary_params even{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
  auto saturate_u8 = [&](const Tensor& v) {
    return cast(op2(WICK_OP_MINIMUM, op2(WICK_OP_MAXIMUM, v, zero), scalar(255, DType::F32)), DType::U8);
  };
  const Tensor zp = op1(WICK_OP_ROUND, op2(WICK_OP_DIV, affine(lo, -1, 0), scale), &even);
  const Tensor y = op2(WICK_OP_ADD, op1(WICK_OP_ROUND, op2(WICK_OP_DIV, x, scale), &even), zp);
  out(0, saturate_u8(y));
  out(1, scale);
  out(2, saturate_u8(zp));
}
// MatMulInteger: (a - a_zero_point) x (b - b_zero_point) in i32.
void OnnxLowering::Impl::lower_matmul_integer() {
  Tensor a = cast(in(0), DType::I32), b = cast(in(1), DType::I32);
  // a's zero point may be one per row ([M], along a's second-last axis); b's one per column.
  if (has_in(2)) {
    const Tensor za = cast(in(2), DType::I32);
    a = op2(WICK_OP_SUB, a, za.rank() == 1 && za.numel() > 1 && a.rank() >= 2 ? reshape(za, {za.numel(), 1}) : za);
  }
  if (has_in(3)) b = op2(WICK_OP_SUB, b, cast(in(3), DType::I32));
  out(0, matmul(a, b));
}
// QLinearMatMul: quantize(dequantize(a) x dequantize(b)) with the output's scale and zero point.
void OnnxLowering::Impl::lower_qlinear_matmul() {
  auto dequantize = [&](size_t x, size_t scale, size_t zero) {
    return op2(WICK_OP_MUL, op2(WICK_OP_SUB, cast(in(x), DType::F32), cast(in(zero), DType::F32)),
               cast(in(scale), DType::F32));
  };
  const Tensor prod = matmul(dequantize(0, 1, 2), dequantize(3, 4, 5));
  const wick_unary_params even{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
  const Tensor q = op2(WICK_OP_ADD, op1(WICK_OP_ROUND, op2(WICK_OP_DIV, prod, cast(in(6), DType::F32)), &even),
                       cast(in(7), DType::F32));
  out(0, cast(q, in(7).dtype()));
}
// ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in i32.
void OnnxLowering::Impl::lower_conv_integer() {
  Tensor x = cast(in(0), DType::I32), w = cast(in(1), DType::I32);
  if (has_in(2)) x = op2(WICK_OP_SUB, x, cast(in(2), DType::I32));
  if (has_in(3)) {  // one zero point, or one per output channel (w's first axis)
    const Tensor zw = cast(in(3), DType::I32);
    Shape s(static_cast<size_t>(w.rank()), 1);
    s[0] = zw.numel();
    w = op2(WICK_OP_SUB, w, zw.numel() > 1 ? reshape(zw, s) : zw);
  }
  out(0, conv(x, w, std::nullopt));
}
// QLinearConv: (x - x_zero_point) conv (w - w_zero_point) in i32, plus the i32 bias, requantised:
// saturate(round_half_even(acc * x_scale * w_scale / y_scale) + y_zero_point); w's scale and zero
// point may be per output channel.
void OnnxLowering::Impl::lower_qlinear_conv() {
  const Tensor xq = in(0), wq = in(3);
  auto per_out = [&](const Tensor& v, int rank, int axis) {  // [M] along `axis`; scalars as they are
    if (v.numel() == 1) return reshape(v, {});
    Shape s(static_cast<size_t>(rank), 1);
    s[static_cast<size_t>(axis)] = v.numel();
    return reshape(v, s);
  };
  const Tensor x = op2(WICK_OP_SUB, cast(xq, DType::I32), cast(in(2), DType::I32));
  const Tensor w = op2(WICK_OP_SUB, cast(wq, DType::I32), per_out(cast(in(5), DType::I32), wq.rank(), 0));
  Tensor acc = conv(x, w, has_in(8) ? std::optional<Tensor>(in(8)) : std::nullopt);
  const Tensor scale = op2(WICK_OP_DIV, op2(WICK_OP_MUL, cast(in(1), DType::F32), per_out(cast(in(4), DType::F32), acc.rank(), 1)),
                           cast(in(6), DType::F32));
  const wick_unary_params even{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
  const Tensor q = op2(WICK_OP_ADD, op1(WICK_OP_ROUND, op2(WICK_OP_MUL, cast(acc, DType::F32), scale), &even),
                       cast(in(7), DType::F32));
  out(0, cast(q, in(7).dtype()));
}

}  // namespace wick::onnx
