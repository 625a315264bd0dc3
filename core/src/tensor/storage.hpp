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
  // buffer_wrap_host's: the buffer is `owner`'s memory (a mapped file), which no write may reach.
  bool read_only = false;
  std::shared_ptr<const void> owner;  // released after the buffer

  static std::shared_ptr<Storage> allocate(const Device& device, uint64_t bytes);
  // A read-only buffer over `bytes` at `host` without a copy, keeping `owner` alive; nullptr when
  // the device's plugin cannot wrap host memory (not host memory, no buffer_wrap_host, or it
  // declined): the caller copies then.
  static std::shared_ptr<Storage> wrap(const Device& device, const void* host, uint64_t bytes,
                                       std::shared_ptr<const void> owner);
  ~Storage();

  void write(uint64_t offset, const void* src, uint64_t size);
  void read(uint64_t offset, void* dst, uint64_t size) const;
};

// The ABI descriptor of a tensor's view; its shape and strides point into t, which must outlive it.
wick_tensor_desc describe_tensor(const Tensor& t);

}  // namespace wick
