// blocks.cpp — the shared pieces of blocks.hpp.
#include "blocks.hpp"

#include <cmath>
#include <limits>
#include <numbers>

namespace wick::models::detail {

Tensor activate(const Tensor& x, Activation a) {
  switch (a) {
    case Activation::GeluErf: return x.gelu_erf();
    case Activation::GeluTanh: return x.gelu();
    case Activation::Silu: return x.silu();
    case Activation::Relu: return x.relu();
  }
  throw Error("models: unknown activation");
}

double lowest(DType t) {
  switch (t) {
    case DType::F32: return -std::numeric_limits<float>::max();
    case DType::F64: return -std::numeric_limits<double>::max();
    case DType::F16: return -65504.0;
    case DType::BF16: return -3.3895313892515355e38;
    default: throw Error(std::string("models: no float range for ") + dtype_name(t));
  }
}

AttentionMask attention_mask(int64_t past, int64_t t, const Tensor& keep, bool causal,
                             std::optional<int64_t> window, DType dtype, const Device& device) {
  const int64_t s = past + t;
  const bool window_bites = window && *window < s;
  if (!keep.defined() && !window_bites) {
    if (!causal || t == 1) return {};
    if (past == 0) return {Tensor(), true};  // top-left and bottom-right agree on a square
  }
  // Query i sits at slot past + i; key j at slot j.
  const Tensor qi = Tensor::iota({t, 1}, 0, DType::I64, device) + double(past);
  const Tensor kj = Tensor::iota({1, s}, 1, DType::I64, device);
  Tensor allowed = Tensor::ones({t, s}, DType::Bool, device);
  if (causal) allowed = kj.le(qi);
  if (window_bites) allowed = allowed.logical_and(kj.gt(qi - double(*window)));
  allowed = allowed.reshape({1, 1, t, s});
  if (keep.defined()) allowed = allowed.logical_and(keep.reshape({keep.dim(0), 1, 1, s}));
  const Tensor zero = Tensor::zeros({}, dtype, device),
               low = Tensor::full({}, lowest(dtype), dtype, device);
  return {Tensor::where(allowed, zero, low), false};
}

Tensor positions(int64_t past, int64_t t, const Tensor& keep, const Device& device) {
  if (!keep.defined()) return (Tensor::iota({1, t}, 1, DType::I64, device) + double(past));
  const Tensor counted = keep.to(DType::I64).cumsum(1) - 1.0;
  const Tensor fresh = keep.narrow(1, past, t);
  return Tensor::where(fresh, counted.narrow(1, past, t), Tensor::ones({}, DType::I64, device));
}

Tensor rope_inv_freq(const LlamaConfig& c, const Device& device) {
  const int64_t d = c.head_dim;
  std::vector<float> inv(static_cast<size_t>(d / 2));
  const RopeScaling& r = c.rope_scaling;
  for (int64_t i = 0; i < d / 2; ++i) {
    // As transformers: 1 / base^(2i / d), in f32.
    double f = double(1.0f / std::pow(float(c.rope_theta), float(2 * i) / float(d)));
    if (r.type == RopeScaling::Type::Linear) f /= r.factor;
    if (r.type == RopeScaling::Type::Llama3) {
      const double old = double(r.original_max_position_embeddings);
      const double low_wavelen = old / r.low_freq_factor, high_wavelen = old / r.high_freq_factor;
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= r.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * f / r.factor + smooth * f;
      }
    }
    inv[static_cast<size_t>(i)] = float(f);
  }
  return Tensor::from_vector(inv, device);
}

Rotary rotary(const Tensor& positions, const Tensor& inv_freq, DType dtype) {
  const Tensor freqs = positions.to(DType::F32).unsqueeze(-1) * inv_freq;  // [B, T, D/2]
  const Tensor emb = Tensor::cat({freqs, freqs}, -1).unsqueeze(1);         // [B, 1, T, D]
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

Tensor apply_rotary(const Tensor& x, const Rotary& r) {
  const int64_t half = x.dim(-1) / 2;
  const Tensor rotated = Tensor::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * r.cos + rotated * r.sin;
}

Tensor grouped_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionMask& mask, double scale) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3), hkv = k.dim(1);
  if (h == hkv) return Tensor::attention(q, k, v, mask.additive, scale, mask.causal);
  if (t == 1 && !mask.causal) {
    // A decoding step: each group's queries are the rows of one problem against its shared head,
    // [B, Hkv, H / Hkv, D] against k, v [B, Hkv, S, D] as they are. A broadcast head dim (below)
    // is densified by the CPU plugin's matmul: H / Hkv copies of the cache per layer and step.
    const Tensor out =
        Tensor::attention(q.reshape({b, hkv, h / hkv, d}), k, v, mask.additive, scale, false);
    return out.reshape({b, h, t, d});
  }
  // [B, Hkv, H / Hkv, T, D] against k, v [B, Hkv, 1, S, D]: the shared heads broadcast, uncopied.
  const Tensor qg = q.reshape({b, hkv, h / hkv, t, d});
  const Tensor m = mask.additive.defined() ? mask.additive.unsqueeze(1) : Tensor();
  const Tensor out = Tensor::attention(qg, k.unsqueeze(2), v.unsqueeze(2), m, scale, mask.causal);
  return out.reshape({b, h, t, d});
}

Tensor split_heads(const Tensor& x, int64_t heads) {
  return x.reshape({x.dim(0), x.dim(1), heads, x.dim(2) / heads}).transpose(1, 2);
}

Tensor merge_heads(const Tensor& x) {
  return x.transpose(1, 2).reshape({x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
}

Tensor check_ids(const Tensor& ids, const char* who) {
  if (!ids.defined() || ids.rank() != 2)
    throw Error(
        std::string(who) + ": ids must be [batch, tokens], got " +
        (ids.defined() ? shape_to_string(ids.shape()) : std::string("an undefined tensor")));
  if (is_float(ids.dtype()) || ids.dtype() == DType::Bool)
    throw Error(std::string(who) + ": ids must be integers, not " + dtype_name(ids.dtype()));
  if (ids.dim(1) == 0) throw Error(std::string(who) + ": ids hold no token");
  return ids.dtype() == DType::I64 ? ids : ids.to(DType::I64);
}

std::string find_prefix(const nn::VarStore& store, const std::string& probe,
                        const std::vector<std::string>& prefixes) {
  const auto& ckpt = store.checkpoint();
  if (!ckpt || ckpt->contains(probe)) return "";
  for (const std::string& p : prefixes)
    if (ckpt->contains(p + "." + probe)) return p;
  std::string tried = "'" + probe + "'";
  for (const std::string& p : prefixes) tried += ", '" + p + "." + probe + "'";
  throw Error("models: " + ckpt->source() + " has none of " + tried +
              ": not a checkpoint of this architecture?");
}

nn::Path under(nn::VarStore& store, const std::string& prefix) {
  return prefix.empty() ? store.root() : store.root() / prefix;
}

}  // namespace wick::models::detail
