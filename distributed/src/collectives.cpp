// collectives.cpp — all_reduce, broadcast, all_gather, reduce_scatter and barrier on tensors:
// in the tensor's own memory where the device's buffers are host memory, else staged through host
// bytes; moved by the process group's transport; each part of a reduction reduced by one rank in
// rank order (reduce.hpp), so that every rank holds the same bits.
#include "engine.hpp"
#include "nccl.hpp"
#include "reduce.hpp"

#include <wick/error.hpp>

namespace wick::distributed {
namespace {

using Bytes = std::shared_ptr<HostBytes>;

Bytes host_bytes(const Tensor& t) {
  Bytes b = staging_bytes(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  if (!b->empty()) t.contiguous().copy_to_host(b->data(), b->size());
  return b;
}

// Writes host bytes back into `t` (in place, on its device: a staged copy off the host).
void write_back(Tensor& t, const Bytes& bytes) {
  if (bytes->empty()) return;
  // A view of the staged bytes where the device can wrap host memory (else a copy), then one copy
  // into t; the view keeps the bytes alive while the device reads them.
  t.copy_(Tensor::from_host_memory(bytes, bytes->data(), bytes->size(), t.shape(), t.dtype(),
                                   t.device()));
}

// `t`'s own memory when the collective may work in it directly (may_write_in_place) on a device
// whose buffers are host memory (host_data(), ABI 1.7). Else null.
uint8_t* own_bytes(const Tensor& t) {
  if (t.numel() == 0 || !may_write_in_place(t)) return nullptr;
  return static_cast<uint8_t*>(t.host_data());
}
// The same, as a buffer that keeps `t` alive while a Work uses it; else an empty one.
HostBuffer own_memory(const Tensor& t) {
  uint8_t* data = own_bytes(t);
  if (!data) return {};
  return HostBuffer{data, static_cast<size_t>(t.numel()) * dtype_size(t.dtype()),
                    std::make_shared<const Tensor>(t)};
}

// Bytes at `data` (none when `bytes` is 0).
struct ByteRange {
  uint8_t* data;
  size_t bytes;
};

// One message each way with every peer p, tagged `tag`: receiving into recv(p), sending send(p)
// (an empty range is no message; both sides compute the same ranges).
template <typename Recv, typename Send>
std::vector<Pending> exchange_with_peers(ProcessGroup& g, int tag, Recv recv, Send send) {
  std::vector<Pending> pending;
  for (int p = 0; p < g.size(); ++p) {
    if (p == g.rank()) continue;
    if (const ByteRange in = recv(p); in.bytes)
      pending.push_back({g.transport().irecv(in.data, in.bytes, p, tag), p});
    if (const ByteRange out = send(p); out.bytes)
      pending.push_back({g.transport().isend(out.data, out.bytes, p, tag), -2});
  }
  return pending;
}

// The first half of a reduction: every part's values to its owner (this rank's part's from every
// peer into `received`, a slot per rank; this rank's values of part p to rank p).
std::vector<Pending> send_parts_to_owners(ProcessGroup& g, const HostBuffer& buf,
                                          HostBytes& received, size_t count, size_t esize) {
  const size_t mine = part_of(count, g.size(), g.rank()).count * esize;
  return exchange_with_peers(
      g, kReduceTag,
      [&](int p) {
        return ByteRange{received.data() + size_t(p) * mine, mine};
      },
      [&](int p) {
        const PartRange theirs = part_of(count, g.size(), p);
        return ByteRange{buf.data + theirs.first * esize, theirs.count * esize};
      });
}

// This rank's part reduced in rank order, in place in `buf`.
void reduce_own_part(ProcessGroup& g, const HostBuffer& buf, const HostBytes& received,
                     size_t count, DType dtype, ReduceOp op) {
  const size_t esize = dtype_size(dtype);
  const PartRange mine = part_of(count, g.size(), g.rank());
  if (!mine.count) return;
  std::vector<const uint8_t*> inputs(static_cast<size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r)
    inputs[size_t(r)] = r == g.rank() ? buf.data + mine.first * esize
                                      : received.data() + size_t(r) * mine.count * esize;
  uint8_t* out = buf.data + mine.first * esize;
  reduce_ranks(inputs.data(), g.size(), mine.count, dtype, op, out);
}

// The second half: this rank's reduced part to every peer, every peer's into its place.
std::vector<Pending> gather_parts(ProcessGroup& g, const HostBuffer& buf, size_t count,
                                  size_t esize) {
  const PartRange mine = part_of(count, g.size(), g.rank());
  return exchange_with_peers(
      g, kGatherTag,
      [&](int p) {
        const PartRange theirs = part_of(count, g.size(), p);
        return ByteRange{buf.data + theirs.first * esize, theirs.count * esize};
      },
      [&](int) {
        return ByteRange{buf.data + mine.first * esize, mine.count * esize};
      });
}

void check_root(const ProcessGroup& g, int root) {
  if (root < 0 || root >= g.size())
    throw Error("wick::distributed: rank " + std::to_string(g.rank()) + ": broadcast from root " +
                std::to_string(root) + ", which is not a rank of this job of " +
                std::to_string(g.size()));
}

// Checked after the headers agree, so that every rank refuses alike.
void check_reduce_op(const Work::State& s, DType dtype, ReduceOp op) {
  if (const std::string why = reduce_refusal(dtype, op); !why.empty())
    throw Error("wick::distributed: rank " + std::to_string(s.group->rank()) + ": " + s.what +
                ": " + why);
}

// A small reduction: every rank's values came inline in its header message, and each rank reduces
// them all itself in rank order (the same code on the same bytes: the same bits everywhere).
void add_inline_reduction(Work::State& s, HostBuffer buf, DType dtype, ReduceOp op, size_t count) {
  Work::State* raw = &s;
  s.steps.push_back([raw, buf, dtype, op, count] {
    check_reduce_op(*raw, dtype, op);
    const int n = raw->group->size();
    std::vector<const uint8_t*> inputs(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      inputs[size_t(r)] = r == raw->group->rank() ? buf.data : raw->inline_payload(r);
    reduce_ranks(inputs.data(), n, count, dtype, op, buf.data);
    return std::vector<Pending>{};
  });
}

// A larger one: each part to its owner, reduced there, and (unless `scatter`) every owner's result
// to every rank.
void add_part_reduction(Work::State& s, HostBuffer buf, DType dtype, ReduceOp op, size_t count,
                        bool scatter) {
  ProcessGroup& g = *s.group;
  const size_t esize = dtype_size(dtype);
  auto received = std::make_shared<std::shared_ptr<HostBytes>>();
  Work::State* raw = &s;
  s.steps.push_back([raw, &g, buf, received, dtype, op, count, esize] {
    check_reduce_op(*raw, dtype, op);
    const size_t mine = part_of(count, g.size(), g.rank()).count;
    *received = staging_bytes(mine * esize * static_cast<size_t>(g.size()));
    return send_parts_to_owners(g, buf, **received, count, esize);
  });
  s.steps.push_back([&g, buf, received, dtype, op, count, esize, scatter] {
    reduce_own_part(g, buf, **received, count, dtype, op);
    received->reset();
    if (scatter) return std::vector<Pending>{};
    return gather_parts(g, buf, count, esize);
  });
}

}  // namespace

Work all_reduce_bytes(HostBuffer buf, DType dtype, const Shape& shape, ReduceOp op,
                      std::function<void(Work::State&)> then, bool scatter) {
  ProcessGroup& g = group();
  CallHeader h =
      header_of(scatter ? CallHeader::ReduceScatter : CallHeader::AllReduce, dtype, shape);
  h.reduce_op = static_cast<int64_t>(op);
  const size_t count = static_cast<size_t>(h.numel);
  // Small enough to ride in the header messages (one exchange in all), on a group of several.
  const bool small = g.size() > 1 && buf.size <= inline_limit(g.size());
  auto s = begin_call(
      g, h, what_of(scatter ? "reduce_scatter" : "all_reduce", dtype, shape, reduce_op_name(op)),
      small ? buf.data : nullptr, small ? buf.size : 0);
  if (small)
    add_inline_reduction(*s, buf, dtype, op, count);
  else
    add_part_reduction(*s, buf, dtype, op, count, scatter);
  Work::State* raw = s.get();
  s->finish = [raw, then] {
    if (then) then(*raw);
  };
  return launch(std::move(s));
}

Work all_reduce_async(Tensor& t, ReduceOp op) {
  if (std::optional<Work> w = nccl_all_reduce(t, op)) return std::move(*w);
  if (HostBuffer own = own_memory(t); own.data)
    return all_reduce_bytes(own, t.dtype(), t.shape(), op, nullptr);
  Bytes b = host_bytes(t);
  Tensor target = t;  // shares t's storage: the result lands in t
  return all_reduce_bytes(host_buffer(b), t.dtype(), t.shape(), op,
                          [target, b](Work::State&) mutable { write_back(target, b); });
}
void all_reduce(Tensor& t, ReduceOp op) {
  // A small tensor in its own memory: completed at once, without a Work (engine.hpp).
  if (uint8_t* data = own_bytes(t); data && all_reduce_now(data, t.dtype(), t.shape(), op)) return;
  all_reduce_async(t, op).wait();
}

Work broadcast_bytes(HostBuffer buf, DType dtype, const Shape& shape, int root,
                     std::function<void(Work::State&)> then) {
  ProcessGroup& g = group();
  check_root(g, root);
  CallHeader h = header_of(CallHeader::Broadcast, dtype, shape);
  h.root = root;
  auto s = begin_call(g, h, what_of("broadcast", dtype, shape, "root " + std::to_string(root)));
  s->steps.push_back([&g, buf, root] {
    return std::vector<Pending>{{g.transport().ibcast(buf.data, buf.size, root), -1}};
  });
  Work::State* raw = s.get();
  s->finish = [raw, then] {
    if (then) then(*raw);
  };
  return launch(std::move(s));
}

Work broadcast_async(Tensor& t, int root) {
  check_root(group(), root);
  if (std::optional<Work> w = nccl_broadcast(t, root)) return std::move(*w);
  if (HostBuffer own = own_memory(t); own.data)
    return broadcast_bytes(own, t.dtype(), t.shape(), root, nullptr);
  Bytes b = host_bytes(t);
  Tensor target = t;
  return broadcast_bytes(host_buffer(b), t.dtype(), t.shape(), root,
                         [target, b, root](Work::State& s) mutable {
                           if (s.group->rank() != root) write_back(target, b);
                         });
}
void broadcast(Tensor& t, int root) {
  broadcast_async(t, root).wait();
}

Work all_gather_async(const Tensor& t) {
  ProcessGroup& g = group();
  if (std::optional<Work> w = nccl_all_gather(t)) return std::move(*w);
  auto s = begin_call(g, header_of(CallHeader::AllGather, t.dtype(), t.shape()),
                      what_of("all_gather", t.dtype(), t.shape(), ""));
  Bytes b = host_bytes(t);
  Bytes all = staging_bytes(b->size() * static_cast<size_t>(g.size()));
  s->steps.push_back([&g, b, all] {
    return std::vector<Pending>{{g.transport().iallgather(b->data(), b->size(), all->data()), -1}};
  });
  Shape shape = t.shape();
  shape.insert(shape.begin(), g.size());
  Work::State* raw = s.get();
  const DType dtype = t.dtype();
  const Device device = t.device();
  s->finish = [raw, all, shape, dtype, device] {
    raw->result = Tensor::from_bytes(all->data(), all->size(), shape, dtype, device);
  };
  return launch(std::move(s));
}
Tensor all_gather(const Tensor& t) {
  return all_gather_async(t).result();
}

Work reduce_scatter_async(const Tensor& t, ReduceOp op) {
  ProcessGroup& g = group();
  if (t.shape().empty() || t.shape()[0] % g.size() != 0)
    throw Error("wick::distributed: rank " + std::to_string(g.rank()) + ": reduce_scatter of " +
                describe(t.dtype(), t.shape()) + ": the first axis must divide by the world size " +
                std::to_string(g.size()));
  if (std::optional<Work> w = nccl_reduce_scatter(t, op)) return std::move(*w);
  Bytes b = host_bytes(t);
  Shape part = t.shape();
  part[0] /= g.size();
  const DType dtype = t.dtype();
  const Device device = t.device();
  const int rank = g.rank(), size = g.size();
  auto take_part = [b, part, dtype, device, rank, size](Work::State& s) {
    const size_t bytes = b->size() / static_cast<size_t>(size);
    s.result = Tensor::from_bytes(b->data() + bytes * static_cast<size_t>(rank), bytes, part, dtype,
                                  device);
  };
  return all_reduce_bytes(host_buffer(b), dtype, t.shape(), op, take_part, /*scatter=*/true);
}
Tensor reduce_scatter(const Tensor& t, ReduceOp op) {
  return reduce_scatter_async(t, op).result();
}

Work barrier_async() {
  ProcessGroup& g = group();
  auto s = begin_call(g, header_of(CallHeader::Barrier, DType::U8, {}), "barrier");
  s->steps.push_back([&g] { return std::vector<Pending>{{g.transport().ibarrier(), -1}}; });
  return launch(std::move(s));
}
void barrier() {
  barrier_async().wait();
}

}  // namespace wick::distributed
