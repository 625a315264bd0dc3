// lowerings_spatial.cpp — sampling and pooling ops whose positions come from data:
// GridSample, RoiAlign, MaxPool's Indices and MaxUnpool. The sample positions, taps and weights
// are elementwise Wick ops on the device; the reads are GATHER_ELEMENTS on the flattened input.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace wick::onnx {

// One of GridSample's taps along an axis: where it reads and how much that read weighs.
struct OnnxLowering::Impl::GridTap {
  Tensor index;   // i64, [N, out_count]
  Tensor weight;  // ct, [N, out_count]
};

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
  const std::string padding = attr_choice("padding_mode", "zeros", {"zeros", "border", "reflection"});
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    throw NotImportable("GridSample mode " + mode);
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    throw NotImportable("GridSample padding_mode " + padding);
  const DType ct = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  Shape out_spatial(grid.shape().begin() + 1, grid.shape().end() - 1);
  int64_t out_count = 1, in_count = 1;
  for (int64_t d : out_spatial) out_count = checked_mul(out_count, d);
  for (int a = 0; a < r; ++a) in_count = checked_mul(in_count, x.dim(2 + a));
  // One gather per combination of taps over the axes.
  const int64_t per_axis = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  int64_t combinations = 1;
  for (int a = 0; a < r; ++a) combinations = checked_mul(combinations, per_axis);
  if (combinations > 4096)
    throw NotImportable("GridSample of " + std::to_string(combinations) + " tap combinations, beyond the importer's limit");
  const Shape pos_shape{batch, out_count};
  std::vector<std::vector<GridTap>> taps;
  for (int a = 0; a < r; ++a) {
    // The grid lists coordinates innermost axis first.
    const Tensor c = reshape(cast(grid.narrow(-1, r - 1 - a, 1), ct), pos_shape);
    taps.push_back(grid_taps(c, x.dim(2 + a), mode, padding, align));
  }
  const Tensor sum = grid_gather(x, taps, in_count, out_count, ct);
  Shape os{batch, channels};
  os.insert(os.end(), out_spatial.begin(), out_spatial.end());
  out(0, cast(sum, x.dtype()).reshape(os));
}
// One axis's taps for GridSample: c, the grid's coordinates along an axis of `size` pixels (in
// [-1, 1], [N, out_count], in the compute dtype), unnormalised and padded, then each tap's index
// (padded again, i64) and weight.
std::vector<OnnxLowering::Impl::GridTap> OnnxLowering::Impl::grid_taps(Tensor c, int64_t size,
                                                                      const std::string& mode,
                                                                      const std::string& padding,
                                                                      bool align) {
  const DType ct = c.dtype();
  const Shape pos_shape = c.shape();
  std::vector<GridTap> taps;
  const double lo = align ? 0.0 : -0.5, hi = align ? static_cast<double>(size - 1) : size - 0.5;
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
    taps.push_back({cast(at, DType::I64), weight});
  };
  const Tensor one = filled(pos_shape, ct, 1);
  if (mode == "nearest") {
    tap(c, one);
    return taps;
  }
  const Tensor base = op1(WICK_OP_FLOOR, c);
  const Tensor t = op2(WICK_OP_SUB, c, base);
  if (mode == "linear") {
    tap(base, affine(t, -1, 1));
    tap(affine(base, 1, 1), t);
    return taps;
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
  return taps;
}
// GridSample's gathers: every combination of one tap per axis reads the input flattened to
// [N, C, in_count] at the flat index sum(index_a * stride_a), weighted by the taps' product; the
// weighted reads summed, [N, C, out_count] in the compute dtype ct.
Tensor OnnxLowering::Impl::grid_gather(const Tensor& x,
                                       const std::vector<std::vector<GridTap>>& taps,
                                       int64_t in_count, int64_t out_count, DType ct) {
  const int r = x.rank() - 2;
  const int64_t batch = x.dim(0), channels = x.dim(1);
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
      const GridTap& tp = taps[static_cast<size_t>(a)][pick[static_cast<size_t>(a)]];
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
  return sum;
}
// Opsets 16-19 name the modes bilinear and bicubic; from 20 linear and cubic (and N-D inputs).
void OnnxLowering::Impl::lower_grid_sample_16() {
  if (in(0).rank() != 4) throw NotImportable("GridSample before opset 20 takes 4-D inputs");
  const std::string mode = attr_choice("mode", "bilinear", {"bilinear", "nearest", "bicubic"});
  grid_sample(mode == "bilinear" ? "linear" : mode == "bicubic" ? "cubic" : mode);
}
void OnnxLowering::Impl::lower_grid_sample() {
  grid_sample(attr_choice("mode", "linear", {"linear", "nearest", "cubic"}));
}

// MaxPool with its Indices output: the input padded with -inf, then every kernel offset's strided
// view compared with the best so far (strictly greater wins, so the first maximum in scan order
// stays), its flat input position (host-built per offset) kept alongside. Positions count over the
// whole input, row-major, or column-major over the spatial axes with storage_order = 1.
void OnnxLowering::Impl::max_pool_with_indices(const Window& w) {
  const Tensor x = in(0);
  const size_t r = w.kernel.size();
  const bool column_major = attr_i("storage_order", 0) != 0;
  Shape padded_shape = x.shape(), os = x.shape();
  int64_t spatial = 1, offsets = 1;
  for (size_t a = 0; a < r; ++a) {
    const int64_t size = x.dim(static_cast<int>(2 + a));
    spatial = checked_mul(spatial, size);
    offsets = checked_mul(offsets, w.kernel[a]);
    padded_shape[2 + a] = size + w.lo[a] + w.hi[a];
    os[2 + a] = (padded_shape[2 + a] - ((w.kernel[a] - 1) * w.dil[a] + 1)) / w.strides[a] + 1;
  }
  const double lowest = is_float(x.dtype()) ? -INFINITY : std::numeric_limits<double>::lowest();
  Tensor padded = filled(padded_shape, x.dtype(), lowest);
  Tensor inner = padded;
  for (size_t a = 0; a < r; ++a)
    inner = inner.narrow(static_cast<int>(2 + a), w.lo[a], x.dim(static_cast<int>(2 + a)));
  exec(WICK_OP_COPY, nullptr, {x}, {inner});
  const Shape out_spatial(os.begin() + 2, os.end());
  int64_t out_count = 1;
  for (int64_t d : out_spatial) out_count = checked_mul(out_count, std::max<int64_t>(d, 0));
  // One device pass per kernel offset (like a loop iteration), out_count host positions each.
  if (offsets > max_loop_steps() || checked_mul(offsets, out_count) > max_host_elements())
    throw NotImportable("MaxPool indices over " + std::to_string(offsets) + " kernel offsets and " +
                        std::to_string(out_count) + " outputs" +
                        (offsets > max_loop_steps() ? limit_hint("max_loop_steps") : limit_hint("max_host_elements")));
  Shape pos_shape(2, 1);
  pos_shape.insert(pos_shape.end(), out_spatial.begin(), out_spatial.end());
  Tensor best, best_at;
  std::vector<int64_t> k(r, 0);
  for (bool first = true;; first = false) {
    Tensor tap = padded;
    for (size_t a = 0; a < r; ++a) {
      const int64_t start = k[a] * w.dil[a];
      tap = tap.slice(static_cast<int>(2 + a), start, start + (out_spatial[a] - 1) * w.strides[a] + 1, w.strides[a]);
    }
    const Tensor tap_at =
        upload_i64(max_pool_positions(x, w, k, out_spatial, out_count, column_major), pos_shape);
    if (first) {
      best = g.contiguous(tap);
      best_at = tap_at.broadcast_to(os);
    } else {
      const Tensor better = op2(WICK_OP_GT, tap, best, DType::Bool);
      best = where(better, tap, best);
      best_at = where(better, tap_at, best_at);
    }
    size_t a = r;
    while (a-- > 0 && ++k[a] == w.kernel[a]) k[a] = 0;
    if (a == static_cast<size_t>(-1)) break;
  }
  out(0, best);
  // The offset of each (n, c) plane.
  Tensor plane = Tensor::empty({x.dim(0), x.dim(1)}, DType::I64, dev());
  const wick_iota_params ip{sizeof(wick_iota_params), 1, 0, 0, 0, spatial};
  exec(WICK_OP_IOTA, &ip, {}, {plane});
  Shape plane_shape{x.dim(0), x.dim(1)};
  plane_shape.insert(plane_shape.end(), r, 1);
  const Tensor base = op2(WICK_OP_ADD, plane.reshape(plane_shape),
                          affine(positions(plane_shape, 0), static_cast<double>(checked_mul(x.dim(1), spatial)), 0));
  out(1, op2(WICK_OP_ADD, best_at, base));
}

// The position within its (n, c) plane that kernel offset k reads for each of MaxPool's out_count
// outputs (row-major over the spatial axes, or column-major), 0 where it reads the padding.
std::vector<int64_t> OnnxLowering::Impl::max_pool_positions(const Tensor& x, const Window& w,
                                                            const std::vector<int64_t>& k,
                                                            const Shape& out_spatial,
                                                            int64_t out_count, bool column_major) {
  const size_t r = w.kernel.size();
  std::vector<int64_t> at(static_cast<size_t>(out_count), 0);
  for (int64_t o = 0; o < out_count; ++o) {
    int64_t rest = o, flat = 0, row_stride = 1, col_stride = 1;
    std::vector<int64_t> p(r);
    for (size_t a = r; a-- > 0;) {
      p[a] = (rest % out_spatial[a]) * w.strides[a] + k[a] * w.dil[a] - w.lo[a];
      rest /= out_spatial[a];
    }
    bool inside = true;
    for (size_t a = 0; a < r; ++a) inside = inside && p[a] >= 0 && p[a] < x.dim(static_cast<int>(2 + a));
    for (size_t a = r; a-- > 0;) {  // row-major
      flat += p[a] * row_stride;
      row_stride *= x.dim(static_cast<int>(2 + a));
    }
    if (column_major) {
      flat = 0;
      for (size_t a = 0; a < r; ++a) {
        flat += p[a] * col_stride;
        col_stride *= x.dim(static_cast<int>(2 + a));
      }
    }
    at[static_cast<size_t>(o)] = inside ? flat : 0;
  }
  return at;
}

// MaxUnpool: zeros of the shape (in - 1) * stride + kernel - pads, the values scattered to their
// flat positions there (SCATTER_ELEMENTS on the flattened tensor); a larger output_shape extends
// that with zeros at the end of each axis (the indices stay those of the inferred shape).
void OnnxLowering::Impl::lower_max_unpool() {
  const Tensor x = in(0), idx = in(1);
  if (x.rank() < 3) throw NotImportable("malformed MaxUnpool: an input of rank " + std::to_string(x.rank()));
  const size_t r = static_cast<size_t>(x.rank() - 2);
  const std::vector<int64_t> k = attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> st = attr_ints("strides").value_or(std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = attr_ints("pads").value_or(std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || st.size() != r || pads.size() != 2 * r) throw NotImportable("MaxUnpool attributes");
  Shape inferred = x.shape();
  for (size_t a = 0; a < r; ++a) {
    if (st[a] < 1 || k[a] < 1 || pads[a] < 0 || pads[a + r] < 0)
      throw NotImportable("malformed MaxUnpool: kernel, strides or pads out of range");
    inferred[2 + a] = checked_add(checked_add(checked_mul(x.dim(static_cast<int>(2 + a)) - 1, st[a]), k[a]),
                                  -checked_add(pads[a], pads[a + r]));
    if (inferred[2 + a] < 0) throw NotImportable("malformed MaxUnpool: pads wider than the output");
  }
  int64_t total = 1;
  for (int64_t d : inferred) total = checked_mul(total, d);
  const Tensor zeros = filled({total}, x.dtype(), 0);
  Tensor o = Tensor::empty({total}, x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 0, WICK_REDUCE_MODE_SET};
  exec(WICK_OP_SCATTER_ELEMENTS, &p, {zeros, reshape(cast(idx, DType::I64), {idx.numel()}), reshape(x, {x.numel()})}, {o});
  const Tensor y = o.reshape(inferred);
  if (!has_in(2)) return out(0, y);
  const Shape os = host_ints(in(2));
  if (os.size() != inferred.size()) throw NotImportable("MaxUnpool output_shape rank");
  Tensor big = filled(os, x.dtype(), 0);
  Tensor corner = big;
  for (size_t a = 0; a < os.size(); ++a) {
    if (os[a] < inferred[a]) throw NotImportable("MaxUnpool output_shape smaller than the inferred shape");
    corner = corner.narrow(static_cast<int>(a), 0, inferred[a]);
  }
  exec(WICK_OP_COPY, nullptr, {y}, {corner});
  out(0, big);
}

}  // namespace wick::onnx
