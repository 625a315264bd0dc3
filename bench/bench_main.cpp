// wick_bench: Wick next to raw oneDNN and plain loops, same threads, same process. Run it through
// scripts/bench.sh, which prints the Wick / reference ratios.
#include "bench_common.hpp"

#include <wick/runtime.hpp>

#include <omp.h>

#include <cstdlib>
#include <thread>

namespace wick::bench {

int threads() {
  static const int n = [] {
    const char* env = std::getenv("WICK_BENCH_THREADS");
    const int from_env = env != nullptr ? std::atoi(env) : 0;
    return from_env > 0 ? from_env
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return n;
}

Device cpu() {
  return Runtime::global().cpu_device();
}

Tensor random(const Shape& shape, DType t, uint64_t seed) {
  return Tensor::rand(shape, -1.0, 1.0, DType::F32, cpu(), seed).to(t);
}

}  // namespace wick::bench

int main(int argc, char** argv) {
  using namespace wick;
  const int n = bench::threads();
  // The references (raw oneDNN, OpenMP loops) run on this thread's OpenMP setting.
  omp_set_num_threads(n);
  Config config = default_config();
  config.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  config.priority = {DeviceEntry{"cpu", SourceLocation{"wick_bench", 0, 0}}};
  config.plugin_options["cpu-onednn"].values = {{"threads", static_cast<int64_t>(n)}};
  config.log_level = "error";
  Runtime::configure(config);
  benchmark::AddCustomContext("threads", std::to_string(n));
  benchmark::AddCustomContext("wick_device", bench::cpu().description());
  // The plugin's own summary: oneDNN's version, the ISA it dispatches to, whether bf16 is native.
  if (auto info = Runtime::global().registry().find("cpu-onednn"))
    benchmark::AddCustomContext("cpu_plugin", info->reason);
  bench::register_linalg();
  bench::register_elementwise();
  bench::register_unary();
  bench::register_attention();
  bench::register_quant();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
