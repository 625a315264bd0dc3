// host_allocator.hpp — the cpu-onednn plugin's buffer memory: 64-byte aligned blocks, with freed
// large blocks kept for reuse.
//
// Why: glibc serves blocks above its mmap threshold (at most 32 MiB) with fresh mmap()s, so every
// large op result was page-faulted and zeroed by the kernel anew — which made a 1e7-element add
// take twice as long as the add itself — and serves small aligned blocks through memalign, a
// sixth of a small op's whole cost. Eager ops free and reallocate the same sizes over and over;
// keeping those blocks removes both.
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
  // The size a request is served with: a multiple of 64 bytes below kLarge, else four classes
  // per power of two, so that a cached block serves requests up to 25% smaller than itself.
  static constexpr size_t kLarge = size_t(1) << 16;
  static size_t size_class(size_t size);
  // Small classes by index (size / 64), large ones by size.
  std::vector<unsigned char*>& bin(size_t cls);
  void release_all();

  std::mutex mutex_;
  std::vector<std::vector<unsigned char*>> small_;
  std::map<size_t, std::vector<unsigned char*>> large_;
  size_t cached_bytes_ = 0;
  const size_t cache_limit_;
};

}  // namespace wick::cpu
