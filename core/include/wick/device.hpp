// wick/device.hpp — a device served by a loaded plugin.
#pragma once

#include <wick/wick_plugin.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace wick {

class LoadedPlugin;  // registry internals: the library, its table, its lifetime

enum class DeviceKind { CPU, GPU, Accelerator, Other };
const char* to_string(DeviceKind kind);

// A cheap, copyable handle. It keeps its plugin loaded (and initialized) while it lives.
class Device {
 public:
  Device() = default;
  Device(std::shared_ptr<LoadedPlugin> plugin, wick_device* handle, int index);

  bool valid() const { return handle_ != nullptr; }
  // "<plugin>:<index>", e.g. "opencl:0".
  std::string name() const;
  const std::string& plugin_name() const;
  int index() const { return index_; }
  DeviceKind kind() const;
  // The device's own name as its plugin reports it (e.g. "pthread-skylake-avx512-...").
  std::string description() const;
  uint64_t memory_bytes() const;
  uint64_t capabilities() const;
  // Free memory now, when the plugin can tell (ABI 1.1 slot); nullopt otherwise.
  std::optional<uint64_t> free_memory() const;

  void synchronize() const;

  // Internals for the core's own use.
  LoadedPlugin& plugin() const { return *plugin_; }
  const std::shared_ptr<LoadedPlugin>& plugin_ptr() const { return plugin_; }
  wick_device* handle() const { return handle_; }

  friend bool operator==(const Device& a, const Device& b) { return a.handle_ == b.handle_; }

 private:
  std::shared_ptr<LoadedPlugin> plugin_;
  wick_device* handle_ = nullptr;
  int index_ = 0;
};

}  // namespace wick
