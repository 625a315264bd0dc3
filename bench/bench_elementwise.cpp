// Elementwise add, a sum and the per-op overhead: Wick's Tensor ops against plain loops that the
// compiler vectorises, on the same threads (OpenMP above Wick's own parallel threshold, one
// thread below it, as Wick does).
#include "bench_common.hpp"

#include <omp.h>

#include <string>
#include <vector>

namespace wick::bench {

namespace {

// Wick's cpu-onednn plugin splits work across threads from this many elements (kernels.hpp).
constexpr int64_t kParallelFrom = 1 << 15;

void wick_add(benchmark::State& state, int64_t n) {
  const Tensor a = random({n}, DType::F32, 1), b = random({n}, DType::F32, 2);
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c);
  }
  report_bytes(state, 3.0 * 4.0 * static_cast<double>(n));
}

void loop_add(benchmark::State& state, int64_t n) {
  std::vector<float> a(static_cast<size_t>(n), 0.5f), b(static_cast<size_t>(n), 0.25f),
      c(static_cast<size_t>(n));
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.data();
  const bool parallel = n >= kParallelFrom && threads() > 1;
  for (auto _ : state) {
    // No OpenMP region at all for small n: even a serialised one costs more than the add.
    if (parallel) {
#pragma omp parallel for simd num_threads(threads()) schedule(static)
      for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
    }
    benchmark::DoNotOptimize(pc);
    benchmark::ClobberMemory();
  }
  report_bytes(state, 3.0 * 4.0 * static_cast<double>(n));
}

void wick_sum(benchmark::State& state, int64_t n) {
  const Tensor x = random({n}, DType::F32, 3);
  for (auto _ : state) {
    Tensor s = x.sum();
    benchmark::DoNotOptimize(s);
  }
  report_bytes(state, 4.0 * static_cast<double>(n));
}

void loop_sum(benchmark::State& state, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n), 0.5f);
  const float* px = x.data();
  for (auto _ : state) {
    float s = 0.0f;
#pragma omp parallel for simd num_threads(threads()) schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += px[i];
    benchmark::DoNotOptimize(s);
  }
  report_bytes(state, 4.0 * static_cast<double>(n));
}

}  // namespace

void register_elementwise() {
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1000000), int64_t(10000000)}) {
    const std::string name = "add_f32_" + std::to_string(n);
    benchmark::RegisterBenchmark((name + "/wick").c_str(), wick_add, n)
        ->UseRealTime()
        ->MinTime(0.2);
    benchmark::RegisterBenchmark((name + "/loop").c_str(), loop_add, n)
        ->UseRealTime()
        ->MinTime(0.2);
  }
  const int64_t n = 10000000;
  benchmark::RegisterBenchmark("sum_f32_10000000/wick", wick_sum, n)->UseRealTime()->MinTime(0.2);
  benchmark::RegisterBenchmark("sum_f32_10000000/loop", loop_sum, n)->UseRealTime()->MinTime(0.2);
}

}  // namespace wick::bench
