// conv's two gradient ops (WICK_OP_CONV_GRAD_INPUT, WICK_OP_CONV_GRAD_WEIGHT, ABI 1.3) on
// cpu-onednn — oneDNN's backward-data and backward-weights primitives for f32 and bf16, the
// plugin's loops for f64 and for geometries oneDNN does not take — against a float64 loop over
// every product the forward convolution forms, and against the gradients the core composes from
// forward convolutions where a device lacks the ops; and conv's backward rule end to end.
#include "test_support.hpp"

#include "tensor/autograd_rules.hpp"

#include <wick/autograd.hpp>
#include <wick/direct.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>

using namespace wick;
using wick::test::cpu;

namespace {

// One convolution: input and weight shapes, per spatial axis the strides, padding and dilations.
struct ConvCase {
  const char* name;
  Shape x, w;
  std::vector<int64_t> s, lo, hi, d;
  int64_t groups;

  size_t r() const { return x.size() - 2; }
  Shape y() const {
    Shape out{x[0], w[0]};
    for (size_t i = 0; i < r(); ++i)
      out.push_back((x[2 + i] + lo[i] + hi[i] - (w[2 + i] - 1) * d[i] - 1) / s[i] + 1);
    return out;
  }
  std::vector<int64_t> padding() const {
    std::vector<int64_t> p;
    for (size_t i = 0; i < r(); ++i) p.insert(p.end(), {lo[i], hi[i]});
    return p;
  }
  detail::grad::ConvSpec spec() const {
    return detail::grad::ConvSpec::of(r(), s, padding(), d, groups);
  }
};

// 1-D and 2-D, with strides, asymmetric and negative padding, dilations, groups and depthwise, and
// strides that leave input rows no window reads (their gradient is zero).
const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = {
      {"1d-stride-pad-groups", {2, 4, 9}, {6, 2, 3}, {2}, {1}, {2}, {1}, 2},
      {"1d-dilation", {1, 3, 11}, {2, 3, 3}, {1}, {2}, {0}, {2}, 1},
      {"1d-negative-padding", {1, 2, 10}, {2, 2, 3}, {2}, {-1}, {1}, {1}, 1},
      {"2d-stride-asymmetric-dilation",
       {2, 3, 7, 6},
       {4, 3, 3, 2},
       {2, 1},
       {1, 0},
       {0, 1},
       {1, 2},
       1},
      {"2d-depthwise", {1, 4, 5, 5}, {4, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 4},
      {"2d-groups-dilation", {2, 4, 6, 5}, {6, 2, 2, 3}, {1, 2}, {0, 1}, {0, 1}, {2, 1}, 2},
      {"2d-unread-rows", {1, 2, 8, 8}, {3, 2, 2, 2}, {3, 3}, {0, 0}, {0, 0}, {1, 1}, 1},
  };
  return all;
}

Tensor random_tensor(const Shape& shape, DType t, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = u(gen);
  return Tensor::from_vector(v, shape, cpu()).to(t);
}

std::vector<double> values(const Tensor& t) {
  return t.to(DType::F64).contiguous().to_vector<double>();
}

// The float64 gradients of sum(conv(x, w) * dy), formed by visiting every product x[xi] w[wi] the
// forward convolution adds into y[yi] (a scatter, unlike the plugin's gathering loops), and for
// each element the sum of the products' magnitudes (the scale of its rounding error).
struct Reference {
  std::vector<double> dx, dx_scale, dw, dw_scale;
};

Reference reference(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& dy) {
  const Shape ys = c.y();
  const size_t r = c.r();
  auto numel = [](const Shape& s) {
    int64_t n = 1;
    for (int64_t e : s) n *= e;
    return static_cast<size_t>(n);
  };
  Reference ref{std::vector<double>(numel(c.x)), std::vector<double>(numel(c.x)),
                std::vector<double>(numel(c.w)), std::vector<double>(numel(c.w))};
  const int64_t cg = c.x[1] / c.groups, og = c.w[0] / c.groups;
  std::vector<int64_t> out(r), tap(r);
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t o = 0; o < c.w[0]; ++o)
      for (size_t yi = 0; yi < numel(ys) / static_cast<size_t>(c.x[0] * c.w[0]); ++yi) {
        for (size_t i = r, rest = yi; i-- > 0; rest /= static_cast<size_t>(ys[2 + i]))
          out[i] = static_cast<int64_t>(rest % static_cast<size_t>(ys[2 + i]));
        const size_t y_flat = (static_cast<size_t>(n * c.w[0] + o)) *
                                  (numel(ys) / static_cast<size_t>(c.x[0] * c.w[0])) +
                              yi;
        for (int64_t k = 0; k < cg; ++k)
          for (size_t ti = 0; ti < numel(c.w) / static_cast<size_t>(c.w[0] * c.w[1]); ++ti) {
            for (size_t i = r, rest = ti; i-- > 0; rest /= static_cast<size_t>(c.w[2 + i]))
              tap[i] = static_cast<int64_t>(rest % static_cast<size_t>(c.w[2 + i]));
            int64_t x_flat = n * c.x[1] + o / og * cg + k, w_flat = o * cg + k;
            bool inside = true;
            for (size_t i = 0; i < r; ++i) {
              const int64_t p = out[i] * c.s[i] - c.lo[i] + tap[i] * c.d[i];
              inside = inside && p >= 0 && p < c.x[2 + i];
              x_flat = x_flat * c.x[2 + i] + p;
              w_flat = w_flat * c.w[2 + i] + tap[i];
            }
            if (!inside) continue;
            const auto xf = static_cast<size_t>(x_flat), wf = static_cast<size_t>(w_flat);
            ref.dx[xf] += dy[y_flat] * w[wf];
            ref.dx_scale[xf] += std::abs(dy[y_flat] * w[wf]);
            ref.dw[wf] += x[xf] * dy[y_flat];
            ref.dw_scale[wf] += std::abs(x[xf] * dy[y_flat]);
          }
      }
  return ref;
}

// The elements of `got` farther from `want` than tol times their scale (plus tol): "" when none.
std::string mismatches(const std::vector<double>& got, const std::vector<double>& want,
                       const std::vector<double>& scale, double tol) {
  if (got.size() != want.size()) return "sizes differ";
  std::string out;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= tol * (scale[i] + 1.0)) continue;
    if (out.size() > 300) break;
    std::ostringstream line;
    line << "[" << i << "] " << got[i] << " vs " << want[i] << "; ";
    out += line.str();
  }
  return out;
}

// Runs one gradient op on cpu-onednn (it must run it: no decline, no fallback).
Tensor run_grad_op(wick_op_code op, const ConvCase& c, const Tensor& a, const Tensor& b,
                   const Shape& shape) {
  const detail::grad::ConvSpec spec = c.spec();
  const wick_conv_params p = spec.params();
  const Tensor out = Tensor::empty(shape, a.dtype(), cpu());
  const DirectResult r = run_op_direct(cpu(), op, &p, {a, b}, {out});
  INFO(r.message);
  REQUIRE(r.status == DirectResult::Status::Ran);
  return out;
}

double tolerance(DType t) {
  switch (t) {
    case DType::F64: return 1e-12;
    case DType::BF16: return 1.6e-2;  // the bf16 output's rounding (2^-8 relative) and f32 sums
    default: return 2e-6;
  }
}

}  // namespace

TEST_CASE("cpu-onednn's conv gradient ops match a float64 loop and the composed gradients",
          "[conv][conv_grad]") {
  uint32_t seed = 1;
  for (const ConvCase& c : cases()) {
    for (DType t : {DType::F32, DType::F64, DType::BF16}) {
      INFO(std::string(c.name) + " " + dtype_name(t));
      const Tensor x = random_tensor(c.x, t, seed++), w = random_tensor(c.w, t, seed++),
                   dy = random_tensor(c.y(), t, seed++);
      const Reference ref = reference(c, values(x), values(w), values(dy));
      const Tensor dx = run_grad_op(WICK_OP_CONV_GRAD_INPUT, c, dy, w, c.x);
      const Tensor dw = run_grad_op(WICK_OP_CONV_GRAD_WEIGHT, c, x, dy, c.w);
      CHECK(dx.dtype() == t);
      CHECK(mismatches(values(dx), ref.dx, ref.dx_scale, tolerance(t)) == "");
      CHECK(mismatches(values(dw), ref.dw, ref.dw_scale, tolerance(t)) == "");
      // The composition the core falls back to, from forward convolutions, gives the same.
      const Tensor dx_composed = detail::grad::conv_grad_input_composed(c.spec(), dy, w, c.x);
      const Tensor dw_composed = detail::grad::conv_grad_weight_composed(c.spec(), x, dy, c.w);
      CHECK(mismatches(values(dx), values(dx_composed), ref.dx_scale, 2 * tolerance(t)) == "");
      CHECK(mismatches(values(dw), values(dw_composed), ref.dw_scale, 2 * tolerance(t)) == "");
    }
  }
}

TEST_CASE("conv's gradient ops read broadcast and channels-last operands", "[conv][conv_grad]") {
  const ConvCase& c = cases()[3];
  const Tensor x = random_tensor(c.x, DType::F32, 91), w = random_tensor(c.w, DType::F32, 92);
  // The gradient of sum(y): ones broadcast from one element (stride 0), as autograd passes it.
  const Tensor ones =
      Tensor::ones({1}, DType::F32, cpu()).reshape({1, 1, 1, 1}).broadcast_to(c.y());
  // x stored [N, H, W, C]: a permuted view.
  const Tensor x_nhwc = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  REQUIRE(x_nhwc.strides()[1] == 1);
  const Reference ref = reference(c, values(x), values(w), values(ones));
  CHECK(mismatches(values(run_grad_op(WICK_OP_CONV_GRAD_INPUT, c, ones, w, c.x)), ref.dx,
                   ref.dx_scale, 2e-6) == "");
  CHECK(mismatches(values(run_grad_op(WICK_OP_CONV_GRAD_WEIGHT, c, x_nhwc, ones, c.w)), ref.dw,
                   ref.dw_scale, 2e-6) == "");
}

TEST_CASE("conv's backward rule gives the float64 loop's gradients on cpu-onednn",
          "[conv][conv_grad][autograd]") {
  uint32_t seed = 500;
  for (const ConvCase& c : cases()) {
    INFO(c.name);
    Tensor x = random_tensor(c.x, DType::F32, seed++), w = random_tensor(c.w, DType::F32, seed++);
    const Tensor dy = random_tensor(c.y(), DType::F32, seed++);
    x.set_requires_grad(true);
    w.set_requires_grad(true);
    (x.conv(w, c.s, c.padding(), c.d, c.groups) * dy).sum().backward();
    const Reference ref = reference(c, values(x), values(w), values(dy));
    REQUIRE(x.grad().defined());
    REQUIRE(w.grad().defined());
    CHECK(mismatches(values(x.grad()), ref.dx, ref.dx_scale, 2e-6) == "");
    CHECK(mismatches(values(w.grad()), ref.dw, ref.dw_scale, 2e-6) == "");
  }
}
