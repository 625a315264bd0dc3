// wick_bench_libtorch: Wick's per-op overhead and a batch-1 MLP forward against libtorch (Debian's
// libtorch-dev, PyTorch 1.13's C++ library) in the same process, on the same threads, interleaved
// by Google Benchmark. Pairs are "<case>/wick" and "<case>/libtorch"; bench/report.py prints the
// ratios (libtorch time / Wick time). Built only where CMake finds Torch (scripts/bench.sh
// --libtorch).
#include <wick/autograd.hpp>
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

int threads() {
  const char* env = std::getenv("WICK_BENCH_THREADS");
  const int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

wick::Device cpu() { return wick::Runtime::global().cpu_device(); }

// The per-op overhead: a 1-element add that allocates its result, as each library's users write it.
void add1_wick(benchmark::State& state) {
  const wick::Tensor a = wick::Tensor::rand({1}, -1.0, 1.0, wick::DType::F32, cpu(), 1);
  const wick::Tensor b = wick::Tensor::rand({1}, -1.0, 1.0, wick::DType::F32, cpu(), 2);
  for (auto _ : state) {
    wick::Tensor c = a + b;
    benchmark::DoNotOptimize(c);
  }
}

void add1_libtorch(benchmark::State& state) {
  const torch::Tensor a = torch::rand({1}), b = torch::rand({1});
  for (auto _ : state) {
    torch::Tensor c = a + b;
    benchmark::DoNotOptimize(c);
  }
}

// wick-example-mlp's classifier (784-256-128-10, ReLU) at inference: Linear is x W^T + b.
constexpr int64_t kSizes[] = {784, 256, 128, 10};

void mlp_wick(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const wick::autograd::NoGradGuard no_grad;
  std::vector<wick::Tensor> w, b;
  for (int i = 0; i < 3; ++i) {
    w.push_back(wick::Tensor::rand({kSizes[i + 1], kSizes[i]}, -0.05, 0.05, wick::DType::F32, cpu(), 10 + i));
    b.push_back(wick::Tensor::rand({kSizes[i + 1]}, -0.05, 0.05, wick::DType::F32, cpu(), 20 + i));
  }
  const wick::Tensor x = wick::Tensor::rand({batch, kSizes[0]}, 0.0, 1.0, wick::DType::F32, cpu(), 3);
  for (auto _ : state) {
    wick::Tensor h = (x.matmul(w[0].t()) + b[0]).relu();
    h = (h.matmul(w[1].t()) + b[1]).relu();
    wick::Tensor y = h.matmul(w[2].t()) + b[2];
    benchmark::DoNotOptimize(y);
  }
}

void mlp_libtorch(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> w, b;
  for (int i = 0; i < 3; ++i) {
    w.push_back(torch::rand({kSizes[i + 1], kSizes[i]}) * 0.1 - 0.05);
    b.push_back(torch::rand({kSizes[i + 1]}) * 0.1 - 0.05);
  }
  const torch::Tensor x = torch::rand({batch, kSizes[0]});
  for (auto _ : state) {
    torch::Tensor h = torch::relu(torch::linear(x, w[0], b[0]));
    h = torch::relu(torch::linear(h, w[1], b[1]));
    torch::Tensor y = torch::linear(h, w[2], b[2]);
    benchmark::DoNotOptimize(y);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int n = threads();
  torch::set_num_threads(n);
  wick::Config config = wick::default_config();
  config.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  config.priority = {wick::DeviceEntry{"cpu", wick::SourceLocation{"wick_bench_libtorch", 0, 0}}};
  config.plugin_options["cpu-onednn"].values = {{"threads", static_cast<int64_t>(n)}};
  config.log_level = "error";
  wick::Runtime::configure(config);
  benchmark::AddCustomContext("threads", std::to_string(n));
  if (auto info = wick::Runtime::global().registry().find("cpu-onednn"))
    benchmark::AddCustomContext("cpu_plugin", info->reason);
  benchmark::AddCustomContext("libtorch", TORCH_VERSION);
  benchmark::RegisterBenchmark("add_f32_1/wick", add1_wick);
  benchmark::RegisterBenchmark("add_f32_1/libtorch", add1_libtorch);
  for (int64_t batch : {1, 32}) {
    const std::string name = "mlp_f32_784x256x128x10_b" + std::to_string(batch);
    benchmark::RegisterBenchmark((name + "/wick").c_str(), mlp_wick)->Arg(batch)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((name + "/libtorch").c_str(), mlp_libtorch)->Arg(batch)->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
