// Transcendental unary ops and activations (exp, tanh, sigmoid, GELU): Wick's Tensor ops against
// oneDNN's JIT eltwise primitive on the same threads, and against a plain loop of one libm call per
// element (what cpu-onednn ran before its vector math, issue 23).
#include "bench_common.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace wick::bench {

namespace {

constexpr int64_t kParallelFrom = 1 << 15;  // Wick's cpu-onednn parallel threshold (kernels.hpp)

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> wick;
  dnnl::algorithm onednn;
  float (*libm)(float);
};

float sigmoid_libm(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float gelu_erf_libm(float x) {
  const double d = x;
  return static_cast<float>(0.5 * d * std::erfc(-d * 0.70710678118654752440084436210485));
}
float gelu_tanh_libm(float x) {
  const double d = x;
  const double u = 0.79788456080286535587989211986876 * (d + 0.044715 * d * d * d);
  return static_cast<float>(d / (1.0 + std::exp(-2.0 * u)));
}
float exp_libm(float x) { return std::exp(x); }
float tanh_libm(float x) { return std::tanh(x); }

const std::vector<UnaryCase>& cases() {
  static const std::vector<UnaryCase> c = {
      {"exp", [](const Tensor& x) { return x.exp(); }, dnnl::algorithm::eltwise_exp, exp_libm},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, dnnl::algorithm::eltwise_tanh, tanh_libm},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, dnnl::algorithm::eltwise_logistic,
       sigmoid_libm},
      {"gelu_erf", [](const Tensor& x) { return x.gelu_erf(); }, dnnl::algorithm::eltwise_gelu_erf,
       gelu_erf_libm},
      {"gelu_tanh", [](const Tensor& x) { return x.gelu(); }, dnnl::algorithm::eltwise_gelu_tanh,
       gelu_tanh_libm},
  };
  return c;
}

// Inputs in [-4, 4): the range activations see, and where every function does real work.
void wick_unary(benchmark::State& state, const UnaryCase& c, int64_t n) {
  const Tensor x = random({n}, DType::F32, 5) * 4.0;
  for (auto _ : state) {
    Tensor y = c.wick(x);
    benchmark::DoNotOptimize(y);
  }
  report_bytes(state, 2.0 * 4.0 * static_cast<double>(n));
}

void onednn_unary(benchmark::State& state, const UnaryCase& c, int64_t n) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::memory src(md, eng), dst(md, eng);
  auto* p = static_cast<float*>(src.get_data_handle());
  for (int64_t i = 0; i < n; ++i) p[i] = 8.0f * static_cast<float>(i % 1000) / 1000.0f - 4.0f;
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, c.onednn, md, 0.0f, 0.0f), eng);
  dnnl::eltwise_forward prim(pd);
  for (auto _ : state) {
    prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    s.wait();
  }
  state.SetLabel(pd.impl_info_str());
  report_bytes(state, 2.0 * 4.0 * static_cast<double>(n));
}

void libm_unary(benchmark::State& state, const UnaryCase& c, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 8.0f * static_cast<float>(i % 1000) / 1000.0f - 4.0f;
  const bool parallel = n >= kParallelFrom && threads() > 1;
  float (*f)(float) = c.libm;
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads()) schedule(static) if (parallel)
    for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = f(x[static_cast<size_t>(i)]);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report_bytes(state, 2.0 * 4.0 * static_cast<double>(n));
}

}  // namespace

void register_unary() {
  for (const UnaryCase& c : cases()) {
    for (int64_t n : {int64_t(4096), int64_t(1000000)}) {
      const std::string name = std::string("unary_") + c.name + "_f32_" + std::to_string(n);
      benchmark::RegisterBenchmark((name + "/wick").c_str(), wick_unary, std::cref(c), n)
          ->UseRealTime()
          ->MinTime(0.2);
      benchmark::RegisterBenchmark((name + "/onednn").c_str(), onednn_unary, std::cref(c), n)
          ->UseRealTime()
          ->MinTime(0.2);
      benchmark::RegisterBenchmark((name + "/libm_loop").c_str(), libm_unary, std::cref(c), n)
          ->UseRealTime()
          ->MinTime(0.2);
    }
  }
}

}  // namespace wick::bench
