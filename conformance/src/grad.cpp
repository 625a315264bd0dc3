#include "grad.hpp"

#include <wick/quant.hpp>

#include <wick/autograd.hpp>
#include <wick/error.hpp>
#include <wick/sdk/ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

namespace wick::conformance {

namespace {

using In = std::vector<Tensor>;
using Fn = std::function<Tensor(const In&, const Device&)>;

// Where an input's values come from (all drawn from the case seed):
//   Uniform   uniform in [lo, hi]
//   Distinct  every element of every Distinct input of the case distinct, at least 0.03 apart and
//             at least 0.09 from 0: no ties for max/min/sort, no kink of relu/abs/sign/elu within h
//   Frac      an integer in [-2, 1] plus a fraction in [0.1, 0.4]: away from the jumps of floor,
//             ceil and round (integers and halves)
//   Dyadic    k / 64 for k in [-128, 128]: exact in f32, for casts checked with h = 1/64
enum class Domain { Uniform, Distinct, Frac, Dyadic };

struct GradInput {
  Shape shape;
  Domain domain = Domain::Uniform;
  double lo = -1.5, hi = 1.5;
};

struct GradCase {
  std::string op;  // the op table's name (the report row)
  std::string variant;
  std::vector<GradInput> inputs;
  Fn fn;  // builds the op from the inputs (views of them for non-contiguous cases)
  double h = kGradStep;
  double tolerance = kGradTolerance;
  std::string xfail;  // non-empty: why its backward throws by design (autograd.hpp)
  std::string skip;   // non-empty: why autograd never records the op (not run)
  std::string id() const { return "grad/" + op + "/f64/" + variant; }
};

GradInput uni(Shape s, double lo = -1.5, double hi = 1.5) { return {std::move(s), Domain::Uniform, lo, hi}; }
GradInput dis(Shape s) { return {std::move(s), Domain::Distinct}; }
GradInput frac(Shape s) { return {std::move(s), Domain::Frac}; }
GradInput pos(Shape s) { return uni(std::move(s), 0.5, 2.0); }

Tensor ids(const Device& d, const std::vector<int64_t>& v, const Shape& shape) {
  return Tensor::from_vector<int64_t>(v, shape, d);
}

// ---- the cases, one function per op family -------------------------------------------------------

struct Builder {
  std::vector<GradCase> cases;
  GradCase& add(const std::string& op, const std::string& variant, std::vector<GradInput> inputs,
                Fn fn) {
    GradCase c;
    c.op = op;
    c.variant = variant;
    c.inputs = std::move(inputs);
    c.fn = std::move(fn);
    cases.push_back(std::move(c));
    return cases.back();
  }
  // An op whose backward throws by design: XFAIL with the reason.
  void xfail(const std::string& op, const std::string& variant, std::vector<GradInput> inputs, Fn fn,
             const std::string& why) {
    add(op, variant, std::move(inputs), std::move(fn)).xfail = why;
  }
};

void memory_cases(Builder& b) {
  b.add("copy", "transposed", {uni({3, 2})}, [](const In& x, const Device&) { return x[0].t().contiguous(); });
  b.add("copy", "clone", {uni({2, 3})}, [](const In& x, const Device&) { return x[0].clone(); });
  b.add("copy", "negative-stride", {uni({2, 3})},
        [](const In& x, const Device&) { return x[0].flip(1).contiguous(); });
  // Through f32 and back: dyadic inputs and h make every value exact, so numeric = 1 exactly.
  b.add("cast", "f64-f32-f64", {{{2, 3}, Domain::Dyadic}},
        [](const In& x, const Device&) { return x[0].to(DType::F32).to(DType::F64); })
      .h = 1.0 / 64;
}

void unary_cases(Builder& b) {
  struct Unary {
    const char* op;
    GradInput (*domain)(Shape);
    std::function<Tensor(const Tensor&)> f;
  };
  auto unit = [](Shape s) { return uni(std::move(s), -0.8, 0.8); };
  const std::vector<Unary> list = {
      {"neg", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.neg(); }},
      {"abs", dis, [](const Tensor& x) { return x.abs(); }},
      {"sign", dis, [](const Tensor& x) { return x.sign(); }},
      {"exp", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.exp(); }},
      {"log", pos, [](const Tensor& x) { return x.log(); }},
      {"sqrt", pos, [](const Tensor& x) { return x.sqrt(); }},
      {"rsqrt", pos, [](const Tensor& x) { return x.rsqrt(); }},
      {"recip", dis, [](const Tensor& x) { return x.recip(); }},
      {"sqr", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.sqr(); }},
      {"tanh", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.tanh(); }},
      {"erf", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.erf(); }},
      {"sigmoid", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.sigmoid(); }},
      {"sin", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.sin(); }},
      {"cos", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.cos(); }},
      {"tan", unit, [](const Tensor& x) { return x.tan(); }},
      {"asin", unit, [](const Tensor& x) { return x.asin(); }},
      {"acos", unit, [](const Tensor& x) { return x.acos(); }},
      {"atan", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.atan(); }},
      {"sinh", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.sinh(); }},
      {"cosh", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.cosh(); }},
      {"asinh", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.asinh(); }},
      {"acosh", [](Shape s) { return uni(s, 1.2, 3.0); }, [](const Tensor& x) { return x.acosh(); }},
      {"atanh", unit, [](const Tensor& x) { return x.atanh(); }},
      {"expm1", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.expm1(); }},
      {"log1p", [](Shape s) { return uni(s, -0.5, 2.0); }, [](const Tensor& x) { return x.log1p(); }},
      {"cbrt", dis, [](const Tensor& x) { return x.cbrt(); }},
      {"erfc", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.erfc(); }},
      {"erfinv", unit, [](const Tensor& x) { return x.erfinv(); }},
      {"floor", frac, [](const Tensor& x) { return x.floor(); }},
      {"ceil", frac, [](const Tensor& x) { return x.ceil(); }},
      {"round", frac, [](const Tensor& x) { return x.round(); }},
      {"relu", dis, [](const Tensor& x) { return x.relu(); }},
      {"gelu_tanh", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.gelu(); }},
      {"gelu_erf", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.gelu_erf(); }},
      {"silu", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.silu(); }},
      // alpha != 1 gives elu a kink at 0 (kept away by Distinct).
      {"elu", dis, [](const Tensor& x) { return x.elu(0.7); }},
      {"affine", [](Shape s) { return uni(s); }, [](const Tensor& x) { return x.affine(1.5, -0.25); }},
      {"powf", pos, [](const Tensor& x) { return x.powf(2.5); }},
  };
  for (const Unary& u : list) {
    auto f = u.f;
    b.add(u.op, "contiguous", {u.domain({2, 3})}, [f](const In& x, const Device&) { return f(x[0]); });
    b.add(u.op, "transposed", {u.domain({3, 2})}, [f](const In& x, const Device&) { return f(x[0].t()); });
  }
  b.add("round", "half-to-even", {frac({2, 3})}, [](const In& x, const Device&) { return x[0].round(true); });
  b.add("powf", "negative-exponent", {pos({2, 3})}, [](const In& x, const Device&) { return x[0].powf(-1.5); });
  b.add("elu", "alpha-1", {dis({2, 3})}, [](const In& x, const Device&) { return x[0].elu(); });
}

void binary_cases(Builder& b) {
  struct Binary {
    const char* op;
    GradInput (*a)(Shape);
    GradInput (*b)(Shape);
  };
  auto u = [](Shape s) { return uni(std::move(s)); };
  // rem: a / b in [3.2, 3.8], away from the integers where trunc jumps; a negative dividend too.
  auto rem_a = [](Shape s) { return uni(std::move(s), 3.4, 3.8); };
  auto rem_b = [](Shape s) { return uni(std::move(s), 1.0, 1.05); };
  const std::vector<Binary> list = {
      {"add", u, u},       {"sub", u, u},         {"mul", u, u},           {"div", u, dis},
      {"maximum", dis, dis}, {"minimum", dis, dis}, {"pow", pos, u},       {"rem", rem_a, rem_b},
      {"atan2", dis, dis}, {"hypot", dis, dis},
  };
  for (const Binary& o : list) {
    const wick_op_code code = op_code_of(o.op);
    auto f = [code](const Tensor& a, const Tensor& c) { return a.apply(code, c); };
    b.add(o.op, "contiguous", {o.a({2, 3}), o.b({2, 3})},
          [f](const In& x, const Device&) { return f(x[0], x[1]); });
    b.add(o.op, "transposed", {o.a({3, 2}), o.b({2, 3})},
          [f](const In& x, const Device&) { return f(x[0].t(), x[1]); });
    // b broadcast along rows (stride 0), a along columns: both gradients are sums.
    b.add(o.op, "broadcast", {o.a({2, 1}), o.b({3})},
          [f](const In& x, const Device&) { return f(x[0], x[1]); });
  }
  b.add("add", "0-d", {uni({2, 3}), uni({})}, [](const In& x, const Device&) { return x[0] + x[1]; });
  b.add("mul", "scalar", {uni({2, 3})}, [](const In& x, const Device&) { return x[0] * 2.5; });
  b.add("rem", "negative-dividend", {uni({2, 3}, -3.8, -3.4), uni({2, 3}, 1.0, 1.05)},
        [](const In& x, const Device&) { return x[0].rem(x[1]); });
  // clamp is maximum then minimum on the device; its rule is its own (1 on [lo, hi]).
  b.add("minimum", "clamp", {dis({2, 4})}, [](const In& x, const Device&) { return x[0].clamp(-0.4, 0.6); });
  b.add("where", "contiguous", {uni({2, 3}), uni({2, 3})}, [](const In& x, const Device& d) {
    const Tensor c = Tensor::from_vector<uint8_t>({1, 0, 0, 1, 1, 0}, {2, 3}, d).to(DType::Bool);
    return Tensor::where(c, x[0], x[1]);
  });
  b.add("where", "broadcast", {uni({2, 1}), uni({3})}, [](const In& x, const Device& d) {
    const Tensor c = Tensor::from_vector<uint8_t>({0, 1, 1, 1, 0, 1}, {2, 3}, d).to(DType::Bool);
    return Tensor::where(c, x[0], x[1]);
  });
}

void reduce_cases(Builder& b) {
  b.add("reduce_sum", "axis", {uni({2, 3, 2})}, [](const In& x, const Device&) { return x[0].sum({1}); });
  b.add("reduce_sum", "axes-keepdim", {uni({2, 3, 2})},
        [](const In& x, const Device&) { return x[0].sum({0, 2}, true); });
  b.add("reduce_sum", "all", {uni({2, 3})}, [](const In& x, const Device&) { return x[0].sum(); });
  b.add("reduce_sum", "transposed", {uni({3, 2})}, [](const In& x, const Device&) { return x[0].t().sum({1}); });
  b.add("reduce_sum", "mean", {uni({2, 3, 2})}, [](const In& x, const Device&) { return x[0].mean({0, 2}); });
  b.add("reduce_prod", "axis", {uni({2, 3, 2})}, [](const In& x, const Device&) { return x[0].prod({1}); });
  b.add("reduce_prod", "transposed", {uni({3, 2})},
        [](const In& x, const Device&) { return x[0].t().prod({1}, true); });
  for (const bool mx : {true, false}) {
    const std::string op = mx ? "reduce_max" : "reduce_min";
    auto r = [mx](const Tensor& t, const std::vector<int>& axes, bool keep = false) {
      return mx ? t.max(axes, keep) : t.min(axes, keep);
    };
    b.add(op, "axis", {dis({2, 3, 2})}, [r](const In& x, const Device&) { return r(x[0], {1}); });
    b.add(op, "axes-keepdim", {dis({2, 3, 2})}, [r](const In& x, const Device&) { return r(x[0], {0, 2}, true); });
    b.add(op, "transposed", {dis({3, 2})}, [r](const In& x, const Device&) { return r(x[0].t(), {1}); });
  }
  for (const bool prod : {false, true}) {
    const std::string op = prod ? "cumprod" : "cumsum";
    auto s = [prod](const Tensor& t, int axis, bool reverse, bool exclusive) {
      return prod ? t.cumprod(axis, reverse, exclusive) : t.cumsum(axis, reverse, exclusive);
    };
    b.add(op, "axis", {uni({2, 4})}, [s](const In& x, const Device&) { return s(x[0], 1, false, false); });
    b.add(op, "reverse", {uni({2, 4})}, [s](const In& x, const Device&) { return s(x[0], 1, true, false); });
    b.add(op, "exclusive", {uni({2, 4})}, [s](const In& x, const Device&) { return s(x[0], 1, false, true); });
    b.add(op, "transposed", {uni({4, 2})}, [s](const In& x, const Device&) { return s(x[0].t(), 0, false, false); });
  }
  const std::string why = "the op set has no cumulative arg-extreme to route gradients";
  b.xfail("cummax", "axis", {dis({2, 4})}, [](const In& x, const Device&) { return x[0].cummax(1); }, why);
  b.xfail("cummin", "axis", {dis({2, 4})}, [](const In& x, const Device&) { return x[0].cummin(1); }, why);
}

void linear_cases(Builder& b) {
  auto mm = [](const In& x, const Device&) { return x[0].matmul(x[1]); };
  b.add("matmul", "2d", {uni({2, 3}), uni({3, 4})}, mm);
  b.add("matmul", "batch-broadcast", {uni({2, 2, 3}), uni({3, 2})}, mm);
  b.add("matmul", "vector-matrix", {uni({3}), uni({3, 2})}, mm);
  b.add("matmul", "matrix-vector", {uni({2, 3}), uni({3})}, mm);
  b.add("matmul", "transposed", {uni({3, 2}), uni({2, 3})},
        [](const In& x, const Device&) { return x[0].t().matmul(x[1].t()); });
  b.add("conv", "1d-stride-padding", {uni({1, 2, 7}), uni({3, 2, 3})},
        [](const In& x, const Device&) { return x[0].conv(x[1], {2}, {1}); });
  b.add("conv", "2d-padding", {uni({1, 2, 4, 4}), uni({2, 2, 3, 3})},
        [](const In& x, const Device&) { return x[0].conv(x[1], {1, 1}, {1, 1}); });
  b.add("conv", "2d-stride-dilation", {uni({1, 1, 6, 6}), uni({2, 1, 2, 2})},
        [](const In& x, const Device&) { return x[0].conv(x[1], {2, 2}, {1, 1}, {2, 2}); });
  b.add("conv", "2d-groups", {uni({2, 4, 3, 3}), uni({4, 2, 2, 2})},
        [](const In& x, const Device&) { return x[0].conv(x[1], {1, 1}, {0, 0}, {1, 1}, 2); });
  b.add("conv", "3d", {uni({1, 1, 3, 3, 3}), uni({1, 1, 2, 2, 2})},
        [](const In& x, const Device&) { return x[0].conv(x[1]); });
  b.add("conv", "2d-transposed-input", {uni({1, 2, 4, 3}), uni({1, 2, 2, 2})},
        [](const In& x, const Device&) { return x[0].transpose(2, 3).conv(x[1], {1, 2}); });
  // x times GGML-quantized weights: autograd records dequantize then matmul (the gradient flows to
  // x only; the weights, quantized on the device from fixed values, are constants).
  b.add("matmul_quant", "q4_k", {uni({2, 256})}, [](const In& x, const Device& d) {
    std::vector<float> v(3 * 256);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
    return quant::matmul(x[0], quant::quantize(Tensor::from_vector(v, {3, 256}, d), quant::Type::Q4_K));
  });
  // The fused conv_bias records conv, add and relu; the relu cases keep every output on one side
  // of its kink: positive operands (all passed), or a negative weight and bias (all 0).
  b.add("conv_bias", "2d-padding", {uni({1, 2, 4, 4}), uni({2, 2, 3, 3}), uni({2})},
        [](const In& x, const Device&) { return x[0].conv_bias(x[1], x[2], false, {1, 1}, {1, 1}); });
  b.add("conv_bias_relu", "2d-positive", {pos({1, 2, 4, 4}), pos({3, 2, 2, 2}), pos({3})},
        [](const In& x, const Device&) { return x[0].conv_bias(x[1], x[2], true, {2, 1}); });
  b.add("conv_bias_relu", "2d-negative", {pos({1, 2, 4, 4}), uni({2, 2, 3, 3}, -2.0, -0.5), uni({2}, -2.0, -1.0)},
        [](const In& x, const Device&) { return x[0].conv_bias(x[1], x[2], true, {1, 1}, {0, 0}); });
}

void window_cases(Builder& b) {
  using Pads = std::vector<std::pair<int64_t, int64_t>>;
  b.add("window_sum", "2x2", {uni({3, 4})},
        [](const In& x, const Device&) { return x[0].window_reduce("sum", {2, 2}); });
  b.add("window_sum", "stride-padding-dilation", {uni({4, 5})}, [](const In& x, const Device&) {
    return x[0].window_reduce("sum", {2, 2}, {2, 1}, Pads{{1, 0}, {0, 1}}, {1, 2});
  });
  b.add("window_sum", "avg_pool2d", {uni({1, 1, 4, 4})},
        [](const In& x, const Device&) { return x[0].avg_pool2d({2, 2}, {2, 2}); });
  b.add("window_sum", "avg_pool2d-padding", {uni({1, 2, 4, 4})},
        [](const In& x, const Device&) { return x[0].avg_pool2d({3, 3}, {2, 2}, {1, 1}); });
  for (const bool mx : {true, false}) {
    const std::string op = mx ? "window_max" : "window_min";
    const std::string w = mx ? "max" : "min";
    b.add(op, "2x2", {dis({3, 4})}, [w](const In& x, const Device&) { return x[0].window_reduce(w, {2, 2}); });
    b.add(op, "stride-padding", {dis({4, 5})}, [w](const In& x, const Device&) {
      return x[0].window_reduce(w, {2, 3}, {2, 2}, Pads{{1, 0}, {1, 1}});
    });
    b.add(op, "transposed", {dis({4, 3})},
          [w](const In& x, const Device&) { return x[0].t().window_reduce(w, {2, 2}, {1, 2}); });
    b.xfail(op, "dilation", {dis({4, 4})},
            [w](const In& x, const Device&) { return x[0].window_reduce(w, {2, 2}, {1, 1}, {}, {2, 2}); },
            "max and min windows are differentiable only without dilation");
  }
  b.add("window_max", "max_pool2d", {dis({1, 2, 4, 4})},
        [](const In& x, const Device&) { return x[0].max_pool2d({2, 2}, {2, 2}); });
  b.add("window_max", "max_pool2d-padding", {dis({1, 1, 5, 5})},
        [](const In& x, const Device&) { return x[0].max_pool2d({3, 3}, {2, 2}, {1, 1}); });
  b.xfail("window_prod", "2x2", {uni({3, 4})},
          [](const In& x, const Device&) { return x[0].window_reduce("prod", {2, 2}); },
          "\"prod\" windows are not differentiable");
  for (const std::string w : {"max", "min"}) {
    b.xfail("window_scatter_" + w, "2x2-stride-2", {dis({4, 4}), uni({2, 2})},
            [w](const In& x, const Device&) { return x[0].window_scatter(w, x[1], {2, 2}, {2, 2}); },
            "window_scatter (max-pool backward itself) has no backward rule: no second derivatives");
  }
}

void index_cases(Builder& b) {
  b.add("index_select", "axis-0-repeats", {uni({4, 3})},
        [](const In& x, const Device& d) { return x[0].index_select(ids(d, {2, 0, 2}, {3}), 0); });
  b.add("index_select", "axis-1-transposed", {uni({4, 3})},
        [](const In& x, const Device& d) { return x[0].t().index_select(ids(d, {3, 1}, {2}), 1); });
  // "set" with distinct indices: with repeats, which source lands is not a function of the values.
  b.add("index_reduce", "set", {uni({4, 3}), uni({2, 3})}, [](const In& x, const Device& d) {
    return x[0].index_reduce(0, ids(d, {3, 1}, {2}), x[1], "set");
  });
  b.add("index_reduce", "add-repeats", {uni({4, 3}), uni({3, 3})}, [](const In& x, const Device& d) {
    return x[0].index_reduce(0, ids(d, {1, 1, 2}, {3}), x[1], "add");
  });
  b.add("index_reduce", "index_add-axis-1", {uni({3, 4}), uni({3, 2})}, [](const In& x, const Device& d) {
    return x[0].index_add(1, ids(d, {0, 3}, {2}), x[1]);
  });
  b.add("gather_elements", "axis-1", {uni({3, 4})}, [](const In& x, const Device& d) {
    return x[0].gather(1, ids(d, {3, 0, 1, 1, 2, 2}, {3, 2}));
  });
  b.add("gather_elements", "axis-0-transposed", {uni({4, 3})}, [](const In& x, const Device& d) {
    return x[0].t().gather(0, ids(d, {2, 0, 1, 0, 1, 2, 2, 0}, {2, 4}));
  });
  b.add("scatter_elements", "set", {uni({3, 4}), uni({2, 4})}, [](const In& x, const Device& d) {
    return x[0].scatter(0, ids(d, {0, 2, 1, 0, 2, 1, 0, 1}, {2, 4}), x[1], "set");
  });
  b.add("scatter_elements", "add-repeats", {uni({3, 4}), uni({2, 3})}, [](const In& x, const Device& d) {
    return x[0].scatter(1, ids(d, {0, 0, 3, 2, 1, 2}, {2, 3}), x[1], "add");
  });
  for (const std::string mode : {"mul", "max", "min"}) {
    const std::string why = "only modes \"set\" and \"add\" are differentiable";
    b.xfail("index_reduce", mode, {dis({4, 3}), dis({2, 3})},
            [mode](const In& x, const Device& d) { return x[0].index_reduce(0, ids(d, {3, 1}, {2}), x[1], mode); },
            why);
    b.xfail("scatter_elements", mode, {dis({3, 4}), dis({2, 4})},
            [mode](const In& x, const Device& d) {
              return x[0].scatter(0, ids(d, {0, 2, 1, 0, 2, 1, 0, 1}, {2, 4}), x[1], mode);
            },
            why);
  }
  b.add("sort", "ascending", {dis({2, 4})}, [](const In& x, const Device&) { return x[0].sort(-1).first; });
  b.add("sort", "descending-axis-0", {dis({3, 2})},
        [](const In& x, const Device&) { return x[0].sort(0, true).first; });
  b.add("sort", "transposed", {dis({4, 2})}, [](const In& x, const Device&) { return x[0].t().sort(-1).first; });
  b.add("sort", "topk", {dis({2, 5})}, [](const In& x, const Device&) { return x[0].topk(2).first; });
}

void nn_cases(Builder& b) {
  for (const bool log : {false, true}) {
    const std::string op = log ? "log_softmax" : "softmax";
    auto s = [log](const Tensor& t, int axis) { return log ? t.log_softmax(axis) : t.softmax(axis); };
    b.add(op, "last-axis", {uni({2, 4})}, [s](const In& x, const Device&) { return s(x[0], -1); });
    b.add(op, "axis-0", {uni({3, 2})}, [s](const In& x, const Device&) { return s(x[0], 0); });
    b.add(op, "transposed", {uni({4, 2})}, [s](const In& x, const Device&) { return s(x[0].t(), -1); });
  }
  b.add("layer_norm", "weight-bias", {uni({2, 5}), uni({5}), uni({5})},
        [](const In& x, const Device&) { return x[0].layer_norm(1, x[1], x[2]); });
  b.add("layer_norm", "rank-2-weight", {uni({2, 2, 3}), uni({2, 3})},
        [](const In& x, const Device&) { return x[0].layer_norm(2, x[1]); });
  b.add("layer_norm", "transposed", {uni({4, 2})}, [](const In& x, const Device&) { return x[0].t().layer_norm(1); });
  b.add("rms_norm", "weight", {uni({2, 5}), uni({5})}, [](const In& x, const Device&) { return x[0].rms_norm(x[1]); });
  b.add("rms_norm", "transposed", {uni({4, 2})}, [](const In& x, const Device&) { return x[0].t().rms_norm(); });
  b.add("batch_norm", "all-inputs", {uni({2, 3, 2}), uni({3}), pos({3}), uni({3}), uni({3})},
        [](const In& x, const Device&) { return x[0].batch_norm(x[1], x[2], x[3], x[4]); });
  b.add("batch_norm", "no-affine", {uni({2, 2}), uni({2}), pos({2})},
        [](const In& x, const Device&) { return x[0].batch_norm(x[1], x[2]); });
  b.add("attention", "plain", {uni({2, 3, 4}), uni({2, 3, 4}), uni({2, 3, 2})},
        [](const In& x, const Device&) { return Tensor::attention(x[0], x[1], x[2]); });
  b.add("attention", "mask-scale", {uni({1, 2, 3}), uni({1, 3, 3}), uni({1, 3, 2}), uni({2, 3})},
        [](const In& x, const Device&) { return Tensor::attention(x[0], x[1], x[2], x[3], 0.7); });
  b.add("attention", "causal", {uni({1, 3, 2}), uni({1, 3, 2}), uni({1, 3, 2})},
        [](const In& x, const Device&) { return Tensor::attention(x[0], x[1], x[2], {}, std::nullopt, true); });
}

// Ops of the table that autograd never records, by design: one SKIP row each, with the reason.
// Named, not coded, so that the list may run ahead of the op table.
void not_differentiated(Builder& b) {
  const std::vector<std::pair<std::string, std::string>> list = {
      {"adam_update", "an optimizer step (wick/optim.hpp), run without grad: autograd never records it"},
      {"conv_grad_input", "conv's backward (run by its rule, without grad): autograd never records it; conv's grad cases check it"},
      {"conv_grad_weight", "conv's backward (run by its rule, without grad): autograd never records it; conv's grad cases check it"},
  };
  for (const auto& [op, why] : list) {
    if (op_code_of(op) != WICK_OP_INVALID) b.add(op, "not-differentiated", {}, nullptr).skip = why;
  }
}

struct Registry {
  std::vector<GradCase> cases;
  std::map<std::string, size_t> by_id;
};

const Registry& registry() {
  static const Registry r = [] {
    Builder b;
    memory_cases(b);
    unary_cases(b);
    binary_cases(b);
    reduce_cases(b);
    linear_cases(b);
    window_cases(b);
    index_cases(b);
    nn_cases(b);
    not_differentiated(b);
    // Op-table order, then as written.
    std::stable_sort(b.cases.begin(), b.cases.end(), [](const GradCase& x, const GradCase& y) {
      return op_code_of(x.op) < op_code_of(y.op);
    });
    Registry out;
    for (const GradCase& c : b.cases) {
      if (op_code_of(c.op) == WICK_OP_INVALID)
        throw Error("grad case " + c.id() + ": '" + c.op + "' is not an op of the op table");
      if (!out.by_id.emplace(c.id(), out.cases.size()).second)
        throw Error("grad case " + c.id() + " is defined twice");
      out.cases.push_back(c);
    }
    return out;
  }();
  return r;
}

// ---- inputs --------------------------------------------------------------------------------------

// splitmix64: a small, fixed generator, so that a case's inputs depend on its seed only.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }
};

std::vector<Tensor> make_inputs(const GradCase& c, uint64_t seed, const Device& device) {
  Rng rng{seed};
  // The Distinct pool: +-(0.1 + 0.05 k) shuffled, each jittered by at most 0.01.
  size_t distinct = 0;
  for (const GradInput& in : c.inputs) {
    if (in.domain != Domain::Distinct) continue;
    int64_t n = 1;
    for (int64_t d : in.shape) n *= d;
    distinct += static_cast<size_t>(n);
  }
  std::vector<double> pool;
  for (size_t k = 0; k < (distinct + 1) / 2 + 1; ++k) {
    pool.push_back(0.1 + 0.05 * static_cast<double>(k));
    pool.push_back(-(0.1 + 0.05 * static_cast<double>(k)));
  }
  for (size_t k = pool.size(); k > 1; --k) std::swap(pool[k - 1], pool[rng.next() % k]);
  size_t taken = 0;

  std::vector<Tensor> out;
  for (const GradInput& in : c.inputs) {
    int64_t n = 1;
    for (int64_t d : in.shape) n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) {
      switch (in.domain) {
        case Domain::Uniform: x = rng.uniform(in.lo, in.hi); break;
        case Domain::Distinct: x = pool[taken++] + rng.uniform(-0.01, 0.01); break;
        case Domain::Frac:
          x = static_cast<double>(static_cast<int64_t>(rng.next() % 4) - 2) + rng.uniform(0.1, 0.4);
          break;
        case Domain::Dyadic: x = static_cast<double>(static_cast<int64_t>(rng.next() % 257) - 128) / 64; break;
      }
    }
    out.push_back(Tensor::from_vector<double>(v, in.shape, device));
  }
  return out;
}

// A plugin that declines an op: the worker's devices belong to no wick::Runtime, so the
// dispatcher has no CPU to fall back to and throws (core/src/dispatch_policy.cpp) — the grad
// check never silently runs elsewhere.
bool is_decline(const std::string& message) {
  return message.find("is not supported by plugin") != std::string::npos;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

}  // namespace

bool differentiable_in_table(const sdk::OpInfo& op) {
  return op.min_inputs >= 1 && op.dtypes != sdk::DTypeClass::INT &&
         op.dtypes != sdk::DTypeClass::INT_BOOL && op.dtypes != sdk::DTypeClass::U8 &&
         op.out != sdk::OutDType::BOOL && op.out != sdk::OutDType::INDEX && op.out != sdk::OutDType::U8;
}

std::vector<CaseInfo> grad_cases() {
  std::vector<CaseInfo> out;
  for (const GradCase& c : registry().cases) out.push_back({c.id(), "grad", c.op, "f64"});
  return out;
}

std::vector<std::string> grad_uncovered_ops() {
  std::set<std::string> covered;
  for (const GradCase& c : registry().cases) covered.insert(c.op);
  std::vector<std::string> out;
  for (const sdk::OpInfo& op : sdk::kOps) {
    if (differentiable_in_table(op) && covered.count(op.name) == 0) out.push_back(op.name);
  }
  return out;
}

void run_grad_case(const ExecContext& ctx, const std::string& id, Result& r) {
  const Registry& reg = registry();
  const auto it = reg.by_id.find(id);
  if (it == reg.by_id.end()) throw Error("no grad case '" + id + "' (wick conformance --mode grad --list)");
  const GradCase& c = reg.cases[it->second];
  r.source = "grad";
  r.op = c.op;
  r.dtype = "f64";
  if (!c.skip.empty()) {
    r.status = "SKIP";
    r.message = "not differentiated by design: " + c.skip;
    return;
  }
  const uint64_t seed = case_seed(ctx.seed, id);
  const std::vector<Tensor> inputs = make_inputs(c, seed, ctx.device);
  const Device device = ctx.device;
  auto fn = [&](const std::vector<Tensor>& x) { return c.fn(x, device); };

  // The forward alone first: a decline there is the plugin's, not the rule's.
  try {
    autograd::NoGradGuard no_grad;
    const Tensor y = fn(inputs);
    if (!(y.device() == device) || y.dtype() != DType::F64)
      throw Error("the case's output is " + std::string(dtype_name(y.dtype())) + " on " +
                  y.device().name() + ", not f64 on " + device.name());
  } catch (const std::exception& e) {
    r.status = is_decline(e.what()) ? "UNSUPPORTED" : "FAIL";
    r.message = std::string("forward: ") + e.what();
    return;
  }
  autograd::GradCheck g;
  try {
    g = autograd::check_gradients(fn, inputs, c.h, seed);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (!c.xfail.empty() && what.find("has no backward rule") != std::string::npos) {
      r.status = "XFAIL";
      r.message = "backward throws by design (" + c.xfail + "): " + what;
    } else {
      r.status = is_decline(what) ? "UNSUPPORTED" : "FAIL";
      r.message = "gradient: " + what;
    }
    return;
  }
  const std::string measured = "max error " + sci(g.max_error) + ", tolerance " + sci(c.tolerance) +
                               ", h " + sci(c.h) + (g.worst.empty() ? "" : "; worst: " + g.worst);
  if (!c.xfail.empty()) {
    // A rule appeared where autograd.hpp says none exists: update the case (and the docs).
    r.status = g.max_error <= c.tolerance ? "XPASS" : "FAIL";
    r.message = "expected the backward to throw (" + c.xfail + ") but it ran: " + measured;
    return;
  }
  r.error = g.max_error;
  r.threshold = c.tolerance;
  r.worst_index = g.worst.substr(0, g.worst.find(':'));
  r.status = g.max_error <= c.tolerance ? "PASS" : "FAIL";
  r.message = measured;
}

}  // namespace wick::conformance
