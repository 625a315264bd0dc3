// host_allocator.hpp — the cpu-onednn plugin's buffer memory: 64-byte aligned blocks, with freed
// large blocks kept for reuse.
//
// Why: glibc serves blocks above its mmap threshold (at most 32 MiB) with fresh mmap()s, so every
// large op result was page-faulted and zeroed by the kernel anew — which made a 1e7-element add
// take twice as long as the add itself. Eager ops free and reallocate the same sizes over and
// over; keeping those blocks removes the faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace wick::cpu {

class HostAllocator {
 public:
  // cache_limit: the most bytes kept in freed blocks; beyond it, blocks go back to the system.
  explicit HostAllocator(size_t cache_limit);
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // A block of at least `size` bytes (size may be 0), 64-byte aligned; nullptr when out of memory.
  // Thread-safe.
  unsigned char* allocate(size_t size);
  // Returns a block from allocate(size) with the same size. Thread-safe.
  void free(unsigned char* block, size_t size) noexcept;

 private:
  // Blocks from this size up are cached; glibc's own bins serve smaller ones well.
  static constexpr size_t kCachedFrom = size_t(1) << 16;
  // The size a request is served with: four classes per power of two, so a cached block fits
  // requests up to 25% smaller than itself.
  static size_t size_class(size_t size);

  std::mutex mutex_;
  std::map<size_t, std::vector<unsigned char*>> free_;  // by size class
  size_t cached_bytes_ = 0;
  const size_t cache_limit_;
};

}  // namespace wick::cpu
