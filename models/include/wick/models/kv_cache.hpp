// wick/models/kv_cache.hpp — one request's decoding state: the keys and values of every layer for
// the positions seen so far, preallocated at a capacity and written in place.
//
// Every row of the batch has the same length (positions filled); rows shorter than the others are
// left-padded and the padding mask says which positions hold no token. A KvCache belongs to one
// request and one thread at a time; the model that fills it is shared and never written.
#pragma once

#include <wick/tensor.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace wick::models {

class KvCache {
 public:
  KvCache() = default;
  // Move-only: a copy would share the storage and write into the other's positions.
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;
  // One k and one v tensor [batch, kv_heads, capacity, head_dim] per layer, allocated now.
  KvCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
          DType dtype, const Device& device);

  bool defined() const { return !k_.empty(); }
  int64_t layers() const { return static_cast<int64_t>(k_.size()); }
  int64_t batch() const { return batch_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t capacity() const { return capacity_; }
  int64_t head_dim() const { return head_dim_; }
  DType dtype() const { return dtype_; }
  // Positions filled, the same for every row.
  int64_t length() const { return length_; }
  int64_t remaining() const { return capacity_ - length_; }

  // Which of the length() positions hold a token: [batch, length] bool, or undefined when all do
  // (no padding was ever given).
  const Tensor& padding_mask() const { return mask_; }

  // The whole storage of one layer, [batch, kv_heads, capacity, head_dim] (positions past
  // length() hold stale values).
  const Tensor& keys(int layer) const { return k_.at(static_cast<size_t>(layer)); }
  const Tensor& values(int layer) const { return v_.at(static_cast<size_t>(layer)); }

  // Empty again; the memory is kept for the next request.
  void reset();

  // ---- for a model's forward
  // --------------------------------------------------------------------- Before the layers: checks
  // that `tokens` more positions fit (an error naming the capacity) and records the mask of the
  // positions [0, length + tokens): `attention_mask` [batch, length + tokens] (1 or true: a token,
  // 0: padding), or, when undefined, the past mask extended by tokens. Returns the mask of [0,
  // length + tokens) (undefined when there is no padding).
  Tensor begin_step(int64_t tokens, const Tensor& attention_mask);
  // Writes k and v [batch, kv_heads, tokens, head_dim] of `layer` at [length, length + tokens),
  // in place, and returns views of [0, length + tokens) of that layer.
  std::pair<Tensor, Tensor> write(int layer, const Tensor& k, const Tensor& v);
  // After the layers: length += tokens, and `mask` (what begin_step returned) is the cache's mask.
  void end_step(int64_t tokens, const Tensor& mask);

 private:
  std::vector<Tensor> k_, v_;
  Tensor mask_;
  int64_t batch_ = 0, kv_heads_ = 0, capacity_ = 0, head_dim_ = 0, length_ = 0;
  DType dtype_ = DType::F32;
};

}  // namespace wick::models
