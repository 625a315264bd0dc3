// lowerings_resize.cpp — Resize (opset 10, and the roi, scales and sizes inputs from 11) and
// Upsample (opsets 7 to 9).
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace wick::onnx {

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
// out_count is the output's length (half_pixel_symmetric centres the rounding difference).
double resize_coordinate(const ResizeRule& r, double x, double scale, double out_len, int64_t out_count,
                         int64_t in_len, double roi_start, double roi_end) {
  const std::string& c = r.coord;
  if (c == "half_pixel_symmetric") {
    const double offset = static_cast<double>(in_len) / 2 * (1 - static_cast<double>(out_count) / out_len);
    return offset + (x + 0.5) / scale - 0.5;
  }
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
  const int64_t limit = import_limits().max_elements;
  if (in_len > 0 && checked_mul(x.numel() / in_len, out_len) > limit)
    throw NotImportable(n.op_type + " to " + std::to_string(out_len) + " along axis " + std::to_string(axis) +
                        " makes more than " + std::to_string(limit) + " elements" + limit_hint("max_elements"));
  const size_t taps = r.mode == "nearest" ? 1 : r.mode == "linear" ? 2 : 4;
  std::vector<std::vector<int64_t>> ids(taps, std::vector<int64_t>(static_cast<size_t>(out_len)));
  std::vector<std::vector<double>> ws(taps, std::vector<double>(static_cast<size_t>(out_len)));
  std::vector<double> outside(static_cast<size_t>(out_len), 0.0);
  for (int64_t o = 0; o < out_len; ++o) {
    const size_t k = static_cast<size_t>(o);
    const double x0 = resize_coordinate(r, static_cast<double>(o), scale, scale * static_cast<double>(in_len),
                                        out_len, in_len, roi_start, roi_end);
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
  if (const onnx::AttributeProto* a = attr("scales")) scales.assign(a->floats.begin(), a->floats.end());
  resize(asymmetric_floor(attr_choice("mode", "nearest", {"nearest", "linear"})), scales, {}, {});
}
void OnnxLowering::Impl::lower_upsample() {
  resize(asymmetric_floor(attr_choice("mode", "nearest", {"nearest", "linear"})), host_doubles(in(1)), {}, {});
}
// Resize 10: scales the only other input, no coordinate transformation attributes.
void OnnxLowering::Impl::lower_resize_10() {
  resize(asymmetric_floor(attr_choice("mode", "nearest", {"nearest", "linear"})), host_doubles(in(1)), {}, {});
}
// Resize from 11: roi, scales and sizes inputs; the coordinate transformation and rounding
// attributes (antialias from 18 is not lowered; axes and keep_aspect_ratio_policy are).
void OnnxLowering::Impl::lower_resize() {
  ResizeRule r;
  r.mode = attr_choice("mode", "nearest", {"nearest", "linear", "cubic"});
  r.coord = attr_choice("coordinate_transformation_mode", "half_pixel",
                        {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                         "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  r.nearest = attr_choice("nearest_mode", "round_prefer_floor",
                          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  r.cubic_a = attr_f("cubic_coeff_a", -0.75f);
  r.exclude_outside = attr_i("exclude_outside", 0) != 0;
  r.extrapolation = attr_f("extrapolation_value", 0.0f);
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (has_in(1)) roi = host_doubles(in(1));
  if (has_in(2) && in(2).numel() > 0) scales = host_doubles(in(2));
  if (has_in(3) && in(3).numel() > 0) sizes = host_ints(in(3));
  if (!scales.empty() && !sizes.empty()) throw NotImportable("malformed Resize: both scales and sizes");
  resize_axes(scales, sizes, roi);
  resize(r, scales, sizes, roi);
}
// Opset 18's axes (scales, sizes and roi for those axes only: the others keep scale 1, their
// length and roi [0, 1]) and keep_aspect_ratio_policy (sizes: one scale for the listed axes, the
// smallest or largest of theirs, and lengths rounded half up from it; the scales are then given too).
void OnnxLowering::Impl::resize_axes(std::vector<double>& scales, std::vector<int64_t>& sizes,
                                     std::vector<double>& roi) {
  const Tensor x = in(0);
  const size_t rank = static_cast<size_t>(x.rank());
  const std::optional<std::vector<int64_t>> given = attr_ints("axes");
  const std::string policy = attr_choice("keep_aspect_ratio_policy", "stretch", {"stretch", "not_larger", "not_smaller"});
  std::vector<size_t> axes;
  for (int64_t a : given.value_or(std::vector<int64_t>{}))
    axes.push_back(static_cast<size_t>(norm_axis(a, x.rank())));
  if (!given)
    for (size_t a = 0; a < rank; ++a) axes.push_back(a);
  const size_t k = axes.size();
  if ((!scales.empty() && scales.size() != k) || (!sizes.empty() && sizes.size() != k))
    throw NotImportable("Resize scales or sizes not one per axis");
  if (given) {
    std::vector<double> s(rank, 1.0), ro;
    std::vector<int64_t> z(x.shape().begin(), x.shape().end());
    for (size_t i = 0; i < k; ++i) {
      if (!scales.empty()) s[axes[i]] = scales[i];
      if (!sizes.empty()) z[axes[i]] = sizes[i];
    }
    if (roi.size() == 2 * k) {
      ro.assign(rank, 0.0);
      ro.resize(2 * rank, 1.0);
      for (size_t i = 0; i < k; ++i) ro[axes[i]] = roi[i], ro[rank + axes[i]] = roi[k + i];
      roi = ro;
    }
    if (!scales.empty()) scales = s;
    if (!sizes.empty()) sizes = z;
  }
  if (sizes.empty() || policy == "stretch") return;
  double scale = policy == "not_larger" ? INFINITY : 0.0;
  for (size_t a : axes) {
    const double f = static_cast<double>(sizes[a]) / static_cast<double>(x.dim(static_cast<int>(a)));
    scale = policy == "not_larger" ? std::min(scale, f) : std::max(scale, f);
  }
  scales.assign(rank, 1.0);
  for (size_t a : axes) {
    scales[a] = scale;
    sizes[a] = static_cast<int64_t>(scale * static_cast<double>(x.dim(static_cast<int>(a))) + 0.5);
  }
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
    // Both given only by keep_aspect_ratio_policy: the scale its, the lengths rounded from it.
    const double scale = !scales.empty() ? scales[static_cast<size_t>(a)]
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

}  // namespace wick::onnx
