// quant::matmul with MatmulOptions::round_x (ABI 1.6, WICK_QUANT_ROUND_X): x rounded to the
// weight type's 8-bit activation type first, as llama.cpp does. The expected values come from
// tests/data/ggml_quants/fixtures.bin: the activation rows (act.input) quantized by NumPy (gguf's
// Q8_0, make_fixtures.py's Q8_1 and Q8_K, each equal to llama.cpp's reference), decoded here
// (d * q), times the fixture's dequantized weights in a double loop; never Wick's own output. On
// cpu-onednn (its integer kernels for a few rows, the rounded rows through sgemm for more; CI runs
// this under ONEDNN_MAX_CPU_ISA=AVX2 and SSE41 too) and opencl (which declines the flag: the core
// composes quantize, dequantize and the unflagged op).
#include "ggml_fixtures.hpp"
#include "test_support.hpp"

#include <wick/autograd.hpp>
#include <wick/quant.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace wick;
using wick::test::ggml_fixture::bytes;
using wick::test::ggml_fixture::floats;
using wick::test::ggml_fixture::Reference;
using wick::test::ggml_fixture::reference;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kRow = 256;

struct RoundCase {
  const char* weights;
  quant::Type type;
  const char* act;  // ggml's vec_dot_type for the weights
};
const RoundCase kCases[] = {
    {"Q4_0", quant::Type::Q4_0, "Q8_0"}, {"Q4_1", quant::Type::Q4_1, "Q8_1"}, {"Q5_0", quant::Type::Q5_0, "Q8_0"},
    {"Q5_1", quant::Type::Q5_1, "Q8_1"}, {"Q8_0", quant::Type::Q8_0, "Q8_0"}, {"Q2_K", quant::Type::Q2_K, "Q8_K"},
    {"Q3_K", quant::Type::Q3_K, "Q8_K"}, {"Q4_K", quant::Type::Q4_K, "Q8_K"}, {"Q5_K", quant::Type::Q5_K, "Q8_K"},
    {"Q6_K", quant::Type::Q6_K, "Q8_K"}, {"Q8_K", quant::Type::Q8_K, "Q8_K"},
};

float half_to_float(uint16_t h) {  // IEEE binary16, by hand
  const int exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  const double v = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
  return static_cast<float>((h & 0x8000) ? -v : v);
}

// The activation fixture's blocks decoded: d * q (Q8_0: f16 d, q[32]; Q8_1: f16 d, f16 s, q[32];
// Q8_K: f32 d, q[256], i16 sums[16]).
std::vector<float> decode_act(const std::string& act) {
  const std::vector<uint8_t> raw = bytes(act + ".act");
  const bool k = act == "Q8_K";
  const size_t size = k ? 292 : act == "Q8_0" ? 34 : 36, per = k ? 256 : 32, at = k ? 4 : size - 32;
  std::vector<float> out;
  for (size_t b = 0; b + size <= raw.size(); b += size) {
    float d;
    if (k) {
      std::memcpy(&d, &raw[b], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[b], 2);
      d = half_to_float(h);
    }
    for (size_t i = 0; i < per; ++i) out.push_back(d * static_cast<float>(static_cast<int8_t>(raw[b + at + i])));
  }
  return out;
}


// Elements of y farther from want than tol times their scale.
size_t misses(const Tensor& y, const Reference& want, double tol) {
  const std::vector<double> got = y.to(DType::F64).contiguous().to_vector<double>();
  size_t bad = got.size() == want.y.size() ? 0 : got.size() + 1;
  double worst = 0;
  for (size_t i = 0; i < got.size() && i < want.y.size(); ++i) {
    const double err = std::fabs(got[i] - want.y[i]) / (want.scale[i] + 1e-30);
    worst = std::max(worst, err);
    bad += err <= tol ? 0 : 1;
  }
  UNSCOPED_INFO("worst error " << worst << " of the sum of |products|");
  return bad;
}

std::vector<float> twice(const std::vector<float>& v) {
  std::vector<float> out(v);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace

TEST_CASE("round_activations is NumPy's and llama.cpp's Q8_0, Q8_1 and Q8_K rounding of x", "[quant]") {
  const std::vector<float> xa = floats("act.input");
  const int64_t rows = static_cast<int64_t>(xa.size()) / kRow;
  for (const Device& dev : test::cpu_and_opencl()) {
    const Tensor x = Tensor::from_vector(xa, {rows, kRow}, dev);
    for (const RoundCase& c : kCases) {
      INFO(dev.name() << " " << c.weights << " -> " << c.act);
      CHECK(sdk::ggml::type_name(quant::activation_type(c.type)) == c.act);
      const std::vector<float> got = quant::round_activations(x, c.type).to_vector<float>();
      const std::vector<float> want = decode_act(c.act);
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("quant::matmul with round_x is x rounded to the activation type times the dequantized weights",
          "[quant]") {
  const std::vector<float> xa = floats("act.input");
  const int64_t rows = static_cast<int64_t>(xa.size()) / kRow;  // 4: the decoding kernels
  for (const Device& dev : test::cpu_and_opencl()) {
    for (const RoundCase& c : kCases) {
      INFO(dev.name() << " " << c.weights);
      const std::vector<float> wq = floats(std::string(c.weights) + ".dequant");
      const int64_t n = static_cast<int64_t>(wq.size()) / kRow;
      const quant::QTensor w = quant::quantize(Tensor::from_vector(floats("input"), {n, kRow}, dev), c.type);
      const std::vector<float> xr = decode_act(c.act);
      const quant::MatmulOptions round{true};
      // A few rows (decoding) and eight (a prompt: the rounded rows through the f32 paths).
      CHECK(misses(quant::matmul(Tensor::from_vector(xa, {rows, kRow}, dev), w, round), reference(xr, wq, rows, n, kRow),
                   1e-6) == 0);
      CHECK(misses(quant::matmul(Tensor::from_vector(twice(xa), {2, rows, kRow}, dev), w, round),
                   reference(twice(xr), wq, 2 * rows, n, kRow), 1e-6) == 0);
      // f64 x (declined by the plugins: composed by the core) and f16 x give the same values.
      CHECK(misses(quant::matmul(Tensor::from_vector(xa, {rows, kRow}, dev).to(DType::F64), w, round),
                   reference(xr, wq, rows, n, kRow), 1e-12) == 0);
      // The flag is honoured, not ignored: the unrounded x's product misses the rounded one.
      CHECK(misses(quant::matmul(Tensor::from_vector(xa, {rows, kRow}, dev), w), reference(xr, wq, rows, n, kRow), 1e-6) >
            0);
    }
  }
}

TEST_CASE("quant::matmul with round_x passes the gradient straight through to x", "[quant]") {
  const Device dev = test::cpu();
  const std::vector<float> xa = floats("act.input");
  const quant::QTensor w =
      quant::quantize(Tensor::from_vector(floats("input"), {8, kRow}, dev), quant::Type::Q4_K);
  const std::vector<float> deq = floats("Q4_K.dequant");
  Tensor x = Tensor::from_vector(std::vector<float>(xa.begin(), xa.begin() + 2 * kRow), {2, kRow}, dev);
  x.set_requires_grad(true);
  const Tensor y = quant::matmul(x, w, quant::MatmulOptions{true});
  // The value: the rounded x's (as without autograd) ...
  const std::vector<float> xr = decode_act("Q8_K");
  CHECK(misses(y.detach(), reference(std::vector<float>(xr.begin(), xr.begin() + 2 * kRow), deq, 2, 8, kRow), 1e-6) ==
        0);
  // ... the gradient: d(sum(x W^T))/dx[r, i] = sum over j of W[j, i], as if x were not rounded.
  y.sum().backward();
  const std::vector<float> g = x.grad().to_vector<float>();
  for (int64_t i = 0; i < kRow; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 8; ++j) s += deq[size_t(j * kRow + i)];
    CHECK(g[size_t(i)] == Approx(s).margin(1e-4));
    CHECK(g[size_t(kRow + i)] == Approx(s).margin(1e-4));
  }
}

TEST_CASE("activation_type refuses a type without an 8-bit activation type, naming it", "[quant][edge]") {
  CHECK_THROWS_WITH(quant::activation_type(quant::Type::IQ2_XXS), Contains("GGML type IQ2_XXS has no 8-bit"));
  CHECK_THROWS_WITH(quant::activation_type(quant::Type::F16), Contains("GGML type F16 has no 8-bit"));
}
