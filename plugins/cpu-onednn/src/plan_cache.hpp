// plan_cache.hpp — the cpu-onednn plugin's cache of prepared oneDNN plans: one per calling thread,
// least recently used out first, all threads' plans together bounded in bytes
// ([plugins.cpu-onednn] plan_cache_mb). Knows nothing of oneDNN: a plan is a shared_ptr<void> and
// the bytes it holds, measured by the caller (PlanMeter).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace wick::cpu {

// The bytes every thread's plans hold together, and the bound on them. Shared (shared_ptr) by the
// plugin and each thread's cache, which may outlive the plugin (a thread_local destroyed at the
// thread's end).
struct PlanBudget {
  explicit PlanBudget(uint64_t limit_bytes) : limit(limit_bytes) {}
  const uint64_t limit;
  std::atomic<uint64_t> used{0};
};

// One thread's plans. Not thread-safe (one per thread); only `budget` is shared.
class PlanCache {
 public:
  explicit PlanCache(std::shared_ptr<PlanBudget> budget) : budget_(std::move(budget)) {}
  ~PlanCache();  // gives the plans' bytes back to the budget
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // The plan cached under key, made the most recently used; nullptr when there is none. The cost
  // of a lookup: one hash of the key and, unless it is already the newest, three pointer moves.
  void* find(std::string_view key);
  // Caches `plan`, which holds `bytes`, under key (not cached yet) and returns plan.get(). While
  // every thread's plans together would exceed the budget, this thread's least recently used
  // plans go first; the new plan stays even when it alone is over the bound (its caller runs it),
  // and another thread's plans are left to that thread, so the total may exceed the bound by what
  // the other threads hold until they next insert. A pointer from find or insert stays valid until
  // this thread's next insert.
  void* insert(std::string key, std::shared_ptr<void> plan, uint64_t bytes);

  // Drops every plan for which pred(key, plan) is true.
  template <class Pred>
  void erase_if(Pred&& pred) {
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (!pred(std::string_view(it->key), it->plan.get())) {
        ++it;
        continue;
      }
      index_.erase(it->key);
      own_bytes_ -= it->bytes;
      budget_->used.fetch_sub(it->bytes, std::memory_order_relaxed);
      it = lru_.erase(it);
    }
  }

  size_t size() const { return lru_.size(); }
  uint64_t bytes() const { return own_bytes_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<void> plan;
    uint64_t bytes;
  };
  void evict_oldest();

  std::shared_ptr<PlanBudget> budget_;
  std::list<Entry> lru_;  // the most recently used first
  // Keys view the entries' own strings, which a std::list never moves.
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
  uint64_t own_bytes_ = 0;
};

// The process's memory use, read before and after making a plan (PlanMeter).
struct MemoryUse {
  bool malloc_known = false;   // whether the two malloc counts were read (see plan_cache.cpp)
  uint64_t malloc_in_use = 0;  // bytes malloc has handed out and not had back
  uint64_t malloc_system = 0;  // bytes malloc has taken from the system
  uint64_t resident = 0;       // the process's resident bytes
};

// Measures the bytes one plan holds: construct before making it, call bytes() after, on the same
// thread. `typical` is the plan kind's recent measured size (0 until one is measured), which it
// reads and updates: malloc's counts (mallinfo2) are read only while they have cost the calling
// thread at most a quarter of the time it spent making plans, and the others are charged at
// least the typical size (plan_cache.cpp).
class PlanMeter {
 public:
  explicit PlanMeter(std::atomic<uint64_t>& typical);
  uint64_t bytes();

 private:
  std::atomic<uint64_t>& typical_;
  const bool with_malloc_;
  const MemoryUse before_;
  const int64_t made_from_ns_;
};

// The bytes a plan made between `before` and `after` holds (at least kMinPlanBytes): see
// plan_cache.cpp for what is counted and why.
uint64_t plan_bytes(const MemoryUse& before, const MemoryUse& after);
inline constexpr uint64_t kMinPlanBytes = 4096;

}  // namespace wick::cpu
