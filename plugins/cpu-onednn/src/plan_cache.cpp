// The cpu-onednn plugin's plan cache (plan_cache.hpp) and how a plan's bytes are measured.
#include "plan_cache.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

// ASan builds (scripts/sanitize.sh) read the sanitizer allocator's counters instead of mallinfo2.
#if defined(__SANITIZE_ADDRESS__)
#define WICK_PLAN_ASAN_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WICK_PLAN_ASAN_HEAP 1
#endif
#endif
#ifndef WICK_PLAN_ASAN_HEAP
#define WICK_PLAN_ASAN_HEAP 0
#endif
#if WICK_PLAN_ASAN_HEAP
#include <sanitizer/allocator_interface.h>
#endif

namespace wick::cpu {

PlanCache::~PlanCache() {
  budget_->used.fetch_sub(own_bytes_, std::memory_order_relaxed);
}

void* PlanCache::find(std::string_view key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  if (it->second != lru_.begin()) lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->plan.get();
}

void* PlanCache::insert(std::string key, std::shared_ptr<void> plan, uint64_t bytes) {
  const uint64_t total = budget_->used.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t over = total > budget_->limit ? total - budget_->limit : 0;
  while (over > 0 && !lru_.empty()) {
    const uint64_t freed = lru_.back().bytes;
    evict_oldest();
    over = freed >= over ? 0 : over - freed;
  }
  own_bytes_ += bytes;
  lru_.push_front(Entry{std::move(key), std::move(plan), bytes});
  index_.emplace(lru_.front().key, lru_.begin());
  return lru_.front().plan.get();
}

void PlanCache::evict_oldest() {
  Entry& oldest = lru_.back();
  index_.erase(oldest.key);
  own_bytes_ -= oldest.bytes;
  budget_->used.fetch_sub(oldest.bytes, std::memory_order_relaxed);
  lru_.pop_back();
}

namespace {

// The process's resident bytes: the second field of /proc/self/statm, in pages (0 where
// unreadable).
void read_statm(MemoryUse& m) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return;
  text[n] = '\0';
  char* end = nullptr;
  std::strtoull(text, &end, 10);  // the address space, not memory held (JIT code reserves 256 KiB)
  m.resident = std::strtoull(end, nullptr, 10) * page;
}

int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// glibc's mallinfo2 walks every free chunk of every arena: 6 us in a fresh process, 450 us after
// the test's 2000 plans came and went, 50 ms with 200,000 free chunks (measured), against 0.3-1.2
// ms for making the primitive it measures. So a thread reads it only while it has cost at most a
// quarter of the CPU time the thread spent making plans, and at least for the first plan of a
// kind; the other plans are charged the larger of their resident growth and the recent measured
// plans of their kind (PlanMeter::typical).
constexpr int64_t kMallinfoShare = 4;
thread_local int64_t t_mallinfo_ns = 0, t_making_ns = 0;

MemoryUse read_memory(bool with_malloc) {
  MemoryUse m;
#if WICK_PLAN_ASAN_HEAP
  // Under ASan the heap is the sanitizer's allocator, not glibc's arenas: mallinfo2 would walk
  // arenas nobody uses (and was seen to crash in them); the allocator's own counters stand in.
  if (with_malloc) {
    m.malloc_known = true;
    m.malloc_in_use = __sanitizer_get_current_allocated_bytes();
    m.malloc_system = __sanitizer_get_heap_size();
  }
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  if (with_malloc) {
    const int64_t start = thread_cpu_ns();
    const struct mallinfo2 info = mallinfo2();
    t_mallinfo_ns += thread_cpu_ns() - start;
    m.malloc_known = true;
    m.malloc_in_use = info.uordblks + info.hblkhd;
    m.malloc_system = info.arena + info.hblkhd;
  }
#else
  (void)with_malloc;
#endif
  read_statm(m);
  return m;
}

}  // namespace

PlanMeter::PlanMeter(std::atomic<uint64_t>& typical)
    : typical_(typical),
      with_malloc_(typical.load(std::memory_order_relaxed) == 0 ||
                   t_mallinfo_ns * kMallinfoShare <= t_making_ns),
      before_(read_memory(with_malloc_)),
      made_from_ns_(thread_cpu_ns()) {}

uint64_t PlanMeter::bytes() {
  t_making_ns += thread_cpu_ns() - made_from_ns_;
  const uint64_t measured = plan_bytes(before_, read_memory(with_malloc_));
  const uint64_t typical = typical_.load(std::memory_order_relaxed);
  if (!with_malloc_) return std::max(measured, typical);
  // The kind's typical size: a moving average over its last few measured plans.
  typical_.store(typical == 0 ? measured : (typical * 7 + measured) / 8, std::memory_order_relaxed);
  return measured;
}

// What a plan holds is what making it added, in two parts (measured on oneDNN 2.6.3 for f32
// matmuls of 41-60 per side: about 32 KB and 20 KB):
// - malloc's bytes in use (glibc mallinfo2: arena chunks + chunks it mmaps on its own): oneDNN's
//   descriptors and primitive objects, its kernels' generator objects, the per-thread scratchpad
//   it grows at primitive creation (DNNL_ENABLE_CONCURRENT_EXEC=OFF) and the plans' own scratch
//   operands all come from malloc/posix_memalign;
// - oneDNN's JIT code, which malloc never sees: Xbyak (XBYAK_USE_MMAP_ALLOCATOR) mmaps 256 KiB of
//   address space per kernel and writes only the code's pages. Only those pages are memory held,
//   so what counts is the growth of resident memory beyond the growth of malloc's own (new malloc
//   memory becomes resident too, and is counted above).
// Without malloc's counts only the resident growth is known (PlanMeter adds the typical size).
// Another thread allocating or freeing meanwhile shifts every count; the floor keeps a plan from
// costing nothing, and an overcharged plan gives its charge back when it goes.
uint64_t plan_bytes(const MemoryUse& before, const MemoryUse& after) {
  const auto grown = [](uint64_t from, uint64_t to) { return to > from ? to - from : 0; };
  const uint64_t resident = grown(before.resident, after.resident);
  if (!before.malloc_known || !after.malloc_known) return std::max(kMinPlanBytes, resident);
  const uint64_t heap = grown(before.malloc_in_use, after.malloc_in_use);
  const uint64_t malloc_system = grown(before.malloc_system, after.malloc_system);
  const uint64_t code = resident > malloc_system ? resident - malloc_system : 0;
  return std::max(kMinPlanBytes, heap + code);
}

}  // namespace wick::cpu
