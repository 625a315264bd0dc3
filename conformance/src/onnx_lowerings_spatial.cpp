// onnx_lowerings_spatial.cpp — sampling and pooling ops whose positions come from data:
// GridSample, RoiAlign, MaxPool's Indices and MaxUnpool. The sample positions, taps and weights
// are elementwise Wick ops on the device; the reads are GATHER_ELEMENTS on the flattened input.
#include "onnx_lowerings.hpp"

#include <cmath>
#include <functional>

namespace wick::conformance {

// Coordinates outside [lo, hi] reflected back into it, as often as it takes (GridSample's
// reflection padding): with d the distance past the nearer bound and n = floor(d / (hi - lo)),
// the result is d - n (hi - lo) in from that bound when n is even, from the other one when odd.
Tensor OnnxLowering::Impl::reflect(const Tensor& c, double lo, double hi) {
  const DType t = c.dtype();
  const double range = hi - lo;
  const Tensor below = op2(WICK_OP_LT, c, scalar(lo, t), DType::Bool);
  const Tensor above = op2(WICK_OP_GT, c, scalar(hi, t), DType::Bool);
  const Tensor dist = where(below, affine(c, -1, lo), affine(c, 1, -hi));
  const Tensor turns = op1(WICK_OP_FLOOR, affine(dist, 1 / range, 0));
  const Tensor rest = op2(WICK_OP_SUB, dist, affine(turns, range, 0));
  const Tensor odd = op2(WICK_OP_NE, op1(WICK_OP_FLOOR, affine(turns, 0.5, 0)), affine(turns, 0.5, 0),
                         DType::Bool);
  const Tensor from_lo = op2(WICK_OP_BITWISE_XOR, below, odd);
  const Tensor reflected = where(from_lo, affine(rest, 1, lo), affine(rest, -1, hi));
  return where(op2(WICK_OP_BITWISE_OR, below, above), reflected, c);
}

// GridSample on N-D inputs: per spatial axis, the grid's coordinate unnormalised, padded
// (border: clamped, reflection: reflected, both only where outside the pixel range), then split
// into taps (nearest: 1, linear: 2, cubic: 4) with weights; each tap's index is padded again
// (zeros: out-of-range taps weigh 0). Every combination of taps over the axes is one gather.
void OnnxLowering::Impl::grid_sample(const std::string& mode) {
  const Tensor x = in(0), grid = in(1);
  const int r = x.rank() - 2;
  if (r < 1 || grid.rank() != r + 2 || grid.dim(-1) != r) throw NotImportable("GridSample shapes");
  const bool align = attr_i("align_corners", 0) != 0;
  const std::string padding = attr_s("padding_mode", "zeros");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    throw NotImportable("GridSample mode " + mode);
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    throw NotImportable("GridSample padding_mode " + padding);
  const DType ct = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  Shape out_spatial(grid.shape().begin() + 1, grid.shape().end() - 1);
  int64_t out_count = 1, in_count = 1;
  for (int64_t d : out_spatial) out_count *= d;
  for (int a = 0; a < r; ++a) in_count *= x.dim(2 + a);
  const Shape pos_shape{batch, out_count};
  struct Tap {
    Tensor index;  // i64, [N, out_count]
    Tensor weight;  // ct, [N, out_count]
  };
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(r));
  for (int a = 0; a < r; ++a) {
    const int64_t size = x.dim(2 + a);
    const double lo = align ? 0.0 : -0.5, hi = align ? static_cast<double>(size - 1) : size - 0.5;
    // The grid lists coordinates innermost axis first.
    Tensor c = reshape(cast(grid.narrow(-1, r - 1 - a, 1), ct), pos_shape);
    c = align ? affine(c, 0.5 * static_cast<double>(size - 1), 0.5 * static_cast<double>(size - 1))
              : affine(c, 0.5 * static_cast<double>(size), 0.5 * static_cast<double>(size) - 0.5);
    if (mode == "nearest") {
      const wick_unary_params even{sizeof(wick_unary_params), 0, 0, WICK_ROUND_HALF_TO_EVEN};
      c = op1(WICK_OP_ROUND, c, &even);
    }
    const Tensor outside = op2(WICK_OP_BITWISE_OR, op2(WICK_OP_LT, c, scalar(lo, ct), DType::Bool),
                               op2(WICK_OP_GT, c, scalar(hi, ct), DType::Bool));
    if (padding == "border") {
      const Tensor clamped = op2(WICK_OP_MINIMUM, op2(WICK_OP_MAXIMUM, c, scalar(0, ct)),
                                 scalar(static_cast<double>(size - 1), ct));
      c = where(outside, clamped, c);
    } else if (padding == "reflection") {
      c = reflect(c, lo, hi);
    }
    // A tap at integer position i (a float tensor): its index after padding, and 0 or 1 for
    // whether it reads the input at all.
    auto tap = [&](const Tensor& i, const Tensor& w) {
      Tensor at = i;
      Tensor weight = w;
      if (padding == "reflection") at = reflect(at, lo, hi);
      if (padding == "zeros") {
        const Tensor inside = op2(WICK_OP_BITWISE_AND, op2(WICK_OP_GE, at, scalar(0, ct), DType::Bool),
                                  op2(WICK_OP_LE, at, scalar(static_cast<double>(size - 1), ct), DType::Bool));
        weight = where(inside, weight, scalar(0, ct));
      }
      at = op2(WICK_OP_MINIMUM, op2(WICK_OP_MAXIMUM, at, scalar(0, ct)), scalar(static_cast<double>(size - 1), ct));
      taps[static_cast<size_t>(a)].push_back({cast(at, DType::I64), weight});
    };
    const Tensor one = filled(pos_shape, ct, 1);
    if (mode == "nearest") {
      tap(c, one);
      continue;
    }
    const Tensor base = op1(WICK_OP_FLOOR, c);
    const Tensor t = op2(WICK_OP_SUB, c, base);
    if (mode == "linear") {
      tap(base, affine(t, -1, 1));
      tap(affine(base, 1, 1), t);
      continue;
    }
    // Cubic convolution with A = -0.75 at distances t + 1, t, 1 - t, 2 - t.
    const double A = -0.75;
    auto near = [&](const Tensor& d) {  // |d| <= 1: ((A + 2) d - (A + 3)) d^2 + 1
      return affine(op2(WICK_OP_MUL, affine(d, A + 2, -(A + 3)), op2(WICK_OP_MUL, d, d)), 1, 1);
    };
    auto far = [&](const Tensor& d) {  // 1 < |d| < 2: ((A d - 5 A) d + 8 A) d - 4 A
      return affine(op2(WICK_OP_MUL, affine(op2(WICK_OP_MUL, affine(d, A, -5 * A), d), 1, 8 * A), d), 1, -4 * A);
    };
    tap(affine(base, 1, -1), far(affine(t, 1, 1)));
    tap(base, near(t));
    tap(affine(base, 1, 1), near(affine(t, -1, 1)));
    tap(affine(base, 1, 2), far(affine(t, -1, 2)));
  }
  // Every combination of one tap per axis: flat index sum(index_a * stride_a), weight product.
  const Tensor flat = reshape(x, {batch, channels, in_count});
  const Shape gather_shape{batch, channels, out_count};
  Tensor sum;
  bool first = true;
  std::vector<size_t> pick(static_cast<size_t>(r), 0);
  for (;;) {
    Tensor index, weight;
    int64_t stride = 1;
    for (int a = r - 1; a >= 0; --a) {
      const Tap& tp = taps[static_cast<size_t>(a)][pick[static_cast<size_t>(a)]];
      const Tensor term = stride == 1 ? tp.index : op2(WICK_OP_MUL, tp.index, scalar(static_cast<double>(stride), DType::I64));
      index = a == r - 1 ? term : op2(WICK_OP_ADD, index, term);
      weight = a == r - 1 ? tp.weight : op2(WICK_OP_MUL, weight, tp.weight);
      stride *= x.dim(2 + a);
    }
    Tensor got = Tensor::empty(gather_shape, x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), 2, 0};
    exec(WICK_OP_GATHER_ELEMENTS, &p, {flat, index.reshape({batch, 1, out_count}).broadcast_to(gather_shape)}, {got});
    const Tensor term = op2(WICK_OP_MUL, cast(got, ct), weight.reshape({batch, 1, out_count}));
    sum = first ? term : op2(WICK_OP_ADD, sum, term);
    first = false;
    size_t a = 0;
    while (a < pick.size() && ++pick[a] == taps[a].size()) pick[a++] = 0;
    if (a == pick.size()) break;
  }
  Shape os{batch, channels};
  os.insert(os.end(), out_spatial.begin(), out_spatial.end());
  out(0, cast(sum, x.dtype()).reshape(os));
}
// Opsets 16-19 name the modes bilinear and bicubic; from 20 linear and cubic (and N-D inputs).
void OnnxLowering::Impl::lower_grid_sample_16() {
  if (in(0).rank() != 4) throw NotImportable("GridSample before opset 20 takes 4-D inputs");
  const std::string mode = attr_s("mode", "bilinear");
  grid_sample(mode == "bilinear" ? "linear" : mode == "bicubic" ? "cubic" : mode);
}
void OnnxLowering::Impl::lower_grid_sample() {
  grid_sample(attr_s("mode", "linear"));
}

}  // namespace wick::conformance
