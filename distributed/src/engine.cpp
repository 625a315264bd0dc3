// engine.cpp — advancing a collective's steps, the header exchange and its check, the timeout.
#include "engine.hpp"
#include "reduce.hpp"

#include <wick/autograd.hpp>
#include <wick/error.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <sstream>
#include <thread>

namespace wick::distributed {
namespace {

std::string describe_header(const CallHeader& h) {
  static const char* kinds[] = {"?",          "all_reduce",     "broadcast",
                                "all_gather", "reduce_scatter", "barrier"};
  const int64_t k = h.kind >= 1 && h.kind <= 5 ? h.kind : 0;
  std::string s = std::string(kinds[k]) + " #" + std::to_string(h.sequence);
  if (h.kind == CallHeader::Barrier) return s;
  Shape shape(h.shape, h.shape + std::min<int64_t>(h.ndim, 8));
  s += " (" + describe(static_cast<DType>(h.dtype), shape);
  if (h.kind == CallHeader::AllReduce || h.kind == CallHeader::ReduceScatter)
    s += std::string(", ") + reduce_op_name(static_cast<ReduceOp>(h.reduce_op));
  if (h.kind == CallHeader::Broadcast) s += ", root " + std::to_string(h.root);
  if (h.path == CallHeader::Nccl) s += ", on NCCL";
  return s + ")";
}

bool same(const CallHeader& a, const CallHeader& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// After the exchange: every rank's header must be rank 0's, else every rank throws the same list.
void check_headers(const std::vector<CallHeader>& hs, int rank) {
  if (std::all_of(hs.begin(), hs.end(), [&](const CallHeader& h) { return same(h, hs[0]); }))
    return;
  std::ostringstream msg;
  msg << "wick::distributed: rank " << rank << ": the ranks called different collectives:";
  for (size_t r = 0; r < hs.size(); ++r)
    msg << (r ? ";" : "") << " rank " << r << " " << describe_header(hs[r]);
  throw Error(msg.str());
}

// The header messages: this rank's (`out`: its header, then any inline payload) to every other
// rank, and theirs into its slots of `slot` bytes each (rank r's at inbox + r * slot). The sends
// are started first, so that every rank's message leaves before it posts its receives: 0.02-0.04
// more of MPI's speed at 1 and 4 KiB on 2 ranks (three alternating runs of 3000 rounds each).
void post_header_exchange(ProcessGroup& g, const uint8_t* out, size_t out_bytes, uint8_t* inbox,
                          size_t slot, std::vector<Pending>& pending) {
  Transport& t = g.transport();
  for (int r = 0; r < g.size(); ++r)
    if (r != g.rank()) pending.push_back({t.isend(out, out_bytes, r, kHeaderTag), -2});
  for (int r = 0; r < g.size(); ++r)
    if (r != g.rank())
      pending.push_back({t.irecv(inbox + size_t(r) * slot, slot, r, kHeaderTag), r});
}

// The other ranks' headers out of their slots, for the check.
void copy_headers_out(const uint8_t* inbox, size_t slot, int rank,
                      std::vector<CallHeader>& headers) {
  for (size_t r = 0; r < headers.size(); ++r)
    if (int(r) != rank) std::memcpy(&headers[r], inbox + r * slot, sizeof(CallHeader));
}

// Every rank sends its header message (the header, then any inline payload) to every other and
// receives theirs into its slots; the headers are copied out for the check.
std::vector<Pending> exchange_headers(Work::State& s) {
  ProcessGroup& g = *s.group;
  s.headers.assign(static_cast<size_t>(g.size()), CallHeader{});
  s.headers[static_cast<size_t>(g.rank())] = s.header;
  std::vector<Pending> pending;
  if (g.size() == 1) return pending;
  s.slot = sizeof(CallHeader) + inline_limit(g.size());
  s.inbox = staging_bytes(s.slot * static_cast<size_t>(g.size()));
  post_header_exchange(g, s.outbox->data(), s.outbox->size(), s.inbox->data(), s.slot, pending);
  return pending;
}

[[noreturn]] void throw_timeout(const ProcessGroup& g, const std::string& what,
                                const std::vector<Pending>& in_flight) {
  std::vector<int> silent;
  bool collective = false, device = false;
  for (const Pending& p : in_flight) {
    if (p.peer >= 0) silent.push_back(p.peer);
    collective = collective || p.peer == -1;
    device = device || p.peer == kDevicePeer;
  }
  std::ostringstream msg;
  msg << "wick::distributed: rank " << g.rank() << " of " << g.size() << ": " << what
      << " did not complete within " << g.timeout_seconds() << " s: ";
  if (!silent.empty()) {
    msg << "nothing from rank" << (silent.size() > 1 ? "s" : "");
    for (size_t i = 0; i < silent.size(); ++i) msg << (i ? ", " : " ") << silent[i];
  } else if (device) {
    msg << "NCCL's work on the device did not finish (the communicator was aborted)";
  } else {
    msg << (collective ? "the transfer among all ranks stalled" : "a send was not taken");
  }
  msg << " (a rank that died, hangs, or called another collective; WICK_DISTRIBUTED_TIMEOUT sets "
         "the limit)";
  throw Error(msg.str());
}

// The collectives in flight, in the order this rank started them. MPI matches collectives by
// the order each rank calls them, so a collective's transfers after the header exchange start only
// when every earlier one has completed: the same order on every rank, whichever Work is waited on.
std::deque<Work::State*> g_queue;

void dequeue(Work::State& s) {
  std::erase(g_queue, &s);
}

// The step after the header exchange and check (steps 0 and 1) may start only at the queue's head.
bool may_start(const Work::State& s) {
  return s.next_step < 2 || (!g_queue.empty() && g_queue.front() == &s);
}

void advance_or_fail(Work::State& s, bool block);

// Advances the collective as far as it goes; with `block`, to the end or the timeout.
void advance(Work::State& s, bool block) {
  Transport& t = s.group->transport();
  while (!s.done) {
    const size_t before = s.in_flight.size();
    std::erase_if(s.in_flight, [&](const Pending& p) {
      return p.peer == kDevicePeer ? (*static_cast<DevicePoll*>(p.request))() : t.test(p.request);
    });
    const auto now = std::chrono::steady_clock::now();
    if (s.in_flight.size() != before) s.last_progress = now;
    if (!s.in_flight.empty()) {
      if (!block) return;
      if (now - s.last_progress > std::chrono::duration<double>(s.group->timeout_seconds()))
        throw_timeout(*s.group, s.what, s.in_flight);
      std::this_thread::yield();
      continue;
    }
    if (s.next_step < s.steps.size()) {
      if (!may_start(s)) {
        if (!block) return;
        advance_or_fail(*g_queue.front(), true);  // an earlier collective first
        continue;
      }
      s.in_flight = s.steps[s.next_step++]();
      s.last_progress = now;
      continue;
    }
    if (s.finish) s.finish();
    s.done = true;
    dequeue(s);
  }
}

void advance_or_fail(Work::State& s, bool block) {
  if (s.error) std::rethrow_exception(s.error);
  try {
    advance(s, block);
  } catch (...) {
    s.error = std::current_exception();
    dequeue(s);
    if (auto on_failure = std::move(s.on_failure)) on_failure();
    throw;
  }
}

// Staging buffers not in use (staging_bytes), at most kPoolBytes of them kept.
constexpr size_t kPoolBytes = size_t(256) << 20;
struct StagingPool {
  std::vector<HostBytes*> free;
  size_t bytes = 0;
};
// Never destroyed: a staging buffer may be let go of after static destruction began.
StagingPool& pool() {
  static auto* p = new StagingPool;
  return *p;
}

void give_back(HostBytes* b) {
  StagingPool& p = pool();
  if (p.bytes + b->capacity() > kPoolBytes) {
    delete b;
    return;
  }
  p.bytes += b->capacity();
  p.free.push_back(b);
}

// all_reduce_now's memory, kept from call to call so that a call allocates nothing: the header
// message, the receive slots, every rank's header and values, the transfers in flight.
struct NowBuffers {
  HostBytes outbox, inbox;
  std::vector<CallHeader> headers;
  std::vector<const uint8_t*> inputs;
  std::vector<Pending> pending;
};
// Replaced (the old one left to leak) when a call fails with transfers in flight: MPI may still
// write into its slots.
NowBuffers* g_now = nullptr;

// Polls that spin before a wait yields the core: a small call's messages take a few microseconds,
// far fewer polls (yielding from the first poll made no measurable difference here, with a core
// per rank); a peer that is late gets the core back.
constexpr unsigned kSpinPolls = 200;
// Polls per look at the clock (for the timeout): reading it cost as much as a poll.
constexpr unsigned kPollsPerClock = 32;

// Waits for all of `pending`, or throws the timeout's error (naming the ranks not heard from) when
// none completes for the group's timeout. A poll tests the transfers in order up to the first
// that is not done: each test of an unfinished request runs MPI's progress engine, which moves the
// others too, so one such test per poll is enough.
template <typename What>
void wait_all(ProcessGroup& g, std::vector<Pending>& pending, What what) {
  Transport& t = g.transport();
  const std::chrono::duration<double> timeout(g.timeout_seconds());
  std::chrono::steady_clock::time_point last_progress;  // set at the first look at the clock
  size_t done = 0;
  bool progressed = true;
  for (unsigned polls = 1;; ++polls) {
    const size_t before = done;
    while (done < pending.size() && t.test(pending[done].request)) ++done;
    if (done == pending.size()) return;
    progressed = progressed || done != before;
    if (polls % kPollsPerClock == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (progressed) {
        last_progress = now;
      } else if (now - last_progress > timeout) {
        pending.erase(pending.begin(), pending.begin() + std::ptrdiff_t(done));
        std::erase_if(pending, [&](const Pending& p) { return t.test(p.request); });
        throw_timeout(g, what(), pending);
      }
      progressed = false;
    }
    if (polls > kSpinPolls) std::this_thread::yield();
  }
}

}  // namespace

bool all_reduce_now(uint8_t* data, DType dtype, const Shape& shape, ReduceOp op) {
  ProcessGroup& g = group();
  CallHeader h = header_of(CallHeader::AllReduce, dtype, shape);
  const size_t n = static_cast<size_t>(g.size());
  const size_t bytes = static_cast<size_t>(h.numel) * dtype_size(dtype);
  if (n == 1 || bytes > inline_limit(g.size()) || !g_queue.empty()) return false;
  h.reduce_op = static_cast<int64_t>(op);
  h.sequence = static_cast<int64_t>(g.next_sequence());
  auto what = [&] {
    return what_of("all_reduce", dtype, shape, reduce_op_name(op)) + " #" +
           std::to_string(h.sequence);
  };
  if (!g_now) g_now = new NowBuffers;
  NowBuffers& b = *g_now;
  b.outbox.resize(sizeof h + bytes);
  std::memcpy(b.outbox.data(), &h, sizeof h);
  if (bytes) std::memcpy(b.outbox.data() + sizeof h, data, bytes);
  const size_t slot = sizeof(CallHeader) + inline_limit(g.size());
  b.inbox.resize(slot * n);
  b.pending.clear();
  try {
    post_header_exchange(g, b.outbox.data(), b.outbox.size(), b.inbox.data(), slot, b.pending);
    wait_all(g, b.pending, what);
  } catch (...) {
    if (!b.pending.empty()) g_now = nullptr;
    throw;
  }
  b.headers.assign(n, CallHeader{});
  b.headers[size_t(g.rank())] = h;
  copy_headers_out(b.inbox.data(), slot, g.rank(), b.headers);
  check_headers(b.headers, g.rank());
  if (const std::string why = reduce_refusal(dtype, op); !why.empty())
    throw Error("wick::distributed: rank " + std::to_string(g.rank()) + ": " + what() + ": " + why);
  b.inputs.resize(n);
  for (size_t r = 0; r < n; ++r)
    b.inputs[r] = int(r) == g.rank() ? data : b.inbox.data() + r * slot + sizeof(CallHeader);
  reduce_ranks(b.inputs.data(), g.size(), static_cast<size_t>(h.numel), dtype, op, data);
  return true;
}

std::shared_ptr<HostBytes> staging_bytes(size_t size) {
  StagingPool& p = pool();
  // The smallest free buffer that holds `size`; a new one when none does.
  auto best = p.free.end();
  for (auto it = p.free.begin(); it != p.free.end(); ++it)
    if ((*it)->capacity() >= size &&
        (best == p.free.end() || (*it)->capacity() < (*best)->capacity()))
      best = it;
  HostBytes* b = nullptr;
  if (best != p.free.end()) {
    b = *best;
    p.free.erase(best);
    p.bytes -= b->capacity();
  } else {
    b = new HostBytes;
    b->reserve(size);
  }
  b->resize(size);  // uninitialised (StagingAllocator::construct)
  return std::shared_ptr<HostBytes>(b, give_back);
}

HostBuffer host_buffer(std::shared_ptr<HostBytes> bytes) {
  return HostBuffer{bytes->data(), bytes->size(), bytes};
}

PartRange part_of(size_t count, int parts, int r) {
  const size_t base = count / size_t(parts), extra = count % size_t(parts), i = size_t(r);
  return PartRange{i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

std::string describe(DType dtype, const Shape& shape) {
  std::string s = std::string(dtype_name(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

CallHeader header_of(CallHeader::Kind kind, DType dtype, const Shape& shape) {
  CallHeader h;
  h.kind = kind;
  h.dtype = static_cast<int64_t>(dtype);
  h.ndim = static_cast<int64_t>(shape.size());
  h.numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    h.numel *= shape[i];
    if (i < 8) h.shape[i] = shape[i];
  }
  return h;
}

std::string what_of(const char* op, DType dtype, const Shape& shape, const std::string& extra) {
  return std::string(op) + " (" + describe(dtype, shape) + (extra.empty() ? "" : ", " + extra) +
         ")";
}

bool may_write_in_place(const Tensor& t) {
  return t.is_contiguous() && !t.is_read_only() && !(t.requires_grad() && autograd::grad_enabled());
}

size_t inline_limit(int world_size) {
  return std::max<size_t>(4096, (size_t(64) << 10) / size_t(std::max(world_size - 1, 1)));
}

std::shared_ptr<Work::State> begin_call(ProcessGroup& group, CallHeader header, std::string what,
                                        const uint8_t* payload, size_t payload_bytes) {
  auto s = std::make_shared<Work::State>();
  s->group = &group;
  header.sequence = static_cast<int64_t>(group.next_sequence());
  s->header = header;
  s->what = std::move(what) + " #" + std::to_string(header.sequence);
  if (payload_bytes > inline_limit(group.size()))
    throw Error("wick::distributed: " + s->what + ": an inline payload of " +
                std::to_string(payload_bytes) + " bytes (a bug in Wick)");
  s->outbox = staging_bytes(sizeof(CallHeader) + payload_bytes);
  std::memcpy(s->outbox->data(), &s->header, sizeof(CallHeader));
  if (payload_bytes) std::memcpy(s->outbox->data() + sizeof(CallHeader), payload, payload_bytes);
  Work::State* raw = s.get();
  s->steps.push_back([raw] { return exchange_headers(*raw); });
  s->steps.push_back([raw] {
    const int rank = raw->group->rank();
    if (raw->inbox) copy_headers_out(raw->inbox->data(), raw->slot, rank, raw->headers);
    check_headers(raw->headers, rank);
    return std::vector<Pending>{};
  });
  return s;
}

Pending device_pending(Work::State& s, DevicePoll poll) {
  s.polls.push_back(std::make_unique<DevicePoll>(std::move(poll)));
  return Pending{s.polls.back().get(), kDevicePeer};
}

Work launch(std::shared_ptr<Work::State> state) {
  g_queue.push_back(state.get());
  state->last_progress = std::chrono::steady_clock::now();
  advance_or_fail(*state, false);
  return Work(std::move(state));
}

Work::Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
Work::Work(Work&&) noexcept = default;
Work& Work::operator=(Work&&) noexcept = default;
Work::~Work() {
  // The buffers in flight belong to the state: finish the transfers before they are freed.
  if (state_ && !state_->done && !state_->error) {
    try {
      advance_or_fail(*state_, true);
    } catch (...) {
    }
  }
}
void Work::wait() {
  if (!state_) throw Error("wick::distributed: wait() on an empty Work (moved from)");
  advance_or_fail(*state_, true);
}
bool Work::is_completed() {
  if (!state_) return true;
  advance_or_fail(*state_, false);
  return state_->done;
}
Tensor Work::result() {
  wait();
  return state_->result;
}

}  // namespace wick::distributed
