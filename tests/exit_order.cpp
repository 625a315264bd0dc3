// exit_order: a host that keeps its runtime and a tensor in statics made before any plugin was
// initialized, and returns from main with both alive (the importer's fuzz harness did this). At
// exit, statics die in reverse order of construction, so the plugin's own state (made later, at
// initialize) would die first: fixture-threads aborts when it is destroyed while the host still
// holds one of its buffers. The test (tests/CMakeLists.txt) wants exit status 0 and no output.
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <cstdio>
#include <memory>
#include <optional>

namespace {

std::unique_ptr<wick::Runtime> g_runtime;  // made empty before main, filled in main
std::optional<wick::Tensor> g_tensor;
std::optional<wick::Tensor> g_opencl;  // on opencl's device, where it is usable

}  // namespace

int main() {
  wick::Config c = wick::default_config();
  c.plugin_paths = {WICK_THREADS_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.priority = {wick::DeviceEntry{"fixture-threads", {}}};
  c.log_level = "error";
  g_runtime = std::make_unique<wick::Runtime>(c, wick::RegistryOptions{false, false});
  const wick::Device d = g_runtime->registry().find_device("fixture-threads:1");
  if (!d.valid()) {
    std::fprintf(stderr, "exit_order: no fixture-threads device\n");
    return 2;
  }
  g_tensor = wick::Tensor::full({8}, 3.0, wick::DType::F32, d);
  // A second tensor on the CPU plugin too (oneDNN's statics are in play there).
  static const wick::Tensor on_cpu = wick::Tensor::full({8}, 1.0, wick::DType::F32, g_runtime->cpu_device());
  // And one on opencl (a static Tensor there segfaulted at exit, issue 22).
  if (const wick::Device ocl = g_runtime->registry().find_device("opencl"); ocl.valid())
    g_opencl = wick::Tensor::full({8}, 2.0, wick::DType::F32, ocl);
  const bool ocl_ok = !g_opencl || g_opencl->to_vector<float>().at(3) == 2.0f;
  return g_tensor->to_vector<float>().at(7) == 3.0f && on_cpu.to_vector<float>().at(0) == 1.0f &&
                 ocl_ok
             ? 0
             : 3;
}
