// ops_nn.cpp — see tensor.hpp for the API this file implements: matmul, convolution, window
// reductions and pooling, select-and-scatter, and the fused ops (softmax, log_softmax, layer_norm,
// rms_norm, batch_norm, attention).
//
// A fused op runs as one op when the device's plugin supports it; otherwise it is composed here
// from smaller ops, so that a device without the fused kernel still computes it itself rather than
// copying everything to the CPU (each smaller op may fall back on its own).
#include <wick/dispatch.hpp>
#include "tensor/autograd_rules.hpp"
#include "tensor/ops_common.hpp"
#include <wick/shape.hpp>

#include <wick/direct.hpp>

#include <cmath>
#include <limits>
#include <numeric>

namespace wick {

using namespace detail;

namespace {

bool is_half(DType t) {
  return t == DType::F16 || t == DType::BF16;
}

// Whether the plugin of the outputs' device runs the op itself; when not, the caller composes it.
bool device_supports(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs) {
  return query_op_direct(outputs.front().device(), op, params, inputs, outputs) == WICK_SUPPORT_YES;
}

// Runs the op into `out` when the device's plugin has it; false when the caller must do otherwise
// (compose a fused op, or use a contiguous output).
bool run_on_device(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                   const Tensor& out) {
  if (!device_supports(op, params, inputs, {out})) return false;
  dispatch(op, params, inputs, {out});
  return true;
}

wick_norm_params norm_params(int num_axes, double eps) {
  return {sizeof(wick_norm_params), num_axes, eps};
}

void require_float(const Tensor& t, const char* op) {
  if (!is_float(t.dtype())) {
    throw Error(std::string(op) + ": needs a floating-point tensor, got " + dtype_name(t.dtype()) +
                " " + shape_to_string(t.shape()) + "; convert it first with .to(DType::F32)");
  }
}

std::string list_to_string(const std::vector<int64_t>& v) {
  return shape_to_string(v);
}

// A per-axis argument: empty gives `fallback` for every axis, one value is repeated, otherwise it
// must have `n` entries.
std::vector<int64_t> per_axis(const std::vector<int64_t>& v, size_t n, int64_t fallback,
                              const char* what, const char* op) {
  if (v.empty()) return std::vector<int64_t>(n, fallback);
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  if (v.size() != n) {
    throw Error(std::string(op) + ": " + what + " " + list_to_string(v) + " needs 1 or " +
                std::to_string(n) + " entries");
  }
  return v;
}

void require_at_least(const std::vector<int64_t>& v, int64_t lo, const char* what, const char* op) {
  for (int64_t e : v) {
    if (e < lo) {
      throw Error(std::string(op) + ": " + what + " " + list_to_string(v) +
                  " must be >= " + std::to_string(lo));
    }
  }
}

// Output extent of a window of `window` taps, dilated by `dil`, stepping by `stride` over `in`
// elements padded by lo and hi; -1 when the dilated window does not fit even once.
int64_t window_extent(int64_t in, int64_t window, int64_t stride, int64_t lo, int64_t hi,
                      int64_t dil) {
  const int64_t span = in + lo + hi - ((window - 1) * dil + 1);
  return span < 0 ? -1 : span / stride + 1;
}

// Points the per-axis arrays of window or conv params at the vectors, which must outlive them.
template <class Params>
void set_geometry(Params& p, const std::vector<int64_t>& strides, const std::vector<int64_t>& lo,
                  const std::vector<int64_t>& hi, const std::vector<int64_t>& dilations) {
  p.strides = strides.data();
  p.padding_lo = lo.data();
  p.padding_hi = hi.data();
  p.dilations = dilations.data();
}

wick_op_code window_code(const std::string& op, const char* api) {
  if (op == "sum") return WICK_OP_WINDOW_SUM;
  if (op == "prod") return WICK_OP_WINDOW_PROD;
  if (op == "max") return WICK_OP_WINDOW_MAX;
  if (op == "min") return WICK_OP_WINDOW_MIN;
  throw Error(std::string(api) + ": unknown reduction \"" + op +
              "\"; use \"sum\", \"prod\", \"max\" or \"min\"");
}

// The window geometry of window_reduce and window_scatter, checked against x.
struct Window {
  std::vector<int64_t> window, strides, lo, hi, dilations;
  Shape out;

  Window(const Tensor& x, const std::vector<int64_t>& w, const std::vector<int64_t>& s,
         const std::vector<std::pair<int64_t, int64_t>>& padding, const std::vector<int64_t>& d,
         const char* op)
      : window(w) {
    const size_t r = static_cast<size_t>(x.rank());
    if (w.size() != r) {
      throw Error(std::string(op) + ": window " + list_to_string(w) +
                  " needs one entry per axis of " + shape_to_string(x.shape()));
    }
    strides = per_axis(s, r, 1, "strides", op);
    dilations = per_axis(d, r, 1, "dilations", op);
    require_at_least(window, 1, "window", op);
    require_at_least(strides, 1, "strides", op);
    require_at_least(dilations, 1, "dilations", op);
    if (!padding.empty() && padding.size() != r) {
      throw Error(std::string(op) + ": padding has " + std::to_string(padding.size()) +
                  " (lo, hi) pairs for " + std::to_string(r) + " axes");
    }
    for (size_t i = 0; i < r; ++i) {
      lo.push_back(padding.empty() ? 0 : padding[i].first);
      hi.push_back(padding.empty() ? 0 : padding[i].second);
      out.push_back(std::max<int64_t>(
          window_extent(x.shape()[i], window[i], strides[i], lo[i], hi[i], dilations[i]), 0));
    }
  }

  wick_window_params params(double init = 0.0) const {
    wick_window_params p{};
    p.struct_size = sizeof(p);
    p.rank = static_cast<int32_t>(window.size());
    p.window = window.data();
    set_geometry(p, strides, lo, hi, dilations);
    p.init_value = init;
    return p;
  }
};

// [kh, kw], stride and padding of the 2-d pooling helpers, as a window over every axis of x.
struct Pool2d {
  std::vector<int64_t> window, strides;
  std::vector<std::pair<int64_t, int64_t>> padding;

  Pool2d(const Tensor& x, const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
         const std::vector<int64_t>& pad, const char* op) {
    if (x.rank() < 2) {
      throw Error(std::string(op) + ": needs a tensor of rank >= 2 ([..., H, W]), got " +
                  shape_to_string(x.shape()));
    }
    const std::vector<int64_t> k = per_axis(kernel, 2, 0, "kernel", op);
    if (kernel.empty()) throw Error(std::string(op) + ": the kernel size is required");
    const std::vector<int64_t> s = stride.empty() ? k : per_axis(stride, 2, 1, "stride", op);
    const std::vector<int64_t> p = per_axis(pad, 2, 0, "padding", op);
    require_at_least(p, 0, "padding", op);
    const size_t lead = static_cast<size_t>(x.rank() - 2);
    window.assign(lead, 1);
    strides.assign(lead, 1);
    padding.assign(lead, {0, 0});
    for (size_t i = 0; i < 2; ++i) {
      window.push_back(k[i]);
      strides.push_back(s[i]);
      padding.emplace_back(p[i], p[i]);
    }
  }
};

// conv's operands: [N, C, spatial...] and [O, C / groups, kernel...] of the same rank (>= 3).
void require_conv_operands(const Tensor& x, const Tensor& weight, int64_t groups) {
  if (x.rank() < 3 || weight.rank() != x.rank()) {
    throw Error(
        "conv: input must be [N, C, spatial...] and weight [O, C / groups, kernel...] of the same "
        "rank "
        "(>= 3); got " +
        shape_to_string(x.shape()) + " and " + shape_to_string(weight.shape()));
  }
  const int64_t c = x.shape()[1], o = weight.shape()[0];
  if (groups < 1 || c % groups != 0 || o % groups != 0 || weight.shape()[1] * groups != c) {
    throw Error("conv: input " + shape_to_string(x.shape()) + " and weight " +
                shape_to_string(weight.shape()) + " do not fit groups = " + std::to_string(groups) +
                ": C and O must be multiples of groups and the weight's axis 1 must be C / groups");
  }
}

// The geometry of a convolution of x by weight (operands already checked): per spatial axis the
// strides, dilations and padding, and the output shape [N, O, spatial...].
struct ConvGeometry {
  std::vector<int64_t> strides, dilations, lo, hi;
  Shape out;

  ConvGeometry(const Tensor& x, const Tensor& weight, const std::vector<int64_t>& s,
               const std::vector<int64_t>& padding, const std::vector<int64_t>& d) {
    const char* op = "conv";
    const size_t r = static_cast<size_t>(x.rank() - 2);
    strides = per_axis(s, r, 1, "strides", op);
    dilations = per_axis(d, r, 1, "dilations", op);
    require_at_least(strides, 1, "strides", op);
    require_at_least(dilations, 1, "dilations", op);
    // padding: one value, one per spatial axis (both sides), or (lo, hi) per spatial axis.
    lo.assign(r, 0);
    hi.assign(r, 0);
    if (padding.size() == 2 * r) {
      for (size_t i = 0; i < r; ++i) {
        lo[i] = padding[2 * i];
        hi[i] = padding[2 * i + 1];
      }
    } else {
      lo = hi = per_axis(padding, r, 0, "padding", op);
    }
    out = {x.shape()[0], weight.shape()[0]};
    for (size_t i = 0; i < r; ++i) out.push_back(spatial_extent(x, weight, i));
  }

  // Output extent of spatial axis i; throws when the dilated kernel does not fit the padded input.
  int64_t spatial_extent(const Tensor& x, const Tensor& weight, size_t i) const {
    const int64_t k = weight.shape()[2 + i];
    if (k < 1)
      throw Error("conv: the weight " + shape_to_string(weight.shape()) + " has an empty kernel");
    const int64_t e = window_extent(x.shape()[2 + i], k, strides[i], lo[i], hi[i], dilations[i]);
    if (e < 0) {
      throw Error("conv: spatial axis " + std::to_string(i) + " of the input " +
                  shape_to_string(x.shape()) + " with padding (" + std::to_string(lo[i]) + ", " +
                  std::to_string(hi[i]) + ") is smaller than the dilated kernel (" +
                  std::to_string((k - 1) * dilations[i] + 1) + ")");
    }
    return e;
  }

  wick_conv_params params(int64_t groups) const {
    wick_conv_params p{};
    p.struct_size = sizeof(p);
    p.spatial_rank = static_cast<int32_t>(strides.size());
    set_geometry(p, strides, lo, hi, dilations);
    p.input_dilations = nullptr;
    p.groups = groups;
    return p;
  }
};

// The axis order [N, C, s...] -> [N, s..., C] of a channels-last tensor with r spatial axes.
std::vector<int> channels_last_order(size_t r) {
  std::vector<int> last(r + 2);
  for (size_t i = 0; i < r + 2; ++i)
    last[i] = i == 0 ? 0 : i == r + 1 ? 1 : static_cast<int>(i + 1);
  return last;
}

// A new tensor of `shape` ([N, C, s...]) whose memory is laid out in the order `last`.
Tensor empty_channels_last(const Shape& shape, const std::vector<int>& last, DType t,
                           const Device& device) {
  std::vector<int> back(last.size());  // the inverse of `last`
  for (size_t i = 0; i < last.size(); ++i) back[static_cast<size_t>(last[i])] = static_cast<int>(i);
  Shape stored(last.size());
  for (size_t i = 0; i < last.size(); ++i) stored[i] = shape[static_cast<size_t>(last[i])];
  return Tensor::empty(stored, t, device).permute(back);
}

}  // namespace

// ---- matrix multiplication ----------------------------------------------------------------------

Tensor Tensor::matmul(const Tensor& other) const {
  if (grad::needs({this, &other})) return grad::matmul(*this, other);
  require_defined(*this, "matmul");
  require_defined(other, "matmul");
  if (rank() == 0 || other.rank() == 0) {
    throw Error("matmul: operands must have rank >= 1, got " + shape_to_string(shape_) + " and " +
                shape_to_string(other.shape()));
  }
  require_same_device(*this, other, "matmul");
  // Operands by reference where they are used as they are (a Tensor copy costs two allocations).
  Tensor a1, b1;
  if (rank() == 1) a1 = unsqueeze(0);
  if (other.rank() == 1) b1 = other.unsqueeze(-1);
  const Tensor& a = rank() == 1 ? a1 : *this;
  const Tensor& b = other.rank() == 1 ? b1 : other;
  const int64_t m = a.dim(-2), k = a.dim(-1), k2 = b.dim(-2), n = b.dim(-1);
  if (k != k2) {
    throw Error("matmul: shapes " + shape_to_string(shape_) + " and " +
                shape_to_string(other.shape()) + " are incompatible: inner dimensions " +
                std::to_string(k) + " and " + std::to_string(k2) + " differ");
  }
  const Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                       Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
  const DType t = promote_types(dtype_, other.dtype());
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  so.insert(so.end(), {m, n});
  Tensor out = empty(so, t, device());
  if (out.numel() > 0) {
    Tensor made_a, made_b;
    dispatch(WICK_OP_MATMUL, nullptr, {&as_operand(a, t, sa, made_a), &as_operand(b, t, sb, made_b)}, out);
  }
  // The axes 1-D operands gained, dropped again (the row first: both may be gone).
  Tensor result = out;
  if (rank() == 1) result = result.squeeze(-2);
  if (other.rank() == 1) result = result.squeeze(-1);
  return result;
}

// ---- convolution --------------------------------------------------------------------------------

namespace {

// A channels-last input ([N, spatial..., C] in memory) gets a channels-last output, as in
// PyTorch: a convolution library then reads and writes both without reordering. Only when the
// device runs the op itself (a CPU fallback needs a contiguous output): the output, or nullopt.
std::optional<Tensor> channels_last_conv(const Tensor& x, const Tensor& weight, wick_op_code code,
                                         const wick_conv_params& p, const std::vector<Tensor>& in,
                                         const Shape& out_shape, DType t) {
  const std::vector<int> last = channels_last_order(static_cast<size_t>(x.rank() - 2));
  if (x.shape()[1] <= 1 || weight.shape()[0] <= 1 || x.is_contiguous() || !x.permute(last).is_contiguous())
    return std::nullopt;
  Tensor out = empty_channels_last(out_shape, last, t, x.device());
  if (out.numel() == 0 || run_on_device(code, &p, in, out)) return out;
  return std::nullopt;
}

}  // namespace

Tensor Tensor::conv(const Tensor& weight, const std::vector<int64_t>& strides,
                    const std::vector<int64_t>& padding, const std::vector<int64_t>& dilations,
                    int64_t groups) const {
  if (grad::needs({this, &weight}))
    return grad::conv(*this, weight, strides, padding, dilations, groups);
  const char* op = "conv";
  require_defined(*this, op);
  require_defined(weight, op);
  require_same_device(*this, weight, op);
  require_conv_operands(*this, weight, groups);
  const DType t = promote_types(dtype_, weight.dtype());
  if (t == DType::Bool)
    throw Error("conv: bool operands have no convolution; convert them first with .to(...)");
  const ConvGeometry g(*this, weight, strides, padding, dilations);
  const wick_conv_params p = g.params(groups);
  const std::vector<Tensor> in{to(t), weight.to(t)};
  if (auto out = channels_last_conv(*this, weight, WICK_OP_CONV, p, in, g.out, t)) return *out;
  Tensor out = empty(g.out, t, device());
  if (out.numel() == 0) return out;
  dispatch(WICK_OP_CONV, &p, in, {out});
  return out;
}

Tensor Tensor::conv_bias(const Tensor& weight, const Tensor& bias, bool relu,
                         const std::vector<int64_t>& strides, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilations, int64_t groups) const {
  const char* op = "conv_bias";
  require_defined(bias, op);
  require_defined(weight, op);
  if (bias.shape() != Shape{weight.rank() >= 1 ? weight.shape()[0] : 0}) {
    throw Error("conv_bias: the bias " + shape_to_string(bias.shape()) +
                " must be [O] for the weight " + shape_to_string(weight.shape()));
  }
  // Conv, add and relu as ops of their own: with autograd, and where the device has no fused op.
  auto composite = [&] {
    Shape per_channel(static_cast<size_t>(std::max(rank() - 1, 1)), 1);
    per_channel[0] = bias.numel();
    const Tensor y = conv(weight, strides, padding, dilations, groups) + bias.reshape(per_channel);
    return relu ? y.relu() : y;
  };
  if (grad::needs({this, &weight, &bias})) return composite();
  require_defined(*this, op);
  require_same_device(*this, weight, op);
  require_same_device(*this, bias, op);
  require_conv_operands(*this, weight, groups);
  const DType t = promote_types(promote_types(dtype_, weight.dtype()), bias.dtype());
  if (!is_float(t)) return composite();
  const ConvGeometry g(*this, weight, strides, padding, dilations);
  const wick_conv_params p = g.params(groups);
  const std::vector<Tensor> in{to(t), weight.to(t), bias.to(t)};
  const wick_op_code code = relu ? WICK_OP_CONV_BIAS_RELU : WICK_OP_CONV_BIAS;
  if (auto out = channels_last_conv(*this, weight, code, p, in, g.out, t)) return *out;
  Tensor out = empty(g.out, t, device());
  if (out.numel() == 0) return out;
  if (run_on_device(code, &p, in, out)) return out;
  return composite();
}

// ---- window reductions and pooling --------------------------------------------------------------

Tensor Tensor::window_reduce(const std::string& op, const std::vector<int64_t>& window,
                             const std::vector<int64_t>& strides,
                             const std::vector<std::pair<int64_t, int64_t>>& padding,
                             const std::vector<int64_t>& dilations) const {
  if (grad::needs(*this))
    return grad::window_reduce(*this, op, window, strides, padding, dilations);
  require_defined(*this, "window_reduce");
  const wick_op_code code = window_code(op, "window_reduce");
  const Window w(*this, window, strides, padding, dilations, "window_reduce");
  // bool has max (any) and min (all); its sums and products count in i64, as sum() does.
  const bool widen =
      dtype_ == DType::Bool && (code == WICK_OP_WINDOW_SUM || code == WICK_OP_WINDOW_PROD);
  const Tensor x = widen ? to(DType::I64) : *this;
  Tensor out = empty(w.out, x.dtype(), device());
  if (out.numel() == 0) return out;
  const wick_window_params p = w.params();
  dispatch(code, &p, {x}, {out});
  return out;
}

Tensor Tensor::window_scatter(const std::string& op, const Tensor& source,
                              const std::vector<int64_t>& window,
                              const std::vector<int64_t>& strides,
                              const std::vector<std::pair<int64_t, int64_t>>& padding) const {
  if (grad::needs({this, &source}))
    return grad::window_scatter(*this, op, source, window, strides, padding);
  require_defined(*this, "window_scatter");
  require_defined(source, "window_scatter");
  require_same_device(*this, source, "window_scatter");
  wick_op_code code;
  if (op == "max")
    code = WICK_OP_WINDOW_SCATTER_MAX;
  else if (op == "min")
    code = WICK_OP_WINDOW_SCATTER_MIN;
  else
    throw Error("window_scatter: unknown selection \"" + op + "\"; use \"max\" or \"min\"");
  if (dtype_ == DType::Bool)
    throw Error("window_scatter: bool operands cannot accumulate; convert them first");
  const Window w(*this, window, strides, padding, {}, "window_scatter");
  if (source.shape() != w.out) {
    throw Error("window_scatter: source " + shape_to_string(source.shape()) +
                " must have the window output's shape " + shape_to_string(w.out) + " for operand " +
                shape_to_string(shape_));
  }
  Tensor out = empty(shape_, dtype_, device());
  if (out.numel() == 0) return out;
  const wick_window_params p = w.params(0.0);
  dispatch(code, &p, {*this, source.to(dtype_)}, {out});
  return out;
}

Tensor Tensor::max_pool2d(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                          const std::vector<int64_t>& padding) const {
  require_defined(*this, "max_pool2d");
  const Pool2d p(*this, kernel, stride, padding, "max_pool2d");
  return window_reduce("max", p.window, p.strides, p.padding);
}

Tensor Tensor::avg_pool2d(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                          const std::vector<int64_t>& padding, bool count_include_pad) const {
  require_defined(*this, "avg_pool2d");
  const Pool2d p(*this, kernel, stride, padding, "avg_pool2d");
  // Integers average to f32; the 16-bit floats sum in f32 and round once at the end.
  const DType t = is_float(dtype_) && !is_half(dtype_) ? dtype_ : DType::F32;
  const Tensor sum = to(t).window_reduce("sum", p.window, p.strides, p.padding);
  Tensor avg;
  const size_t h = static_cast<size_t>(rank() - 2), w = h + 1;
  if (count_include_pad) {
    avg = sum / static_cast<double>(p.window[h] * p.window[w]);
  } else {
    // How many real (unpadded) elements each window covers: a product of per-axis counts.
    auto counts = [&](size_t axis, int64_t extent) {
      std::vector<double> c(static_cast<size_t>(extent));
      for (int64_t i = 0; i < extent; ++i) {
        const int64_t start = i * p.strides[axis] - p.padding[axis].first;
        const int64_t first = std::max<int64_t>(start, 0);
        const int64_t last = std::min<int64_t>(start + p.window[axis], shape_[axis]);
        c[static_cast<size_t>(i)] = static_cast<double>(std::max<int64_t>(last - first, 0));
      }
      return c;
    };
    const int64_t ho = sum.shape()[h], wo = sum.shape()[w];
    const std::vector<double> ch = counts(h, ho), cw = counts(w, wo);
    std::vector<double> c(static_cast<size_t>(ho * wo));
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        c[static_cast<size_t>(i * wo + j)] =
            ch[static_cast<size_t>(i)] * cw[static_cast<size_t>(j)];
    avg = sum / Tensor::from_vector(c, {ho, wo}, device()).to(t);
  }
  return is_half(dtype_) ? avg.to(dtype_) : avg;
}

// ---- softmax ------------------------------------------------------------------------------------

namespace {

Tensor softmax_like(const Tensor& x, int axis, bool log, const char* op) {
  require_defined(x, op);
  require_float(x, op);
  const int a = normalize_axis(axis, x.rank(), op);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  wick_axis_params p{};
  p.struct_size = sizeof(p);
  p.axis = a;
  const wick_op_code code = log ? WICK_OP_LOG_SOFTMAX : WICK_OP_SOFTMAX;
  if (run_on_device(code, &p, {x}, out)) return out;
  // exp(x - max) / sum, in f32 for the 16-bit floats.
  const Tensor xf = is_half(x.dtype()) ? x.to(DType::F32) : x;
  const Tensor shifted = xf - xf.max({a}, true);
  const Tensor e = shifted.exp();
  const Tensor y = log ? shifted - e.sum({a}, true).log() : e / e.sum({a}, true);
  return y.to(x.dtype());
}

// A 0-d tensor has one axis (0 or -1), as in PyTorch: a line of one element, where x - max is 0
// (NaN for NaN and +-inf), so softmax is exp(0) = 1 and log_softmax 0, exactly.
Tensor softmax_of_scalar(const Tensor& x, int axis, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  require_float(x, op);
  normalize_axis(axis, 1, op);
  const Tensor shifted = x - x;
  return log ? shifted : shifted.exp();
}

}  // namespace

Tensor Tensor::softmax(int axis) const {
  if (defined() && rank() == 0) return softmax_of_scalar(*this, axis, false);
  if (grad::needs(*this)) return grad::softmax(*this, axis, false);
  return softmax_like(*this, axis, false, "softmax");
}
Tensor Tensor::log_softmax(int axis) const {
  if (defined() && rank() == 0) return softmax_of_scalar(*this, axis, true);
  if (grad::needs(*this)) return grad::softmax(*this, axis, true);
  return softmax_like(*this, axis, true, "log_softmax");
}

// ---- normalisation ------------------------------------------------------------------------------

namespace {

// weight (and bias) as x's dtype, checked against the normalised shape; a bias without a weight
// gets a weight of ones, since the plugin takes them in order.
std::vector<Tensor> norm_inputs(const Tensor& x, const Shape& normalized, const Tensor& weight,
                                const Tensor& bias, const char* op) {
  std::vector<Tensor> in{x};
  auto add = [&](const Tensor& t, const char* what) {
    require_same_device(x, t, op);
    if (t.shape() != normalized) {
      throw Error(std::string(op) + ": " + what + " " + shape_to_string(t.shape()) +
                  " must have shape " + shape_to_string(normalized) + " for input " +
                  shape_to_string(x.shape()));
    }
    in.push_back(t.to(x.dtype()));
  };
  if (weight.defined())
    add(weight, "weight");
  else if (bias.defined())
    in.push_back(Tensor::ones(normalized, x.dtype(), x.device()));
  if (bias.defined()) add(bias, "bias");
  return in;
}

}  // namespace

Tensor Tensor::layer_norm(int normalized_rank, const Tensor& weight, const Tensor& bias,
                          double eps) const {
  if (grad::needs({this, &weight, &bias}))
    return grad::layer_norm(*this, normalized_rank, weight, bias, eps);
  const char* op = "layer_norm";
  require_defined(*this, op);
  require_float(*this, op);
  if (normalized_rank < 1 || normalized_rank > rank()) {
    throw Error("layer_norm: normalized_rank " + std::to_string(normalized_rank) +
                " must be in [1, " + std::to_string(rank()) + "] for input " +
                shape_to_string(shape_));
  }
  const Shape normalized(shape_.end() - normalized_rank, shape_.end());
  const std::vector<Tensor> in = norm_inputs(*this, normalized, weight, bias, op);
  Tensor out = empty(shape_, dtype_, device());
  if (out.numel() == 0) return out;
  const wick_norm_params p = norm_params(normalized_rank, eps);
  if (run_on_device(WICK_OP_LAYER_NORM, &p, in, out)) return out;
  std::vector<int> axes(static_cast<size_t>(normalized_rank));
  std::iota(axes.begin(), axes.end(), rank() - normalized_rank);
  const Tensor x = is_half(dtype_) ? to(DType::F32) : *this;
  const Tensor centred = x - x.mean(axes, true);
  Tensor y = centred * ((centred * centred).mean(axes, true) + eps).rsqrt();
  if (in.size() > 1) y = y * in[1].to(x.dtype());
  if (in.size() > 2) y = y + in[2].to(x.dtype());
  return y.to(dtype_);
}

Tensor Tensor::rms_norm(const Tensor& weight, double eps) const {
  if (grad::needs({this, &weight})) return grad::rms_norm(*this, weight, eps);
  const char* op = "rms_norm";
  require_defined(*this, op);
  require_float(*this, op);
  if (rank() < 1) throw Error("rms_norm: needs rank >= 1, got a 0-d tensor");
  const Shape normalized{shape_.back()};
  const std::vector<Tensor> in = norm_inputs(*this, normalized, weight, Tensor(), op);
  Tensor out = empty(shape_, dtype_, device());
  if (out.numel() == 0) return out;
  const wick_norm_params p = norm_params(1, eps);
  if (run_on_device(WICK_OP_RMS_NORM, &p, in, out)) return out;
  const Tensor x = is_half(dtype_) ? to(DType::F32) : *this;
  Tensor y = x * ((x * x).mean({-1}, true) + eps).rsqrt();
  if (in.size() > 1) y = y * in[1].to(x.dtype());
  return y.to(dtype_);
}

Tensor Tensor::batch_norm(const Tensor& mean, const Tensor& var, const Tensor& weight,
                          const Tensor& bias, double eps) const {
  if (grad::needs({this, &mean, &var, &weight, &bias}))
    return grad::batch_norm(*this, mean, var, weight, bias, eps);
  const char* op = "batch_norm";
  require_defined(*this, op);
  require_defined(mean, op);
  require_defined(var, op);
  require_float(*this, op);
  if (rank() < 2)
    throw Error("batch_norm: input must be [N, C, ...], got " + shape_to_string(shape_));
  const Shape channels{shape_[1]};
  std::vector<Tensor> in{*this};
  for (const auto& [t, what] : {std::pair{&mean, "mean"}, std::pair{&var, "var"}}) {
    require_same_device(*this, *t, op);
    if (t->shape() != channels) {
      throw Error(std::string("batch_norm: ") + what + " " + shape_to_string(t->shape()) +
                  " must have shape " + shape_to_string(channels) + " for input " +
                  shape_to_string(shape_));
    }
    in.push_back(t->to(dtype_));
  }
  const std::vector<Tensor> affine = norm_inputs(*this, channels, weight, bias, op);
  in.insert(in.end(), affine.begin() + 1, affine.end());
  Tensor out = empty(shape_, dtype_, device());
  if (out.numel() == 0) return out;
  const wick_norm_params p = norm_params(1, eps);
  if (run_on_device(WICK_OP_BATCH_NORM, &p, in, out)) return out;
  // Per-channel vectors as [C, 1, ...] so that they broadcast against [N, C, ...].
  Shape per_channel(static_cast<size_t>(rank() - 1), 1);
  per_channel[0] = shape_[1];
  const DType t = is_half(dtype_) ? DType::F32 : dtype_;
  auto channel = [&](const Tensor& v) { return v.to(t).reshape(per_channel); };
  Tensor y = (to(t) - channel(in[1])) * (channel(in[2]) + eps).rsqrt();
  if (in.size() > 3) y = y * channel(in[3]);
  if (in.size() > 4) y = y + channel(in[4]);
  return y.to(dtype_);
}

// ---- attention ----------------------------------------------------------------------------------

Tensor Tensor::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                         std::optional<double> scale, bool causal) {
  if (grad::needs({&q, &k, &v, &mask})) return grad::attention(q, k, v, mask, scale, causal);
  const char* op = "attention";
  for (const Tensor* t : {&q, &k, &v}) require_defined(*t, op);
  require_same_device(q, k, op);
  require_same_device(q, v, op);
  require_float(q, op);
  auto shapes = [&] {
    return shape_to_string(q.shape()) + ", " + shape_to_string(k.shape()) + " and " +
           shape_to_string(v.shape());
  };
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2) {
    throw Error("attention: q [..., L, E], k [..., S, E] and v [..., S, Ev] need rank >= 2; got " +
                shapes());
  }
  const int64_t l = q.dim(-2), e = q.dim(-1), s = k.dim(-2), ev = v.dim(-1);
  if (k.dim(-1) != e || v.dim(-2) != s) {
    throw Error("attention: q [..., L, E], k [..., S, E] and v [..., S, Ev] disagree: " + shapes());
  }
  const DType t = q.dtype();
  const Shape qb(q.shape().begin(), q.shape().end() - 2);
  Shape batch = broadcast_shapes(qb, Shape(k.shape().begin(), k.shape().end() - 2), op);
  batch = broadcast_shapes(batch, Shape(v.shape().begin(), v.shape().end() - 2), op);
  auto full = [&](Shape b, int64_t rows, int64_t cols) {
    b.push_back(rows);
    b.push_back(cols);
    return b;
  };
  std::vector<Tensor> in{q.broadcast_to(full(batch, l, e)), k.to(t).broadcast_to(full(batch, s, e)),
                         v.to(t).broadcast_to(full(batch, s, ev))};
  if (mask.defined()) {
    require_same_device(q, mask, op);
    // A bool mask says where to attend: true -> 0, false -> -inf.
    const Tensor additive =
        mask.dtype() == DType::Bool
            ? Tensor::where(mask, scalar_tensor(0.0, t, q.device()),
                            scalar_tensor(-std::numeric_limits<double>::infinity(), t, q.device()))
            : mask.to(t);
    const Shape ms = broadcast_shapes(additive.shape(), full(batch, l, s), op);
    if (ms != full(batch, l, s)) {
      throw Error("attention: mask " + shape_to_string(mask.shape()) + " does not broadcast to " +
                  shape_to_string(full(batch, l, s)));
    }
    in.push_back(additive.broadcast_to(ms));
  }
  Tensor out = empty(full(batch, l, ev), t, q.device());
  if (out.numel() == 0) return out;
  wick_attention_params p{};
  p.struct_size = sizeof(p);
  p.scale = scale.value_or(1.0 / std::sqrt(static_cast<double>(e)));
  p.causal = causal ? 1 : 0;
  if (run_on_device(WICK_OP_ATTENTION, &p, in, out)) return out;
  // softmax(q k^T * scale + mask) v, in f32 for the 16-bit floats.
  const DType ct = is_half(t) ? DType::F32 : t;
  Tensor scores = in[0].to(ct).matmul(in[1].to(ct).t()) * p.scale;
  if (in.size() > 3) scores = scores + in[3].to(ct);
  if (causal) {
    // Top-left aligned: query i sees keys j <= i.
    std::vector<float> c(static_cast<size_t>(l * s), 0.0f);
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = i + 1; j < s; ++j)
        c[static_cast<size_t>(i * s + j)] = -std::numeric_limits<float>::infinity();
    scores = scores + Tensor::from_vector(c, {l, s}, q.device()).to(ct);
  }
  // Only a mask can leave a row without a key (causal rows always see key 0).
  const Tensor weights = in.size() > 3 ? attention_weights(scores) : scores.softmax(-1);
  return weights.matmul(in[2].to(ct)).to(t);
}

}  // namespace wick
