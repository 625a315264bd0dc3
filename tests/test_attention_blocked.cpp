// The CPU attention kernel on problems that take several steps (plugins/cpu-onednn/src/
// attention.cpp splits batch elements and query rows into blocks of at most 2^18 scores; causal
// query blocks have at most 128 rows): every output against softmax(q kᵀ · scale + mask) v
// computed here in double, element by element.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace wick;
using wick::test::cpu;

namespace {

struct Case {
  Shape q, k, v;  // [b, h, L, E], [b, hk, S, E] (hk = 1: broadcast over the heads), [b, hk, S, Ev]
  bool causal = false;
  int64_t padding = 0;  // the last `padding` keys of batch element 0 masked off with -inf
};

std::vector<double> random_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// softmax(q kᵀ · scale + mask) v in double, batch element by batch element; causal top-left
// aligned (query i sees keys j <= i). k and v with one head are shared by every head of q.
std::vector<double> reference(const Case& c, const std::vector<double>& q,
                              const std::vector<double>& k, const std::vector<double>& v,
                              const std::vector<double>& mask, double scale) {
  const int64_t b = c.q[0], h = c.q[1], l = c.q[2], e = c.q[3], hk = c.k[1], s = c.k[2],
                ev = c.v[3];
  std::vector<double> out(static_cast<size_t>(b * h * l * ev));
  std::vector<double> w(static_cast<size_t>(s));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi) {
      const int64_t kh = hk == 1 ? 0 : hi;
      const double* kp = k.data() + (bi * hk + kh) * s * e;
      const double* vp = v.data() + (bi * hk + kh) * s * ev;
      for (int64_t i = 0; i < l; ++i) {
        const double* qp = q.data() + ((bi * h + hi) * l + i) * e;
        double top = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (int64_t x = 0; x < e; ++x) dot += qp[x] * kp[j * e + x];
          w[static_cast<size_t>(j)] = dot * scale + mask[static_cast<size_t>(bi * s + j)];
          if (c.causal && j > i)
            w[static_cast<size_t>(j)] = -std::numeric_limits<double>::infinity();
          top = std::max(top, w[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (double& x : w) sum += x = std::exp(x - top);
        double* op = out.data() + ((bi * h + hi) * l + i) * ev;
        for (int64_t x = 0; x < ev; ++x) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j) acc += w[static_cast<size_t>(j)] * vp[j * ev + x];
          op[x] = acc / sum;
        }
      }
    }
  return out;
}

// The largest |Wick - reference| of case c in dtype t, with the case's mask or without one.
double max_error(const Case& c, DType t, bool masked = true) {
  const int64_t b = c.q[0], s = c.k[2];
  const std::vector<double> q = random_values(numel(c.q), 1), k = random_values(numel(c.k), 2),
                            v = random_values(numel(c.v), 3);
  // The additive mask, [b, 1, 1, S] (broadcast over heads and queries): random in [-1, 1), and
  // -inf on the padded keys of batch element 0.
  std::vector<double> mask = masked ? random_values(b * s, 4) : std::vector<double>(static_cast<size_t>(b * s));
  for (int64_t j = s - c.padding; masked && j < s; ++j)
    mask[static_cast<size_t>(j)] = -std::numeric_limits<double>::infinity();
  const double scale = 1 / std::sqrt(static_cast<double>(c.q[3]));
  auto tensor = [&](const std::vector<double>& x, const Shape& shape) {
    return Tensor::from_vector(x, shape, cpu()).to(t);
  };
  const Tensor out = Tensor::attention(tensor(q, c.q), tensor(k, c.k), tensor(v, c.v),
                                       masked ? tensor(mask, {b, 1, 1, s}) : Tensor(), scale,
                                       c.causal);
  REQUIRE(out.shape() == Shape{c.q[0], c.q[1], c.q[2], c.v[3]});
  const std::vector<double> got = out.to(DType::F64).to_vector<double>();
  const std::vector<double> want = reference(c, q, k, v, mask, scale);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst;
}

}  // namespace

TEST_CASE("attention over several blocks matches a double reference", "[nn][fused][attention]") {
  const std::vector<Case> cases = {
      // 6 slices of 300 x 300 scores: steps of two heads, then one.
      {{2, 3, 300, 24}, {2, 3, 300, 24}, {2, 3, 300, 20}},
      // 700 x 900 scores per slice: query blocks of 291 rows, the last one short.
      {{1, 2, 700, 16}, {1, 2, 900, 16}, {1, 2, 900, 12}, false, 37},
      // Causal: query blocks of 128 rows (the last of 60) that skip the keys past them; more keys
      // than queries.
      {{1, 2, 700, 16}, {1, 2, 900, 16}, {1, 2, 900, 12}, true, 37},
      // Causal with more queries than keys: rows past the last key see every key.
      {{2, 1, 333, 8}, {2, 1, 200, 8}, {2, 1, 200, 8}, true, 5},
      // One k and v head shared by all three query heads (a stride-0 broadcast, as grouped-query
      // attention with one group), long enough to split rows.
      {{2, 3, 530, 16}, {2, 1, 530, 16}, {2, 1, 530, 16}, true, 11},
  };
  for (const Case& c : cases) {
    INFO("q [" << c.q[0] << ", " << c.q[1] << ", " << c.q[2] << ", " << c.q[3] << "], S " << c.k[2]
               << (c.causal ? ", causal" : "") << ", padding " << c.padding);
    CHECK(max_error(c, DType::F64) < 1e-12);
    CHECK(max_error(c, DType::F32) < 2e-5);
    // Without a mask, f32 rows take one fused pass (exp, shift and sum) on the vector kernels.
    CHECK(max_error(c, DType::F32, false) < 2e-5);
    CHECK(max_error(c, DType::F64, false) < 1e-12);
    // bf16 inputs and output: the output rounded once (8 bits) after f32 inside; the inputs are
    // rounded too, so the bound is a few bf16 ulps of values below 1.
    CHECK(max_error(c, DType::BF16) < 3e-2);
  }
}
