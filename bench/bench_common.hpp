// bench_common.hpp — what every Wick benchmark shares: the thread count both sides run with, the
// Wick CPU device configured with it, and rate counters.
#pragma once

#include <wick/tensor.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

namespace wick::bench {

// WICK_BENCH_THREADS, or every core; Wick's cpu-onednn plugin and the references use the same.
int threads();
// The cpu-onednn device of this build, with `threads` threads.
Device cpu();

// Uniform random values in [-1, 1) of dtype t on the CPU device.
Tensor random(const Shape& shape, DType t, uint64_t seed = 1);

inline void report_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}
inline void report_bytes(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes_per_iteration) * state.iterations());
}

// Registration hooks of the benchmark files; each pair is named "<case>/wick" and "<case>/<ref>".
void register_linalg();       // bench_linalg.cpp: matmul and conv against raw oneDNN
void register_unary();        // bench_unary.cpp: exp, tanh, sigmoid, GELU against oneDNN eltwise
void register_elementwise();  // bench_elementwise.cpp: add, sum and per-op overhead against plain
                              // loops
void register_attention();    // bench_attention.cpp: fused attention against the composite and
                              // oneDNN's matmul, softmax, matmul
void register_quant();        // bench_quant.cpp: GGML-quantized matmul against f32 matmul

}  // namespace wick::bench
