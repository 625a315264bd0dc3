// lowerings.cpp — one lowering per ONNX op type (or family) onto Wick ops, and the table of
// lowerings that OnnxLowering::run looks a node's op type up in.
#include "lowerings.hpp"


#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

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
void OnnxLowering::Impl::lower_pow() {
  out(0, op2(WICK_OP_POW, in(0), cast(in(1), in(0).dtype())));
}
void OnnxLowering::Impl::lower_bit_shift() {
  out(0, op2(attr_s("direction", "") == "LEFT" ? WICK_OP_SHL : WICK_OP_SHR, in(0), in(1)));
}
void OnnxLowering::Impl::lower_mod() {
  const Tensor a = in(0), b = in(1);
  const Tensor r = op2(WICK_OP_REM, a, b);
  if (attr_i("fmod", 0) != 0 || is_float(a.dtype())) return out(0, r);
  // Python-style modulo: the sign of the divisor.
  const Tensor zero = scalar(0, a.dtype());
  const Tensor fix = op2(WICK_OP_BITWISE_AND, op2(WICK_OP_NE, r, zero, DType::Bool),
                         op2(WICK_OP_NE, op2(WICK_OP_LT, r, zero, DType::Bool),
                             op2(WICK_OP_LT, b, zero, DType::Bool), DType::Bool));
  out(0, where(fix, op2(WICK_OP_ADD, r, b), r));
}
void OnnxLowering::Impl::lower_where() {
  out(0, where(in(0), in(1), in(2)));
}

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
  if (n.attribute("min") != nullptr) x = op2(WICK_OP_MAXIMUM, x, scalar(attr_f("min", 0), x.dtype()));
  if (n.attribute("max") != nullptr) x = op2(WICK_OP_MINIMUM, x, scalar(attr_f("max", 0), x.dtype()));
  out(0, x);
}
void OnnxLowering::Impl::lower_clip() {
  Tensor x = in(0);
  if (has_in(1)) x = op2(WICK_OP_MAXIMUM, x, in(1));
  if (has_in(2)) x = op2(WICK_OP_MINIMUM, x, in(2));
  out(0, x);
}

// --- Matrix products and reductions ---

void OnnxLowering::Impl::lower_matmul() {
  out(0, matmul(in(0), in(1)));
}
void OnnxLowering::Impl::lower_gemm() {
  Tensor a = in(0), b = in(1);
  if (attr_i("transA", 0)) a = a.t();
  if (attr_i("transB", 0)) b = b.t();
  Tensor y = matmul(a, b);
  const double alpha = attr_f("alpha", 1.0f), beta = attr_f("beta", 1.0f);
  if (alpha != 1.0) y = affine(y, alpha, 0);
  if (has_in(2) && beta != 0.0)
    y = op2(WICK_OP_ADD, y, beta == 1.0 ? in(2) : affine(in(2), beta, 0));
  out(0, y);
}
void OnnxLowering::Impl::reduction(From from, wick_op_code red, wick_op_code pre,
                                   wick_op_code post, bool mean) {
  Tensor x = in(0);
  bool noop = false;
  const std::vector<int32_t> axes = reduce_axes(x, from, noop);
  if (noop) return out(0, x);
  const bool keep = attr_i("keepdims", 1) != 0;
  if (pre != WICK_OP_INVALID) x = op1(pre, x);
  Tensor y = reduce(red, x, axes, keep);
  if (mean) y = affine(y, 1.0 / static_cast<double>(reduced_count(x, axes)), 0);
  if (post != WICK_OP_INVALID) y = op1(post, y);
  out(0, y);
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

// Positions along `axis` of a tensor of `shape` (i64), from IOTA.
Tensor OnnxLowering::Impl::positions(const Shape& shape, int axis) {
  Tensor o = Tensor::empty(shape, DType::I64, dev());
  const wick_iota_params ip{sizeof(wick_iota_params), axis, 0, 1, 0, 1};
  exec(WICK_OP_IOTA, &ip, {}, {o});
  return o;
}
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
  if (n.attribute("block_size") != nullptr || n.attribute("output_dtype") != nullptr)
    throw NotImportable("QuantizeLinear block_size/output_dtype");
  const int64_t axis = attr_i("axis", 1);
  const Tensor xf = x.dtype() == DType::F32 ? x : cast(x, DType::F32);
  const Tensor scale = along_axis(cast(in(1), DType::F32), x, axis);
  const wick_unary_params even{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
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
  if (n.attribute("block_size") != nullptr) throw NotImportable("DequantizeLinear block_size");
  const int64_t axis = attr_i("axis", 1);
  Tensor v = cast(x, DType::F32);
  if (has_in(2)) v = op2(WICK_OP_SUB, v, along_axis(cast(in(2), DType::F32), x, axis));
  out(0, op2(WICK_OP_MUL, v, along_axis(cast(in(1), DType::F32), x, axis)));
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
  const DType t = n.attribute("dtype") != nullptr ? onnx_dtype(static_cast<int32_t>(attr_i("dtype", 1)))
                                                  : x.dtype();
  const Tensor diff = op2(WICK_OP_SUB, positions(x.shape(), 1), positions(x.shape(), 0));
  out(0, cast(op2(WICK_OP_EQ, diff, scalar(static_cast<double>(attr_i("k", 0)), DType::I64), DType::Bool), t));
}

// Resize and Upsample, separably: along each resized axis, every output position reads one
// (nearest), two (linear) or four (cubic) input positions with weights computed on the host from
// ONNX's coordinate transformation; the gathers are index_select, the weights a broadcast multiply.
// Positions outside the input read its edge (as the reference pads); tf_crop_and_resize's positions
// outside the crop get the extrapolation value.
struct ResizeRule {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

namespace {

// The input coordinate of output position x along an axis (ONNX's coordinate_transformation_mode).
// out_len is the scaled length in_len * scale, not rounded (the reference uses it unrounded).
double resize_coordinate(const ResizeRule& r, double x, double scale, double out_len, int64_t in_len,
                         double roi_start, double roi_end) {
  const std::string& c = r.coord;
  if (c == "asymmetric") return x / scale;
  if (c == "align_corners")
    return out_len == 1 ? 0.0 : x * static_cast<double>(in_len - 1) / (out_len - 1);
  if (c == "pytorch_half_pixel") return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (c == "tf_crop_and_resize")
    return out_len > 1 ? roi_start * static_cast<double>(in_len - 1) +
                             x * (roi_end - roi_start) * static_cast<double>(in_len - 1) /
                                 (out_len - 1)
                       : 0.5 * (roi_start + roi_end) * static_cast<double>(in_len - 1);
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

std::vector<double> cubic_weights(double t, double a) {
  auto w = [a](double d) {
    d = std::fabs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0.0;
  };
  return {w(t + 1), w(t), w(1 - t), w(2 - t)};
}

}  // namespace

Tensor OnnxLowering::Impl::resize_axis(const Tensor& x, int axis, int64_t out_len, double scale,
                                       const ResizeRule& r, double roi_start, double roi_end) {
  const int64_t in_len = x.dim(axis);
  // The resized tensor must be within the importer's limit before any table is built for it.
  if (in_len > 0 && checked_mul(x.numel() / in_len, out_len) > onnx_max_elements())
    throw NotImportable(n.op_type + " to " + std::to_string(out_len) + " along axis " + std::to_string(axis) +
                        " makes more than " + std::to_string(onnx_max_elements()) +
                        " elements, the importer's limit");
  const size_t taps = r.mode == "nearest" ? 1 : r.mode == "linear" ? 2 : 4;
  std::vector<std::vector<int64_t>> ids(taps, std::vector<int64_t>(static_cast<size_t>(out_len)));
  std::vector<std::vector<double>> ws(taps, std::vector<double>(static_cast<size_t>(out_len)));
  std::vector<double> outside(static_cast<size_t>(out_len), 0.0);
  for (int64_t o = 0; o < out_len; ++o) {
    const size_t k = static_cast<size_t>(o);
    const double x0 = resize_coordinate(r, static_cast<double>(o), scale,
                                        scale * static_cast<double>(in_len), in_len, roi_start, roi_end);
    if (!std::isfinite(x0)) throw NotImportable("malformed " + n.op_type + ": a coordinate is not finite (roi)");
    if (r.coord == "tf_crop_and_resize" && (x0 < 0 || x0 > static_cast<double>(in_len - 1))) {
      outside[k] = 1;  // every tap's weight stays 0
      continue;
    }
    // A coordinate far outside the input (a tiny scale) reads the edge from every tap, as one just
    // beyond the taps' reach does: clamped there, it casts to an integer safely.
    const double x0c = std::clamp(x0, -8.0, static_cast<double>(in_len) + 8.0);
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
    if (taps == 1) {
      const double f = std::floor(x0c), frac = x0c - f;
      int64_t i = static_cast<int64_t>(f);
      if (r.nearest == "ceil") i = static_cast<int64_t>(std::ceil(x0c));
      else if (r.nearest == "round_prefer_ceil") i = frac >= 0.5 ? i + 1 : i;
      else if (r.nearest == "round_prefer_floor") i = frac > 0.5 ? i + 1 : i;
      ids[0][k] = clamp(i);
      ws[0][k] = 1;
      continue;
    }
    const double f = std::floor(x0c), t = x0c - f;
    const int64_t base = static_cast<int64_t>(f) - (taps == 4 ? 1 : 0);
    std::vector<double> w = taps == 2 ? std::vector<double>{1 - t, t} : cubic_weights(t, r.cubic_a);
    if (r.exclude_outside) {
      double sum = 0;
      for (size_t j = 0; j < taps; ++j) {
        const int64_t i = base + static_cast<int64_t>(j);
        if (i < 0 || i >= in_len) w[j] = 0;
        sum += w[j];
      }
      if (sum != 0)
        for (double& v : w) v /= sum;
    }
    for (size_t j = 0; j < taps; ++j) {
      ids[j][k] = clamp(base + static_cast<int64_t>(j));
      ws[j][k] = w[j];
    }
  }
  Shape os = x.shape();
  os[static_cast<size_t>(axis)] = out_len;
  Shape wshape(static_cast<size_t>(x.rank()), 1);
  wshape[static_cast<size_t>(axis)] = out_len;
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  const DType ct = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Tensor sum;
  for (size_t j = 0; j < taps; ++j) {
    Tensor g = Tensor::empty(os, x.dtype(), dev());
    exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids[j], {out_len})}, {g});
    if (taps == 1 && r.coord != "tf_crop_and_resize") return g;  // nearest: the gather is the result
    const Tensor term = op2(WICK_OP_MUL, cast(g, ct), upload_values(ws[j], wshape, ct));
    sum = j == 0 ? term : op2(WICK_OP_ADD, sum, term);
  }
  if (r.coord == "tf_crop_and_resize")
    sum = op2(WICK_OP_ADD, sum,
              affine(upload_values(outside, wshape, ct), r.extrapolation, 0));
  return sum.dtype() == x.dtype() ? sum : cast(sum, x.dtype());
}

namespace {

// Upsample (7-9) and Resize 10: asymmetric coordinates, nearest rounding down.
ResizeRule asymmetric_floor(const std::string& mode) {
  ResizeRule r;
  r.mode = mode;
  r.coord = "asymmetric";
  r.nearest = "floor";
  return r;
}

}  // namespace

// Upsample: its scales an attribute in opsets 7 and 8, an input in 9 (deprecated from 10).
void OnnxLowering::Impl::lower_upsample_attr() {
  std::vector<double> scales;
  if (const onnx::AttributeProto* a = n.attribute("scales")) scales.assign(a->floats.begin(), a->floats.end());
  resize(asymmetric_floor(attr_s("mode", "nearest")), scales, {}, {});
}
void OnnxLowering::Impl::lower_upsample() {
  resize(asymmetric_floor(attr_s("mode", "nearest")), host_doubles(in(1)), {}, {});
}
// Resize 10: scales the only other input, no coordinate transformation attributes.
void OnnxLowering::Impl::lower_resize_10() {
  resize(asymmetric_floor(attr_s("mode", "nearest")), host_doubles(in(1)), {}, {});
}
// Resize from 11: roi, scales and sizes inputs; the coordinate transformation and rounding
// attributes (antialias, axes and keep_aspect_ratio_policy from 18 are not lowered).
void OnnxLowering::Impl::lower_resize() {
  ResizeRule r;
  r.mode = attr_s("mode", "nearest");
  r.coord = attr_s("coordinate_transformation_mode", "half_pixel");
  r.nearest = attr_s("nearest_mode", "round_prefer_floor");
  r.cubic_a = attr_f("cubic_coeff_a", -0.75f);
  r.exclude_outside = attr_i("exclude_outside", 0) != 0;
  r.extrapolation = attr_f("extrapolation_value", 0.0f);
  if (attr_i("antialias", 0) != 0 || n.attribute("axes") != nullptr ||
      attr_s("keep_aspect_ratio_policy", "stretch") != "stretch")
    throw NotImportable("Resize antialias, axes or keep_aspect_ratio_policy");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (has_in(1)) roi = host_doubles(in(1));
  if (has_in(2) && in(2).numel() > 0) scales = host_doubles(in(2));
  if (has_in(3) && in(3).numel() > 0) sizes = host_ints(in(3));
  resize(r, scales, sizes, roi);
}
void OnnxLowering::Impl::resize(const ResizeRule& r, const std::vector<double>& scales,
                                const std::vector<int64_t>& sizes, const std::vector<double>& roi) {
  Tensor x = in(0);
  const int rank = x.rank();
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic")
    throw NotImportable(n.op_type + " mode " + r.mode);
  if (scales.empty() && sizes.empty()) throw NotImportable("Resize without scales or sizes");
  if ((!scales.empty() && scales.size() != static_cast<size_t>(rank)) ||
      (!sizes.empty() && sizes.size() != static_cast<size_t>(rank)))
    throw NotImportable("Resize scales or sizes not one per axis");
  for (int a = 0; a < rank; ++a) {
    const int64_t in_len = x.dim(a);
    const double scale = sizes.empty() ? scales[static_cast<size_t>(a)]
                                       : static_cast<double>(sizes[static_cast<size_t>(a)]) /
                                             static_cast<double>(in_len);
    if (in_len == 0 || !std::isfinite(scale) || scale <= 0)
      throw NotImportable("malformed " + n.op_type + ": scale " + std::to_string(scale) + " for an axis of " +
                          std::to_string(in_len));
    const int64_t out_len =
        host_count(sizes.empty() ? std::floor(static_cast<double>(in_len) * scale)
                                 : static_cast<double>(sizes[static_cast<size_t>(a)]),
                   "Resize output length");
    const double lo = roi.size() == static_cast<size_t>(2 * rank) ? roi[static_cast<size_t>(a)] : 0;
    const double hi = roi.size() == static_cast<size_t>(2 * rank) ? roi[static_cast<size_t>(a + rank)] : 1;
    if (out_len == in_len && scale == 1.0 && r.coord != "tf_crop_and_resize") continue;
    x = resize_axis(x, a, out_len, scale, r, lo, hi);
  }
  out(0, x);
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
// MatMulInteger: (a - a_zero_point) x (b - b_zero_point) in i32.
void OnnxLowering::Impl::lower_matmul_integer() {
  Tensor a = cast(in(0), DType::I32), b = cast(in(1), DType::I32);
  if (has_in(2)) a = op2(WICK_OP_SUB, a, cast(in(2), DType::I32));
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

// Einsum: an ellipsis stands for the same (right-aligned, broadcast) leading axes in every term,
// named by digits; a letter repeated within one term takes that term's diagonal (a host-built
// identity mask, then a sum over the second axis). Then every operand's axes are permuted to the
// order of all letters (first appearance) with extent-1 axes for the letters it lacks, the
// broadcast product, a sum over the letters the output drops, and the output's permutation.
void OnnxLowering::Impl::lower_einsum() {
  std::string eq = attr_s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  for (size_t start = 0, comma;; start = comma + 1) {
    comma = eq.find(',', start);
    const size_t stop = std::min(comma, arrow);
    terms.push_back(eq.substr(start, stop - start));
    if (comma == std::string::npos || comma > arrow) break;
  }
  if (terms.size() != n.inputs.size()) throw NotImportable("Einsum terms and inputs differ in number");
  std::vector<Tensor> xs;
  int ellipsis = 0;  // the most axes an ellipsis stands for
  for (size_t k = 0; k < terms.size(); ++k) {
    xs.push_back(in(k));
    const size_t at = terms[k].find("...");
    if (at != std::string::npos)
      ellipsis = std::max(ellipsis, xs[k].rank() - static_cast<int>(terms[k].size() - 3));
  }
  std::string dots;
  for (int j = 0; j < ellipsis; ++j) dots += static_cast<char>('0' + j);
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string& t = terms[k];
    const size_t at = t.find("...");
    if (at == std::string::npos) continue;
    const int count = xs[k].rank() - static_cast<int>(t.size() - 3);
    if (count < 0) throw NotImportable("Einsum term rank mismatch");
    t.replace(at, 3, dots.substr(dots.size() - static_cast<size_t>(count)));
  }
  // Repeated letters: the diagonal over each pair, the second axis summed away.
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string& t = terms[k];
    Tensor& x = xs[k];
    if (static_cast<int>(t.size()) != x.rank()) throw NotImportable("Einsum term rank mismatch");
    for (size_t p = 0; p < t.size(); ++p) {
      for (size_t q = t.size(); q-- > p + 1;) {
        if (t[q] != t[p]) continue;
        const int64_t d = x.dim(static_cast<int>(p));
        if (x.dim(static_cast<int>(q)) != d) throw NotImportable("Einsum diagonal of unequal axes");
        std::vector<double> eye(static_cast<size_t>(host_count(static_cast<double>(checked_mul(d, d)), "Einsum's diagonal mask size")), 0.0);
        for (int64_t i = 0; i < d; ++i) eye[static_cast<size_t>(i * d + i)] = 1;
        Shape ms(static_cast<size_t>(x.rank()), 1);
        ms[p] = ms[q] = d;
        const Tensor mask = reshape(upload_values(eye, {d, d}, DType::Bool), ms);
        x = reduce(WICK_OP_REDUCE_SUM, where(mask, x, scalar(0, x.dtype())), {static_cast<int32_t>(q)}, false);
        t.erase(q, 1);
      }
    }
  }
  std::string letters;
  for (const std::string& t : terms)
    for (char c : t)
      if (letters.find(c) == std::string::npos) letters += c;
  std::string output;
  if (arrow != std::string::npos) {
    output = eq.substr(arrow + 2);
    const size_t at = output.find("...");
    if (at != std::string::npos) output.replace(at, 3, dots);
  } else {  // implicit: the ellipsis axes, then the letters that appear once, alphabetically
    for (char c : letters) {
      int count = 0;
      for (const std::string& t : terms) count += static_cast<int>(std::count(t.begin(), t.end(), c));
      if (count == 1 && dots.find(c) == std::string::npos) output += c;
    }
    std::sort(output.begin(), output.end());
    output = dots + output;
  }
  Tensor product;
  for (size_t k = 0; k < terms.size(); ++k) {
    const Tensor x = xs[k];
    const std::string& t = terms[k];
    std::vector<int> perm;
    Shape s;
    for (char c : letters) {
      const size_t at = t.find(c);
      if (at != std::string::npos) perm.push_back(static_cast<int>(at));
      s.push_back(at != std::string::npos ? x.dim(static_cast<int>(at)) : 1);
    }
    const Tensor aligned = reshape(x.permute(perm), s);
    product = k == 0 ? aligned : op2(WICK_OP_MUL, product, aligned);
  }
  std::vector<int32_t> summed;
  std::string kept;
  for (size_t i = 0; i < letters.size(); ++i) {
    if (output.find(letters[i]) == std::string::npos) summed.push_back(static_cast<int32_t>(i));
    else kept += letters[i];
  }
  Tensor r = summed.empty() ? product : reduce(WICK_OP_REDUCE_SUM, product, summed, false);
  std::vector<int> perm;
  for (char c : output) perm.push_back(static_cast<int>(kept.find(c)));
  out(0, r.permute(perm));
}

// --- Views and shapes (host metadata) ---

void OnnxLowering::Impl::lower_reshape() {
  const Tensor x = in(0);
  std::vector<int64_t> s = host_ints(in(1));
  const bool allowzero = attr_i("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allowzero) s[i] = x.shape().at(i);
    if (s[i] < -1 || (s[i] == -1 && infer >= 0))
      throw NotImportable("malformed Reshape: shape " + shape_to_string(s));
    if (s[i] == -1)
      infer = static_cast<int64_t>(i);
    else
      known = checked_mul(known, s[i]);
  }
  if (infer >= 0) s[static_cast<size_t>(infer)] = known == 0 ? 0 : x.numel() / known;
  out(0, reshape(x, s));
}
void OnnxLowering::Impl::lower_flatten() {
  const Tensor x = in(0);
  const int64_t axis = attr_i("axis", 1) < 0 ? attr_i("axis", 1) + x.rank() : attr_i("axis", 1);
  if (axis < 0 || axis > x.rank()) throw NotImportable("malformed Flatten: axis " + std::to_string(attr_i("axis", 1)));
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows = checked_mul(rows, x.shape()[static_cast<size_t>(i)]);
  out(0, reshape(x, {rows, rows == 0 ? 0 : x.numel() / rows}));
}
void OnnxLowering::Impl::squeeze(std::vector<int64_t> axes) {
  Tensor x = in(0);
  if (axes.empty()) return out(0, x.squeeze());
  for (int64_t& a : axes) a = norm_axis(a, x.rank());
  std::sort(axes.rbegin(), axes.rend());
  for (int64_t a : axes) x = x.squeeze(static_cast<int>(a));
  out(0, x);
}
void OnnxLowering::Impl::unsqueeze(std::vector<int64_t> axes) {
  Tensor x = in(0);
  const int rank = x.rank() + static_cast<int>(axes.size());
  for (int64_t& a : axes) a = norm_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) x = x.unsqueeze(static_cast<int>(a));
  out(0, x);
}
void OnnxLowering::Impl::lower_transpose() {
  const Tensor x = in(0);
  std::vector<int> perm(static_cast<size_t>(x.rank()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = attr_ints("perm")) perm.assign(p->begin(), p->end());
  out(0, x.permute(perm));
}
void OnnxLowering::Impl::lower_expand() {
  const Tensor x = in(0);
  const std::vector<int64_t> s = host_ints(in(1));
  if (std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 0; }))
    throw NotImportable("malformed Expand: shape " + shape_to_string(s));
  out(0, x.broadcast_to(broadcast(x.shape(), s)));
}
void OnnxLowering::Impl::lower_concat() {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < n.inputs.size(); ++i) parts.push_back(in(i));
  out(0, concat(parts, norm_axis(attr_i("axis", 0), in(0).rank())));
}
// Split's sizes: an attribute before opset 13, an input from 13; without them, equal parts (from
// 18, num_outputs parts of ceil(extent / num_outputs), the last one smaller).
void OnnxLowering::Impl::split(std::vector<int64_t> sizes) {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const int64_t parts = static_cast<int64_t>(n.outputs.size());
  if (parts == 0) throw NotImportable("malformed Split: no outputs");
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t v) { return v < 0; }))
    throw NotImportable("malformed Split: sizes " + shape_to_string(sizes));
  if (sizes.empty() && n.attribute("num_outputs") != nullptr) {
    const int64_t each = (x.dim(axis) + parts - 1) / parts;
    for (int64_t at = 0; at < x.dim(axis); at += each) sizes.push_back(std::min(each, x.dim(axis) - at));
  }
  if (sizes.empty()) sizes.assign(n.outputs.size(), x.dim(axis) / parts);
  int64_t total = 0;
  for (int64_t s : sizes) total = checked_add(total, s);
  if (total > x.dim(axis)) throw NotImportable("malformed Split: sizes " + shape_to_string(sizes) + " for an axis of " + std::to_string(x.dim(axis)));
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out(i, g.contiguous(x.narrow(axis, at, sizes[i])));
    at = checked_add(at, sizes[i]);
  }
}
// Before opset 10 starts, ends and axes are attributes (and there are no steps); inputs from 10.
void OnnxLowering::Impl::lower_slice_attrs() {
  slice(attr_ints("starts").value_or(std::vector<int64_t>{}),
        attr_ints("ends").value_or(std::vector<int64_t>{}), attr_ints("axes"), std::nullopt);
}
void OnnxLowering::Impl::lower_slice() {
  slice(host_ints(in(1)), host_ints(in(2)),
        has_in(3) ? std::optional(host_ints(in(3))) : std::nullopt,
        has_in(4) ? std::optional(host_ints(in(4))) : std::nullopt);
}
void OnnxLowering::Impl::slice(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                               std::optional<std::vector<int64_t>> axes_in,
                               std::optional<std::vector<int64_t>> steps_in) {
  Tensor x = in(0);
  if (starts.size() != ends.size()) throw NotImportable("Slice: starts and ends differ in length");
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (axes_in) axes = *axes_in;
  const std::vector<int64_t> steps = steps_in.value_or(std::vector<int64_t>(starts.size(), 1));
  if (axes.size() != starts.size() || steps.size() != starts.size())
    throw NotImportable("Slice: axes or steps differ in length from starts");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int a = norm_axis(axes[i], x.rank());
    const int64_t big = int64_t{1} << 40;
    auto clip = [&](int64_t v, int64_t limit) { return std::max(-limit, std::min(limit, v)); };
    // A step longer than the axis takes one element, as one of the axis' length does: clipped
    // there (keeping its sign), the view's stride cannot overflow.
    x = x.slice(a, clip(starts[i], big), clip(ends[i], big), clip(steps[i], std::max<int64_t>(x.dim(a), 1)));
  }
  out(0, x);
}
void OnnxLowering::Impl::lower_shape() {
  const Tensor x = in(0);
  const int64_t r = x.rank();
  int64_t start = attr_i("start", 0), end = attr_i("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  std::vector<int64_t> s(x.shape().begin() + start, x.shape().begin() + std::max(start, end));
  out(0, upload_i64(s, {static_cast<int64_t>(s.size())}));
}
void OnnxLowering::Impl::lower_size() {
  out(0, upload_i64({in(0).numel()}, {}));
}

// --- Constants and casts ---

void OnnxLowering::Impl::lower_constant() {
  if (const onnx::AttributeProto* v = n.attribute("value"); v != nullptr && !v->t.empty())
    return out(0, upload_proto(v->t[0], dev()));
  if (const onnx::AttributeProto* v = n.attribute("value_float"))
    return out(0, scalar(v->f, DType::F32));
  if (const onnx::AttributeProto* v = n.attribute("value_int"))
    return out(0, upload_i64({v->i}, {}));
  if (const onnx::AttributeProto* v = n.attribute("value_ints"))
    return out(0, upload_i64(v->ints, {static_cast<int64_t>(v->ints.size())}));
  if (const onnx::AttributeProto* v = n.attribute("value_floats")) {
    std::vector<double> d(v->floats.begin(), v->floats.end());
    return out(0, upload_values(d, {static_cast<int64_t>(d.size())}, DType::F32));
  }
  throw NotImportable("Constant of a kind without a Wick dtype (strings, sparse)");
}
void OnnxLowering::Impl::lower_constant_of_shape() {
  const std::vector<int64_t> s = host_ints(in(0));
  DType t = DType::F32;
  double value = 0;
  const onnx::AttributeProto* v = n.attribute("value");
  if (v != nullptr && !v->t.empty()) {
    const Tensor c = upload_proto(v->t[0], dev());
    t = c.dtype();
    value = host_scalar(c);
  }
  out(0, filled(s, t, value));
}
void OnnxLowering::Impl::lower_cast() {
  out(0, cast(in(0), onnx_dtype(static_cast<int32_t>(attr_i("to", 0)))));
}
void OnnxLowering::Impl::lower_cast_like() {
  out(0, cast(in(0), in(1).dtype()));
}

// --- Indexing ---

void OnnxLowering::Impl::lower_gather() {
  const Tensor x = in(0), idx = in(1);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const std::vector<int64_t> ids = index_values(x, idx, axis);
  Shape os(x.shape().begin(), x.shape().begin() + axis);
  os.insert(os.end(), idx.shape().begin(), idx.shape().end());
  os.insert(os.end(), x.shape().begin() + axis + 1, x.shape().end());
  Shape flat = x.shape();
  flat[static_cast<size_t>(axis)] = static_cast<int64_t>(ids.size());
  Tensor o = Tensor::empty(flat, x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
  out(0, o.reshape(os));
}
void OnnxLowering::Impl::lower_gather_elements() {
  const Tensor x = in(0), idx = in(1);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const Tensor ix = upload_i64(index_values(x, idx, axis), idx.shape());
  Tensor o = Tensor::empty(idx.shape(), x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  exec(WICK_OP_GATHER_ELEMENTS, &p, {x, ix}, {o});
  out(0, o);
}
void OnnxLowering::Impl::lower_scatter_elements() {
  const Tensor x = in(0), idx = in(1);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const Tensor ix = upload_i64(index_values(x, idx, axis), idx.shape());
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, reduction_mode()};
  exec(WICK_OP_SCATTER_ELEMENTS, &p, {x, ix, in(2)}, {o});
  out(0, o);
}
// The `reduction` attribute of the scatters as a WICK_REDUCE_MODE_*.
int32_t OnnxLowering::Impl::reduction_mode() const {
  const std::string red = attr_s("reduction", "none");
  if (red == "none") return WICK_REDUCE_MODE_SET;
  if (red == "add") return WICK_REDUCE_MODE_ADD;
  if (red == "mul") return WICK_REDUCE_MODE_MUL;
  if (red == "max") return WICK_REDUCE_MODE_MAX;
  if (red == "min") return WICK_REDUCE_MODE_MIN;
  throw NotImportable("scatter reduction " + red);
}
// GatherND and ScatterND address the first k axes (after batch_dims) of data with index tuples:
// data viewed as [batch * prod(those k extents), rest...], each tuple becomes one row index.
std::vector<int64_t> OnnxLowering::Impl::nd_rows(const Tensor& data, const Tensor& indices,
                                                 int64_t batch_dims) {
  const Shape& d = data.shape();
  if (indices.rank() < 1 || batch_dims < 0 || batch_dims >= indices.rank())
    throw NotImportable("malformed " + n.op_type + ": batch_dims " + std::to_string(batch_dims) + " for indices of rank " +
                        std::to_string(indices.rank()));
  const int64_t k = indices.dim(indices.rank() - 1);
  const size_t b = static_cast<size_t>(batch_dims);
  if (k < 1 || k > static_cast<int64_t>(d.size()) || b + static_cast<size_t>(k) > d.size())
    throw NotImportable("ND indices deeper than data");
  int64_t sel = 1;
  for (size_t j = b; j < b + static_cast<size_t>(k); ++j) sel = checked_mul(sel, d[j]);
  const std::vector<int64_t> ids = host_ints(indices);
  const int64_t tuples = static_cast<int64_t>(ids.size()) / k;
  int64_t batch = 1;
  for (size_t j = 0; j < b; ++j) batch = checked_mul(batch, d[j]);
  const int64_t per_batch = batch > 0 ? tuples / batch : 0;
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t row = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t extent = d[b + static_cast<size_t>(j)];
      int64_t v = ids[static_cast<size_t>(t * k + j)];
      if (v < 0) v += extent;
      if (v < 0 || v >= extent) throw ExecuteFailed("GatherND/ScatterND index out of range");
      row = row * extent + v;
    }
    rows.push_back(checked_add(checked_mul(per_batch > 0 ? t / per_batch : 0, sel), row));
  }
  return rows;
}
void OnnxLowering::Impl::lower_gather_nd() {
  const Tensor data = in(0), indices = in(1);
  const int64_t b = attr_i("batch_dims", 0);
  const std::vector<int64_t> rows = nd_rows(data, indices, b);
  const int64_t k = indices.dim(indices.rank() - 1);
  Shape flat{-1};
  flat.insert(flat.end(), data.shape().begin() + b + k, data.shape().end());
  int64_t lead = 1;
  for (int64_t j = 0; j < b + k; ++j) lead = checked_mul(lead, data.dim(static_cast<int>(j)));
  flat[0] = lead;
  const Tensor src = reshape(data, flat);
  Shape sel = src.shape();
  sel[0] = static_cast<int64_t>(rows.size());
  Tensor o = Tensor::empty(sel, data.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 0, 0};
  exec(WICK_OP_INDEX_SELECT, &p, {src, upload_i64(rows, {static_cast<int64_t>(rows.size())})}, {o});
  Shape os(indices.shape().begin(), indices.shape().end() - 1);
  os.insert(os.end(), data.shape().begin() + b + k, data.shape().end());
  out(0, o.reshape(os));
}
void OnnxLowering::Impl::lower_scatter_nd() {
  const Tensor data = in(0), indices = in(1), updates = in(2);
  const std::vector<int64_t> rows = nd_rows(data, indices, 0);
  const int64_t k = indices.dim(indices.rank() - 1);
  Shape flat{1};
  for (int64_t j = 0; j < k; ++j) flat[0] = checked_mul(flat[0], data.dim(static_cast<int>(j)));
  flat.insert(flat.end(), data.shape().begin() + k, data.shape().end());
  Shape src_shape = flat;
  src_shape[0] = static_cast<int64_t>(rows.size());
  Tensor o = Tensor::empty(flat, data.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 0, reduction_mode()};
  exec(WICK_OP_INDEX_REDUCE, &p,
       {reshape(data, flat), upload_i64(rows, {static_cast<int64_t>(rows.size())}),
        reshape(updates, src_shape)},
       {o});
  out(0, o.reshape(data.shape()));
}
// NonZero: the indices of the nonzero elements, [rank, count] in row-major order (a host read:
// the output's shape depends on the values).
void OnnxLowering::Impl::lower_non_zero() {
  const Tensor x = in(0);
  const std::vector<double> v = host_doubles(x);
  const int r = std::max(x.rank(), 1);
  std::vector<std::vector<int64_t>> at(static_cast<size_t>(r));
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == 0) continue;
    int64_t rest = static_cast<int64_t>(i);
    for (int d = x.rank() - 1; d >= 0; --d) {
      at[static_cast<size_t>(d)].push_back(rest % x.dim(d));
      rest /= x.dim(d);
    }
    if (x.rank() == 0) at[0].push_back(0);
  }
  std::vector<int64_t> flat;
  for (const auto& row : at) flat.insert(flat.end(), row.begin(), row.end());
  const int64_t count = at.empty() ? 0 : static_cast<int64_t>(at[0].size());
  out(0, upload_i64(flat, {r, count}));
}
// Compress: the slices along `axis` (or the elements of the flattened input) where condition holds.
void OnnxLowering::Impl::lower_compress() {
  Tensor x = in(0);
  const std::vector<double> cond = host_doubles(in(1));
  int axis = 0;
  if (n.attribute("axis") != nullptr) {
    axis = norm_axis(attr_i("axis", 0), x.rank());
  } else {
    x = reshape(x, {x.numel()});
  }
  std::vector<int64_t> ids;
  for (size_t i = 0; i < cond.size() && static_cast<int64_t>(i) < x.dim(axis); ++i)
    if (cond[i] != 0) ids.push_back(static_cast<int64_t>(i));
  Shape os = x.shape();
  os[static_cast<size_t>(axis)] = static_cast<int64_t>(ids.size());
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  if (!ids.empty()) exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
  out(0, o);
}


// ReverseSequence: along time_axis, the first sequence_lens[b] steps of each batch entry b reversed
// (a gather_elements with host-built positions).
void OnnxLowering::Impl::lower_reverse_sequence() {
  const Tensor x = in(0);
  const std::vector<int64_t> lens = host_ints(in(1));
  const int time = norm_axis(attr_i("time_axis", 0), x.rank());
  const int batch = norm_axis(attr_i("batch_axis", 1), x.rank());
  if (time == batch) throw NotImportable("malformed ReverseSequence: time_axis and batch_axis are the same");
  std::vector<int64_t> pos(static_cast<size_t>(host_count(static_cast<double>(x.numel()), "ReverseSequence's size")));
  std::vector<int64_t> idx(static_cast<size_t>(x.rank()), 0);
  for (size_t i = 0; i < pos.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i);
    for (int d = x.rank() - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = rest % x.dim(d);
      rest /= x.dim(d);
    }
    const int64_t t = idx[static_cast<size_t>(time)];
    const int64_t len = lens.at(static_cast<size_t>(idx[static_cast<size_t>(batch)]));
    pos[i] = t < len ? len - 1 - t : t;
  }
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), time, 0};
  exec(WICK_OP_GATHER_ELEMENTS, &p, {x, upload_i64(pos, x.shape())}, {o});
  out(0, o);
}

// --- Neural-network ops ---

// A [C] vector shaped [1, C, 1, ...] against a rank-`rank` tensor (bias, scale per channel).
Tensor OnnxLowering::Impl::per_channel(const Tensor& v, int rank) {
  if (rank < 2) throw NotImportable("malformed " + n.op_type + ": a per-channel value for a rank-" + std::to_string(rank) + " tensor");
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = v.numel();
  return reshape(v, s);
}
void OnnxLowering::Impl::lower_conv() {
  out(0, conv(in(0), in(1), has_in(2) ? std::optional<Tensor>(in(2)) : std::nullopt));
}
// ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in i32.
void OnnxLowering::Impl::lower_conv_integer() {
  Tensor x = cast(in(0), DType::I32), w = cast(in(1), DType::I32);
  if (has_in(2)) x = op2(WICK_OP_SUB, x, cast(in(2), DType::I32));
  if (has_in(3)) w = op2(WICK_OP_SUB, w, cast(in(3), DType::I32));
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
Tensor OnnxLowering::Impl::conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  const int64_t groups = attr_i("group", 1);
  if (w.rank() < 2 || x.rank() != w.rank() || groups < 1 || w.dim(0) % groups != 0 ||
      x.dim(1) != checked_mul(w.dim(1), groups))
    throw NotImportable("malformed " + n.op_type + ": weights " + shape_to_string(w.shape()) + " in " +
                        std::to_string(groups) + " groups for an input " + shape_to_string(x.shape()));
  std::vector<int64_t> k(w.shape().begin() + 2, w.shape().end());
  const Window win = window(x, k, false);
  const size_t r = k.size();
  std::vector<int64_t> idil(r, 1);
  Shape os{x.dim(0), w.dim(0)};
  for (size_t i = 0; i < r; ++i) {
    const int64_t span = x.shape()[2 + i] + win.lo[i] + win.hi[i] - ((k[i] - 1) * win.dil[i] + 1);
    os.push_back(span / win.strides[i] + 1);
  }
  const wick_conv_params p{sizeof(wick_conv_params),
                           static_cast<int32_t>(r),
                           win.strides.data(),
                           win.lo.data(),
                           win.hi.data(),
                           win.dil.data(),
                           idil.data(),
                           groups};
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  exec(WICK_OP_CONV, &p, {x, w}, {o});
  return bias ? op2(WICK_OP_ADD, o, per_channel(*bias, o.rank())) : o;
}
// Pad: constant (a filled tensor, x copied into its interior), reflect and edge (per axis, an
// index_select with host-built indices). Negative pads crop. Pads are an attribute before opset 11
// ("paddings" in opset 1), an input from 11 on, with the constant value an input too.
void OnnxLowering::Impl::lower_pad_paddings() {
  pad(in(0), attr_ints("paddings").value_or(std::vector<int64_t>{}), attr_f("value", 0.0f));
}
void OnnxLowering::Impl::lower_pad_attrs() {
  pad(in(0), attr_ints("pads").value_or(std::vector<int64_t>{}), attr_f("value", 0.0f));
}
void OnnxLowering::Impl::lower_pad() {
  if (has_in(3)) throw NotImportable("Pad with axes");
  pad(in(0), host_ints(in(1)), has_in(2) ? host_scalar(in(2)) : 0.0);
}
void OnnxLowering::Impl::pad(Tensor x, const std::vector<int64_t>& pads, double value) {
  const int r = x.rank();
  if (pads.size() != static_cast<size_t>(2 * r)) throw NotImportable("Pad: pads are not 2 x rank");
  const std::string mode = attr_s("mode", "constant");
  for (int a = 0; a < r; ++a) {  // negative pads crop first
    const int64_t lo = std::min<int64_t>(pads[a], 0), hi = std::min<int64_t>(pads[a + r], 0);
    if (lo < -x.dim(a) || hi < -x.dim(a)) throw NotImportable("malformed Pad: a crop wider than the axis");
    if (lo < 0 || hi < 0) x = x.slice(a, -lo, x.dim(a) + hi, 1);
  }
  if (mode == "constant") {
    Shape os = x.shape();
    for (int a = 0; a < r; ++a)
      os[a] = checked_add(os[a], checked_add(std::max<int64_t>(pads[a], 0), std::max<int64_t>(pads[a + r], 0)));
    Tensor o = filled(os, x.dtype(), value);
    Tensor inner = o;
    for (int a = 0; a < r; ++a) {
      const int64_t lo = std::max<int64_t>(pads[a], 0);
      inner = inner.slice(a, lo, lo + x.dim(a), 1);
    }
    exec(WICK_OP_COPY, nullptr, {x}, {inner});
    return out(0, o);
  }
  if (mode != "reflect" && mode != "edge") throw NotImportable("Pad mode " + mode);
  for (int a = 0; a < r; ++a) {
    const int64_t lo = std::max<int64_t>(pads[a], 0), hi = std::max<int64_t>(pads[a + r], 0);
    if (lo == 0 && hi == 0) continue;
    const int64_t n = x.dim(a);
    if (n == 0 || (mode == "reflect" && (n < 2 || lo >= n || hi >= n)))
      throw NotImportable("Pad reflect wider than the axis");
    (void)host_count(static_cast<double>(checked_add(n, checked_add(lo, hi))), "Pad's padded length");
    std::vector<int64_t> ids;
    for (int64_t i = -lo; i < n + hi; ++i) {
      int64_t j = i;
      if (mode == "edge") j = std::clamp<int64_t>(i, 0, n - 1);
      else if (i < 0) j = -i;
      else if (i >= n) j = 2 * (n - 1) - i;
      ids.push_back(j);
    }
    Shape os = x.shape();
    os[a] = static_cast<int64_t>(ids.size());
    Tensor o = Tensor::empty(os, x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), a, 0};
    exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
    x = o;
  }
  out(0, x);
}

// ConvTranspose as a convolution: the input dilated by the strides, padded by
// dilation * (kernel - 1) - pads (plus output_padding at the end), and the weights [C, O/g, k...]
// turned into [O, C/g, k...] with their spatial axes reversed.
void OnnxLowering::Impl::lower_conv_transpose() {
  const std::string auto_pad = attr_s("auto_pad", "NOTSET");
  const Tensor x = in(0), w = in(1);
  const int64_t groups = attr_i("group", 1);
  if (w.rank() < 2 || x.rank() != w.rank() || groups < 1 || w.dim(0) % groups != 0 || x.dim(1) != w.dim(0))
    throw NotImportable("malformed ConvTranspose: weights " + shape_to_string(w.shape()) + " in " +
                        std::to_string(groups) + " groups for an input " + shape_to_string(x.shape()));
  const size_t r = static_cast<size_t>(w.rank() - 2);
  const int64_t cin = w.dim(0), og = w.dim(1);
  std::vector<int64_t> k(w.shape().begin() + 2, w.shape().end());
  auto ints = [&](const char* name, int64_t dflt, size_t count) {
    std::vector<int64_t> v = attr_ints(name).value_or(std::vector<int64_t>(count, dflt));
    if (v.size() != count) throw NotImportable(std::string("ConvTranspose ") + name + " length");
    return v;
  };
  const std::vector<int64_t> strides = ints("strides", 1, r), dil = ints("dilations", 1, r),
                             outpad = ints("output_padding", 0, r);
  std::vector<int64_t> pads = ints("pads", 0, 2 * r);
  // Bounds the products below (each factor at most 2^30); the sums are checked.
  const int64_t big = int64_t{1} << 30;
  auto in_range = [&](int64_t v, int64_t lo) { return v >= lo && v <= big; };
  for (size_t i = 0; i < r; ++i) {
    if (!in_range(strides[i], 1) || !in_range(dil[i], 1) || !in_range(outpad[i], 0) || !in_range(k[i], 0) ||
        !in_range(x.dim(static_cast<int>(2 + i)), 0) || !in_range(pads[i], -big) || !in_range(pads[r + i], -big))
      throw NotImportable("malformed ConvTranspose: strides, dilations, pads or output_padding out of range");
  }
  // An explicit output_shape, or SAME auto_pad (output = input * stride), sets the pads: the
  // total split in half, the odd one at the end for SAME_UPPER, at the start otherwise.
  std::vector<int64_t> want = attr_ints("output_shape").value_or(std::vector<int64_t>{});
  if (want.size() == r + 2) want.erase(want.begin(), want.begin() + 2);
  if (want.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t i = 0; i < r; ++i) want.push_back(x.dim(static_cast<int>(2 + i)) * strides[i]);
  if (auto_pad == "VALID") pads.assign(2 * r, 0);
  if (!want.empty()) {
    if (want.size() != r) throw NotImportable("ConvTranspose output_shape length");
    for (size_t i = 0; i < r; ++i) {
      if (want[i] < 0 || want[i] > big * big)
        throw NotImportable("malformed ConvTranspose: output_shape " + shape_to_string(want));
      const int64_t total = checked_add(strides[i] * (x.dim(static_cast<int>(2 + i)) - 1) + outpad[i] +
                                            (k[i] - 1) * dil[i] + 1,
                                        -want[i]);
      const bool upper = auto_pad == "SAME_UPPER";
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2)
      pads[i] = upper ? half : total - half;
      pads[i + r] = upper ? total - half : half;
    }
  }
  // Weights: [g, C/g, O/g, k...] -> [g, O/g, C/g, k...] -> [O, C/g, k...], spatial axes flipped.
  Shape gw{groups, cin / groups, og};
  gw.insert(gw.end(), k.begin(), k.end());
  std::vector<int> perm(gw.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[1], perm[2]);
  Tensor wt = reshape(w, gw).permute(perm);
  for (size_t i = 0; i < r; ++i) wt = wt.flip(static_cast<int>(3 + i));
  Shape ws{checked_mul(groups, og), cin / groups};
  ws.insert(ws.end(), k.begin(), k.end());
  wt = reshape(g.contiguous(wt), ws);
  std::vector<int64_t> lo(r), hi(r), one(r, 1);
  Shape os{x.dim(0), checked_mul(groups, og)};
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = dil[i] * (k[i] - 1);
    lo[i] = checked_add(full, -pads[i]);
    hi[i] = checked_add(checked_add(full, -pads[i + r]), outpad[i]);
    if (lo[i] < 0 || hi[i] < 0) throw NotImportable("ConvTranspose pads beyond the kernel");
    os.push_back(checked_add(checked_add((x.dim(static_cast<int>(2 + i)) - 1) * strides[i] + 1 - full, lo[i]), hi[i]));
  }
  const wick_conv_params p{sizeof(wick_conv_params), static_cast<int32_t>(r), one.data(), lo.data(),
                           hi.data(), dil.data(), strides.data(), groups};
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  exec(WICK_OP_CONV, &p, {x, wt}, {o});
  out(0, has_in(2) ? op2(WICK_OP_ADD, o, per_channel(in(2), o.rank())) : o);
}

// LRN: x / (bias + alpha / size * (sum of x^2 over the `size` channels around c))^beta, the channel
// window from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), zero beyond the edges.
void OnnxLowering::Impl::lower_lrn() {
  const Tensor x = in(0);
  const int64_t size = attr_i("size", 1);
  const double alpha = attr_f("alpha", 1e-4f), beta = attr_f("beta", 0.75f), bias = attr_f("bias", 1.0f);
  if (size < 1 || x.rank() < 2) throw NotImportable("malformed LRN: size " + std::to_string(size) + " for rank " + std::to_string(x.rank()));
  // The channels summed are those of [c - lo, c + hi] that exist: a window reaching further than the
  // channels on either side sums the same as one reaching just past them.
  const int64_t c = x.dim(1), lo = std::min((size - 1) / 2, c), hi = std::min(size - 1 - (size - 1) / 2, c);
  // One device add per channel of the window, each over the whole input.
  if (checked_mul(lo + hi + 1, x.numel()) > (int64_t{1} << 28))
    throw NotImportable("LRN over " + std::to_string(lo + hi + 1) + " channels of " + std::to_string(x.numel()) +
                        " elements, beyond the importer's limit of 2^28 element operations");
  const Tensor sq = op2(WICK_OP_MUL, x, x);
  Shape padded = x.shape();
  padded[1] = c + lo + hi;
  Tensor z = filled(padded, x.dtype(), 0);
  exec(WICK_OP_COPY, nullptr, {sq}, {z.slice(1, lo, lo + c, 1)});
  Tensor sum = z.slice(1, 0, c, 1);
  for (int64_t j = 1; j < lo + hi + 1; ++j) sum = op2(WICK_OP_ADD, sum, z.slice(1, j, j + c, 1));
  const Tensor base = affine(sum, alpha / static_cast<double>(size), bias);
  out(0, op2(WICK_OP_DIV, x, op2(WICK_OP_POW, base, scalar(beta, x.dtype()))));
}
// InstanceNormalization: layer_norm over the spatial axes of each (n, c), then scale and bias per
// channel.
void OnnxLowering::Impl::lower_instance_norm() {
  const Tensor x = in(0);
  if (x.rank() < 3) throw NotImportable("InstanceNormalization of rank < 3");
  const wick_norm_params p{sizeof(wick_norm_params), x.rank() - 2, attr_f("epsilon", 1e-5f)};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_LAYER_NORM, &p, {x}, {o});
  out(0, op2(WICK_OP_ADD, op2(WICK_OP_MUL, o, per_channel(in(1), x.rank())),
             per_channel(in(2), x.rank())));
}

// The window of MaxPool and AveragePool.
OnnxLowering::Impl::Window OnnxLowering::Impl::pool_window() {
  const Tensor x = in(0);
  const std::vector<int64_t> k = attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  return window(x, k, attr_i("ceil_mode", 0) != 0);
}
void OnnxLowering::Impl::lower_max_pool() {
  const Window w = pool_window();
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return max_pool_with_indices(w);
  out(0, window_op(WICK_OP_WINDOW_MAX, in(0), w, -INFINITY));
}
void OnnxLowering::Impl::lower_average_pool() {
  const Window w = pool_window();
  const Tensor x = in(0);
  const Tensor sum = window_op(WICK_OP_WINDOW_SUM, x, w, 0);
  if (attr_i("count_include_pad", 0) != 0) {
    int64_t size = 1;
    for (int64_t k : w.kernel) size = checked_mul(size, k);
    return out(0, affine(sum, 1.0 / static_cast<double>(size), 0));
  }
  // Divide by the number of real (unpadded) elements in each window.
  const Tensor ones = filled(x.shape(), x.dtype(), 1.0);
  out(0, op2(WICK_OP_DIV, sum, window_op(WICK_OP_WINDOW_SUM, ones, w, 0)));
}
void OnnxLowering::Impl::global_pool(bool max) {
  const Tensor x = in(0);
  std::vector<int32_t> axes;
  for (int i = 2; i < x.rank(); ++i) axes.push_back(i);
  const Tensor y = reduce(max ? WICK_OP_REDUCE_MAX : WICK_OP_REDUCE_SUM, x, axes, true);
  out(0, max ? y : affine(y, 1.0 / static_cast<double>(reduced_count(x, axes)), 0));
}
void OnnxLowering::Impl::lower_layer_norm() {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", -1), x.rank());
  const float eps = attr_f("epsilon", 1e-5f);
  const wick_norm_params p{sizeof(wick_norm_params), x.rank() - axis, eps};
  std::vector<Tensor> ins{x, in(1)};
  if (has_in(2)) ins.push_back(in(2));
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_LAYER_NORM, &p, ins, {o});
  out(0, o);
  const bool stats = (n.outputs.size() > 1 && !n.outputs[1].empty()) ||
                     (n.outputs.size() > 2 && !n.outputs[2].empty());
  if (!stats) return;
  // Mean and InvStdDev (the training outputs), over the normalised axes kept as 1, in the stash
  // type (f32 unless stash_type says otherwise), as the reference computes them.
  if (attr_i("stash_type", 1) != 1) throw NotImportable("LayerNormalization stash_type other than f32");
  const Tensor xf = x.dtype() == DType::F32 ? x : cast(x, DType::F32);
  std::vector<int32_t> axes;
  for (int a = axis; a < x.rank(); ++a) axes.push_back(a);
  const double count = static_cast<double>(reduced_count(xf, axes));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, xf, axes, true), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, xf, mean);
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), axes, true),
                            1.0 / count, 0);
  out(1, mean);
  out(2, op1(WICK_OP_RSQRT, affine(var, 1, eps)));
}
// Shrink: x - bias above lambd, x + bias below -lambd, else 0.
void OnnxLowering::Impl::lower_shrink() {
  const Tensor x = in(0);
  const double lambd = attr_f("lambd", 0.5f), bias = attr_f("bias", 0.0f);
  const Tensor above = op2(WICK_OP_GT, x, scalar(lambd, x.dtype()), DType::Bool);
  const Tensor below = op2(WICK_OP_LT, x, scalar(-lambd, x.dtype()), DType::Bool);
  out(0, where(above, affine(x, 1, -bias), where(below, affine(x, 1, bias), scalar(0, x.dtype()))));
}
// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default 0, 2, 3), no epsilon
// beyond the reference's 1e-9.
void OnnxLowering::Impl::lower_mean_variance_normalization() {
  const Tensor x = in(0);
  std::vector<int64_t> a64 = attr_ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  std::vector<int32_t> axes;
  for (int64_t a : a64) axes.push_back(norm_axis(a, x.rank()));
  const double count = static_cast<double>(reduced_count(x, axes));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, x, axes, true), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, x, mean);
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), axes, true),
                            1.0 / count, 0);
  out(0, op2(WICK_OP_DIV, centred, affine(op1(WICK_OP_SQRT, var), 1, 1e-9)));
}
// BatchNormalization before opset 14: training mode is the presence of the extra outputs (and
// before 9, spatial = 0 normalises per element).
void OnnxLowering::Impl::lower_batch_norm_inference() {
  if (n.outputs.size() > 1) throw NotImportable("BatchNormalization training outputs");
  if (attr_i("spatial", 1) == 0) throw NotImportable("BatchNormalization spatial = 0");
  batch_norm_inference();
}
// From opset 14 the training_mode attribute selects training.
void OnnxLowering::Impl::lower_batch_norm() {
  if (attr_i("training_mode", 0) != 0) return batch_norm_training();
  if (n.outputs.size() > 1) throw NotImportable("BatchNormalization running statistics outside training mode");
  batch_norm_inference();
}
// Training mode: normalised with the batch's own mean and (biased) variance over every axis but
// the channels; the running statistics out are input * momentum + batch * (1 - momentum).
void OnnxLowering::Impl::batch_norm_training() {
  const Tensor x = in(0);
  std::vector<int32_t> axes{0};
  for (int a = 2; a < x.rank(); ++a) axes.push_back(a);
  const double count = static_cast<double>(reduced_count(x, axes));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, x, axes, false), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, x, per_channel(mean, x.rank()));
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), axes, false),
                            1.0 / count, 0);
  const wick_norm_params p{sizeof(wick_norm_params), 0, attr_f("epsilon", 1e-5f)};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_BATCH_NORM, &p, {x, mean, var, in(1), in(2)}, {o});
  out(0, o);
  const double momentum = attr_f("momentum", 0.9f);
  out(1, op2(WICK_OP_ADD, affine(in(3), momentum, 0), affine(mean, 1 - momentum, 0)));
  out(2, op2(WICK_OP_ADD, affine(in(4), momentum, 0), affine(var, 1 - momentum, 0)));
}
void OnnxLowering::Impl::batch_norm_inference() {
  const Tensor x = in(0);
  const wick_norm_params p{sizeof(wick_norm_params), 0, attr_f("epsilon", 1e-5f)};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_BATCH_NORM, &p, {x, in(3), in(4), in(1), in(2)}, {o});
  out(0, o);
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
void OnnxLowering::Impl::lower_depth_to_space() {
  const Tensor x = in(0);
  const int64_t b = attr_i("blocksize", 1), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  if (x.rank() != 4 || b < 1 || b > (int64_t{1} << 20) || C % (b * b) != 0)
    throw NotImportable("malformed DepthToSpace: blocksize " + std::to_string(b) + " for " + shape_to_string(x.shape()));
  const bool crd = attr_s("mode", "DCR") == "CRD";
  const Tensor t = crd ? reshape(x, {N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                       : reshape(x, {N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
  out(0, reshape(t, {N, C / (b * b), checked_mul(H, b), checked_mul(W, b)}));
}
void OnnxLowering::Impl::lower_space_to_depth() {
  const Tensor x = in(0);
  const int64_t b = attr_i("blocksize", 1), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  if (x.rank() != 4 || b < 1 || H % b != 0 || W % b != 0)
    throw NotImportable("malformed SpaceToDepth: blocksize " + std::to_string(b) + " for " + shape_to_string(x.shape()));
  const Tensor t = reshape(x, {N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4});
  out(0, reshape(t, {N, checked_mul(C, b * b), H / b, W / b}));
}
void OnnxLowering::Impl::lower_tile() {
  const Tensor x = in(0);
  const std::vector<int64_t> reps = host_ints(in(1));
  if (reps.size() != static_cast<size_t>(x.rank()) ||
      std::any_of(reps.begin(), reps.end(), [](int64_t v) { return v < 0; }))
    throw NotImportable("malformed Tile: repeats " + shape_to_string(reps) + " for rank " +
                        std::to_string(x.rank()));
  Shape inter, bshape, final_shape;
  for (int i = 0; i < x.rank(); ++i) {
    inter.insert(inter.end(), {1, x.dim(i)});
    bshape.insert(bshape.end(), {reps[static_cast<size_t>(i)], x.dim(i)});
    final_shape.push_back(checked_mul(reps[static_cast<size_t>(i)], x.dim(i)));
  }
  out(0, reshape(reshape(x, inter).broadcast_to(bshape), final_shape));
}
void OnnxLowering::Impl::loss(bool softmax_first) {
  const Tensor logp = softmax_first ? softmax(in(0), 1, true) : in(0);
  const std::optional<Tensor> w = has_in(2) ? std::optional<Tensor>(in(2)) : std::nullopt;
  const int64_t ignore = attr_i("ignore_index", std::numeric_limits<int64_t>::min());
  out(0, nll(logp, in(1), w, ignore, attr_s("reduction", "mean")));
  if (softmax_first) out(1, logp);
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
// From opset 12 the ratio (default 0.5) and training_mode are inputs. Training mode with ratio 0
// drops nothing: the identity, as in inference, and a mask of all true.
void OnnxLowering::Impl::lower_dropout() {
  const bool training = has_in(2) && host_scalar(in(2)) != 0;
  const double ratio = has_in(1) ? host_scalar(in(1)) : 0.5;
  dropout(training && ratio != 0, true);
}
void OnnxLowering::Impl::dropout(bool training, bool mask_bool) {
  if (training) throw NotImportable("Dropout in training mode with a nonzero ratio (random)");
  out(0, in(0));
  if (n.outputs.size() > 1) out(1, filled(in(0).shape(), mask_bool ? DType::Bool : in(0).dtype(), 1.0));
}

// --- The table of lowerings: one row per ONNX op type and opset range (first, last served) ---

const OnnxLowering::Impl::Row OnnxLowering::Impl::kLowerings[] = {
    // Direct maps: unary, binary, comparisons, logic
    {"Abs", 1, kOpen, &Impl::lower_unary<WICK_OP_ABS>},
    {"Neg", 1, kOpen, &Impl::lower_unary<WICK_OP_NEG>},
    {"Exp", 1, kOpen, &Impl::lower_unary<WICK_OP_EXP>},
    {"Log", 1, kOpen, &Impl::lower_unary<WICK_OP_LOG>},
    {"Sqrt", 1, kOpen, &Impl::lower_unary<WICK_OP_SQRT>},
    {"Reciprocal", 1, kOpen, &Impl::lower_unary<WICK_OP_RECIP>},
    {"Tanh", 1, kOpen, &Impl::lower_unary<WICK_OP_TANH>},
    {"Sigmoid", 1, kOpen, &Impl::lower_unary<WICK_OP_SIGMOID>},
    {"Sin", 1, kOpen, &Impl::lower_unary<WICK_OP_SIN>},
    {"Cos", 1, kOpen, &Impl::lower_unary<WICK_OP_COS>},
    {"Tan", 1, kOpen, &Impl::lower_unary<WICK_OP_TAN>},
    {"Asin", 1, kOpen, &Impl::lower_unary<WICK_OP_ASIN>},
    {"Acos", 1, kOpen, &Impl::lower_unary<WICK_OP_ACOS>},
    {"Atan", 1, kOpen, &Impl::lower_unary<WICK_OP_ATAN>},
    {"Sinh", 1, kOpen, &Impl::lower_unary<WICK_OP_SINH>},
    {"Cosh", 1, kOpen, &Impl::lower_unary<WICK_OP_COSH>},
    {"Asinh", 1, kOpen, &Impl::lower_unary<WICK_OP_ASINH>},
    {"Acosh", 1, kOpen, &Impl::lower_unary<WICK_OP_ACOSH>},
    {"Atanh", 1, kOpen, &Impl::lower_unary<WICK_OP_ATANH>},
    {"Erf", 1, kOpen, &Impl::lower_unary<WICK_OP_ERF>},
    {"Floor", 1, kOpen, &Impl::lower_unary<WICK_OP_FLOOR>},
    {"Ceil", 1, kOpen, &Impl::lower_unary<WICK_OP_CEIL>},
    {"Relu", 1, kOpen, &Impl::lower_unary<WICK_OP_RELU>},
    {"Sign", 1, kOpen, &Impl::lower_unary<WICK_OP_SIGN>},
    {"Not", 1, kOpen, &Impl::lower_unary<WICK_OP_LOGICAL_NOT>},
    {"Add", 1, kOpen, &Impl::lower_binary<WICK_OP_ADD>},
    {"Sub", 1, kOpen, &Impl::lower_binary<WICK_OP_SUB>},
    {"Mul", 1, kOpen, &Impl::lower_binary<WICK_OP_MUL>},
    {"Div", 1, kOpen, &Impl::lower_binary<WICK_OP_DIV>},
    {"And", 1, kOpen, &Impl::lower_binary<WICK_OP_BITWISE_AND>},
    {"Or", 1, kOpen, &Impl::lower_binary<WICK_OP_BITWISE_OR>},
    {"Xor", 1, kOpen, &Impl::lower_binary<WICK_OP_BITWISE_XOR>},
    {"Equal", 1, kOpen, &Impl::lower_compare<WICK_OP_EQ>},
    {"Less", 1, kOpen, &Impl::lower_compare<WICK_OP_LT>},
    {"Greater", 1, kOpen, &Impl::lower_compare<WICK_OP_GT>},
    {"LessOrEqual", 1, kOpen, &Impl::lower_compare<WICK_OP_LE>},
    {"GreaterOrEqual", 1, kOpen, &Impl::lower_compare<WICK_OP_GE>},
    {"Max", 1, kOpen, &Impl::lower_variadic<WICK_OP_MAXIMUM>},
    {"Min", 1, kOpen, &Impl::lower_variadic<WICK_OP_MINIMUM>},
    {"Sum", 1, kOpen, &Impl::lower_variadic<WICK_OP_ADD>},
    {"Mean", 1, kOpen, &Impl::lower_mean},
    {"Identity", 1, kOpen, &Impl::lower_identity},
    {"IsNaN", 1, kOpen, &Impl::lower_is_nan},
    {"IsInf", 1, kOpen, &Impl::lower_is_inf},
    {"Round", 1, kOpen, &Impl::lower_round},
    {"Pow", 1, kOpen, &Impl::lower_pow},
    {"BitShift", 1, kOpen, &Impl::lower_bit_shift},
    {"Mod", 1, kOpen, &Impl::lower_mod},
    {"Where", 1, kOpen, &Impl::lower_where},
    // Activations
    {"Elu", 1, kOpen, &Impl::lower_elu},
    {"Selu", 1, kOpen, &Impl::lower_selu},
    {"Celu", 1, kOpen, &Impl::lower_celu},
    {"LeakyRelu", 1, kOpen, &Impl::lower_leaky_relu},
    {"PRelu", 1, 6, &Impl::lower_prelu_per_channel},
    {"PRelu", 7, kOpen, &Impl::lower_prelu},
    {"ThresholdedRelu", 1, kOpen, &Impl::lower_thresholded_relu},
    {"HardSigmoid", 1, kOpen, &Impl::lower_hard_sigmoid},
    {"HardSwish", 1, kOpen, &Impl::lower_hard_swish},
    {"Softplus", 1, kOpen, &Impl::lower_softplus},
    {"Softsign", 1, kOpen, &Impl::lower_softsign},
    {"Clip", 1, 10, &Impl::lower_clip_attrs},
    {"Clip", 11, kOpen, &Impl::lower_clip},
    // Matrix products and reductions
    {"MatMul", 1, kOpen, &Impl::lower_matmul},
    {"Gemm", 1, kOpen, &Impl::lower_gemm},
    {"ReduceSum", 1, 12, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM>},
    {"ReduceSum", 13, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM>},
    {"ReduceProd", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_PROD>},
    {"ReduceProd", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_PROD>},
    {"ReduceMax", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_MAX>},
    {"ReduceMax", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_MAX>},
    {"ReduceMin", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_MIN>},
    {"ReduceMin", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_MIN>},
    {"ReduceMean", 1, 17, &Impl::lower_reduce_mean<From::Attr>},
    {"ReduceMean", 18, kOpen, &Impl::lower_reduce_mean<From::Input>},
    {"ReduceSumSquare", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_SQR>},
    {"ReduceSumSquare", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_SQR>},
    {"ReduceL1", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_ABS>},
    {"ReduceL1", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_ABS>},
    {"ReduceL2", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_SQR, WICK_OP_SQRT>},
    {"ReduceL2", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_SQR, WICK_OP_SQRT>},
    {"ReduceLogSum", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_INVALID, WICK_OP_LOG>},
    {"ReduceLogSum", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_INVALID, WICK_OP_LOG>},
    {"ReduceLogSumExp", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_EXP, WICK_OP_LOG>},
    {"ReduceLogSumExp", 18, kOpen, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_EXP, WICK_OP_LOG>},
    {"ArgMax", 1, kOpen, &Impl::lower_arg_reduce<WICK_OP_ARGMAX>},
    {"ArgMin", 1, kOpen, &Impl::lower_arg_reduce<WICK_OP_ARGMIN>},
    {"CumSum", 1, kOpen, &Impl::lower_cumsum},
    {"Softmax", 1, 12, &Impl::lower_softmax_2d<false>},
    {"Softmax", 13, kOpen, &Impl::lower_softmax<false>},
    {"LogSoftmax", 1, 12, &Impl::lower_softmax_2d<true>},
    {"LogSoftmax", 13, kOpen, &Impl::lower_softmax<true>},
    // Views and shapes
    {"Reshape", 1, kOpen, &Impl::lower_reshape},
    {"Flatten", 1, kOpen, &Impl::lower_flatten},
    {"Squeeze", 1, 12, &Impl::lower_squeeze<From::Attr>},
    {"Squeeze", 13, kOpen, &Impl::lower_squeeze<From::Input>},
    {"Unsqueeze", 1, 12, &Impl::lower_unsqueeze<From::Attr>},
    {"Unsqueeze", 13, kOpen, &Impl::lower_unsqueeze<From::Input>},
    {"Transpose", 1, kOpen, &Impl::lower_transpose},
    {"Expand", 1, kOpen, &Impl::lower_expand},
    {"Concat", 1, kOpen, &Impl::lower_concat},
    {"Split", 1, 12, &Impl::lower_split<From::Attr>},
    {"Split", 13, kOpen, &Impl::lower_split<From::Input>},
    {"Slice", 1, 9, &Impl::lower_slice_attrs},
    {"Slice", 10, kOpen, &Impl::lower_slice},
    {"Shape", 1, kOpen, &Impl::lower_shape},
    {"Size", 1, kOpen, &Impl::lower_size},
    // Constants and casts
    {"Constant", 1, kOpen, &Impl::lower_constant},
    {"ConstantOfShape", 1, kOpen, &Impl::lower_constant_of_shape},
    {"Cast", 1, kOpen, &Impl::lower_cast},
    {"CastLike", 1, kOpen, &Impl::lower_cast_like},
    // Indexing
    {"Gather", 1, kOpen, &Impl::lower_gather},
    {"GatherElements", 1, kOpen, &Impl::lower_gather_elements},
    {"ScatterElements", 1, kOpen, &Impl::lower_scatter_elements},
    {"Scatter", 9, 10, &Impl::lower_scatter_elements},
    // Neural-network ops
    {"Conv", 1, kOpen, &Impl::lower_conv},
    {"ConvTranspose", 1, kOpen, &Impl::lower_conv_transpose},
    {"ConvInteger", 1, kOpen, &Impl::lower_conv_integer},
    {"QLinearConv", 1, kOpen, &Impl::lower_qlinear_conv},
    {"Einsum", 1, kOpen, &Impl::lower_einsum},
    {"Pad", 1, 1, &Impl::lower_pad_paddings},
    {"Pad", 2, 10, &Impl::lower_pad_attrs},
    {"Pad", 11, kOpen, &Impl::lower_pad},
    {"InstanceNormalization", 1, kOpen, &Impl::lower_instance_norm},
    {"Shrink", 1, kOpen, &Impl::lower_shrink},
    {"Hardmax", 1, 12, &Impl::lower_hardmax_2d},
    {"Hardmax", 13, kOpen, &Impl::lower_hardmax},
    {"QuantizeLinear", 1, kOpen, &Impl::lower_quantize_linear},
    {"DequantizeLinear", 1, kOpen, &Impl::lower_dequantize_linear},
    {"OneHot", 1, kOpen, &Impl::lower_one_hot},
    {"EyeLike", 1, kOpen, &Impl::lower_eye_like},
    {"Resize", 10, 10, &Impl::lower_resize_10},
    {"Resize", 11, kOpen, &Impl::lower_resize},
    {"GatherND", 1, kOpen, &Impl::lower_gather_nd},
    {"ScatterND", 1, kOpen, &Impl::lower_scatter_nd},
    {"NonZero", 1, kOpen, &Impl::lower_non_zero},
    {"Compress", 1, kOpen, &Impl::lower_compress},
    {"ReverseSequence", 1, kOpen, &Impl::lower_reverse_sequence},
    {"LRN", 1, kOpen, &Impl::lower_lrn},
    {"HannWindow", 1, kOpen, &Impl::lower_window_function},
    {"HammingWindow", 1, kOpen, &Impl::lower_window_function},
    {"BlackmanWindow", 1, kOpen, &Impl::lower_window_function},
    {"MatMulInteger", 1, kOpen, &Impl::lower_matmul_integer},
    {"QLinearMatMul", 1, kOpen, &Impl::lower_qlinear_matmul},
    {"DynamicQuantizeLinear", 1, kOpen, &Impl::lower_dynamic_quantize_linear},
    {"Upsample", 7, 8, &Impl::lower_upsample_attr},
    {"Upsample", 9, 9, &Impl::lower_upsample},
    {"MeanVarianceNormalization", 1, kOpen, &Impl::lower_mean_variance_normalization},
    {"MaxPool", 1, kOpen, &Impl::lower_max_pool},
    {"AveragePool", 1, kOpen, &Impl::lower_average_pool},
    {"GlobalAveragePool", 1, kOpen, &Impl::lower_global_pool<false>},
    {"GlobalMaxPool", 1, kOpen, &Impl::lower_global_pool<true>},
    {"LayerNormalization", 1, kOpen, &Impl::lower_layer_norm},
    {"BatchNormalization", 1, 13, &Impl::lower_batch_norm_inference},
    {"BatchNormalization", 14, kOpen, &Impl::lower_batch_norm},
    {"TopK", 1, 9, &Impl::lower_top_k_attr},
    {"TopK", 10, kOpen, &Impl::lower_top_k},
    {"Range", 1, kOpen, &Impl::lower_range},
    {"DepthToSpace", 1, kOpen, &Impl::lower_depth_to_space},
    {"SpaceToDepth", 1, kOpen, &Impl::lower_space_to_depth},
    {"Tile", 1, kOpen, &Impl::lower_tile},
    {"NegativeLogLikelihoodLoss", 1, kOpen, &Impl::lower_loss<false>},
    {"SoftmaxCrossEntropyLoss", 1, kOpen, &Impl::lower_loss<true>},
    {"Trilu", 1, kOpen, &Impl::lower_trilu},
    // Sampling at data-given positions (lowerings_spatial.cpp)
    {"GridSample", 16, 19, &Impl::lower_grid_sample_16},
    {"GridSample", 20, kOpen, &Impl::lower_grid_sample},
    {"MaxUnpool", 9, kOpen, &Impl::lower_max_unpool},
    // Outputs shaped by the values, decided on the host (lowerings_selection.cpp)
    {"Unique", 11, kOpen, &Impl::lower_unique},
    {"NonMaxSuppression", 10, kOpen, &Impl::lower_non_max_suppression},
    {"Det", 11, kOpen, &Impl::lower_det},
    {"DFT", 17, 19, &Impl::lower_dft_17},
    {"DFT", 20, kOpen, &Impl::lower_dft},
    {"STFT", 17, kOpen, &Impl::lower_stft},
    {"MelWeightMatrix", 17, kOpen, &Impl::lower_mel_weight_matrix},
    // Recurrent layers (lowerings_rnn.cpp); layout is 0 before opset 14
    {"RNN", 7, kOpen, &Impl::lower_recurrent<Cell::Rnn>},
    {"GRU", 7, kOpen, &Impl::lower_recurrent<Cell::Gru>},
    {"LSTM", 7, kOpen, &Impl::lower_recurrent<Cell::Lstm>},
    {"Dropout", 7, 9, &Impl::lower_dropout_attrs<false>},
    {"Dropout", 10, 11, &Impl::lower_dropout_attrs<true>},
    {"Dropout", 12, kOpen, &Impl::lower_dropout},
    // Sequence and optional values (lowerings_sequences.cpp)
    {"SequenceConstruct", 11, kOpen, &Impl::lower_sequence_construct},
    {"SequenceEmpty", 11, kOpen, &Impl::lower_sequence_empty},
    {"SequenceInsert", 11, kOpen, &Impl::lower_sequence_insert},
    {"SequenceAt", 11, kOpen, &Impl::lower_sequence_at},
    {"SequenceErase", 11, kOpen, &Impl::lower_sequence_erase},
    {"SequenceLength", 11, kOpen, &Impl::lower_sequence_length},
    {"SplitToSequence", 11, kOpen, &Impl::lower_split_to_sequence},
    {"ConcatFromSequence", 11, kOpen, &Impl::lower_concat_from_sequence},
    {"Optional", 15, kOpen, &Impl::lower_optional},
    {"OptionalHasElement", 15, kOpen, &Impl::lower_optional_has_element},
    {"OptionalGetElement", 15, kOpen, &Impl::lower_optional_get_element},
    // Subgraphs (lowerings_control_flow.cpp)
    {"If", 1, kOpen, &Impl::lower_if},
    {"Loop", 1, kOpen, &Impl::lower_loop},
    {"Scan", 8, 8, &Impl::lower_scan_8},
    {"Scan", 9, kOpen, &Impl::lower_scan},
    {"SequenceMap", 17, kOpen, &Impl::lower_sequence_map},
    // ai.onnx.preview.training, by that domain's opset (lowerings_training.cpp)
    {"ai.onnx.preview.training.Adagrad", 1, kOpen, &Impl::lower_adagrad},
    {"ai.onnx.preview.training.Momentum", 1, kOpen, &Impl::lower_momentum},
    {"ai.onnx.preview.training.Adam", 1, kOpen, &Impl::lower_adam},
    // Text (lowerings_tfidf.cpp)
    {"TfIdfVectorizer", 9, kOpen, &Impl::lower_tfidf_vectorizer},
};

OnnxLowering::Impl::Lowering OnnxLowering::Impl::lowering(const std::string& op_type,
                                                          int64_t opset) {
  // The rows of each op type, by first opset served; checked once for empty and overlapping ranges.
  static const std::map<std::string, std::vector<const Row*>> by_type = [] {
    std::map<std::string, std::vector<const Row*>> m;
    for (const Row& row : kLowerings) {
      if (row.first < 1 || row.last < row.first)
        throw std::logic_error(std::string("the ONNX lowering row for ") + row.op_type +
                               " has an empty opset range");
      m[row.op_type].push_back(&row);
    }
    for (auto& [type, rows] : m) {
      std::sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) { return a->first < b->first; });
      for (size_t i = 1; i < rows.size(); ++i)
        if (rows[i]->first <= rows[i - 1]->last)
          throw std::logic_error("two ONNX lowerings for " + type + " at opset " +
                                 std::to_string(rows[i]->first));
    }
    return m;
  }();
  auto it = by_type.find(op_type);
  if (it == by_type.end()) throw NotImportable("ONNX op " + op_type + " is not mapped onto Wick ops");
  std::string served;
  for (const Row* row : it->second) {
    if (opset >= row->first && opset <= row->last) return row->lower;
    if (!served.empty()) served.append(", ");
    served.append(std::to_string(row->first));
    if (row->last == kOpen) served.append("+");
    else if (row->last != row->first) served.append("-").append(std::to_string(row->last));
  }
  throw NotImportable("ONNX op " + op_type + " at opset " + std::to_string(opset) +
                      ": the importer serves opsets " + served);
}

}  // namespace wick::onnx
