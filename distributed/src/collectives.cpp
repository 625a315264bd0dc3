// collectives.cpp — all_reduce, broadcast, all_gather, reduce_scatter and barrier on tensors:
// staged through host bytes, moved by the process group's transport, reduced on rank 0 in rank
// order (reduce.hpp) so that every rank holds the same bits.
#include "engine.hpp"
#include "reduce.hpp"

#include <wick/error.hpp>

namespace wick::distributed {
namespace {

using Bytes = std::shared_ptr<HostBytes>;

Bytes host_bytes(const Tensor& t) {
  auto b = std::make_shared<HostBytes>(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  if (!b->empty()) t.contiguous().copy_to_host(b->data(), b->size());
  return b;
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

// Writes host bytes back into `t` (in place, on its device: a staged copy off the host).
void write_back(Tensor& t, const Bytes& bytes) {
  if (bytes->empty()) return;
  // A view of the staged bytes where the device can wrap host memory (else a copy), then one copy
  // into t; the view keeps the bytes alive while the device reads them.
  t.copy_(Tensor::from_host_memory(bytes, bytes->data(), bytes->size(), t.shape(), t.dtype(),
                                   t.device()));
}

std::string what_of(const char* op, DType dtype, const Shape& shape, const std::string& extra) {
  return std::string(op) + " (" + describe(dtype, shape) + (extra.empty() ? "" : ", " + extra) +
         ")";
}

}  // namespace

Work all_reduce_bytes(Bytes bytes, DType dtype, const Shape& shape, ReduceOp op,
                      std::function<void(Work::State&)> then, bool scatter) {
  ProcessGroup& g = group();
  CallHeader h =
      header_of(scatter ? CallHeader::ReduceScatter : CallHeader::AllReduce, dtype, shape);
  h.reduce_op = static_cast<int64_t>(op);
  auto s = begin_call(
      g, h, what_of(scatter ? "reduce_scatter" : "all_reduce", dtype, shape, reduce_op_name(op)));
  auto all = std::make_shared<HostBytes>();
  Work::State* raw = s.get();
  s->steps.push_back([raw, &g, bytes, all, dtype, op] {
    // Checked after the headers agree, so that every rank refuses alike.
    if (const std::string why = reduce_refusal(dtype, op); !why.empty())
      throw Error("wick::distributed: rank " + std::to_string(g.rank()) + ": " + raw->what + ": " +
                  why);
    if (g.rank() == 0) all->resize(bytes->size() * static_cast<size_t>(g.size()));
    return std::vector<Pending>{
        {g.transport().igather(bytes->data(), bytes->size(), all->data(), 0), -1}};
  });
  const size_t count = static_cast<size_t>(h.numel);
  s->steps.push_back([&g, bytes, all, dtype, op, count] {
    if (g.rank() == 0) reduce_ranks(all->data(), g.size(), count, dtype, op, bytes->data());
    return std::vector<Pending>{{g.transport().ibcast(bytes->data(), bytes->size(), 0), -1}};
  });
  s->finish = [raw, then] {
    if (then) then(*raw);
  };
  return launch(std::move(s));
}

Work all_reduce_async(Tensor& t, ReduceOp op) {
  Bytes b = host_bytes(t);
  Tensor target = t;  // shares t's storage: the result lands in t
  return all_reduce_bytes(b, t.dtype(), t.shape(), op,
                          [target, b](Work::State&) mutable { write_back(target, b); });
}
void all_reduce(Tensor& t, ReduceOp op) {
  all_reduce_async(t, op).wait();
}

Work broadcast_async(Tensor& t, int root) {
  ProcessGroup& g = group();
  if (root < 0 || root >= g.size())
    throw Error("wick::distributed: rank " + std::to_string(g.rank()) + ": broadcast from root " +
                std::to_string(root) + ", which is not a rank of this job of " +
                std::to_string(g.size()));
  CallHeader h = header_of(CallHeader::Broadcast, t.dtype(), t.shape());
  h.root = root;
  auto s =
      begin_call(g, h, what_of("broadcast", t.dtype(), t.shape(), "root " + std::to_string(root)));
  Bytes b = host_bytes(t);
  s->steps.push_back([&g, b, root] {
    return std::vector<Pending>{{g.transport().ibcast(b->data(), b->size(), root), -1}};
  });
  Tensor target = t;
  s->finish = [target, b, root, &g]() mutable {
    if (g.rank() != root) write_back(target, b);
  };
  return launch(std::move(s));
}
void broadcast(Tensor& t, int root) {
  broadcast_async(t, root).wait();
}

Work all_gather_async(const Tensor& t) {
  ProcessGroup& g = group();
  auto s = begin_call(g, header_of(CallHeader::AllGather, t.dtype(), t.shape()),
                      what_of("all_gather", t.dtype(), t.shape(), ""));
  Bytes b = host_bytes(t);
  auto all = std::make_shared<HostBytes>(b->size() * static_cast<size_t>(g.size()));
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
  return all_reduce_bytes(b, dtype, t.shape(), op, take_part, /*scatter=*/true);
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
