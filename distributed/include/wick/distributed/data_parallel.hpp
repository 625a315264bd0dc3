// wick/distributed/data_parallel.hpp — data-parallel training: every rank holds the whole model,
// trains on its share of each global batch, and averages the gradients before the optimizer step,
// so that the weights follow one process training on the global batch.
//
//   wick::distributed::init();
//   DataParallel dp(store.trainable());                    // rank 0's initial weights everywhere
//   DistributedSampler sampler(train.size(), pg.rank(), pg.size(), seed);
//   for each epoch: sampler.set_epoch(epoch);
//     for b in 0 .. sampler.num_batches(global_batch):
//       batch = train.samples(sampler.batch_indices(b, global_batch), options);
//       opt.zero_grad(); loss(batch).backward(); dp.synchronize(); opt.step();
#pragma once

#include <wick/autograd.hpp>
#include <wick/distributed/distributed.hpp>

#include <cstdint>
#include <memory>
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
// in flight together, then each gradient is set (set_grad) on its parameter's device. DataParallel
// does the same while backward runs.
void all_reduce_gradients(const std::vector<Tensor>& params, size_t bucket_bytes = size_t(25)
                                                                                   << 20);

class GradientBuckets;

// The data-parallel wrapper of a model's parameters: made, it broadcasts root's parameters to every
// rank; then, during each backward(), it starts the all-reduce of each bucket of gradients as soon
// as the bucket's last gradient is final (autograd::on_grad_ready), so that the transfers overlap
// the rest of the backward pass; synchronize() after backward() completes them and sets each
// parameter's gradient to the mean over the ranks — the same values as all_reduce_gradients.
// Buckets are filled in reverse parameter order (the order backward finishes gradients in a model
// built input to output) and started strictly in that order, so every rank starts the same
// collectives in the same order. A bucket holding a parameter that a pass gives no gradient starts
// at synchronize() (with zeros for the missing gradient). One backward() per synchronize(): a
// second pass reaching a gradient whose bucket has already started throws from that backward.
// Holds hooks on the parameters until destroyed; not copyable, not thread-safe.
class DataParallel {
 public:
  explicit DataParallel(std::vector<Tensor> params, size_t bucket_bytes = size_t(25) << 20,
                        int root = 0);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  void synchronize();

  // Gradient accumulation over micro-batches: while the returned guard lives, backward() passes
  // only accumulate each rank's gradients (no bucket starts, no transfer); the first backward()
  // after it ends starts the buckets as usual, and synchronize() then averages the accumulated
  // gradients over the ranks (PyTorch's DistributedDataParallel.no_sync()). synchronize() inside
  // the guard is an error.
  class NoSync {
   public:
    explicit NoSync(DataParallel& dp) : dp_(&dp) { dp_->accumulating_ = true; }
    ~NoSync() { dp_->accumulating_ = false; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DataParallel* dp_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // How many buckets the last backward() started before it returned (the overlap; for tests and
  // benchmarks), and how many buckets there are.
  size_t buckets_started_in_backward() const;
  size_t bucket_count() const;

 private:
  std::unique_ptr<GradientBuckets> buckets_;
  std::vector<autograd::GradReadyHook> hooks_;  // destroyed first: no hook outlives buckets_
  size_t started_in_backward_ = 0;
  bool accumulating_ = false;  // inside no_sync()
};

}  // namespace wick::distributed
