// dispatch_policy.hpp — the dispatcher's answer to an op that a device's plugin declines (core
// internal): run it on the CPU device with the copies done for it, logged once per op, dtype and
// device and counted, or refuse it in strict mode. Each wick::Runtime owns one policy for the
// devices its registry loaded; the registry and the plugins it loads know nothing of it.
#pragma once

#include <wick/wick_plugin.h>
#include <wick/registry.hpp>
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace wick {

class DispatchPolicy {
 public:
  // A policy for the devices of `registry`; governing() finds it for as long as it lives.
  static std::shared_ptr<DispatchPolicy> create(std::shared_ptr<const PluginRegistry> registry,
                                                bool strict);
  // The policy of the live runtime whose registry loaded `device`; nullptr when there is none (a
  // PluginRegistry used on its own). Thread-safe.
  static std::shared_ptr<DispatchPolicy> governing(const Device& device);

  DispatchPolicy(const DispatchPolicy&) = delete;
  DispatchPolicy& operator=(const DispatchPolicy&) = delete;

  ~DispatchPolicy();

  std::atomic<bool> strict{false};

  // The NaN check (Runtime::check_nan). Any policy's check being on is what the dispatcher tests
  // first (nan_check_wanted), so that with every check off an op pays one relaxed load.
  bool check_nan() const { return check_nan_.load(std::memory_order_relaxed); }
  void set_check_nan(bool on);
  static bool nan_check_wanted() { return checking_policies_.load(std::memory_order_relaxed) != 0; }
  // Whether a live policy with the check on governs `device` (runtimes may share a plugin's
  // devices: any of them asking for the check turns it on there). Thread-safe.
  static bool nan_check_on(const Device& device);

  // The CPU device that runs fallbacks; throws wick::Error when there is none.
  Device cpu_device() const { return registry_->cpu_device(); }

  // Counts a fallback; returns true the first time for (op, dtype, device), when it is logged.
  bool record(const FallbackRecord& record);
  std::vector<FallbackRecord> records() const;
  void reset();

 private:
  DispatchPolicy(std::shared_ptr<const PluginRegistry> registry, bool strict);
  bool governs(const Device& device) const;

  std::shared_ptr<const PluginRegistry> registry_;
  std::atomic<bool> check_nan_{false};
  static std::atomic<int> checking_policies_;  // how many policies have check_nan_ on
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, FallbackRecord> records_;
};

// Runs an op that the plugin of the outputs' device declined, as `declined` describes (op, dtype,
// device, plugin, reason; count unused), on the CPU device of the runtime governing that device:
// inputs copied there, outputs copied back into `outputs` (any strides: each run of elements
// contiguous in memory is one write). Throws
// wick::Error naming all of `declined` in strict mode, when no runtime governs the device, and
// when there is no other device to run it on.
void run_declined_op(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs, const FallbackRecord& declined);

}  // namespace wick
