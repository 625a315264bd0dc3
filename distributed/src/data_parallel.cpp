// data_parallel.cpp — the sampler that shards each global batch by rank, the parameter broadcast
// and the bucketed gradient all-reduce (data_parallel.hpp).
#include "engine.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/error.hpp>
#include <wick/nn/data.hpp>

#include <cstring>
#include <numeric>

namespace wick::distributed {

DistributedSampler::DistributedSampler(int64_t size, int rank, int world_size, uint64_t seed,
                                       bool shuffle)
    : size_(size), rank_(rank), world_size_(world_size), seed_(seed), shuffle_(shuffle) {
  if (size < 0 || world_size < 1 || rank < 0 || rank >= world_size)
    throw Error("DistributedSampler: rank " + std::to_string(rank) + " of " +
                std::to_string(world_size) + " over " + std::to_string(size) +
                " samples is not a valid share");
  set_epoch(0);
}

void DistributedSampler::set_epoch(uint64_t epoch) {
  if (shuffle_) {
    order_ = data::permutation(size_, seed_ + epoch);
  } else {
    order_.resize(static_cast<size_t>(size_));
    std::iota(order_.begin(), order_.end(), int64_t{0});
  }
}

void DistributedSampler::check_global_batch(int64_t global_batch) const {
  if (global_batch <= 0 || global_batch % world_size_ != 0)
    throw Error("DistributedSampler: a global batch of " + std::to_string(global_batch) +
                " samples does not split into " + std::to_string(world_size_) + " equal shares");
}

int64_t DistributedSampler::num_batches(int64_t global_batch) const {
  check_global_batch(global_batch);
  return size_ / global_batch;
}

std::vector<int64_t> DistributedSampler::batch_indices(int64_t index, int64_t global_batch) const {
  const int64_t batches = num_batches(global_batch);
  if (index < 0 || index >= batches)
    throw Error("DistributedSampler: batch " + std::to_string(index) + " of " +
                std::to_string(batches));
  const int64_t share = global_batch / world_size_;
  const auto first = order_.begin() + index * global_batch + rank_ * share;
  return std::vector<int64_t>(first, first + share);
}

void broadcast_parameters(const std::vector<Tensor>& params, int root) {
  autograd::NoGradGuard no_grad;
  for (Tensor p : params) broadcast(p, root);
}

namespace {

struct Bucket {
  DType dtype;
  std::vector<size_t> members;  // indices into params
  std::shared_ptr<HostBytes> bytes = std::make_shared<HostBytes>();
};

std::vector<Bucket> make_buckets(const std::vector<Tensor>& params, size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const size_t bytes = static_cast<size_t>(p.numel()) * dtype_size(p.dtype());
    if (buckets.empty() || buckets.back().dtype != p.dtype() ||
        (!buckets.back().bytes->empty() && buckets.back().bytes->size() + bytes > bucket_bytes))
      buckets.push_back(Bucket{p.dtype(), {}});
    Bucket& b = buckets.back();
    const size_t at = b.bytes->size();
    b.bytes->resize(at + bytes);
    const Tensor g = p.grad();
    if (g.defined() && bytes)
      g.contiguous().copy_to_host(b.bytes->data() + at, bytes);
    else
      std::memset(b.bytes->data() + at, 0, bytes);  // zeros for a parameter without a gradient
    b.members.push_back(i);
  }
  return buckets;
}

}  // namespace

void all_reduce_gradients(const std::vector<Tensor>& params, size_t bucket_bytes) {
  std::vector<Bucket> buckets = make_buckets(params, bucket_bytes);
  std::vector<Work> works;
  for (const Bucket& b : buckets) {
    const int64_t count = static_cast<int64_t>(b.bytes->size() / dtype_size(b.dtype));
    works.push_back(all_reduce_bytes(b.bytes, b.dtype, Shape{count}, ReduceOp::Mean, nullptr));
  }
  for (Work& w : works) w.wait();
  for (const Bucket& b : buckets) {
    size_t at = 0;
    for (size_t i : b.members) {
      Tensor p = params[i];
      const size_t bytes = static_cast<size_t>(p.numel()) * dtype_size(p.dtype());
      p.set_grad(Tensor::from_bytes(b.bytes->data() + at, bytes, p.shape(), p.dtype(), p.device()));
      at += bytes;
    }
  }
}

}  // namespace wick::distributed
