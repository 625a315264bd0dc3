// GGML-quantized matmul (wick/quant.hpp) against Wick's own f32 matmul of the same shape (the
// weight prepacked by the plugin, as a model's is): the cost of keeping weights in blocks. The
// decoding shape (one row of x) reads the weights once per call, so a format of fewer bytes could
// be faster than f32 there; llama.cpp is the competitor issue 26 names (bench/ has no comparison
// with it yet).
#include "bench_common.hpp"

#include <wick/autograd.hpp>
#include <wick/quant.hpp>

#include <string>
#include <vector>

namespace wick::bench {

namespace {

// round_x: x rounded to the weights' 8-bit activation type first (ABI 1.6; cpu-onednn's integer
// kernels for a few rows), as llama.cpp multiplies.
void wick_matmul_quant(benchmark::State& state, int64_t m, int64_t k, int64_t n, quant::Type type, bool round_x) {
  const autograd::NoGradGuard no_grad;
  const Tensor x = random({m, k}, DType::F32, 1);
  const quant::QTensor w = quant::quantize(random({n, k}, DType::F32, 2), type);
  const quant::MatmulOptions options{round_x};
  for (int warm = 0; warm < 2; ++warm) benchmark::DoNotOptimize(quant::matmul(x, w, options));
  for (auto _ : state) {
    Tensor y = quant::matmul(x, w, options);
    benchmark::DoNotOptimize(y);
  }
  report_flops(state, 2.0 * static_cast<double>(m * k * n));
  report_bytes(state, static_cast<double>(w.data().numel()));
}

void f32_matmul(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  const autograd::NoGradGuard no_grad;
  const Tensor x = random({m, k}, DType::F32, 1), w = random({k, n}, DType::F32, 2);
  for (int warm = 0; warm < 3; ++warm) benchmark::DoNotOptimize(x.matmul(w));
  for (auto _ : state) {
    Tensor y = x.matmul(w);
    benchmark::DoNotOptimize(y);
  }
  report_flops(state, 2.0 * static_cast<double>(m * k * n));
  report_bytes(state, 4.0 * static_cast<double>(k * n));
}

}  // namespace

// Integer matmul (i32, i8: wrapping in their width) against f32 on the shape issue 26 timed.
void int_matmul(benchmark::State& state, DType t) {
  const autograd::NoGradGuard no_grad;
  const Tensor x = (random({1024, 384}, DType::F32, 1) * 100.0).to(t),
               w = (random({384, 1536}, DType::F32, 2) * 100.0).to(t);
  for (int warm = 0; warm < 2; ++warm) benchmark::DoNotOptimize(x.matmul(w));
  for (auto _ : state) {
    Tensor y = x.matmul(w);
    benchmark::DoNotOptimize(y);
  }
  report_flops(state, 2.0 * 1024 * 384 * 1536);
}

void register_quant() {
  for (const auto& [name, t] : {std::pair{"i32", DType::I32}, std::pair{"i8", DType::I8},
                                std::pair{"f32", DType::F32}})
    benchmark::RegisterBenchmark((std::string("matmul_int_1024x384x1536/") + name).c_str(),
                                 int_matmul, t)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.3);
  struct Case {
    int64_t m, k, n;
  };
  const struct {
    const char* name;
    quant::Type type;
  } types[] = {{"q4_0", quant::Type::Q4_0}, {"q8_0", quant::Type::Q8_0}, {"q4_k", quant::Type::Q4_K},
               {"q6_k", quant::Type::Q6_K}};
  // TinyLlama-1.1B's MLP projection: one row (decoding), a 32- and a 128-token prompt.
  for (const Case& c : {Case{1, 2048, 5632}, Case{32, 2048, 5632}, Case{128, 2048, 5632}}) {
    const std::string shape = std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
    for (const auto& t : types) {
      const std::string name = std::string("matmul_quant_") + t.name + "_" + shape;
      for (const bool round_x : {false, true})
        benchmark::RegisterBenchmark((name + (round_x ? "/wick_round_x" : "/wick")).c_str(), wick_matmul_quant, c.m,
                                     c.k, c.n, t.type, round_x)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime()
            ->MinTime(0.2);
      benchmark::RegisterBenchmark((name + "/f32_matmul").c_str(), f32_matmul, c.m, c.k, c.n)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->MinTime(0.2);
    }
  }
}

}  // namespace wick::bench
