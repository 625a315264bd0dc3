// test_support.hpp — runtimes the tests share: the built plugins only, or with the fixtures.
#pragma once

#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wick::test {

// A runtime over the plugins this build produced (cpu-onednn, opencl, cuda when built), found only
// through the config's plugin path: no environment, no install directory.
inline Runtime& built_runtime() {
  static Runtime* rt = [] {
    Config c = default_config();
    c.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
    c.log_level = "error";
    return new Runtime(c, RegistryOptions{false, false});
  }();
  return *rt;
}

inline Device cpu() { return built_runtime().cpu_device(); }

// The CPU and, when it loads and has a device, opencl: where device-generic tests run.
inline std::vector<Device> cpu_and_opencl() {
  std::vector<Device> d{cpu()};
  try {
    const Device ocl = built_runtime().registry().find_device("opencl");
    if (ocl.valid()) d.push_back(ocl);
  } catch (const Error&) {
  }
  return d;
}

// The same plugins in strict mode (an op a device lacks is an error, never a fallback), the CPU
// first; and its devices where device-generic tests run: cpu-onednn and, when it loads and has a
// device, opencl.
inline Runtime& strict_runtime() {
  static Runtime* rt = [] {
    Config c = default_config();
    c.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
    c.log_level = "error";
    c.strict = true;
    c.priority = {DeviceEntry{"cpu", SourceLocation{"test", 0, 0}}};
    return new Runtime(c, RegistryOptions{false, false});
  }();
  return *rt;
}
inline std::vector<Device> strict_devices() {
  std::vector<Device> d{strict_runtime().cpu_device()};
  try {
    const Device ocl = strict_runtime().registry().find_device("opencl");
    if (ocl.valid()) d.push_back(ocl);
  } catch (const Error&) {
  }
  return d;
}

// The fixture plugins (fixture-good supports only copy, fill f32/i32 and add f32) plus the built ones.
inline std::unique_ptr<Runtime> fixture_runtime(bool strict, std::vector<std::string> priority) {
  Config c = default_config();
  c.plugin_paths = {WICK_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.priority.clear();
  for (const std::string& p : priority) c.priority.push_back(DeviceEntry{p, SourceLocation{"test", 0, 0}});
  c.strict = strict;
  c.log_level = "error";
  return std::make_unique<Runtime>(c, RegistryOptions{false, false});
}

// A runtime over the built plugins with cpu-onednn given these options. A plugin library is
// initialized once per process, so each test case that gives other values runs in its own ctest
// entry (process); a refused value leaves nothing initialized.
inline std::unique_ptr<Runtime> cpu_runtime_with(std::vector<std::pair<std::string, OptionValue>> values) {
  Config c = default_config();
  c.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  c.plugin_options["cpu-onednn"].values = std::move(values);
  return std::make_unique<Runtime>(c, RegistryOptions{false, false});
}

// Sets (or, with nullopt, unsets) an environment variable for one scope (a child process started
// meanwhile sees it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Reads `fd` (a pipe from a child process) to its end and closes it, then waits for the child
// `pid`; returns what was read, with the child's wait status in `status`.
inline std::string drain_child(int fd, pid_t pid, int& status) {
  std::string got;
  char buf[1024];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fd);
  status = 0;
  ::waitpid(pid, &status, 0);
  return got;
}

// Whether `t_big` seconds for `n_big` entries is linear given `t_small` for `n_small` (a
// hundredth of them, say): at most 8 times the proportional time, which leaves room for a small
// input that fits the caches and a busy machine, while a quadratic reader takes n_big / n_small
// times the proportional time (100x for a hundredth).
inline bool linear_time(double t_small, size_t n_small, double t_big, size_t n_big) {
  return t_big < 8.0 * t_small * static_cast<double>(n_big) / static_cast<double>(n_small);
}

// Wall-clock seconds of the fastest of `tries` calls of `work`: the call least disturbed by other
// load on the machine. The linear-time tests compare an input with one of ten times its entries
// (linear: about 10x the time; quadratic: about 100x).
template <class F>
double fastest_seconds(int tries, F&& work) {
  double best = 0;
  for (int k = 0; k < tries; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = k == 0 ? s : std::min(best, s);
  }
  return best;
}

}  // namespace wick::test
