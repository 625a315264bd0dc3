// autograd_rules.cpp — backward rules of the views, elementwise ops, reductions, scans and
// indexing ops (autograd_rules.hpp). Each function runs its op without grad and records it; the
// rule gets the output's gradient g and returns one gradient per input, built from Tensor ops.
// Saved tensors are captured through saved(): detached, so that no node keeps its own output's
// record alive, and checked before the rule runs for in-place writes since the forward pass.
#include "tensor/autograd_rules.hpp"

#include <wick/dispatch.hpp>
#include "tensor/ops_common.hpp"
#include <wick/shape.hpp>

#include <wick/sdk/ops.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace wick::detail::grad {

namespace {

Tensor scalar_like(double v, const Tensor& x) {
  return scalar_tensor(v, x.dtype(), x.device());
}

// A zero tensor of `shape` with g written into the view `select` makes of it (select gives a view
// of g's shape with positive strides).
template <class Select>
Tensor embed(const Tensor& g, const Shape& shape, Select&& select) {
  Tensor out = Tensor::zeros(shape, g.dtype(), g.device());
  if (g.numel() > 0) dispatch(WICK_OP_COPY, nullptr, {g}, {select(out)});
  return out;
}

// The shape of a reduction's output with keepdim, from x's shape and the reduced axes.
Shape kept_shape(const Shape& shape, const std::vector<int32_t>& axes) {
  Shape kept = shape;
  for (int32_t a : axes) kept[static_cast<size_t>(a)] = 1;
  return kept;
}

std::vector<int> inverse(const std::vector<int>& perm) {
  std::vector<int> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int>(i);
  return inv;
}

}  // namespace

// ---- views and copies ---------------------------------------------------------------------------

Tensor reshape(const Tensor& x, const Shape& shape) {
  Tensor y = without_grad([&] { return x.reshape(shape); });
  return record("reshape", y, {&x}, [xs = x.shape()](const Tensor& g, const Node&) {
    return Grads{g.reshape(xs)};
  });
}

Tensor permute(const Tensor& x, const std::vector<int>& axes) {
  Tensor y = without_grad([&] { return x.permute(axes); });
  std::vector<int> norm;
  for (int a : axes) norm.push_back(normalize_axis(a, x.rank(), "permute"));
  return record("permute", y, {&x}, [inv = inverse(norm)](const Tensor& g, const Node&) {
    return Grads{g.permute(inv)};
  });
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  Tensor y = without_grad([&] { return x.broadcast_to(shape); });
  return record("broadcast_to", y, {&x}, [xs = x.shape()](const Tensor& g, const Node&) {
    return Grads{sum_to(g, xs)};
  });
}

Tensor slice(const Tensor& x, int axis, std::optional<int64_t> start, std::optional<int64_t> stop,
             int64_t step) {
  Tensor y = without_grad([&] { return x.slice(axis, start, stop, step); });
  const int a = normalize_axis(axis, x.rank(), "slice");
  return record("slice", y, {&x}, [=, xs = x.shape()](const Tensor& g, const Node&) {
    // The same slice of a zero tensor; a backward step is walked forwards with g flipped.
    return Grads{embed(step > 0 ? g : g.flip(a), xs, [&](const Tensor& z) {
      const Tensor v = z.slice(a, start, stop, step);
      return step > 0 ? v : v.flip(a);
    })};
  });
}

Tensor squeeze(const Tensor& x, std::optional<int> axis) {
  Tensor y = without_grad([&] { return axis ? x.squeeze(*axis) : x.squeeze(); });
  return record("squeeze", y, {&x}, [xs = x.shape()](const Tensor& g, const Node&) {
    return Grads{g.reshape(xs)};
  });
}

Tensor unsqueeze(const Tensor& x, int axis) {
  Tensor y = without_grad([&] { return x.unsqueeze(axis); });
  const int a = normalize_axis(axis, x.rank() + 1, "unsqueeze");
  return record("unsqueeze", y, {&x},
                [a](const Tensor& g, const Node&) { return Grads{g.squeeze(a)}; });
}

Tensor clone(const Tensor& x) {
  Tensor y = without_grad([&] { return x.clone(); });
  return record("clone", y, {&x}, [](const Tensor& g, const Node&) { return Grads{g}; });
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  Tensor y = without_grad([&] { return x.to(dtype); });
  if (!is_float(dtype)) return y;  // an integer or bool copy is a constant
  return record("to", y, {&x}, [](const Tensor& g, const Node&) { return Grads{g}; });
}

Tensor to_device(const Tensor& x, const Device& device) {
  Tensor y = without_grad([&] { return x.to(device); });
  return record("to", y, {&x}, [from = x.device()](const Tensor& g, const Node&) {
    return Grads{g.to(from)};
  });
}

// ---- elementwise --------------------------------------------------------------------------------

namespace {

constexpr double kPi = 3.14159265358979323846;

// d op(x) / dx times g, from x and y = op(x).
Tensor unary_rule(wick_op_code op, double alpha, const Tensor& x, const Tensor& y,
                  const Tensor& g) {
  switch (op) {
    case WICK_OP_NEG: return g.neg();
    case WICK_OP_ABS: return g * x.sign();
    case WICK_OP_SIGN:
    case WICK_OP_FLOOR:
    case WICK_OP_CEIL:
    case WICK_OP_ROUND: return zeros_like(g);
    case WICK_OP_EXP: return g * y;
    case WICK_OP_LOG: return g / x;
    case WICK_OP_SQRT: return g / y * 0.5;
    case WICK_OP_RSQRT: return g * (y / x) * -0.5;
    case WICK_OP_RECIP: return g * y.sqr() * -1.0;
    case WICK_OP_SQR: return g * x * 2.0;
    case WICK_OP_TANH: return g * (1.0 - y.sqr());
    case WICK_OP_ERF: return g * x.sqr().neg().exp() * (2.0 / std::sqrt(kPi));
    case WICK_OP_ERFC: return g * x.sqr().neg().exp() * (-2.0 / std::sqrt(kPi));
    case WICK_OP_ERFINV: return g * y.sqr().exp() * (std::sqrt(kPi) / 2.0);
    case WICK_OP_SIGMOID: return g * y * (1.0 - y);
    case WICK_OP_SIN: return g * x.cos();
    case WICK_OP_COS: return g * x.sin() * -1.0;
    case WICK_OP_TAN: return g * (y.sqr() + 1.0);
    case WICK_OP_ASIN: return g * (1.0 - x.sqr()).rsqrt();
    case WICK_OP_ACOS: return g * (1.0 - x.sqr()).rsqrt() * -1.0;
    case WICK_OP_ATAN: return g / (x.sqr() + 1.0);
    case WICK_OP_SINH: return g * x.cosh();
    case WICK_OP_COSH: return g * x.sinh();
    case WICK_OP_ASINH: return g * (x.sqr() + 1.0).rsqrt();
    case WICK_OP_ACOSH: return g * (x.sqr() - 1.0).rsqrt();
    case WICK_OP_ATANH: return g / (1.0 - x.sqr());
    case WICK_OP_EXPM1: return g * (y + 1.0);
    case WICK_OP_LOG1P: return g / (x + 1.0);
    case WICK_OP_CBRT: return g / (y.sqr() * 3.0);
    // relu's output is 0 or positive, so its sign is the 0/1 mask (0 at x = 0).
    case WICK_OP_RELU: return g * y.sign();
    case WICK_OP_GELU_TANH: {
      const double c = std::sqrt(2.0 / kPi), k = 0.044715;
      const Tensor t = ((x + x * x.sqr() * k) * c).tanh();
      return g * ((t + 1.0) * 0.5 + x * (1.0 - t.sqr()) * (x.sqr() * (3.0 * k) + 1.0) * (0.5 * c));
    }
    case WICK_OP_GELU_ERF:
      return g * ((x * (1.0 / std::sqrt(2.0))).erf() * 0.5 + 0.5 +
                  x * (x.sqr() * -0.5).exp() * (1.0 / std::sqrt(2.0 * kPi)));
    case WICK_OP_SILU: {
      const Tensor s = x.sigmoid();
      return g * s * (x * (1.0 - s) + 1.0);
    }
    case WICK_OP_ELU:
      return Tensor::where(x.gt(scalar_like(0.0, x)), g, g * (y + alpha));
    case WICK_OP_AFFINE: return g * alpha;
    case WICK_OP_POWF:
      return alpha == 0.0 ? zeros_like(g) : g * x.powf(alpha - 1.0) * alpha;
    default:
      throw Error(std::string("backward: ") + sdk::op_name(op) + " has no backward rule");
  }
}

// The gradients of a binary op's operands (before summing broadcast axes), where wanted.
Grads binary_rule(wick_op_code op, const Tensor& a, const Tensor& b, const Tensor& y,
                  const Tensor& g, const Node& node) {
  Tensor ga, gb;
  const bool wa = node.wants(0), wb = node.wants(1);
  switch (op) {
    case WICK_OP_ADD:
      ga = g;
      gb = g;
      break;
    case WICK_OP_SUB:
      ga = g;
      if (wb) gb = g.neg();
      break;
    case WICK_OP_MUL:
      if (wa) ga = g * b;
      if (wb) gb = g * a;
      break;
    case WICK_OP_DIV:
      if (wa) ga = g / b;
      if (wb) gb = (g * y / b).neg();
      break;
    case WICK_OP_MAXIMUM:
    case WICK_OP_MINIMUM: {
      // The winner takes g, a tie gives each side half: (a > b) + (a >= b) is 2, 1 or 0.
      const bool mx = op == WICK_OP_MAXIMUM;
      const DType t = g.dtype();
      auto share = [&](const Tensor& p, const Tensor& q) {
        const Tensor w = (mx ? p.gt(q) : p.lt(q)).to(t) + (mx ? p.ge(q) : p.le(q)).to(t);
        return g * w * 0.5;
      };
      if (wa) ga = share(a, b);
      if (wb) gb = share(b, a);
      break;
    }
    case WICK_OP_POW:
      if (wa) ga = g * b * a.pow(b - 1.0);
      // d a^b / db = a^b log a, taken as 0 where a = 0 (the limit for b > 0).
      if (wb) {
        gb = Tensor::where(a.eq(scalar_like(0.0, a)), scalar_like(0.0, g), g * y * a.log());
      }
      break;
    case WICK_OP_ATAN2: {
      const Tensor den = a.sqr() + b.sqr();
      if (wa) ga = g * b / den;
      if (wb) gb = (g * a / den).neg();
      break;
    }
    case WICK_OP_HYPOT:
      if (wa) ga = g * a / y;
      if (wb) gb = g * b / y;
      break;
    case WICK_OP_REM:
      // a - trunc(a / b) * b: the quotient is recovered exactly as (a - y) / b, rounded.
      ga = g;
      if (wb) gb = (g * ((a - y) / b).round()).neg();
      break;
    default:
      throw Error(std::string("backward: ") + sdk::op_name(op) + " has no backward rule");
  }
  return {wa ? sum_to(ga, a.shape()) : Tensor(), wb ? sum_to(gb, b.shape()) : Tensor()};
}

bool saves_operands(wick_op_code op) {
  return op != WICK_OP_ADD && op != WICK_OP_SUB;
}

}  // namespace

// Which of its input (x) and output (y) unary_rule reads for `op`: only those are saved, so that
// an in-place write to the other is no error at backward (as in PyTorch) and its memory is not
// held until then.
struct UnaryNeeds {
  bool x, y;
};
UnaryNeeds unary_needs(wick_op_code op) {
  switch (op) {
    case WICK_OP_NEG:
    case WICK_OP_SIGN:
    case WICK_OP_FLOOR:
    case WICK_OP_CEIL:
    case WICK_OP_ROUND:
    case WICK_OP_AFFINE: return {false, false};
    case WICK_OP_EXP:
    case WICK_OP_SQRT:
    case WICK_OP_RECIP:
    case WICK_OP_TANH:
    case WICK_OP_ERFINV:
    case WICK_OP_SIGMOID:
    case WICK_OP_TAN:
    case WICK_OP_EXPM1:
    case WICK_OP_CBRT:
    case WICK_OP_RELU: return {false, true};
    case WICK_OP_RSQRT:
    case WICK_OP_ELU: return {true, true};
    default: return {true, false};
  }
}

Tensor unary(wick_op_code op, const Tensor& x, const wick_unary_params* params) {
  Tensor y = without_grad([&] { return x.apply(op, params); });
  if (!is_float(y.dtype())) return y;
  const double alpha = params ? params->alpha : 0.0;
  const UnaryNeeds needs = unary_needs(op);
  // A rule that reads neither still needs g's shape and dtype only (zeros_like(g), g * alpha).
  return record(sdk::op_name(op), y, {&x},
                [op, alpha, xs = needs.x ? saved(x) : Tensor(), ys = needs.y ? saved(y) : Tensor()](
                    const Tensor& g, const Node&) { return Grads{unary_rule(op, alpha, xs, ys, g)}; });
}

Tensor clamp(const Tensor& x, double lo, double hi) {
  Tensor y = without_grad([&] { return x.clamp(lo, hi); });
  if (!is_float(y.dtype())) return y;
  // Gradient 1 on the closed interval [lo, hi], as in PyTorch.
  return record("clamp", y, {&x}, [lo, hi, xs = saved(x)](const Tensor& g, const Node&) {
    const Tensor inside = xs.ge(scalar_like(lo, xs)).logical_and(xs.le(scalar_like(hi, xs)));
    return Grads{g * inside.to(g.dtype())};
  });
}

Tensor binary(wick_op_code op, const Tensor& a, const Tensor& b) {
  Tensor y = without_grad([&] { return a.apply(op, b); });
  if (!is_float(y.dtype())) return y;
  const bool save = saves_operands(op);
  return record(sdk::op_name(op), y, {&a, &b},
                [op, save, as = save ? saved(a) : Tensor(), bs = save ? saved(b) : Tensor(),
                 ys = save ? saved(y) : Tensor(), sa = a.shape(),
                 sb = b.shape()](const Tensor& g, const Node& node) {
                  if (save) return binary_rule(op, as, bs, ys, g, node);
                  // add and sub need only the shapes.
                  return Grads{node.wants(0) ? sum_to(g, sa) : Tensor(),
                               node.wants(1) ? sum_to(op == WICK_OP_SUB ? g.neg() : g, sb)
                                             : Tensor()};
                });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor y = without_grad([&] { return Tensor::where(cond, a, b); });
  if (!is_float(y.dtype())) return y;
  return record("where", y, {&a, &b},
                [c = saved(cond), sa = a.shape(), sb = b.shape()](const Tensor& g,
                                                                    const Node& node) {
                  const Tensor zero = scalar_like(0.0, g);
                  return Grads{node.wants(0) ? sum_to(Tensor::where(c, g, zero), sa) : Tensor(),
                               node.wants(1) ? sum_to(Tensor::where(c, zero, g), sb) : Tensor()};
                });
}

// ---- reductions and scans -----------------------------------------------------------------------

Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  Tensor y = without_grad([&] { return x.sum(axes, keepdim); });
  const Shape kept = kept_shape(x.shape(), normalize_axes(axes, x.rank(), "sum"));
  // g spread back over the summed axes: a broadcast view, no copy.
  return record("sum", y, {&x}, [kept, xs = x.shape()](const Tensor& g, const Node&) {
    return Grads{g.reshape(kept).broadcast_to(xs)};
  });
}

Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  Tensor y = without_grad([&] { return x.mean(axes, keepdim); });
  const std::vector<int32_t> norm = normalize_axes(axes, x.rank(), "mean");
  double count = 1;
  for (int32_t a : norm) count *= static_cast<double>(x.shape()[static_cast<size_t>(a)]);
  return record("mean", y, {&x},
                [count, kept = kept_shape(x.shape(), norm), xs = x.shape()](const Tensor& g,
                                                                            const Node&) {
                  return Grads{(g.reshape(kept) / count).broadcast_to(xs)};
                });
}

Tensor prod(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  Tensor y = without_grad([&] { return x.prod(axes, keepdim); });
  const std::vector<int32_t> norm = normalize_axes(axes, x.rank(), "prod");
  return record("prod", y, {&x}, [norm, xd = saved(x)](const Tensor& g, const Node&) {
    // The product of the other elements of each group, exact when some are zero: the reduced axes
    // are moved last and flattened, and the exclusive products from both ends multiplied.
    std::vector<int> perm;
    Shape lead;
    for (int i = 0; i < xd.rank(); ++i) {
      if (std::find(norm.begin(), norm.end(), i) == norm.end()) {
        perm.push_back(i);
        lead.push_back(xd.shape()[static_cast<size_t>(i)]);
      }
    }
    for (int32_t a : norm) perm.push_back(a);
    const Tensor xp = xd.permute(perm);
    Shape flat = lead;
    flat.push_back(-1);
    const Tensor rows = xp.reshape(flat);
    const Tensor others = rows.cumprod(-1, false, true) * rows.cumprod(-1, true, true);
    Shape glead = lead;
    glead.push_back(1);
    const Tensor gx = (others * g.reshape(glead)).reshape(xp.shape());
    return Grads{gx.permute(inverse(perm))};
  });
}

Tensor extreme(const Tensor& x, const std::vector<int>& axes, bool keepdim, bool is_max) {
  Tensor y = without_grad([&] { return is_max ? x.max(axes, keepdim) : x.min(axes, keepdim); });
  const std::vector<int32_t> norm = normalize_axes(axes, x.rank(), is_max ? "max" : "min");
  std::vector<int> ax(norm.begin(), norm.end());
  const Shape kept = kept_shape(x.shape(), norm);
  return record(is_max ? "max" : "min", y, {&x},
                [ax, kept, xd = saved(x), yd = saved(y)](const Tensor& g, const Node&) {
                  // Every element equal to the extreme shares its gradient equally.
                  const Tensor hit = xd.eq(yd.reshape(kept)).to(g.dtype());
                  return Grads{hit * (g.reshape(kept) / hit.sum(ax, true))};
                });
}

Tensor cumsum(const Tensor& x, int axis, bool reverse, bool exclusive) {
  Tensor y = without_grad([&] { return x.cumsum(axis, reverse, exclusive); });
  return record("cumsum", y, {&x}, [=](const Tensor& g, const Node&) {
    return Grads{g.cumsum(axis, !reverse, exclusive)};
  });
}

Tensor cumprod(const Tensor& x, int axis, bool reverse, bool exclusive) {
  Tensor y = without_grad([&] { return x.cumprod(axis, reverse, exclusive); });
  return record("cumprod", y, {&x}, [=, xd = saved(x)](const Tensor& g, const Node&) {
    // d y_i / d x_j is the product over i's range without j, when j is in it. With x laid out as
    // rows j of [..., j, k] whose k = j entry is 1, the scan along k gives those products for all
    // (j, i) at once; a mask keeps the pairs where j is in i's range.
    if (xd.rank() == 0) return Grads{exclusive ? zeros_like(g) : g};
    const int a = normalize_axis(axis, xd.rank(), "cumprod");
    const Tensor xt = xd.transpose(a, -1);
    const int64_t n = xt.dim(-1);
    std::vector<uint8_t> eye(static_cast<size_t>(n * n), 0), in_range(static_cast<size_t>(n * n));
    for (int64_t j = 0; j < n; ++j) {
      eye[static_cast<size_t>(j * n + j)] = 1;
      for (int64_t i = 0; i < n; ++i) {
        const bool in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
        in_range[static_cast<size_t>(j * n + i)] = in ? 1 : 0;
      }
    }
    Shape square = xt.shape();
    square.push_back(n);
    const Tensor diag = Tensor::from_vector(eye, {n, n}, xd.device()).to(DType::Bool);
    const Tensor rows = Tensor::where(diag, scalar_like(1.0, xd), xt.unsqueeze(-2).broadcast_to(square));
    const Tensor partial = rows.cumprod(-1, reverse, exclusive);
    const Tensor mask = Tensor::from_vector(in_range, {n, n}, xd.device()).to(g.dtype());
    const Tensor gx = (partial * mask * g.transpose(a, -1).unsqueeze(-2)).sum({-1});
    return Grads{gx.transpose(a, -1)};
  });
}

Tensor cumextreme(const Tensor& x, int axis, bool reverse, bool is_max) {
  Tensor y = without_grad(
      [&] { return is_max ? x.cummax(axis, reverse) : x.cummin(axis, reverse); });
  if (!is_float(y.dtype())) return y;
  return record_unsupported(is_max ? "cummax" : "cummin", y, {&x},
                            "the op set has no cumulative arg-extreme to route gradients");
}

// ---- indexing -----------------------------------------------------------------------------------

Tensor index_select(const Tensor& x, const Tensor& ids, int axis) {
  Tensor y = without_grad([&] { return x.index_select(ids, axis); });
  const int a = normalize_axis(axis, x.rank(), "index_select");
  return record("index_select", y, {&x},
                [a, id = saved(ids), xs = x.shape()](const Tensor& g, const Node&) {
                  // g's index axes flattened to one, then added back at their indices.
                  Shape flat = xs;
                  flat[static_cast<size_t>(a)] = id.numel();
                  const Tensor z = Tensor::zeros(xs, g.dtype(), g.device());
                  return Grads{z.index_add(a, id.reshape({-1}), g.reshape(flat))};
                });
}

Tensor index_reduce(const Tensor& x, int axis, const Tensor& ids, const Tensor& src,
                    const std::string& mode) {
  Tensor y = without_grad([&] { return x.index_reduce(axis, ids, src, mode); });
  if (mode != "set" && mode != "add") {
    return record_unsupported("index_reduce", y, {&x, &src},
                              "only modes \"set\" and \"add\" are differentiable");
  }
  const int a = normalize_axis(axis, x.rank(), "index_reduce");
  const bool set = mode == "set";
  return record("index_reduce", y, {&x, &src},
                [a, set, id = saved(ids), ss = src.shape()](const Tensor& g, const Node& node) {
                  Tensor gx = g;
                  // Under "set" the overwritten positions do not reach the output.
                  if (set && node.wants(0)) {
                    gx = g.index_reduce(a, id, Tensor::zeros(ss, g.dtype(), g.device()), "set");
                  }
                  return Grads{node.wants(0) ? gx : Tensor(),
                               node.wants(1) ? g.index_select(id, a) : Tensor()};
                });
}

Tensor gather(const Tensor& x, int axis, const Tensor& ids) {
  Tensor y = without_grad([&] { return x.gather(axis, ids); });
  const int a = normalize_axis(axis, x.rank(), "gather");
  return record("gather", y, {&x}, [a, id = saved(ids), xs = x.shape()](const Tensor& g,
                                                                         const Node&) {
    return Grads{Tensor::zeros(xs, g.dtype(), g.device()).scatter(a, id, g, "add")};
  });
}

Tensor scatter(const Tensor& x, int axis, const Tensor& ids, const Tensor& src,
               const std::string& mode) {
  Tensor y = without_grad([&] { return x.scatter(axis, ids, src, mode); });
  if (mode != "set" && mode != "add") {
    return record_unsupported("scatter", y, {&x, &src},
                              "only modes \"set\" and \"add\" are differentiable");
  }
  const int a = normalize_axis(axis, x.rank(), "scatter");
  const bool set = mode == "set";
  return record("scatter", y, {&x, &src},
                [a, set, id = saved(ids), ss = src.shape()](const Tensor& g, const Node& node) {
                  Tensor gx = g;
                  if (set && node.wants(0)) gx = g.scatter(a, id, scalar_like(0.0, g), "set");
                  return Grads{node.wants(0) ? gx : Tensor(),
                               node.wants(1) ? sum_to(g.gather(a, id), ss) : Tensor()};
                });
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int axis, bool descending, bool stable) {
  auto [values, indices] = [&] {
    autograd::NoGradGuard no_grad;
    return x.sort(axis, descending, stable);
  }();
  if (!is_float(values.dtype())) return {values, indices};
  if (x.rank() == 0) {  // one element: the identity
    return {record("sort", values, {&x}, [](const Tensor& g, const Node&) { return Grads{g}; }),
            indices};
  }
  const int a = normalize_axis(axis, x.rank(), "sort");
  values = record("sort", values, {&x}, [a, id = saved(indices), xs = x.shape()](
                                             const Tensor& g, const Node&) {
    return Grads{Tensor::zeros(xs, g.dtype(), g.device()).scatter(a, id, g, "add")};
  });
  return {values, indices};
}

Tensor cat(const std::vector<Tensor>& tensors, int axis) {
  Tensor y = without_grad([&] { return Tensor::cat(tensors, axis); });
  const int a = normalize_axis(axis, tensors.front().rank(), "cat");
  std::vector<int64_t> lengths;
  for (const Tensor& t : tensors) lengths.push_back(t.shape()[static_cast<size_t>(a)]);
  return record("cat", y, tensors, [a, lengths](const Tensor& g, const Node& node) {
    Grads out(lengths.size());
    int64_t offset = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (node.wants(i)) out[i] = g.narrow(a, offset, lengths[i]);
      offset += lengths[i];
    }
    return out;
  });
}

}  // namespace wick::detail::grad
