// lowerings_elementwise.cpp — the elementwise ops that are more than one Wick op (Mean, Identity,
// IsNaN, IsInf, Round, Pow, BitShift, Mod, Where, Cast, CastLike; the direct maps are the table's
// lower_unary and lower_binary) and the activations (Elu, Selu, Celu, the ReLU variants,
// HardSigmoid, HardSwish, Softplus, Softsign, Clip, Shrink), whose helpers RNN, GRU and LSTM reuse.
#include "lowerings.hpp"

namespace wick::onnx {

// --- Elementwise ---

Tensor OnnxLowering::Impl::fold(wick_op_code op) {
  Tensor acc = in(0);
  for (size_t i = 1; i < n.inputs.size(); ++i) acc = op2(op, acc, in(i));
  return acc;
}
void OnnxLowering::Impl::lower_mean() {
  out(0, affine(fold(WICK_OP_ADD), 1.0 / static_cast<double>(n.inputs.size()), 0));
}
// Identity of any value: a tensor, sequence or optional.
void OnnxLowering::Impl::lower_identity() {
  out_value(0, in_value(0));
}
void OnnxLowering::Impl::lower_is_nan() {
  out(0, op1(WICK_OP_IS_NAN, in(0), nullptr, DType::Bool));
}
void OnnxLowering::Impl::lower_is_inf() {
  const Tensor x = in(0);
  Tensor inf = op1(WICK_OP_IS_INF, x, nullptr, DType::Bool);
  const bool pos = attr_i("detect_positive", 1) != 0, neg = attr_i("detect_negative", 1) != 0;
  if (pos && neg) return out(0, inf);
  const Tensor side = op2(pos ? WICK_OP_GT : WICK_OP_LT, x, scalar(0, x.dtype()), DType::Bool);
  out(0, pos || neg ? op2(WICK_OP_BITWISE_AND, inf, side)
                    : op2(WICK_OP_BITWISE_AND, inf, op1(WICK_OP_LOGICAL_NOT, inf)));
}
void OnnxLowering::Impl::lower_round() {
  const wick_unary_params p{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
  out(0, op1(WICK_OP_ROUND, in(0), &p));
}
Tensor OnnxLowering::Impl::legacy_operand(const Tensor& a, const Tensor& b) {
  const onnx::AttributeProto* broadcast = attr("broadcast");
  const onnx::AttributeProto* axis = attr("axis");
  if (!broadcast && !axis) return b;  // NumPy's rules, which equal shapes (the old default) pass
  const int64_t on = attr_i("broadcast", 0);
  if (on != 0 && on != 1) refuse_attr(*broadcast, "is not 0 or 1");
  if (on == 0) {
    if (a.shape() != b.shape())
      throw NotImportable(node_context() + ": broadcast = 0 with inputs of shapes " + shape_to_string(a.shape()) +
                          " and " + shape_to_string(b.shape()));
    return b;
  }
  if (b.rank() > a.rank())
    throw NotImportable(node_context() + ": with broadcast = 1, B " + shape_to_string(b.shape()) +
                        " has more dims than A " + shape_to_string(a.shape()));
  const int64_t start = axis ? attr_i("axis", 0) + (attr_i("axis", 0) < 0 ? a.rank() : 0) : a.rank() - b.rank();
  if (start < 0 || start + b.rank() > a.rank())
    refuse_attr(*axis, "does not place B " + shape_to_string(b.shape()) + " inside A " + shape_to_string(a.shape()));
  Shape laid(static_cast<size_t>(a.rank()), 1);
  for (int i = 0; i < b.rank(); ++i) {
    const int64_t d = b.dim(i), want = a.dim(static_cast<int>(start) + i);
    if (d != want && d != 1)
      throw NotImportable(node_context() + ": with broadcast = 1, B " + shape_to_string(b.shape()) +
                          " does not match A " + shape_to_string(a.shape()) + " from axis " + std::to_string(start));
    laid[static_cast<size_t>(start + i)] = d;
  }
  return reshape(b, laid);
}
void OnnxLowering::Impl::lower_pow() {
  const Tensor a = in(0);
  out(0, op2(WICK_OP_POW, a, cast(legacy_operand(a, in(1)), a.dtype())));
}
void OnnxLowering::Impl::lower_bit_shift() {
  out(0, op2(attr_choice("direction", "", {"LEFT", "RIGHT"}) == "LEFT" ? WICK_OP_SHL : WICK_OP_SHR, in(0), in(1)));
}
void OnnxLowering::Impl::lower_mod() {
  const Tensor a = in(0), b = in(1);
  const int64_t fmod = attr_i("fmod", 0);
  if (fmod != 0 && fmod != 1) refuse_attr(*attr("fmod"), "is not 0 or 1");
  const Tensor r = op2(WICK_OP_REM, a, b);  // C's fmod: the sign of the dividend
  if (fmod == 1) return out(0, r);
  // Python-style modulo, the sign of the divisor, for integers and (opset 28) floats alike: as
  // NumPy's np.mod, the remainder plus the divisor where their signs differ.
  const Tensor zero = scalar(0, a.dtype());
  const Tensor fix = op2(WICK_OP_BITWISE_AND, op2(WICK_OP_NE, r, zero, DType::Bool),
                         op2(WICK_OP_NE, op2(WICK_OP_LT, r, zero, DType::Bool),
                             op2(WICK_OP_LT, b, zero, DType::Bool), DType::Bool));
  out(0, where(fix, op2(WICK_OP_ADD, r, b), r));
}
void OnnxLowering::Impl::lower_where() {
  out(0, where(in(0), in(1), in(2)));
}
// saturate and round_mode (opsets 19 and 24) concern float 8 and 4 targets only, which Wick lacks.
// Cast and CastLike: lowerings_narrow.cpp (ONNX's narrow types are rounded there).

// --- Activations ---

Tensor OnnxLowering::Impl::elu(const Tensor& x, double alpha) {
  const wick_unary_params p{sizeof(wick_unary_params), alpha, 0, 0};
  return op1(WICK_OP_ELU, x, &p);
}
void OnnxLowering::Impl::lower_elu() {
  out(0, elu(in(0), attr_f("alpha", 1.0f)));
}
void OnnxLowering::Impl::lower_selu() {
  const Tensor e = elu(in(0), attr_f("alpha", 1.67326319217681884765625f));
  out(0, affine(e, attr_f("gamma", 1.05070102214813232421875f), 0));
}
void OnnxLowering::Impl::lower_celu() {
  const double alpha = attr_f("alpha", 1.0f);
  out(0, affine(elu(affine(in(0), 1.0 / alpha, 0), 1.0), alpha, 0));
}
// x where x >= 0, `scaled` where x < 0.
Tensor OnnxLowering::Impl::where_negative(const Tensor& x, const Tensor& scaled) {
  return where(op2(WICK_OP_LT, x, scalar(0, x.dtype()), DType::Bool), scaled, x);
}
void OnnxLowering::Impl::lower_leaky_relu() {
  const Tensor x = in(0);
  out(0, where_negative(x, affine(x, attr_f("alpha", 0.01f), 0)));
}
// Before opset 7 a slope per channel ([C] against [N, C, ...], as PyTorch's exports give it) is
// laid along axis 1 where NumPy's rules would not broadcast it.
void OnnxLowering::Impl::lower_prelu_per_channel() {
  const Tensor x = in(0);
  Tensor slope = in(1);
  if (slope.rank() == 1 && x.rank() > 2 && slope.dim(0) == x.dim(1) && slope.dim(0) != x.dim(x.rank() - 1)) {
    Shape s(static_cast<size_t>(x.rank() - 1), 1);
    s[0] = slope.dim(0);
    slope = reshape(slope, s);
  }
  out(0, where_negative(x, op2(WICK_OP_MUL, x, slope)));
}
void OnnxLowering::Impl::lower_prelu() {
  const Tensor x = in(0);
  out(0, where_negative(x, op2(WICK_OP_MUL, x, in(1))));
}
void OnnxLowering::Impl::lower_thresholded_relu() {
  const Tensor x = in(0);
  const Tensor above = op2(WICK_OP_GT, x, scalar(attr_f("alpha", 1.0f), x.dtype()), DType::Bool);
  out(0, where(above, x, scalar(0, x.dtype())));
}
// min(max(alpha x + beta, 0), 1)
Tensor OnnxLowering::Impl::hard_sigmoid(const Tensor& x, double alpha, double beta) {
  return op2(WICK_OP_MINIMUM, op2(WICK_OP_MAXIMUM, affine(x, alpha, beta), scalar(0, x.dtype())),
             scalar(1, x.dtype()));
}
void OnnxLowering::Impl::lower_hard_sigmoid() {
  out(0, hard_sigmoid(in(0), attr_f("alpha", 0.2f), attr_f("beta", 0.5f)));
}
void OnnxLowering::Impl::lower_hard_swish() {
  const Tensor x = in(0);
  out(0, op2(WICK_OP_MUL, x, hard_sigmoid(x, 1.0 / 6, 0.5)));
}
void OnnxLowering::Impl::lower_softplus() {
  out(0, op1(WICK_OP_LOG1P, op1(WICK_OP_EXP, in(0))));
}
void OnnxLowering::Impl::lower_softsign() {
  out(0, op2(WICK_OP_DIV, in(0), affine(op1(WICK_OP_ABS, in(0)), 1, 1)));
}
// Clip's bounds are attributes before opset 11, optional inputs from 11.
void OnnxLowering::Impl::lower_clip_attrs() {
  Tensor x = in(0);
  if (attr("min") != nullptr) x = op2(WICK_OP_MAXIMUM, x, scalar(attr_f("min", 0), x.dtype()));
  if (attr("max") != nullptr) x = op2(WICK_OP_MINIMUM, x, scalar(attr_f("max", 0), x.dtype()));
  out(0, x);
}
void OnnxLowering::Impl::lower_clip() {
  Tensor x = in(0);
  if (has_in(1)) x = op2(WICK_OP_MAXIMUM, x, in(1));
  if (has_in(2)) x = op2(WICK_OP_MINIMUM, x, in(2));
  out(0, x);
}
// Shrink: x - bias above lambd, x + bias below -lambd, else 0.
void OnnxLowering::Impl::lower_shrink() {
  const Tensor x = in(0);
  const double lambd = attr_f("lambd", 0.5f), bias = attr_f("bias", 0.0f);
  const Tensor above = op2(WICK_OP_GT, x, scalar(lambd, x.dtype()), DType::Bool);
  const Tensor below = op2(WICK_OP_LT, x, scalar(-lambd, x.dtype()), DType::Bool);
  out(0, where(above, affine(x, 1, -bias), where(below, affine(x, 1, bias), scalar(0, x.dtype()))));
}

}  // namespace wick::onnx
