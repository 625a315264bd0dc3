// dispatch_policy.hpp — what the dispatcher needs to know about fallback (core internal):
// where the CPU device is, whether fallback is allowed, and the record of fallbacks taken.
#pragma once

#include <wick/runtime.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace wick {

class LoadedPlugin;

struct DispatchPolicy {
  std::atomic<bool> strict{false};

  // The CPU device that runs fallbacks. Weak: the policy must not keep plugins alive.
  std::weak_ptr<LoadedPlugin> cpu_plugin;
  int cpu_index = -1;

  // Returns the CPU device, or throws wick::Error when there is none (any more).
  Device cpu_device() const;

  // Counts a fallback; returns true the first time for (op, dtype, device), when it is logged.
  bool record(const FallbackRecord& record);
  std::vector<FallbackRecord> records() const;
  void reset();

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, FallbackRecord> records_;
};

}  // namespace wick
