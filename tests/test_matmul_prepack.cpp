// cpu-onednn's prepacked matmul weights: a weight used again unchanged runs on a copy in oneDNN's
// preferred layout, and every write into its buffer (an in-place op, a host write, a freed buffer
// whose address is reused) is seen on the next call: never a stale result.
#include "test_support.hpp"

#include <wick/autograd.hpp>
#include <wick/buffer_io.hpp>
#include <wick/dispatch.hpp>
#include <wick/tensor.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace wick;

namespace {

// Big enough for oneDNN (the plugin's own loop takes products under 2^16 multiply-adds).
constexpr int64_t kM = 16, kK = 256, kN = 384;

std::vector<float> values(int64_t n, int64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>((i * 7 + seed * 3) % 17) / 8.0f - 1.0f;
  return v;
}

// a [m, k] row-major times b given by element (p, j) -> b[p * bk + j * bn], in double.
std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t k, int64_t n, int64_t bk, int64_t bn, int64_t b0 = 0) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += double(a[static_cast<size_t>(i * k + p)]) *
             b[static_cast<size_t>(b0 + p * bk + j * bn)];
      c[static_cast<size_t>(i * n + j)] = s;
    }
  return c;
}

// How many elements of got are off want by more than tol relative to the row's magnitude.
int wrong(const Tensor& got_t, const std::vector<double>& want, double tol = 1e-4) {
  const std::vector<float> got = got_t.to(DType::F32).to_vector<float>();
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::abs(double(got[i]) - want[i]) > tol * (std::abs(want[i]) + double(kK))) ++bad;
  return bad;
}

}  // namespace

TEST_CASE("a weight reused under no-grad gives the same, correct product every call") {
  const Device dev = test::cpu();
  const autograd::NoGradGuard no_grad;
  const std::vector<float> a = values(kM * kK, 1), b = values(kK * kN, 2);
  const Tensor ta = Tensor::from_vector(a, {kM, kK}, dev),
               tb = Tensor::from_vector(b, {kK, kN}, dev);
  const std::vector<double> want = reference(a, b, kM, kK, kN, kN, 1);
  for (int call = 0; call < 5; ++call) CHECK(wrong(ta.matmul(tb), want) == 0);
}

TEST_CASE("an in-place write or a host write into a packed weight is seen by the next matmul") {
  const Device dev = test::cpu();
  const autograd::NoGradGuard no_grad;
  const std::vector<float> a = values(kM * kK, 3);
  std::vector<float> b = values(kK * kN, 4);
  const Tensor ta = Tensor::from_vector(a, {kM, kK}, dev);
  Tensor tb = Tensor::from_vector(b, {kK, kN}, dev);
  for (int call = 0; call < 3; ++call)
    CHECK(wrong(ta.matmul(tb), reference(a, b, kM, kK, kN, kN, 1)) == 0);

  // tb += 0.5, through the dispatcher's in-place path (what nn::assign and optimizers use).
  dispatch_in_place(WICK_OP_ADD, nullptr, {tb, Tensor::full({kK, kN}, 0.5, DType::F32, dev)}, {tb});
  for (float& v : b) v += 0.5f;
  for (int call = 0; call < 2; ++call)
    CHECK(wrong(ta.matmul(tb), reference(a, b, kM, kK, kN, kN, 1)) == 0);

  // A host write of one row (buffer_write).
  std::vector<float> row(static_cast<size_t>(kN), 2.0f);
  write_buffer_bytes(tb, 7 * kN * sizeof(float), row.data(), row.size() * sizeof(float));
  for (int64_t j = 0; j < kN; ++j) b[static_cast<size_t>(7 * kN + j)] = 2.0f;
  for (int call = 0; call < 2; ++call)
    CHECK(wrong(ta.matmul(tb), reference(a, b, kM, kK, kN, kN, 1)) == 0);
}

TEST_CASE("a weight freed and a new one at the same address is not mistaken for the old") {
  const Device dev = test::cpu();
  const autograd::NoGradGuard no_grad;
  const std::vector<float> a = values(kM * kK, 5);
  const Tensor ta = Tensor::from_vector(a, {kM, kK}, dev);
  for (int64_t seed = 10; seed < 14; ++seed) {
    const std::vector<float> b = values(kK * kN, seed);
    const Tensor tb = Tensor::from_vector(b, {kK, kN}, dev);  // the freed block is reused
    const std::vector<double> want = reference(a, b, kM, kK, kN, kN, 1);
    for (int call = 0; call < 3; ++call) CHECK(wrong(ta.matmul(tb), want) == 0);
  }
}

TEST_CASE("transposed and offset weight views of one buffer each get their own packed copy") {
  const Device dev = test::cpu();
  const autograd::NoGradGuard no_grad;
  const std::vector<float> a = values(kM * kK, 6);
  const Tensor ta = Tensor::from_vector(a, {kM, kK}, dev);
  // w [n, k]: x w^T, the nn.Linear layout.
  const std::vector<float> w = values(kN * kK, 7);
  const Tensor tw = Tensor::from_vector(w, {kN, kK}, dev);
  const std::vector<double> want_t = reference(a, w, kM, kK, kN, 1, kK);
  // wide [k, 2n]: its left and right halves share a buffer and differ in offset.
  const std::vector<float> wide = values(kK * 2 * kN, 8);
  const Tensor twide = Tensor::from_vector(wide, {kK, 2 * kN}, dev);
  const std::vector<double> want_l = reference(a, wide, kM, kK, kN, 2 * kN, 1);
  const std::vector<double> want_r = reference(a, wide, kM, kK, kN, 2 * kN, 1, kN);
  for (int call = 0; call < 3; ++call) {
    CHECK(wrong(ta.matmul(tw.t()), want_t) == 0);
    CHECK(wrong(ta.matmul(twide.narrow(1, 0, kN)), want_l) == 0);
    CHECK(wrong(ta.matmul(twide.narrow(1, kN, kN)), want_r) == 0);
  }
}

TEST_CASE("a reused bf16 weight gives the bf16 product, and sees an in-place write") {
  const Device dev = test::cpu();
  const autograd::NoGradGuard no_grad;
  // Values exact in bf16 (multiples of 1/8 in [-1, 1]).
  const std::vector<float> a = values(kM * kK, 9);
  std::vector<float> b = values(kK * kN, 10);
  const Tensor ta = Tensor::from_vector(a, {kM, kK}, dev).to(DType::BF16);
  Tensor tb = Tensor::from_vector(b, {kK, kN}, dev).to(DType::BF16);
  for (int call = 0; call < 3; ++call)
    CHECK(wrong(ta.matmul(tb), reference(a, b, kM, kK, kN, kN, 1), 1e-2) == 0);
  dispatch_in_place(WICK_OP_ADD, nullptr, {tb, Tensor::full({kK, kN}, 0.25, DType::BF16, dev)},
                    {tb});
  for (float& v : b) v += 0.25f;
  for (int call = 0; call < 2; ++call)
    CHECK(wrong(ta.matmul(tb), reference(a, b, kM, kK, kN, kN, 1), 1e-2) == 0);
}

TEST_CASE("weights larger than half the plan cache run unpacked and alternate correctly") {
  // plan_cache_mb = 1: a 1024 x 1024 f32 weight (4 MiB) is never packed, a 256 x 384 one is.
  const auto rt = test::cpu_runtime_with({{"plan_cache_mb", int64_t{1}}});
  const Device dev = rt->cpu_device();
  const autograd::NoGradGuard no_grad;
  const std::vector<float> a = values(kM * 1024, 11), big = values(1024 * 1024, 12);
  const std::vector<float> small = values(kK * kN, 13);
  const Tensor ta = Tensor::from_vector(a, {kM, 1024}, dev);
  const Tensor ts = ta.narrow(1, 0, kK);
  const Tensor tbig = Tensor::from_vector(big, {1024, 1024}, dev);
  const Tensor tsmall = Tensor::from_vector(small, {kK, kN}, dev);
  std::vector<float> a_small(static_cast<size_t>(kM * kK));
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t p = 0; p < kK; ++p)
      a_small[static_cast<size_t>(i * kK + p)] = a[static_cast<size_t>(i * 1024 + p)];
  const std::vector<double> want_big = reference(a, big, kM, 1024, 1024, 1024, 1);
  const std::vector<double> want_small = reference(a_small, small, kM, kK, kN, kN, 1);
  for (int call = 0; call < 3; ++call) {
    CHECK(wrong(ta.matmul(tbig), want_big) == 0);
    CHECK(wrong(ts.matmul(tsmall), want_small) == 0);
  }
}

namespace {

// A 2-D convolution of x [1, c, h, w] by k [o, c, 3, 3], stride 1, padding 1, in double.
std::vector<double> conv_reference(const std::vector<float>& x, const std::vector<float>& k,
                                   int64_t c, int64_t h, int64_t w, int64_t o) {
  std::vector<double> y(static_cast<size_t>(o * h * w), 0.0);
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        double s = 0.0;
        for (int64_t ic = 0; ic < c; ++ic)
          for (int64_t di = 0; di < 3; ++di)
            for (int64_t dj = 0; dj < 3; ++dj) {
              const int64_t ii = i + di - 1, jj = j + dj - 1;
              if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
              s += double(x[static_cast<size_t>((ic * h + ii) * w + jj)]) *
                   k[static_cast<size_t>(((oc * c + ic) * 3 + di) * 3 + dj)];
            }
        y[static_cast<size_t>((oc * h + i) * w + j)] = s;
      }
  return y;
}

}  // namespace

TEST_CASE("a reused convolution weight is packed once, and an in-place or host write is seen") {
  const Device dev = test::cpu();
  const autograd::NoGradGuard no_grad;
  constexpr int64_t c = 32, h = 14, w = 14, o = 64;
  const std::vector<float> x = values(c * h * w, 14);
  std::vector<float> k = values(o * c * 9, 15);
  const Tensor tx = Tensor::from_vector(x, {1, c, h, w}, dev);
  Tensor tk = Tensor::from_vector(k, {o, c, 3, 3}, dev);
  for (int call = 0; call < 4; ++call)
    CHECK(wrong(tx.conv(tk, {1, 1}, {1, 1}), conv_reference(x, k, c, h, w, o)) == 0);

  dispatch_in_place(WICK_OP_ADD, nullptr, {tk, Tensor::full({o, c, 3, 3}, 0.5, DType::F32, dev)},
                    {tk});
  for (float& v : k) v += 0.5f;
  for (int call = 0; call < 2; ++call)
    CHECK(wrong(tx.conv(tk, {1, 1}, {1, 1}), conv_reference(x, k, c, h, w, o)) == 0);

  std::vector<float> filter(9 * c, -1.0f);  // output channel 5's filter, from the host
  write_buffer_bytes(tk, 5 * c * 9 * sizeof(float), filter.data(), filter.size() * sizeof(float));
  for (size_t i = 0; i < filter.size(); ++i) k[static_cast<size_t>(5 * c * 9) + i] = -1.0f;
  for (int call = 0; call < 2; ++call)
    CHECK(wrong(tx.conv(tk, {1, 1}, {1, 1}), conv_reference(x, k, c, h, w, o)) == 0);
}
