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

// `size` bytes of staging memory, from a per-process pool that takes it back when the last owner
// lets go: a fresh allocation of megabytes pays its page faults again on every collective (about as
// long as moving the bytes). Not thread-safe (neither are the collectives).
std::shared_ptr<HostBytes> staging_bytes(size_t size);

// Contiguous host memory that a collective works on in place: a tensor's own memory (a device whose
// buffers are host memory) or staging bytes. `owner` keeps it alive while transfers use it.
struct HostBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};
HostBuffer host_buffer(std::shared_ptr<HostBytes> bytes);

// Point-to-point tags: the header exchange, and the two halves of a reduction.
constexpr int kHeaderTag = 0x5749, kReduceTag = 0x574A, kGatherTag = 0x574B;

// What every rank must agree on before a collective moves data (exchanged first).
struct CallHeader {
  enum Kind : int64_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Barrier };
  enum Path : int64_t { Staged = 0, Nccl = 1 };  // how the data moves: the transport, or NCCL
  int64_t kind = 0, dtype = 0, ndim = 0, numel = 0, root = 0, reduce_op = 0, sequence = 0;
  int64_t shape[8] = {};
  int64_t path = Staged;
};

// A Pending's peer for work on a device (NCCL's): its request is a DevicePoll of the state's.
constexpr int kDevicePeer = -3;
using DevicePoll = std::function<bool()>;  // true once the work is done; throws when it failed

struct Pending {
  Transport::Request request;  // nullptr: done
  int peer;                    // the rank it waits for; -1 for a collective of all ranks
};

struct Work::State {
  ProcessGroup* group = nullptr;
  std::string what;  // "all_reduce (f32 [4, 3], sum)"
  CallHeader header;
  std::vector<CallHeader> headers;  // every rank's, after the first step
  // The header messages: this rank's (its header, then any inline payload) and one slot per rank
  // for the others' (inline_payload(r) is rank r's payload after the first step).
  std::shared_ptr<HostBytes> outbox, inbox;
  size_t slot = 0;
  const uint8_t* inline_payload(int rank) const {
    return inbox->data() + size_t(rank) * slot + sizeof(CallHeader);
  }
  std::vector<std::function<std::vector<Pending>()>> steps;
  std::function<void()> finish;
  size_t next_step = 0;
  std::vector<Pending> in_flight;
  std::chrono::steady_clock::time_point last_progress;
  std::vector<std::unique_ptr<DevicePoll>> polls;  // what the kDevicePeer requests point to
  std::function<void()> on_failure;                // runs once when the collective fails
  bool done = false;
  std::exception_ptr error;
  Tensor result;
};

// The most bytes a collective may carry inline in its header message on a group of `world_size`
// (the same on every rank: each rank's receive slots are this size): 64 KiB over the peers,
// at least 4 KiB.
size_t inline_limit(int world_size);

// The header of a collective of `kind` on values (`dtype`, `shape`); the caller sets root or
// reduce_op, begin_call or all_reduce_now the sequence number.
CallHeader header_of(CallHeader::Kind kind, DType dtype, const Shape& shape);

// A collective as errors name it: "all_reduce (f32 [4, 3], sum)" (`extra` may be empty).
std::string what_of(const char* op, DType dtype, const Shape& shape, const std::string& extra);

// Whether a collective may write its result into `t`'s own memory: contiguous, writable, and
// outside a recorded write (copy_'s refusal is kept for the paths that write through a copy).
bool may_write_in_place(const Tensor& t);

// A state for `header` on the group, whose first step exchanges the headers (and checks them).
// A `payload` (at most inline_limit bytes, copied now) rides in the header messages to every peer:
// a small collective then needs no other transfer.
std::shared_ptr<Work::State> begin_call(ProcessGroup& group, CallHeader header, std::string what,
                                        const uint8_t* payload = nullptr, size_t payload_bytes = 0);
// A pending transfer on a device: `poll` kept by the state, polled until it says done.
Pending device_pending(Work::State& s, DevicePoll poll);

// Starts the collective (its first step); the Work advances it.
Work launch(std::shared_ptr<Work::State> state);

// A small all_reduce of the values (`dtype`, `shape`) at `data`, in place, completed before it
// returns: the same header exchange and check, inline payload and rank-order reduction as
// all_reduce_bytes, the same timeout, but without a Work (no allocation, no steps), for the fixed
// per-call cost of a blocking all_reduce of a few KiB. Returns false, having done nothing, where it
// does not apply: one rank, more than inline_limit bytes, or a collective of this rank still in
// flight (which must move its data first); all_reduce_bytes then.
bool all_reduce_now(uint8_t* data, DType dtype, const Shape& shape, ReduceOp op);

// All-reduce of the values (`dtype`, `shape`) in `buffer`, in place (the host half of all_reduce
// and reduce_scatter): the elements are cut into one part per rank, rank r owning part r; every
// rank sends each owner its values of that part, each owner reduces its part in rank order
// (reduce_ranks) and sends the result to every rank. Each part thus has one reducer, every rank
// gets its bytes, and each rank moves 2 (N - 1) / N of the buffer (a ring's volume, with N - 1
// peers at a time). With `scatter`, the second half is skipped: only rank r's part r holds the
// result. A buffer of at most inline_limit bytes (on several ranks) rides in the header messages
// instead, and every rank reduces all of it in rank order. `then` runs on the state once the
// result is in place.
Work all_reduce_bytes(HostBuffer buffer, DType dtype, const Shape& shape, ReduceOp op,
                      std::function<void(Work::State&)> then, bool scatter = false);

// Broadcast of the values (`dtype`, `shape`) in `buffer` from `root`, in place (the host half of
// broadcast); `then` runs once the bytes are in.
Work broadcast_bytes(HostBuffer buffer, DType dtype, const Shape& shape, int root,
                     std::function<void(Work::State&)> then);

// Part r of `count` elements cut into `parts` (the first count % parts parts one longer).
struct PartRange {
  size_t first, count;
};
PartRange part_of(size_t count, int parts, int r);

std::string describe(DType dtype, const Shape& shape);

}  // namespace wick::distributed
