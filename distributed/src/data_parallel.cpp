// data_parallel.cpp — the sampler that shards each global batch by rank, and the parameter
// broadcast (data_parallel.hpp; the gradient buckets are in gradient_buckets.cpp).
#include "engine.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/error.hpp>
#include <wick/nn/data.hpp>

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

}  // namespace wick::distributed
