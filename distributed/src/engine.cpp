// engine.cpp — advancing a collective's steps, the header exchange and its check, the timeout.
#include "engine.hpp"

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
void check_headers(const Work::State& s) {
  const auto& hs = s.headers;
  if (std::all_of(hs.begin(), hs.end(), [&](const CallHeader& h) { return same(h, hs[0]); }))
    return;
  std::ostringstream msg;
  msg << "wick::distributed: rank " << s.group->rank()
      << ": the ranks called different collectives:";
  for (size_t r = 0; r < hs.size(); ++r)
    msg << (r ? ";" : "") << " rank " << r << " " << describe_header(hs[r]);
  throw Error(msg.str());
}

// Every rank sends its header message (the header, then any inline payload) to every other and
// receives theirs into its slots; the headers are copied out for the check.
std::vector<Pending> exchange_headers(Work::State& s) {
  ProcessGroup& g = *s.group;
  Transport& t = g.transport();
  s.headers.assign(static_cast<size_t>(g.size()), CallHeader{});
  s.headers[static_cast<size_t>(g.rank())] = s.header;
  std::vector<Pending> pending;
  if (g.size() == 1) return pending;
  s.slot = sizeof(CallHeader) + inline_limit(g.size());
  s.inbox = staging_bytes(s.slot * static_cast<size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r) {
    if (r == g.rank()) continue;
    pending.push_back({t.irecv(s.inbox->data() + size_t(r) * s.slot, s.slot, r, kHeaderTag), r});
    pending.push_back({t.isend(s.outbox->data(), s.outbox->size(), r, kHeaderTag), -2});
  }
  return pending;
}

void copy_headers_out(Work::State& s) {
  for (int r = 0; r < s.group->size(); ++r)
    if (r != s.group->rank())
      std::memcpy(&s.headers[size_t(r)], s.inbox->data() + size_t(r) * s.slot, sizeof(CallHeader));
}

[[noreturn]] void throw_timeout(const Work::State& s) {
  std::vector<int> silent;
  bool collective = false, device = false;
  for (const Pending& p : s.in_flight) {
    if (p.peer >= 0) silent.push_back(p.peer);
    collective = collective || p.peer == -1;
    device = device || p.peer == kDevicePeer;
  }
  std::ostringstream msg;
  msg << "wick::distributed: rank " << s.group->rank() << " of " << s.group->size() << ": "
      << s.what << " did not complete within " << s.group->timeout_seconds() << " s: ";
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
        throw_timeout(s);
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

}  // namespace

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
    if (raw->inbox) copy_headers_out(*raw);
    check_headers(*raw);
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
