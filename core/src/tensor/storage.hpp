// storage.hpp — a device buffer owned by the tensors that view it (core internal).
#pragma once

#include <wick/device.hpp>
#include <wick/tensor.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

namespace wick {

struct Storage {
  Device device;  // keeps the plugin alive while the buffer exists
  wick_buffer* buffer = nullptr;
  uint64_t bytes = 0;
  // Bumped by every write into contents others may hold (dispatch_in_place); autograd notes it
  // with each tensor it saves, and backward refuses a rule whose tensors changed since.
  std::atomic<uint64_t> version{0};
  // buffer_wrap_host's: the buffer is `owner`'s memory (a mapped file, or memory its caller did
  // not give to write), which no write may reach.
  bool read_only = false;
  // buffer_wrap_host's: the buffer is `owner`'s memory, viewed without a copy.
  bool host_view = false;
  std::shared_ptr<const void> owner;  // released after the buffer

  // What wrap() may do with the host memory it is given.
  enum class Access {
    Unchanged,  // read it; nobody changes it while viewed (a mapped file; ABI 1.5's contract)
    Shared,     // read it; its owner may change it between calls (needs buffer_host_address)
    Writable,   // Shared, and Wick's ops and writes go there too
  };

  static std::shared_ptr<Storage> allocate(const Device& device, uint64_t bytes);
  // A buffer over `bytes` at `host` (aligned to `element_size`) without a copy, keeping `owner`
  // alive; nullptr when the device's plugin cannot wrap it: the caller copies then. Which plugin
  // can (wick_plugin.h, buffer_wrap_host): one of minor >= 5 with the slot, on a device of host
  // memory, that does not decline; `host` aligned to 32 bytes below minor 7; Shared and Writable
  // need minor 7 and buffer_host_address (which tells the plugin that the contents may change),
  // except that a Shared wrap falls back to an Unchanged one without them.
  static std::shared_ptr<Storage> wrap(const Device& device, const void* host, uint64_t bytes,
                                       uint64_t element_size, Access access,
                                       std::shared_ptr<const void> owner);
  ~Storage();

  // The host address of the buffer's first byte once the device's queued work is done
  // (device_synchronize, then buffer_host_address, ABI 1.7); nullptr where the device gives none.
  void* host_address() const;
  // The buffer as its device's API names it (buffer_native_memory, ABI 1.8), without waiting;
  // nullopt where the device gives none (no slot, an older minor, WICK_STATUS_UNSUPPORTED, or a
  // kind this host does not know).
  std::optional<NativeMemory> native_memory() const;

  void write(uint64_t offset, const void* src, uint64_t size);
  void read(uint64_t offset, void* dst, uint64_t size) const;
};

// The ABI descriptor of a tensor's view; its shape and strides point into t, which must outlive it.
wick_tensor_desc describe_tensor(const Tensor& t);

}  // namespace wick
