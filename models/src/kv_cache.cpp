// kv_cache.cpp — a request's keys and values, preallocated and written in place (Tensor::copy_
// into a view of the positions being filled).
#include <wick/models/kv_cache.hpp>

#include <wick/autograd.hpp>

namespace wick::models {

KvCache::KvCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t capacity,
                 int64_t head_dim, DType dtype, const Device& device)
    : batch_(batch), kv_heads_(kv_heads), capacity_(capacity), head_dim_(head_dim), dtype_(dtype) {
  if (layers <= 0 || batch <= 0 || kv_heads <= 0 || capacity <= 0 || head_dim <= 0)
    throw Error(
        "models::KvCache: layers, batch, kv_heads, capacity and head_dim must be positive, got " +
        std::to_string(layers) + ", " + std::to_string(batch) + ", " + std::to_string(kv_heads) +
        ", " + std::to_string(capacity) + ", " + std::to_string(head_dim));
  for (int64_t l = 0; l < layers; ++l) {
    k_.push_back(Tensor::empty({batch, kv_heads, capacity, head_dim}, dtype, device));
    v_.push_back(Tensor::empty({batch, kv_heads, capacity, head_dim}, dtype, device));
  }
}

void KvCache::reset() {
  length_ = 0;
  mask_ = Tensor();
}

Tensor KvCache::begin_step(int64_t tokens, const Tensor& attention_mask) {
  if (!defined())
    throw Error("models::KvCache: the cache was not made (use the model's new_cache)");
  if (tokens <= 0) throw Error("models::KvCache: a step needs at least one token");
  if (length_ + tokens > capacity_)
    throw Error("models::KvCache: " + std::to_string(length_) + " positions filled and " +
                std::to_string(tokens) + " more do not fit its capacity of " +
                std::to_string(capacity_) + " (make the cache larger)");
  const int64_t total = length_ + tokens;
  if (attention_mask.defined()) {
    if (attention_mask.shape() != Shape{batch_, total})
      throw Error("models::KvCache: attention_mask " + shape_to_string(attention_mask.shape()) +
                  " must be [batch, past + new] = " + shape_to_string({batch_, total}) + " (" +
                  std::to_string(length_) + " positions are cached)");
    const Tensor keep =
        attention_mask.dtype() == DType::Bool
            ? attention_mask
            : attention_mask.ne(Tensor::zeros({}, attention_mask.dtype(), attention_mask.device()));
    return keep.to(k_[0].device());
  }
  if (!mask_.defined()) return Tensor();
  return Tensor::cat({mask_, Tensor::ones({batch_, tokens}, DType::Bool, mask_.device())}, 1);
}

std::pair<Tensor, Tensor> KvCache::write(int layer, const Tensor& k, const Tensor& v) {
  const Shape want{batch_, kv_heads_, k.dim(2), head_dim_};
  if (k.shape() != want || v.shape() != want)
    throw Error("models::KvCache: layer " + std::to_string(layer) + " got k " +
                shape_to_string(k.shape()) + " and v " + shape_to_string(v.shape()) +
                ", expected [batch, kv_heads, new, head_dim] = " + shape_to_string(want));
  const int64_t tokens = k.dim(2);
  Tensor& ks = k_.at(static_cast<size_t>(layer));
  Tensor& vs = v_.at(static_cast<size_t>(layer));
  {
    autograd::NoGradGuard no_grad;  // a cache is state, never part of a gradient
    ks.narrow(2, length_, tokens).copy_(k.detach());
    vs.narrow(2, length_, tokens).copy_(v.detach());
  }
  return {ks.narrow(2, 0, length_ + tokens), vs.narrow(2, 0, length_ + tokens)};
}

void KvCache::end_step(int64_t tokens, const Tensor& mask) {
  length_ += tokens;
  mask_ = mask;
}

}  // namespace wick::models
