// buffer_pool.hpp — a device's freed buffers, kept for reuse (a caching allocator). Creating a
// buffer costs the driver an allocation and the first touch of every page (PoCL: ~8 ms for 40 MB,
// twice the time of an add over it); a program that makes tensors of the same sizes again and
// again reuses them instead. Bounded: beyond `limit` bytes a freed buffer is released at once.
// Reuse is safe on one in-order queue: work queued on the old tensor runs before work on the new.
#pragma once

#include "cl_handle.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace wick::opencl {

class BufferPool {
 public:
  void set_limit(uint64_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = limit;
  }

  // The capacity a buffer of `size` bytes is created with: sizes round up (to 256 bytes, and to
  // 1/16 of their power of two above 64 KiB) so that near sizes share buffers.
  static uint64_t capacity_for(uint64_t size) {
    if (size <= 65536) return size == 0 ? 256 : (size + 255) / 256 * 256;
    uint64_t step = 1;
    while (step * 2 <= size) step *= 2;
    step /= 16;
    return (size + step - 1) / step * step;
  }

  // A kept buffer of exactly `capacity` bytes (capacity_for), or an empty handle.
  ClMem take(uint64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(capacity);
    if (it == free_.end()) return ClMem();
    ClMem mem = std::move(it->second);
    free_.erase(it);
    bytes_ -= capacity;
    return mem;
  }

  // Keeps `mem` for reuse (true), or releases it when the pool is full (false).
  bool give(ClMem mem, uint64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes_ + capacity > limit_) return false;  // mem is released here
    free_.emplace(capacity, std::move(mem));
    bytes_ += capacity;
    return true;
  }

  // Releases every kept buffer (before retrying an allocation the driver refused).
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.clear();
    bytes_ = 0;
  }

  uint64_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

 private:
  mutable std::mutex mutex_;
  std::multimap<uint64_t, ClMem> free_;
  uint64_t bytes_ = 0;
  uint64_t limit_ = 0;
};

}  // namespace wick::opencl
