// gradient_buckets.cpp — packing gradients into buckets, their all-reduces, and the gradients set
// from the results (gradient_buckets.hpp); DataParallel's hooks and all_reduce_gradients on top.
#include "gradient_buckets.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/error.hpp>

#include <cstring>
#include <numeric>

namespace wick::distributed {

GradientBuckets::GradientBuckets(std::vector<Tensor> params, const std::vector<size_t>& order,
                                 size_t bucket_bytes)
    : params_(std::move(params)), bucket_of_(params_.size()), ready_(params_.size(), 0) {
  for (size_t i : order) {
    const Tensor& p = params_.at(i);
    const size_t bytes = static_cast<size_t>(p.numel()) * dtype_size(p.dtype());
    if (buckets_.empty() || buckets_.back().dtype != p.dtype() ||
        (buckets_.back().bytes && buckets_.back().bytes + bytes > bucket_bytes)) {
      Bucket& b = buckets_.emplace_back();
      b.dtype = p.dtype();
      b.on_native_device = p.native_memory().has_value();  // asked once, not every pass
    }
    buckets_.back().members.push_back(i);
    buckets_.back().bytes += bytes;
    bucket_of_[i] = buckets_.size() - 1;
  }
}

void GradientBuckets::mark_ready(size_t index) {
  if (ready_.at(index))
    throw Error("wick::distributed::DataParallel: parameter " + std::to_string(index) + " (" +
                describe(params_[index].dtype(), params_[index].shape()) +
                ") got a second gradient before synchronize(): call synchronize() after each "
                "backward()");
  ready_[index] = 1;
  ++buckets_[bucket_of_[index]].ready;
  while (next_ < buckets_.size() && buckets_[next_].ready == buckets_[next_].members.size()) {
    start(buckets_[next_++]);
    ++started_before_finish_;
  }
  // Transfers progress only when this process calls into MPI: move the started ones on.
  for (size_t b = 0; b < next_; ++b) buckets_[b].work->is_completed();
}

// A bucket of parameters on a device that names its memory (CUDA): packed on the device and
// all-reduced there (on NCCL where it loads; collectives.cpp stages it otherwise).
void GradientBuckets::start_on_device(Bucket& b) {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> parts;
  for (size_t i : b.members) {
    const Tensor& p = params_[i];
    const Tensor g = p.grad();
    parts.push_back(g.defined() ? g.contiguous().reshape({p.numel()})
                                : Tensor::zeros({p.numel()}, p.dtype(), p.device()));
  }
  b.on_device = Tensor::cat(parts, 0);
  b.work = all_reduce_async(b.on_device, ReduceOp::Mean);
}

void GradientBuckets::start(Bucket& b) {
  if (b.on_native_device) return start_on_device(b);
  b.data = staging_bytes(b.bytes);
  size_t at = 0;
  for (size_t i : b.members) {
    const Tensor& p = params_[i];
    const size_t bytes = static_cast<size_t>(p.numel()) * dtype_size(p.dtype());
    const Tensor g = p.grad();
    if (g.defined() && bytes)
      g.contiguous().copy_to_host(b.data->data() + at, bytes);
    else
      std::memset(b.data->data() + at, 0, bytes);  // zeros for a parameter without a gradient
    at += bytes;
  }
  const int64_t count = static_cast<int64_t>(b.bytes / dtype_size(b.dtype));
  b.work = all_reduce_bytes(host_buffer(b.data), b.dtype, Shape{count}, ReduceOp::Mean, nullptr);
}

// Each gradient views its part of the bucket where the device's buffers are host memory (no copy),
// else is copied onto the device; the bucket's memory lives as long as those views.
void GradientBuckets::set_gradients(const Bucket& b) {
  if (b.on_device.defined()) {
    int64_t first = 0;
    for (size_t i : b.members) {
      Tensor p = params_[i];
      p.set_grad(b.on_device.narrow(0, first, p.numel()).reshape(p.shape()));
      first += p.numel();
    }
    return;
  }
  size_t at = 0;
  for (size_t i : b.members) {
    Tensor p = params_[i];
    const size_t bytes = static_cast<size_t>(p.numel()) * dtype_size(p.dtype());
    if (bytes)
      p.set_grad(Tensor::from_host_memory(b.data, b.data->data() + at, p.shape(), p.dtype(),
                                          p.device(), HostMemoryOptions{}));
    else
      p.set_grad(Tensor::zeros(p.shape(), p.dtype(), p.device()));
    at += bytes;
  }
}

void GradientBuckets::finish() {
  while (next_ < buckets_.size()) start(buckets_[next_++]);
  for (Bucket& b : buckets_) b.work->wait();
  for (const Bucket& b : buckets_) set_gradients(b);
  for (Bucket& b : buckets_) {
    b.ready = 0;
    b.work.reset();
    b.data.reset();
    b.on_device = Tensor();
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  next_ = 0;
  started_before_finish_ = 0;
}

void all_reduce_gradients(const std::vector<Tensor>& params, size_t bucket_bytes) {
  std::vector<size_t> order(params.size());
  std::iota(order.begin(), order.end(), size_t{0});
  GradientBuckets(params, order, bucket_bytes).finish();
}

DataParallel::DataParallel(std::vector<Tensor> params, size_t bucket_bytes, int root) {
  broadcast_parameters(params, root);
  std::vector<size_t> reversed(params.size());
  std::iota(reversed.rbegin(), reversed.rend(), size_t{0});
  buckets_ = std::make_unique<GradientBuckets>(params, reversed, bucket_bytes);
  GradientBuckets* buckets = buckets_.get();
  for (size_t i = 0; i < params.size(); ++i) {
    try {
      hooks_.push_back(
          autograd::on_grad_ready(params[i], [this, buckets, i] {
            if (!accumulating_) buckets->mark_ready(i);
          }));
    } catch (const Error& e) {
      throw Error("wick::distributed::DataParallel: parameter " + std::to_string(i) + ": " +
                  e.what());
    }
  }
}

DataParallel::~DataParallel() = default;

void DataParallel::synchronize() {
  if (accumulating_)
    throw Error("wick::distributed::DataParallel: synchronize() inside no_sync(): the gradients of "
                "the passes under no_sync() are averaged at the synchronize() after the first "
                "backward() outside it");
  started_in_backward_ = buckets_->started_before_finish();
  buckets_->finish();
}

size_t DataParallel::buckets_started_in_backward() const {
  return started_in_backward_;
}
size_t DataParallel::bucket_count() const {
  return buckets_->size();
}

}  // namespace wick::distributed
