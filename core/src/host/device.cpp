#include <wick/device.hpp>

#include "host/loaded_plugin.hpp"

namespace wick {

const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::CPU: return "cpu";
    case DeviceKind::GPU: return "gpu";
    case DeviceKind::Accelerator: return "accelerator";
    case DeviceKind::Other: return "other";
  }
  return "other";
}

Device::Device(std::shared_ptr<LoadedPlugin> plugin, wick_device* handle, int index)
    : plugin_(std::move(plugin)), handle_(handle), index_(index) {}

std::string Device::name() const { return plugin_->name() + ":" + std::to_string(index_); }

const std::string& Device::plugin_name() const { return plugin_->name(); }

DeviceKind Device::kind() const {
  switch (plugin_->props(index_).kind) {
    case WICK_DEVICE_KIND_CPU: return DeviceKind::CPU;
    case WICK_DEVICE_KIND_GPU: return DeviceKind::GPU;
    case WICK_DEVICE_KIND_ACCELERATOR: return DeviceKind::Accelerator;
    default: return DeviceKind::Other;
  }
}

std::string Device::description() const {
  const char* n = plugin_->props(index_).name;
  return n != nullptr ? n : "";
}

uint64_t Device::memory_bytes() const { return plugin_->props(index_).memory_bytes; }

uint64_t Device::capabilities() const { return plugin_->props(index_).capabilities; }

std::optional<uint64_t> Device::free_memory() const {
  auto fn = plugin_->slot(&wick_plugin_api::device_get_free_memory, 1);
  if (fn == nullptr) return std::nullopt;
  uint64_t bytes = 0;
  wick_error* err = plugin_->guard(index_, "device_get_free_memory", [&] { return fn(handle_, &bytes); });
  if (err != nullptr) {
    plugin_->api().error_destroy(err);
    return std::nullopt;
  }
  return bytes;
}

void Device::synchronize() const {
  wick_error* err = plugin_->guard(index_, "device_synchronize",
                                   [&] { return plugin_->api().device_synchronize(handle_); });
  // The message only on failure: a call that has nothing to wait for costs less than its text.
  if (err != nullptr) plugin_->check(err, "device_synchronize on " + name());
}

}  // namespace wick
