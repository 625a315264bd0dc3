#include "host_allocator.hpp"

#include <algorithm>
#include <bit>
#include <new>

namespace wick::cpu {

namespace {

constexpr size_t kAlignment = 64;

unsigned char* system_allocate(size_t size) {
  return static_cast<unsigned char*>(
      ::operator new(size, std::align_val_t(kAlignment), std::nothrow));
}

void system_free(unsigned char* block) {
  ::operator delete(block, std::align_val_t(kAlignment));
}

}  // namespace

HostAllocator::HostAllocator(size_t cache_limit)
    : small_(kLarge / kAlignment), cache_limit_(cache_limit) {}

HostAllocator::~HostAllocator() {
  release_all();
}

void HostAllocator::release_all() {
  for (auto& blocks : small_) {
    for (unsigned char* b : blocks) system_free(b);
    blocks.clear();
  }
  for (auto& [size, blocks] : large_)
    for (unsigned char* b : blocks) system_free(b);
  large_.clear();
  cached_bytes_ = 0;
}

size_t HostAllocator::size_class(size_t size) {
  const size_t rounded = std::max(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment);
  if (rounded < kLarge) return rounded;
  const size_t quarter = std::bit_floor(rounded) / 4;
  return (rounded + quarter - 1) / quarter * quarter;
}

std::vector<unsigned char*>& HostAllocator::bin(size_t cls) {
  return cls < kLarge ? small_[cls / kAlignment] : large_[cls];
}

unsigned char* HostAllocator::allocate(size_t size) {
  const size_t cls = size_class(size);
  {
    std::lock_guard lock(mutex_);
    std::vector<unsigned char*>* blocks = nullptr;
    if (cls < kLarge) {
      blocks = &small_[cls / kAlignment];
    } else if (auto it = large_.find(cls); it != large_.end()) {
      blocks = &it->second;
    }
    if (blocks != nullptr && !blocks->empty()) {
      unsigned char* b = blocks->back();
      blocks->pop_back();
      cached_bytes_ -= cls;
      return b;
    }
  }
  unsigned char* b = system_allocate(cls);
  if (b == nullptr) {
    // Out of memory with blocks parked here: give them back and try once more.
    {
      std::lock_guard lock(mutex_);
      release_all();
    }
    b = system_allocate(cls);
  }
  return b;
}

void HostAllocator::free(unsigned char* block, size_t size) noexcept {
  if (block == nullptr) return;
  const size_t cls = size_class(size);
  {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + cls <= cache_limit_) {
      try {
        bin(cls).push_back(block);
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
