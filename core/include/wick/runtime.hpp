// wick/runtime.hpp — the process's Wick state: configuration, plugins, the selected device and
// the record of fallbacks. Tensors created without a device use Runtime::global().default_device().
#pragma once

#include <wick/config.hpp>
#include <wick/device.hpp>
#include <wick/registry.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wick {

class DispatchPolicy;  // core internal: what the dispatcher does with an op a plugin declines

// One (op, dtype, device) that ran on the CPU instead of its device, and how often.
struct FallbackRecord {
  std::string op;      // "matmul"
  std::string dtype;   // "f32"
  std::string device;  // "opencl:0"
  std::string plugin;  // "opencl"
  std::string reason;  // "op not implemented", "dtype not supported", "params not supported"
  uint64_t count = 0;
};

class Runtime {
 public:
  // Loads plugins and selects the device per `config`. Throws ConfigError for an unknown device
  // name in the priority list, and wick::Error in strict mode when the first choice is not usable.
  explicit Runtime(const Config& config, RegistryOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The process-wide runtime, built on first use from resolve_config() (environment and user
  // config file). It is never destroyed: plugins stay loaded until process exit.
  static Runtime& global();
  // Replaces the process-wide runtime's configuration before its first use (API layer). Throws
  // wick::Error if global() was already built.
  static void configure(const Config& config);

  const Config& config() const { return config_; }
  PluginRegistry& registry() { return *registry_; }
  const PluginRegistry& registry() const { return *registry_; }
  const Selection& selection() const { return selection_; }
  Device default_device() const { return selection_.device; }
  Device cpu_device() const { return registry_->cpu_device(); }

  bool strict() const;
  void set_strict(bool strict);
  // The NaN check ([debug] check_nan): while on, every op of this runtime's devices is followed by
  // a test of its outputs, and the first op that makes a NaN or Inf from finite inputs (and
  // finite parameters) throws wick::Error naming it (wick/module_scope.hpp). Off: one relaxed
  // atomic load per op.
  bool check_nan() const;
  void set_check_nan(bool on);

  std::vector<FallbackRecord> fallbacks() const;
  uint64_t fallback_count() const;
  void reset_fallbacks();

 private:
  Config config_;
  std::shared_ptr<PluginRegistry> registry_;  // shared with policy_
  std::shared_ptr<DispatchPolicy> policy_;
  Selection selection_;
};

}  // namespace wick
