#include "host_allocator.hpp"

#include <algorithm>
#include <bit>
#include <new>

namespace wick::cpu {

namespace {

constexpr size_t kAlignment = 64;

unsigned char* system_allocate(size_t size) {
  return static_cast<unsigned char*>(::operator new(size, std::align_val_t(kAlignment), std::nothrow));
}

void system_free(unsigned char* block) { ::operator delete(block, std::align_val_t(kAlignment)); }

}  // namespace

HostAllocator::HostAllocator(size_t cache_limit) : cache_limit_(cache_limit) {}

HostAllocator::~HostAllocator() {
  for (auto& [size, blocks] : free_)
    for (unsigned char* b : blocks) system_free(b);
}

size_t HostAllocator::size_class(size_t size) {
  const size_t rounded = std::max(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment);
  if (rounded < kCachedFrom) return rounded;
  const size_t quarter = std::bit_floor(rounded) / 4;
  return (rounded + quarter - 1) / quarter * quarter;
}

unsigned char* HostAllocator::allocate(size_t size) {
  const size_t cls = size_class(size);
  if (cls >= kCachedFrom) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      unsigned char* b = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= cls;
      return b;
    }
  }
  unsigned char* b = system_allocate(cls);
  if (b == nullptr && cls >= kCachedFrom) {
    // Out of memory with blocks parked here: give them back and try once more.
    {
      std::lock_guard lock(mutex_);
      for (auto& [s, blocks] : free_)
        for (unsigned char* p : blocks) system_free(p);
      free_.clear();
      cached_bytes_ = 0;
    }
    b = system_allocate(cls);
  }
  return b;
}

void HostAllocator::free(unsigned char* block, size_t size) noexcept {
  if (block == nullptr) return;
  const size_t cls = size_class(size);
  if (cls >= kCachedFrom) {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + cls <= cache_limit_) {
      try {
        free_[cls].push_back(block);
        cached_bytes_ += cls;
        return;
      } catch (...) {
        // No memory for the bookkeeping: free the block instead.
      }
    }
  }
  system_free(block);
}

}  // namespace wick::cpu
