// engine.hpp — a collective as a sequence of steps of non-blocking transfers, advanced by
// Work::wait()/is_completed() and watched by the process group's timeout (engine.cpp), and the
// collectives on host bytes that the tensor collectives and data parallelism share.
#pragma once

#include "transport.hpp"

#include <wick/distributed/distributed.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <new>
#include <vector>

namespace wick::distributed {

// Host staging memory: aligned to 64 bytes (so that a device whose buffers are host memory can
// wrap it without a copy, Tensor::from_host_memory) and left uninitialised on allocation (every
// byte is written before it is read).
template <class T>
struct StagingAllocator {
  using value_type = T;
  StagingAllocator() = default;
  template <class U>
  StagingAllocator(const StagingAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{64}); }
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U>
  bool operator==(const StagingAllocator<U>&) const {
    return true;
  }
};
using HostBytes = std::vector<uint8_t, StagingAllocator<uint8_t>>;

// What every rank must agree on before a collective moves data (exchanged first).
struct CallHeader {
  enum Kind : int64_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Barrier };
  int64_t kind = 0, dtype = 0, ndim = 0, numel = 0, root = 0, reduce_op = 0, sequence = 0;
  int64_t shape[8] = {};
};

struct Pending {
  Transport::Request request;  // nullptr: done
  int peer;                    // the rank it waits for; -1 for a collective of all ranks
};

struct Work::State {
  ProcessGroup* group = nullptr;
  std::string what;  // "all_reduce (f32 [4, 3], sum)"
  CallHeader header;
  std::vector<CallHeader> headers;  // every rank's, after the first step
  std::vector<std::function<std::vector<Pending>()>> steps;
  std::function<void()> finish;
  size_t next_step = 0;
  std::vector<Pending> in_flight;
  std::chrono::steady_clock::time_point last_progress;
  bool done = false;
  std::exception_ptr error;
  Tensor result;
};

// A state for `header` on the group, whose first step exchanges the headers (and checks them).
std::shared_ptr<Work::State> begin_call(ProcessGroup& group, CallHeader header, std::string what);
// Starts the collective (its first step); the Work advances it.
Work launch(std::shared_ptr<Work::State> state);

// All-reduce of the values (`dtype`, `shape`) in `bytes`, in place (the host half of all_reduce and
// reduce_scatter); `then` runs on the state once the result is in `bytes`.
Work all_reduce_bytes(std::shared_ptr<HostBytes> bytes, DType dtype, const Shape& shape,
                      ReduceOp op, std::function<void(Work::State&)> then, bool scatter = false);

std::string describe(DType dtype, const Shape& shape);

}  // namespace wick::distributed
