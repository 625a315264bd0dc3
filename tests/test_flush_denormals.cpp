// [plugins.cpu-onednn] flush_denormals: subnormal inputs and results become zero in the plugin's
// loops, its OpenMP threads and oneDNN's kernels when on; untouched when off (the default); the
// calling thread's own floating-point flags are the same after an op either way.
#include "test_support.hpp"

#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <catch2/catch.hpp>

#include <xmmintrin.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace wick;

namespace {

constexpr unsigned kFtzDaz = 0x8040u;  // MXCSR: FTZ (bit 15) | DAZ (bit 6)
constexpr float kSubnormal = 1e-40f;   // below FLT_MIN (1.18e-38): subnormal in f32

// What three kinds of kernel make of subnormal inputs: a large elementwise multiply by one (the
// plugin's loop, split over 2 OpenMP threads), a product of two subnormal-free operands whose
// result is subnormal (1e-20 * 1e-20, flushed by FTZ), and a oneDNN matmul of a subnormal matrix
// by the identity. Returns {multiply's result, tiny product, matmul's result} at one element each.
struct Seen {
  float multiplied_first, multiplied_last, tiny_product, matmul;
};

Seen run_ops(const Device& cpu) {
  const int64_t n = int64_t{1} << 20;
  const Tensor a = Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), kSubnormal), {n}, cpu);
  const Tensor one = Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 1.0f), {n}, cpu);
  const std::vector<float> multiplied = (a * one).to_vector<float>();
  const Tensor small = Tensor::from_vector(std::vector<float>{1e-20f}, {1}, cpu);
  const float tiny = (small * small).to_vector<float>()[0];
  const int64_t m = 64;
  std::vector<float> eye(static_cast<size_t>(m * m), 0.0f), sub(static_cast<size_t>(m * m), kSubnormal);
  for (int64_t i = 0; i < m; ++i) eye[static_cast<size_t>(i * m + i)] = 1.0f;
  const std::vector<float> mm = Tensor::from_vector(sub, {m, m}, cpu)
                                    .matmul(Tensor::from_vector(eye, {m, m}, cpu))
                                    .to_vector<float>();
  return {multiplied.front(), multiplied.back(), tiny, mm[static_cast<size_t>(m * m / 2 + 3)]};
}

}  // namespace

TEST_CASE("flush_denormals = true turns subnormal inputs and results into zero in every kernel",
          "[denormals][config]") {
  auto rt = test::cpu_runtime_with({{"flush_denormals", true}, {"threads", int64_t{2}}});
  const Device cpu = rt->registry().find_device("cpu-onednn");
  const unsigned before = _mm_getcsr() & kFtzDaz;
  const Seen s = run_ops(cpu);
  CHECK(s.multiplied_first == 0.0f);
  CHECK(s.multiplied_last == 0.0f);
  CHECK(s.tiny_product == 0.0f);
  CHECK(s.matmul == 0.0f);
  // The caller's flags are its own again after each op.
  CHECK((_mm_getcsr() & kFtzDaz) == before);
}

TEST_CASE("flush_denormals is off by default: subnormals are computed exactly", "[denormals][config]") {
  auto rt = test::cpu_runtime_with({});
  const Device cpu = rt->registry().find_device("cpu-onednn");
  const Seen s = run_ops(cpu);
  CHECK(s.multiplied_first == kSubnormal);
  CHECK(s.multiplied_last == kSubnormal);
  CHECK(s.tiny_product == 1e-20f * 1e-20f);
  CHECK(s.tiny_product > 0.0f);
  CHECK(s.matmul == kSubnormal);
}

TEST_CASE("flush_denormals must be a boolean, and the refusal names it", "[denormals][config]") {
  auto rt = test::cpu_runtime_with({{"flush_denormals", int64_t{1}}});
  const auto info = rt->registry().find("cpu-onednn");
  REQUIRE(info != nullptr);
  CHECK(info->state == PluginState::Failed);
  CHECK_THAT(info->reason, Catch::Contains("flush_denormals") && Catch::Contains("a boolean"));
}
