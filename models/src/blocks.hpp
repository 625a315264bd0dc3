// blocks.hpp — pieces the architectures share: activations, attention masks, positions, rotary
// embeddings and grouped-query attention, all of Tensor ops (so every device runs them).
#pragma once

#include <wick/models/config.hpp>
#include <wick/nn/nn.hpp>

#include <optional>
#include <string>
#include <vector>

namespace wick::models::detail {

Tensor activate(const Tensor& x, Activation a);

// The lowest finite value of a float dtype (transformers' torch.finfo(dtype).min).
double lowest(DType t);

// What attention needs beyond q, k and v: an additive mask, or the op's own (top-left) causal flag
// where that is the same thing, or nothing.
struct AttentionMask {
  Tensor additive;  // [B or 1, 1, T, S] in the model's dtype; undefined when not needed
  bool causal = false;
};

// The mask of queries at slots [past, past + t) over keys [0, past + t): key j is seen by query i
// when keep[b, j] (undefined: all kept), when !causal or j <= i (bottom-right aligned), and when
// j > i - window. Disallowed entries get lowest(dtype), so a row with nothing to see stays finite.
AttentionMask attention_mask(int64_t past, int64_t t, const Tensor& keep, bool causal,
                             std::optional<int64_t> window, DType dtype, const Device& device);

// Positions of the new tokens [B or 1, t] i64: the count of kept tokens before each (pads get 1,
// as transformers' generate()), or past + [0, t) without a mask.
Tensor positions(int64_t past, int64_t t, const Tensor& keep, const Device& device);

// Rotary embeddings: inv_freq [D/2] f32 (with rope_scaling applied) on the device.
Tensor rope_inv_freq(const LlamaConfig& c, const Device& device);
struct Rotary {
  Tensor cos, sin;  // [B or 1, 1, T, D] in the model's dtype
};
Rotary rotary(const Tensor& positions, const Tensor& inv_freq, DType dtype);
Tensor apply_rotary(const Tensor& x, const Rotary& r);  // x [B, H, T, D]

// softmax(q k^T * scale + mask) v with k, v heads shared by groups of q heads:
// q [B, H, T, D], k and v [B, Hkv, S, D] (H a multiple of Hkv) -> [B, H, T, D].
Tensor grouped_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionMask& mask, double scale);

// [B, T, heads * D] -> [B, heads, T, D] and back.
Tensor split_heads(const Tensor& x, int64_t heads);
Tensor merge_heads(const Tensor& x);

// ids [B, T] of an integer dtype as i64; an error naming `who` otherwise.
Tensor check_ids(const Tensor& ids, const char* who);

// The prefix under which a checkpoint holds a model's tensors: "" when it has `probe`, else the
// first of `prefixes` under which it has it (a fresh store: "").
std::string find_prefix(const nn::VarStore& store, const std::string& probe,
                        const std::vector<std::string>& prefixes);
nn::Path under(nn::VarStore& store, const std::string& prefix);

}  // namespace wick::models::detail
