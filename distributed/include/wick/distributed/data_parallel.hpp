// wick/distributed/data_parallel.hpp — data-parallel training: every rank holds the whole model,
// trains on its share of each global batch, and averages the gradients before the optimizer step,
// so that the weights follow one process training on the global batch.
//
//   wick::distributed::init();
//   broadcast_parameters(store.trainable());               // rank 0's initial weights everywhere
//   DistributedSampler sampler(train.size(), pg.rank(), pg.size(), seed);
//   for each epoch: sampler.set_epoch(epoch);
//     for b in 0 .. sampler.num_batches(global_batch):
//       batch = train.samples(sampler.batch_indices(b, global_batch), options);
//       loss(batch).backward(); all_reduce_gradients(params); opt.step();
#pragma once

#include <wick/distributed/distributed.hpp>

#include <cstdint>
#include <vector>

namespace wick::distributed {

// The indices of a data set of `size` samples for one rank: each epoch's global order is
// nn's data::permutation(size, seed + epoch) (identity without shuffle) — the order one process
// shuffling with that seed sees — and global batch b (positions [b * G, (b + 1) * G) of it) is cut
// into world_size consecutive shares of G / world_size, rank r taking share r. The last global
// batch when incomplete is dropped (every rank's share then has the same size, so the mean of the
// ranks' mean gradients is the global batch's mean gradient).
class DistributedSampler {
 public:
  DistributedSampler(int64_t size, int rank, int world_size, uint64_t seed = 0,
                     bool shuffle = true);
  void set_epoch(uint64_t epoch);
  const std::vector<int64_t>& global_order() const { return order_; }
  // Full global batches of `global_batch` samples (which must divide by the world size).
  int64_t num_batches(int64_t global_batch) const;
  // This rank's share of global batch `index`.
  std::vector<int64_t> batch_indices(int64_t index, int64_t global_batch) const;

 private:
  void check_global_batch(int64_t global_batch) const;
  int64_t size_;
  int rank_, world_size_;
  uint64_t seed_;
  bool shuffle_;
  std::vector<int64_t> order_;
};

// Every rank's parameters become root's (in place; under no-grad).
void broadcast_parameters(const std::vector<Tensor>& params, int root = 0);

// After backward: each parameter's gradient becomes the mean over the ranks (a parameter without
// a gradient counts as zeros, and gets the mean). Gradients of one dtype are packed into buckets of
// at most `bucket_bytes` (a larger gradient is a bucket of its own); the buckets' all-reduces are
// in flight together, then each gradient is set (set_grad) on its parameter's device.
void all_reduce_gradients(const std::vector<Tensor>& params, size_t bucket_bytes = size_t(25)
                                                                                   << 20);

}  // namespace wick::distributed
