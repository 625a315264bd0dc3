// wick/quant.hpp: GGML block-quantized tensors through the op table's QUANTIZE, DEQUANTIZE and
// MATMUL_QUANT. Bytes and values against tests/data/ggml_quants/fixtures.bin (the `gguf` package's
// and llama.cpp's references, never Wick's), the matmul against a double loop over the fixture's
// dequantized weights, on cpu-onednn (its kernels) and opencl (gpu-common's kernels; the core
// quantizes the K-quants' weight types on the host), and the refusals.
#include "ggml_fixtures.hpp"
#include "test_support.hpp"

#include <wick/autograd.hpp>
#include <wick/quant.hpp>
#include <wick/sdk/ggml_quants.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace wick;
using wick::test::ggml_fixture::bytes;
using wick::test::ggml_fixture::floats;
using wick::test::ggml_fixture::Reference;
using wick::test::ggml_fixture::reference;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kRow = 256;  // a whole number of blocks of every type

struct TypeCase {
  const char* name;
  quant::Type type;
  bool dequantized;  // the fixture has its dequantized values
};
const TypeCase kTypes[] = {
    {"Q4_0", quant::Type::Q4_0, true}, {"Q4_1", quant::Type::Q4_1, true}, {"Q5_0", quant::Type::Q5_0, true},
    {"Q5_1", quant::Type::Q5_1, true}, {"Q8_0", quant::Type::Q8_0, true}, {"Q8_1", quant::Type::Q8_1, false},
    {"Q2_K", quant::Type::Q2_K, true}, {"Q3_K", quant::Type::Q3_K, true}, {"Q4_K", quant::Type::Q4_K, true},
    {"Q5_K", quant::Type::Q5_K, true}, {"Q6_K", quant::Type::Q6_K, true}, {"Q8_K", quant::Type::Q8_K, true},
};

std::vector<uint8_t> host_bytes(const Tensor& t) {
  std::vector<uint8_t> v(static_cast<size_t>(t.numel()));
  t.copy_to_host(v.data(), v.size());
  return v;
}

std::vector<float> ramp(int64_t n, double scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::cos(0.61 * double(i)) * scale);
  return v;
}

// Rows no fixture has: subnormal, huge and mixed magnitudes, zeros, ties, NaN and infinity. The
// expected bytes are the SDK's reference quantizer's (wick/sdk/ggml_quants.hpp, itself checked
// against the gguf package's bytes above and in test_ggml_quants), the kernels under test a port
// of it: opencl's QUANTIZE kernel (its divisions in integers), cpu-onednn's.
std::vector<float> hostile_rows(int64_t rows) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float scales[] = {1e-42f, 3e-39f, 1e-30f, 1e-5f, 0.7f, 1.0f, 300.0f, 1e7f, 1e20f, 3e37f};
  std::vector<float> v(static_cast<size_t>(rows * kRow));
  for (int64_t r = 0; r < rows; ++r) {
    float* x = v.data() + r * kRow;
    const float scale = scales[r % 10];
    for (int64_t i = 0; i < kRow; ++i) x[i] = normal(gen) * scale;
    if (r % 7 == 1) for (int64_t i = 0; i < 64; ++i) x[i] = 0.0f;                     // zero blocks
    if (r % 7 == 2) for (int64_t i = 0; i < kRow; ++i) x[i] = float(i % 16) - 8.0f;   // ties
    if (r % 7 == 3) x[5] = std::numeric_limits<float>::quiet_NaN();
    if (r % 7 == 4) x[40] = -std::numeric_limits<float>::infinity();
    if (r % 7 == 5) for (int64_t i = 0; i < kRow; i += 3) x[i] *= 1e-25f;              // mixed
    if (r % 7 == 6) x[17] = -x[3] + 0.0f, x[3] = std::fabs(x[3]);                       // |max| twice
  }
  return v;
}

}  // namespace

TEST_CASE("quantize on every device is the reference quantizer's, bit for bit, on hostile and random rows, from f32, f16 and f64", "[quant]") {
  const int64_t rows = 70;
  const std::vector<float> input = hostile_rows(rows);
  for (const Device& dev : test::cpu_and_opencl()) {
    for (const DType dtype : {DType::F32, DType::F16, DType::F64}) {
      const Tensor x = Tensor::from_vector(input, {rows, kRow}, dev).to(dtype);
      // The values the quantizer sees: the input as stored in dtype, as f32 (f64 widens exactly).
      const std::vector<float> seen = x.to(DType::F32).to_vector<float>();
      for (const TypeCase& t : kTypes) {
        INFO(dev.name() << " " << t.name << " from " << dtype_name(dtype));
        const auto type = static_cast<sdk::ggml::Type>(static_cast<int>(t.type));
        const int64_t row_bytes = kRow / int64_t(sdk::ggml::traits(type).block_size) * int64_t(sdk::ggml::traits(type).type_size);
        std::vector<uint8_t> want(static_cast<size_t>(rows * row_bytes));
        for (int64_t r = 0; r < rows; ++r)
          sdk::ggml::quantize_row(type, seen.data() + r * kRow, want.data() + r * row_bytes, kRow);
        const std::vector<uint8_t> got = host_bytes(quant::quantize(x, t.type).data());
        REQUIRE(got.size() == want.size());
        size_t first_bad = got.size();
        for (size_t i = 0; i < got.size() && first_bad == got.size(); ++i)
          if (got[i] != want[i]) first_bad = i;
        INFO("first differing byte " << first_bad << " (row " << int64_t(first_bad) / row_bytes << ")");
        CHECK(first_bad == got.size());
      }
    }
  }
}

TEST_CASE("quantize and dequantize give the gguf package's and llama.cpp's bytes and values", "[quant]") {
  const std::vector<float> input = floats("input");
  const int64_t rows = static_cast<int64_t>(input.size()) / kRow;
  for (const Device& dev : test::cpu_and_opencl()) {
    const Tensor x = Tensor::from_vector(input, {rows, kRow}, dev);
    for (const TypeCase& t : kTypes) {
      INFO(dev.name() << " " << t.name);
      const quant::QTensor q = quant::quantize(x, t.type);
      CHECK(q.shape() == Shape{rows, kRow});
      CHECK(host_bytes(q.data()) == bytes(std::string(t.name) + ".quant"));
      if (!t.dequantized) continue;
      const std::vector<float> want = floats(std::string(t.name) + ".dequant");
      const std::vector<float> got = quant::dequantize(q).to_vector<float>();
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
      // f64 widens the f32 values exactly.
      const std::vector<double> wide = quant::dequantize(q, DType::F64).to_vector<double>();
      CHECK(std::equal(wide.begin(), wide.end(), want.begin(), [](double a, float b) { return a == double(b); }));
    }
  }
}

TEST_CASE("quant::matmul is x times the dequantized weights, on every layout and float dtype", "[quant]") {
  for (const Device& dev : test::cpu_and_opencl()) {
    for (const TypeCase& t : kTypes) {
      if (!t.dequantized) continue;
      INFO(dev.name() << " " << t.name);
      const std::vector<float> wq = floats(std::string(t.name) + ".dequant");
      const int64_t n = static_cast<int64_t>(wq.size()) / kRow;
      const quant::QTensor w = quant::quantize(Tensor::from_vector(floats("input"), {n, kRow}, dev), t.type);
      const std::vector<float> x = ramp(6 * kRow, 1.5);
      const Reference want = reference(x, wq, 6, n, kRow);
      auto check = [&](const Tensor& y, double tol) {
        REQUIRE(y.shape().back() == n);
        const std::vector<double> got = y.to(DType::F64).contiguous().to_vector<double>();
        size_t bad = 0;
        for (size_t i = 0; i < got.size(); ++i)
          bad += std::fabs(got[i] - want.y[i]) <= tol * (want.scale[i] + 1e-30) ? 0 : 1;
        CHECK(bad == 0);
      };
      const Tensor tx = Tensor::from_vector(x, {2, 3, kRow}, dev);
      check(quant::matmul(tx, w), 1e-6);
      // A strided x: the rows of a transposed copy read back through a transpose.
      check(quant::matmul(tx.reshape({6, kRow}).t().contiguous().t(), w), 1e-6);
      check(quant::matmul(tx.to(DType::F64), w), 1e-12);
      CHECK(quant::matmul(tx.to(DType::F16), w).dtype() == DType::F16);
    }
  }
}

TEST_CASE("quant::matmul's gradient flows to x through the dequantized weights", "[quant]") {
  const Device dev = test::cpu();
  const std::vector<float> wv = ramp(4 * kRow, 2.0);
  const quant::QTensor w = quant::quantize(Tensor::from_vector(wv, {4, kRow}, dev), quant::Type::Q8_0);
  const std::vector<float> deq = quant::dequantize(w).to_vector<float>();
  Tensor x = Tensor::from_vector(ramp(2 * kRow, 1.0), {2, kRow}, dev);
  x.set_requires_grad(true);
  quant::matmul(x, w).sum().backward();
  // d(sum(x W^T))/dx[r, i] = sum over j of W[j, i].
  const std::vector<float> g = x.grad().to_vector<float>();
  for (int64_t i = 0; i < kRow; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += deq[size_t(j * kRow + i)];
    CHECK(g[size_t(i)] == Approx(s).margin(1e-5));
    CHECK(g[size_t(kRow + i)] == Approx(s).margin(1e-5));
  }
}

TEST_CASE("the quantized ops refuse what they cannot represent, naming it", "[quant][edge]") {
  const Device dev = test::cpu();
  const Tensor x = Tensor::zeros({2, 100}, DType::F32, dev);
  CHECK_THROWS_WITH(quant::quantize(x, quant::Type::Q4_0),
                    Contains("a row of 100 values is not a whole number of Q4_0 blocks (32 values each)"));
  CHECK_THROWS_WITH(quant::quantize(Tensor::zeros({2, 256}, DType::F32, dev), quant::Type::IQ2_XXS),
                    Contains("GGML type IQ2_XXS has no quantize/dequantize here"));
  CHECK_THROWS_WITH(quant::quantize(Tensor::zeros({2, 64}, DType::I32, dev), quant::Type::Q8_0),
                    Contains("needs a float tensor, got i32"));
  CHECK_THROWS_WITH(quant::QTensor(Tensor::zeros({2, 33}, DType::U8, dev), quant::Type::Q8_0, {2, 32}),
                    Contains("Q8_0 [2, 32] needs contiguous u8 data [2, 34], got u8 [2, 33]"));
  const quant::QTensor w = quant::quantize(Tensor::zeros({3, 64}, DType::F32, dev), quant::Type::Q8_0);
  CHECK_THROWS_WITH(quant::matmul(Tensor::zeros({2, 32}, DType::F32, dev), w),
                    Contains("x's last axis must be k = 64"));
}
