// wick_first_op: how long a process waits for its first op on a device: the runtime's start
// (plugin discovery and initialisation), then one small add there and its result back on the host
// (for OpenCL, the program's build or its load from the caches comes with it). Prints one JSON line.
// bench/first_op.sh runs it twice with empty caches: the first process compiles, the second finds
// the caches warm. Not a test.
//
//   wick_first_op [device]        (default: opencl)
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  using clock = std::chrono::steady_clock;
  const std::string name = argc > 1 ? argv[1] : "opencl";
  try {
    const auto t0 = clock::now();
    wick::Config config = wick::default_config();
    config.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
    config.log_level = "error";
    wick::Runtime::configure(config);
    const wick::Device d = wick::Runtime::global().registry().find_device(name);
    if (!d.valid()) {
      std::fprintf(stderr, "wick_first_op: no usable device '%s'\n", name.c_str());
      return 1;
    }
    const auto t1 = clock::now();
    const wick::Tensor a = wick::Tensor::from_vector<float>({1, 2, 3, 4}, {4}, d);
    const float sum = (a + a).to(wick::Runtime::global().cpu_device()).to_vector<float>()[3];
    const auto t2 = clock::now();
    auto ms = [](auto from, auto to) {
      return std::chrono::duration<double, std::milli>(to - from).count();
    };
    std::printf("{\"device\": \"%s\", \"start_ms\": %.1f, \"first_op_ms\": %.1f, \"ok\": %s}\n",
                d.description().c_str(), ms(t0, t1), ms(t1, t2), sum == 8.0f ? "true" : "false");
    return sum == 8.0f ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wick_first_op: %s\n", e.what());
    return 1;
  }
}
