// autograd_rules_nn.cpp — backward rules of matmul, convolution, window reductions and pooling,
// softmax and the normalisations (autograd_rules.hpp). The transposes of convolution and window
// sums are themselves a convolution and a window sum over the gradient spread out by the strides;
// convolution's run as the device's own gradient ops where its plugin has them.
#include "tensor/autograd_rules.hpp"

#include <wick/direct.hpp>
#include <wick/dispatch.hpp>
#include "tensor/ops_common.hpp"
#include <wick/shape.hpp>

#include <cmath>
#include <limits>
#include <numeric>

namespace wick::detail::grad {

namespace {

// A per-axis argument as the ops take it: empty gives `fallback`, one value is repeated.
std::vector<int64_t> per_axis(const std::vector<int64_t>& v, size_t n, int64_t fallback) {
  if (v.empty()) return std::vector<int64_t>(n, fallback);
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  return v;
}

// Whether t is the transpose of a contiguous matrix (then a gradient is best made transposed).
bool transposed_contiguous(const Tensor& t) {
  return t.rank() >= 2 && !t.is_contiguous() && t.transpose(-2, -1).is_contiguous();
}

// g [N, C, s...] (or any axes from `first` on) spread by strides: g's elements at multiples of
// the stride, zeros between. g itself when every stride is 1.
Tensor spread(const Tensor& g, size_t first, const std::vector<int64_t>& strides) {
  bool any = false;
  Shape shape = g.shape();
  for (size_t i = 0; i < strides.size(); ++i) {
    const int64_t e = shape[first + i];
    any = any || (strides[i] > 1 && e > 1);
    shape[first + i] = e > 0 ? (e - 1) * strides[i] + 1 : 0;
  }
  if (!any) return g;
  Tensor out = Tensor::zeros(shape, g.dtype(), g.device());
  Tensor view = out;
  for (size_t i = 0; i < strides.size(); ++i)
    view = view.slice(static_cast<int>(first + i), 0, std::nullopt, strides[i]);
  if (g.numel() > 0) dispatch(WICK_OP_COPY, nullptr, {g}, {view});
  return out;
}

// The padding of the transposed window op over the spread gradient (whose extent per axis is
// `spread_len`) that gives back `in` elements: (k - 1) d - lo before and in - spread_len + lo
// after. Negative amounts are not padded but cropped off the result afterwards (`crop`).
struct TransposedPadding {
  std::vector<int64_t> lo, hi, crop;
  TransposedPadding(const std::vector<int64_t>& in, const std::vector<int64_t>& spread_len,
                    const std::vector<int64_t>& k, const std::vector<int64_t>& d,
                    const std::vector<int64_t>& fwd_lo) {
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t l = (k[i] - 1) * d[i] - fwd_lo[i], h = in[i] - spread_len[i] + fwd_lo[i];
      lo.push_back(std::max<int64_t>(l, 0));
      hi.push_back(std::max<int64_t>(h, 0));
      crop.push_back(lo.back() - l);
    }
  }
  // The result cut to `in` elements per axis, from axis `first` on.
  Tensor cut(const Tensor& r, size_t first, const std::vector<int64_t>& in) const {
    Tensor out = r;
    for (size_t i = 0; i < in.size(); ++i) {
      if (crop[i] != 0 || r.shape()[first + i] != in[i])
        out = out.narrow(static_cast<int>(first + i), crop[i], in[i]);
    }
    return out;
  }
};

}  // namespace

// ---- matmul -------------------------------------------------------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor y = without_grad([&] { return a.matmul(b); });
  return record("matmul", y, {&a, &b}, [ad = saved(a), bd = saved(b)](const Tensor& g,
                                                                           const Node& node) {
    // 1-D operands as matrices, and g with their axes back.
    const Tensor a2 = ad.rank() == 1 ? ad.unsqueeze(0) : ad;
    const Tensor b2 = bd.rank() == 1 ? bd.unsqueeze(-1) : bd;
    Tensor g2 = g;
    if (bd.rank() == 1) g2 = g2.unsqueeze(-1);
    if (ad.rank() == 1) g2 = g2.unsqueeze(-2);
    Grads out(2);
    // An operand stored transposed (x.matmul(w.t())) gets its gradient made transposed too, so
    // that it comes back to the stored layout without a copy.
    if (node.wants(0)) {
      const Tensor ga = transposed_contiguous(a2) ? b2.matmul(g2.transpose(-2, -1)).transpose(-2, -1)
                                                  : g2.matmul(b2.transpose(-2, -1));
      out[0] = sum_to(ga, a2.shape()).reshape(ad.shape());
    }
    if (node.wants(1)) {
      const Tensor gb = transposed_contiguous(b2) ? g2.transpose(-2, -1).matmul(a2).transpose(-2, -1)
                                                  : a2.transpose(-2, -1).matmul(g2);
      out[1] = sum_to(gb, b2.shape()).reshape(bd.shape());
    }
    return out;
  });
}

// ---- convolution --------------------------------------------------------------------------------

namespace {

Shape with_spatial(Shape lead, const Tensor& t, size_t from) {
  for (size_t i = from; i < static_cast<size_t>(t.rank()); ++i) lead.push_back(t.shape()[i]);
  return lead;
}

// Conv's gradient op `op` (WICK_OP_CONV_GRAD_INPUT or _WEIGHT) into a new tensor of `shape`, when
// the device's plugin runs it for these operands; an undefined tensor when not (an older plugin,
// a device without the kernel, mixed dtypes): the caller then composes it from forward
// convolutions, so no device falls back to the CPU for it.
Tensor conv_grad_on_device(wick_op_code op, const ConvSpec& spec, const Tensor& a, const Tensor& b,
                           const Shape& shape) {
  if (a.dtype() != b.dtype() || !(a.device() == b.device())) return {};
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  const wick_conv_params p = spec.params();
  if (query_op_direct(out.device(), op, &p, {a, b}, {out}) != WICK_SUPPORT_YES) return {};
  dispatch(op, &p, {a, b}, {out});
  return out;
}

}  // namespace

// d x composed: the gradient spread by the strides, convolved (stride 1, dilation d) with the
// weight flipped in space and with in/out channels swapped within each group.
Tensor conv_grad_input_composed(const ConvSpec& c, const Tensor& g, const Tensor& w,
                                const Shape& x_shape) {
  const int64_t ch = x_shape[1], o = w.shape()[0];
  const int64_t cg = ch / c.groups, og = o / c.groups;
  std::vector<int64_t> in, k, spread_len;
  for (size_t i = 0; i < c.r; ++i) {
    in.push_back(x_shape[2 + i]);
    k.push_back(w.shape()[2 + i]);
    const int64_t out_len = g.shape()[2 + i];
    spread_len.push_back(out_len > 0 ? (out_len - 1) * c.s[i] + 1 : 0);
  }
  Tensor wt = w.reshape(with_spatial({c.groups, og, cg}, w, 2)).transpose(1, 2);
  wt = wt.reshape(with_spatial({ch, og}, w, 2));
  for (size_t i = 0; i < c.r; ++i) wt = wt.flip(static_cast<int>(2 + i));
  const TransposedPadding tp(in, spread_len, k, c.d, c.lo);
  std::vector<int64_t> pad;
  for (size_t i = 0; i < c.r; ++i) pad.insert(pad.end(), {tp.lo[i], tp.hi[i]});
  const Tensor gx = spread(g, 2, c.s).conv(wt.contiguous(), {}, pad, c.d, c.groups);
  return tp.cut(gx, 2, in);
}

// d weight composed: a convolution of the input (batch and channel axes swapped, channels as
// (group, n)) by the gradient (as (group, o) x n kernels), stride d and dilation s.
Tensor conv_grad_weight_composed(const ConvSpec& c, const Tensor& x, const Tensor& g,
                                 const Shape& w_shape) {
  const int64_t n = x.shape()[0], ch = x.shape()[1], o = w_shape[0];
  const int64_t cg = ch / c.groups, og = o / c.groups;
  std::vector<int> xp{2, 1, 0}, gp{1, 2, 0};
  for (size_t i = 0; i < c.r; ++i) {
    xp.push_back(static_cast<int>(3 + i));
    gp.push_back(static_cast<int>(3 + i));
  }
  const Tensor xs = x.reshape(with_spatial({n, c.groups, cg}, x, 2))
                        .permute(xp)
                        .reshape(with_spatial({cg, c.groups * n}, x, 2));
  const Tensor gs = g.reshape(with_spatial({n, c.groups, og}, g, 2))
                        .permute(gp)
                        .reshape(with_spatial({o, n}, g, 2));
  std::vector<int64_t> pad;
  for (size_t i = 0; i < c.r; ++i) pad.insert(pad.end(), {c.lo[i], c.hi[i]});
  Tensor gw = xs.conv(gs, c.d, pad, c.s, c.groups);
  for (size_t i = 0; i < c.r; ++i) gw = gw.narrow(static_cast<int>(2 + i), 0, w_shape[2 + i]);
  return gw.transpose(0, 1);
}

ConvSpec ConvSpec::of(size_t r, const std::vector<int64_t>& strides,
                      const std::vector<int64_t>& padding, const std::vector<int64_t>& dilations,
                      int64_t groups) {
  ConvSpec c;
  c.r = r;
  c.groups = groups;
  c.s = per_axis(strides, r, 1);
  c.d = per_axis(dilations, r, 1);
  if (padding.size() == 2 * r) {
    for (size_t i = 0; i < r; ++i) {
      c.lo.push_back(padding[2 * i]);
      c.hi.push_back(padding[2 * i + 1]);
    }
  } else {
    c.lo = c.hi = per_axis(padding, r, 0);
  }
  return c;
}

wick_conv_params ConvSpec::params() const {
  wick_conv_params p{};
  p.struct_size = sizeof(p);
  p.spatial_rank = static_cast<int32_t>(r);
  p.strides = s.data();
  p.padding_lo = lo.data();
  p.padding_hi = hi.data();
  p.dilations = d.data();
  p.input_dilations = nullptr;
  p.groups = groups;
  return p;
}

Tensor conv(const Tensor& x, const Tensor& weight, const std::vector<int64_t>& strides,
            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilations,
            int64_t groups) {
  Tensor y = without_grad([&] { return x.conv(weight, strides, padding, dilations, groups); });
  const ConvSpec c =
      ConvSpec::of(static_cast<size_t>(x.rank() - 2), strides, padding, dilations, groups);
  return record("conv", y, {&x, &weight},
                [c, xd = saved(x), wd = saved(weight)](const Tensor& g, const Node& node) {
                  // The device's own gradient kernels (cpu-onednn: oneDNN's backward-data and
                  // backward-weights primitives) where it has them, else forward convolutions.
                  Grads result(2);
                  if (node.wants(0)) {
                    result[0] = conv_grad_on_device(WICK_OP_CONV_GRAD_INPUT, c, g, wd, xd.shape());
                    if (!result[0].defined())
                      result[0] = conv_grad_input_composed(c, g, wd, xd.shape());
                  }
                  if (node.wants(1)) {
                    result[1] = conv_grad_on_device(WICK_OP_CONV_GRAD_WEIGHT, c, xd, g, wd.shape());
                    if (!result[1].defined())
                      result[1] = conv_grad_weight_composed(c, xd, g, wd.shape());
                  }
                  return result;
                });
}

// ---- window reductions --------------------------------------------------------------------------

Tensor window_reduce(const Tensor& x, const std::string& op, const std::vector<int64_t>& window,
                     const std::vector<int64_t>& strides,
                     const std::vector<std::pair<int64_t, int64_t>>& padding,
                     const std::vector<int64_t>& dilations) {
  Tensor y = without_grad([&] { return x.window_reduce(op, window, strides, padding, dilations); });
  if (!is_float(y.dtype())) return y;
  const size_t r = static_cast<size_t>(x.rank());
  const std::vector<int64_t> s = per_axis(strides, r, 1), d = per_axis(dilations, r, 1);
  std::vector<int64_t> lo(r, 0), hi(r, 0);
  for (size_t i = 0; i < padding.size() && i < r; ++i) {
    lo[i] = padding[i].first;
    hi[i] = padding[i].second;
  }
  const bool dilated = std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 1; });
  if (op == "max" || op == "min") {
    if (dilated) {
      return record_unsupported("window_reduce", y, {&x},
                                "max and min windows are differentiable only without dilation");
    }
    // Each window's gradient goes where its extreme is (window_scatter's first one).
    return record("window_reduce", y, {&x},
                  [op, window, s, padding, xd = saved(x)](const Tensor& g, const Node&) {
                    return Grads{xd.window_scatter(op, g, window, s, padding)};
                  });
  }
  if (op != "sum") {
    return record_unsupported("window_reduce", y, {&x}, "\"prod\" windows are not differentiable");
  }
  return record("window_reduce", y, {&x},
                [window, s, d, lo, xs = x.shape()](const Tensor& g, const Node&) {
                  // The transpose of a window sum: a window sum of the spread gradient.
                  std::vector<int64_t> spread_len;
                  for (size_t i = 0; i < xs.size(); ++i)
                    spread_len.push_back(g.shape()[i] > 0 ? (g.shape()[i] - 1) * s[i] + 1 : 0);
                  const TransposedPadding tp(xs, spread_len, window, d, lo);
                  std::vector<std::pair<int64_t, int64_t>> pad;
                  for (size_t i = 0; i < xs.size(); ++i) pad.emplace_back(tp.lo[i], tp.hi[i]);
                  const Tensor gx = spread(g, 0, s).window_reduce("sum", window, {}, pad, d);
                  return Grads{tp.cut(gx, 0, xs)};
                });
}

Tensor window_scatter(const Tensor& x, const std::string& op, const Tensor& source,
                      const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                      const std::vector<std::pair<int64_t, int64_t>>& padding) {
  Tensor y = without_grad([&] { return x.window_scatter(op, source, window, strides, padding); });
  if (!is_float(y.dtype())) return y;
  return record_unsupported("window_scatter", y, {&x, &source},
                            "it is itself the backward of max/min windows");
}

// ---- softmax and normalisation ------------------------------------------------------------------

Tensor softmax(const Tensor& x, int axis, bool log) {
  Tensor y = without_grad([&] { return log ? x.log_softmax(axis) : x.softmax(axis); });
  const int a = normalize_axis(axis, x.rank(), log ? "log_softmax" : "softmax");
  return record(log ? "log_softmax" : "softmax", y, {&x},
                [a, log, yd = saved(y)](const Tensor& g, const Node&) {
                  if (log) return Grads{g - yd.exp() * g.sum({a}, true)};
                  return Grads{yd * (g - (g * yd).sum({a}, true))};
                });
}

namespace {

std::vector<int> axes_range(int from, int to) {
  std::vector<int> axes(static_cast<size_t>(std::max(to - from, 0)));
  std::iota(axes.begin(), axes.end(), from);
  return axes;
}

}  // namespace

Tensor layer_norm(const Tensor& x, int normalized_rank, const Tensor& weight, const Tensor& bias,
                  double eps) {
  Tensor y = without_grad([&] { return x.layer_norm(normalized_rank, weight, bias, eps); });
  return record("layer_norm", y, {&x, &weight, &bias},
                [normalized_rank, eps, xd = saved(x), wd = saved(weight)](const Tensor& g,
                                                                              const Node& node) {
                  const std::vector<int> norm = axes_range(xd.rank() - normalized_rank, xd.rank());
                  const std::vector<int> lead = axes_range(0, xd.rank() - normalized_rank);
                  const Tensor centred = xd - xd.mean(norm, true);
                  const Tensor rstd = ((centred * centred).mean(norm, true) + eps).rsqrt();
                  const Tensor xhat = centred * rstd;
                  const Tensor gh = wd.defined() ? g * wd : g;
                  Grads out(3);
                  if (node.wants(0)) {
                    out[0] = rstd * (gh - gh.mean(norm, true) - xhat * (gh * xhat).mean(norm, true));
                  }
                  if (node.wants(1)) out[1] = (g * xhat).sum(lead);
                  if (node.wants(2)) out[2] = g.sum(lead);
                  return out;
                });
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  Tensor y = without_grad([&] { return x.rms_norm(weight, eps); });
  return record("rms_norm", y, {&x, &weight},
                [eps, xd = saved(x), wd = saved(weight)](const Tensor& g, const Node& node) {
                  const std::vector<int> lead = axes_range(0, xd.rank() - 1);
                  const Tensor rms = ((xd * xd).mean({-1}, true) + eps).rsqrt();
                  const Tensor xhat = xd * rms;
                  const Tensor gh = wd.defined() ? g * wd : g;
                  Grads out(2);
                  if (node.wants(0)) out[0] = rms * (gh - xhat * (gh * xhat).mean({-1}, true));
                  if (node.wants(1)) out[1] = (g * xhat).sum(lead);
                  return out;
                });
}

Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight,
                  const Tensor& bias, double eps) {
  Tensor y = without_grad([&] { return x.batch_norm(mean, var, weight, bias, eps); });
  return record(
      "batch_norm", y, {&x, &mean, &var, &weight, &bias},
      [eps, xd = saved(x), md = saved(mean), vd = saved(var), wd = saved(weight)](
          const Tensor& g, const Node& node) {
        // Per-channel vectors as [C, 1, ...] against [N, C, ...]; sums over every axis but 1.
        Shape per_channel(static_cast<size_t>(xd.rank() - 1), 1);
        per_channel[0] = xd.shape()[1];
        std::vector<int> others{0};
        for (int i = 2; i < xd.rank(); ++i) others.push_back(i);
        auto channel = [&](const Tensor& v) { return v.to(g.dtype()).reshape(per_channel); };
        const Tensor scale = (channel(vd) + eps).rsqrt();
        const Tensor centred = xd - channel(md);
        const Tensor gs = wd.defined() ? g * (channel(wd) * scale) : g * scale;
        Grads out(5);
        if (node.wants(0)) out[0] = gs;
        if (node.wants(1)) out[1] = gs.sum(others).neg();
        if (node.wants(2))
          out[2] = (gs * centred).sum(others) * (scale.sqr().reshape({-1}) * -0.5);
        if (node.wants(3)) out[3] = (g * centred * scale).sum(others);
        if (node.wants(4)) out[4] = g.sum(others);
        return out;
      });
}

// ---- attention ----------------------------------------------------------------------------------

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 std::optional<double> scale, bool causal) {
  // Differentiated through its composite form: every op below records itself. The fused op runs
  // first without grad, so that shapes are checked with its own messages.
  without_grad([&] { return Tensor::attention(q, k, v, mask, scale, causal); });
  const DType t = q.dtype();
  const double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.dim(-1))));
  Tensor scores = q.matmul(k.to(t).transpose(-2, -1)) * sc;
  if (mask.defined()) {
    const Tensor additive =
        mask.dtype() == DType::Bool
            ? Tensor::where(mask, scalar_tensor(0.0, t, q.device()),
                            scalar_tensor(-std::numeric_limits<double>::infinity(), t, q.device()))
            : mask.to(t);
    scores = scores + additive;
  }
  if (causal) {
    const int64_t l = q.dim(-2), s = k.dim(-2);
    std::vector<uint8_t> above(static_cast<size_t>(l * s), 0);
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = i + 1; j < s; ++j) above[static_cast<size_t>(i * s + j)] = 1;
    const Tensor hide = Tensor::from_vector(above, {l, s}, q.device()).to(DType::Bool);
    scores = Tensor::where(hide, scalar_tensor(-std::numeric_limits<double>::infinity(), t, q.device()),
                           scores);
  }
  // A fully masked row: output 0, gradient 0 (attention_weights), as the fused kernels.
  const Tensor weights = mask.defined() ? attention_weights(scores) : scores.softmax(-1);
  return weights.matmul(v.to(t));
}

}  // namespace wick::detail::grad
