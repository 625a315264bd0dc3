// Max pooling forward (window_max) and backward (window_scatter_max) on cpu-onednn against a
// float64 loop over every window tap. On AVX-512 f32 2x2 windows of stride 2 take the vector
// kernels (vector_math_avx512.cpp: full 16-window vectors, masked tails, NaN, signed zeros and
// strided rows are covered below), other finite f32 pooling oneDNN's primitives, and f64 or a NaN
// input the plugin's loops; below AVX-512 (ONEDNN_MAX_CPU_ISA=AVX2, SSE41) every case takes the
// loops. Both must give docs/ops/nn.md's
// answer: the window's maximum, and each window's gradient added at its first maximum in C order.
#include "test_support.hpp"

#include <wick/autograd.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace wick;
using wick::test::cpu;

namespace {

// A pooling over H and W of [N, C, H, W]: window, strides, (lo, hi) padding, dilations.
struct PoolCase {
  const char* name;
  Shape x;
  int64_t kh, kw, sh, sw, lh, hh, lw, hw, dh, dw;

  std::vector<int64_t> window() const { return {1, 1, kh, kw}; }
  std::vector<int64_t> strides() const { return {1, 1, sh, sw}; }
  std::vector<std::pair<int64_t, int64_t>> padding() const {
    return {{0, 0}, {0, 0}, {lh, hh}, {lw, hw}};
  }
  std::vector<int64_t> dilations() const { return {1, 1, dh, dw}; }
  int64_t oh() const { return (x[2] + lh + hh - (kh - 1) * dh - 1) / sh + 1; }
  int64_t ow() const { return (x[3] + lw + hw - (kw - 1) * dw - 1) / sw + 1; }
  Shape y() const { return {x[0], x[1], oh(), ow()}; }
};

const std::vector<PoolCase>& cases() {
  // Name, x, kh, kw, sh, sw, padding lh, hh, lw, hw, dilations dh, dw.
  static const std::vector<PoolCase> all = {
      {"2x2 s2 (the CNN's)", {3, 4, 8, 8}, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},
      {"2x2 s2, last row and column unread", {2, 3, 7, 9}, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},
      {"2x2 s2, 28 wide (14 windows: a masked vector)", {2, 3, 28, 28}, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},
      {"2x2 s2, 67 wide (33 windows: two vectors and a tail)", {1, 2, 5, 67}, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},
      {"3x3 s2 p1 (ResNet's)", {2, 5, 11, 12}, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      {"3x3 s1 p1, overlapping", {2, 3, 6, 7}, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {"2x3 s1,2, asymmetric padding (ceil mode)", {1, 4, 9, 10}, 2, 3, 1, 2, 0, 1, 1, 2, 1, 1},
      {"3x2 dilation 2,1, padded", {2, 2, 10, 8}, 3, 2, 1, 2, 2, 1, 0, 1, 2, 1},
  };
  return all;
}

// Element (n, c, r, q) of a dense [N, C, H, W] vector.
struct Plane {
  const Shape& s;
  size_t at(int64_t n, int64_t c, int64_t r, int64_t q) const {
    return static_cast<size_t>(((n * s[1] + c) * s[2] + r) * s[3] + q);
  }
};

// For each window, the position of its first maximum in C order (-1 for none); NaN counts as the
// maximum, the first NaN winning.
std::vector<int64_t> first_maxima(const PoolCase& c, const std::vector<double>& x) {
  const Plane in{c.x};
  std::vector<int64_t> pos;
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t ch = 0; ch < c.x[1]; ++ch)
      for (int64_t i = 0; i < c.oh(); ++i)
        for (int64_t j = 0; j < c.ow(); ++j) {
          int64_t best = -1;
          for (int64_t ki = 0; ki < c.kh; ++ki)
            for (int64_t kj = 0; kj < c.kw; ++kj) {
              const int64_t r = i * c.sh - c.lh + ki * c.dh, q = j * c.sw - c.lw + kj * c.dw;
              if (r < 0 || r >= c.x[2] || q < 0 || q >= c.x[3]) continue;
              const int64_t p = static_cast<int64_t>(in.at(n, ch, r, q));
              const double v = x[static_cast<size_t>(p)];
              const double b = best < 0 ? 0.0 : x[static_cast<size_t>(best)];
              if (best < 0 || (!std::isnan(b) && (v > b || std::isnan(v)))) best = p;
            }
          pos.push_back(best);
        }
  return pos;
}

// Values from a few integers, so that most windows hold ties.
std::vector<double> tied_values(const Shape& s, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-3, 2);
  std::vector<double> v(static_cast<size_t>(s[0] * s[1] * s[2] * s[3]));
  for (double& e : v) e = d(gen) * 0.5;
  return v;
}

std::vector<double> random_values(size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(count);
  for (double& e : v) e = static_cast<float>(d(gen));  // exact in f32
  return v;
}

Tensor tensor_of(const std::vector<double>& v, const Shape& s, DType t) {
  return Tensor::from_vector(v, s, cpu()).to(t);
}

std::vector<double> values(const Tensor& t) {
  return t.to(DType::F64).to_vector<double>();
}

// Forward and backward of case c in dtype t on input x (as `made`, when given: a view), against
// the float64 loop; a zero must come with its sign.
void check_case(const PoolCase& c, const std::vector<double>& x, DType t, const Tensor* made = nullptr) {
  const std::vector<int64_t> best = first_maxima(c, x);
  const std::vector<double> g = random_values(best.size(), 7);
  std::vector<double> y(best.size()), dx(x.size(), 0.0);
  for (size_t k = 0; k < best.size(); ++k) {
    y[k] = x[static_cast<size_t>(best[k])];
    dx[static_cast<size_t>(best[k])] += g[k];
  }
  const Tensor xt = made != nullptr ? *made : tensor_of(x, c.x, t);
  const std::vector<double> got_y =
      values(xt.window_reduce("max", c.window(), c.strides(), c.padding(), c.dilations()));
  REQUIRE(got_y.size() == y.size());
  for (size_t k = 0; k < y.size(); ++k) {
    INFO("output " << k);
    if (std::isnan(y[k])) {
      CHECK(std::isnan(got_y[k]));
    } else {
      CHECK(got_y[k] == y[k]);
      CHECK(std::signbit(got_y[k]) == std::signbit(y[k]));
    }
  }
  if (c.dh != 1 || c.dw != 1) return;  // window_scatter has no dilations
  const std::vector<double> got_dx = values(
      xt.window_scatter("max", tensor_of(g, c.y(), t), c.window(), c.strides(), c.padding()));
  REQUIRE(got_dx.size() == dx.size());
  // Overlapping windows add several f32 values in some order: a rounding apart at most.
  for (size_t k = 0; k < dx.size(); ++k) {
    INFO("input " << k);
    CHECK(got_dx[k] == Approx(dx[k]).epsilon(1e-6).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("max pooling and its backward match a float64 loop", "[nn][window][pool]") {
  for (const PoolCase& c : cases()) {
    for (DType t : {DType::F32, DType::F64}) {
      INFO(c.name << " " << dtype_name(t));
      const size_t count = static_cast<size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]);
      SECTION(std::string(c.name) + " distinct " + dtype_name(t)) {
        check_case(c, random_values(count, 3), t);
      }
      SECTION(std::string(c.name) + " ties " + dtype_name(t)) {
        check_case(c, tied_values(c.x, 5), t);
      }
    }
  }
}

TEST_CASE("max pooling backward of a window holding NaN routes to its first NaN",
          "[nn][window][pool][edge]") {
  const PoolCase& c = cases()[4];  // 3x3 s2 p1
  std::vector<double> x = tied_values(c.x, 11);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  x[3] = x[40] = x[41] = nan;
  check_case(c, x, DType::F32);
}

TEST_CASE("2x2 max pooling: NaN in every tap position, signed zeros, and strided rows",
          "[nn][window][pool][edge]") {
  const PoolCase& c = cases()[3];  // 67 wide: full vectors and a tail
  const double nan = std::numeric_limits<double>::quiet_NaN();
  SECTION("NaN") {
    std::vector<double> x = tied_values(c.x, 19);
    // Windows (row pair 0) 0, 1, 2, 3 get a NaN at tap a, b, c, d; window 20 at b and d (b wins);
    // window 32 (the tail) at c; window 17 of row pair 1 at d.
    const Plane in{c.x};
    for (const auto& [r, q] : std::vector<std::pair<int64_t, int64_t>>{
             {0, 0}, {0, 3}, {1, 4}, {1, 7}, {0, 41}, {1, 41}, {1, 64}, {3, 35}})
      x[in.at(0, 1, r, q)] = nan;
    check_case(c, x, DType::F32);
  }
  SECTION("signed zeros: the first of -0 and +0 wins") {
    std::vector<double> x = tied_values(c.x, 23);
    for (size_t k = 0; k < x.size(); ++k)
      if (x[k] >= 0) x[k] = k % 3 == 0 ? -0.0 : 0.0;
    check_case(c, x, DType::F32);
  }
  SECTION("rows of a wider tensor (a view, unaligned)") {
    const Shape wide{c.x[0], c.x[1], c.x[2], c.x[3] + 5};
    const std::vector<double> all = random_values(static_cast<size_t>(wide[0] * wide[1] * wide[2] * wide[3]), 29);
    const Tensor view = tensor_of(all, wide, DType::F32).narrow(3, 3, c.x[3]);
    check_case(c, view.to(DType::F64).contiguous().to_vector<double>(), DType::F32, &view);
  }
}

TEST_CASE("max_pool2d's gradient is the select-and-scatter of the output's gradient",
          "[nn][window][pool][autograd]") {
  const PoolCase c{"3x3 stride 2 padding 1", {4, 8, 14, 14}, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  const std::vector<double> x = tied_values(c.x, 13);
  const std::vector<int64_t> best = first_maxima(c, x);
  const std::vector<double> g = random_values(best.size(), 17);
  std::vector<double> dx(x.size(), 0.0);
  for (size_t k = 0; k < best.size(); ++k) dx[static_cast<size_t>(best[k])] += g[k];
  Tensor xt = tensor_of(x, c.x, DType::F32);
  xt.set_requires_grad();
  (xt.max_pool2d({3}, {2}, {1}) * tensor_of(g, c.y(), DType::F32)).sum().backward();
  const std::vector<double> got = values(xt.grad());
  REQUIRE(got.size() == dx.size());
  for (size_t k = 0; k < dx.size(); ++k) {
    INFO("input " << k);
    CHECK(got[k] == Approx(dx[k]).epsilon(1e-6).margin(1e-6));
  }
}
