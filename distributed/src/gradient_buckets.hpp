// gradient_buckets.hpp — the gradients of a model's parameters packed into buckets, each bucket
// averaged over the ranks by one all-reduce: started all at once after backward
// (all_reduce_gradients) or one by one as backward finishes their gradients (DataParallel).
#pragma once

#include "engine.hpp"

#include <optional>
#include <vector>

namespace wick::distributed {

class GradientBuckets {
 public:
  // Buckets filled with the parameters in `order` (indices into params): consecutive parameters of
  // one dtype, at most `bucket_bytes` a bucket (a larger gradient is a bucket of its own).
  GradientBuckets(std::vector<Tensor> params, const std::vector<size_t>& order,
                  size_t bucket_bytes);

  // Parameter `index`'s gradient is final for this pass: every bucket whose gradients all are,
  // up to the first that is not, starts its all-reduce (in bucket order); the started ones advance.
  void mark_ready(size_t index);
  // Starts the buckets not started (a missing gradient counts as zeros), waits for all of them,
  // sets each parameter's gradient to the mean over the ranks and gets ready for the next pass.
  void finish();

  size_t size() const { return buckets_.size(); }
  size_t started_before_finish() const { return started_before_finish_; }

 private:
  struct Bucket {
    DType dtype = DType::F32;
    std::vector<size_t> members;  // indices into params_, in packing order
    size_t bytes = 0;
    size_t ready = 0;  // members whose gradient is final this pass
    std::shared_ptr<HostBytes> data;  // the gradients packed in host memory, or
    Tensor on_device;                 // on their device (one that names its memory: CUDA)
    bool on_native_device = false;    // whether they go on_device
    std::optional<Work> work;
  };
  void start(Bucket& b);
  void start_on_device(Bucket& b);
  void set_gradients(const Bucket& b);

  std::vector<Tensor> params_;
  std::vector<size_t> bucket_of_;
  std::vector<char> ready_;
  std::vector<Bucket> buckets_;
  size_t next_ = 0;  // the next bucket to start
  size_t started_before_finish_ = 0;
};

}  // namespace wick::distributed
