// llama.cpp — Llama 2/3, Mistral and Qwen2 (transformers' LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM): RMSNorm, rotary positions, grouped-query attention, a gated MLP.
#include <wick/models/causal_lm.hpp>

#include <wick/module_scope.hpp>

#include "blocks.hpp"

#include <cmath>

namespace wick::models {

using detail::AttentionMask;
using detail::Rotary;

namespace {

nn::Init weight_init() {
  return nn::Init::normal(0.0, 0.02);
}

struct RmsNorm {
  RmsNorm(const nn::Path& p, int64_t dim, double eps_)
      : weight(p.var("weight", {dim}, nn::Init::ones())), eps(eps_) {}
  Tensor operator()(const Tensor& x) const { return x.rms_norm(weight, eps); }
  Tensor weight;
  double eps;
};

struct Projection {
  Projection(const nn::Path& p, int64_t in, int64_t out, bool bias) {
    weight = p.var("weight", {out, in}, weight_init());
    if (bias) this->bias = p.var("bias", {out}, nn::Init::zeros());
  }
  Tensor operator()(const Tensor& x) const {
    const Tensor y = x.matmul(weight.t());
    return bias.defined() ? y + bias : y;
  }
  Tensor weight, bias;
};

struct DecoderLayer {
  DecoderLayer(const nn::Path& p, const LlamaConfig& c)
      : input_layernorm(p / "input_layernorm", c.hidden_size, c.rms_norm_eps),
        post_attention_layernorm(p / "post_attention_layernorm", c.hidden_size, c.rms_norm_eps),
        q_proj(p / "self_attn" / "q_proj", c.hidden_size, c.num_attention_heads * c.head_dim,
               c.qkv_bias),
        k_proj(p / "self_attn" / "k_proj", c.hidden_size, c.num_key_value_heads * c.head_dim,
               c.qkv_bias),
        v_proj(p / "self_attn" / "v_proj", c.hidden_size, c.num_key_value_heads * c.head_dim,
               c.qkv_bias),
        o_proj(p / "self_attn" / "o_proj", c.num_attention_heads * c.head_dim, c.hidden_size,
               c.o_bias),
        gate_proj(p / "mlp" / "gate_proj", c.hidden_size, c.intermediate_size, c.mlp_bias),
        up_proj(p / "mlp" / "up_proj", c.hidden_size, c.intermediate_size, c.mlp_bias),
        down_proj(p / "mlp" / "down_proj", c.intermediate_size, c.hidden_size, c.mlp_bias) {}
  RmsNorm input_layernorm, post_attention_layernorm;
  Projection q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
};

}  // namespace

struct LlamaForCausalLM::Layers {
  Tensor embed_tokens, lm_head, inv_freq;
  std::vector<DecoderLayer> layers;
  std::optional<RmsNorm> norm;
  std::vector<std::string> names;  // "model.layers.N", for ModuleScope
};

LlamaForCausalLM::LlamaForCausalLM(LlamaConfig config, std::unique_ptr<nn::VarStore> store)
    : config_(std::move(config)), store_(std::move(store)) {
  if (!store_) throw Error("models::LlamaForCausalLM: no store");
  const LlamaConfig& c = config_;
  auto l = std::make_unique<Layers>();
  const nn::Path root = store_->root();
  const nn::Path model = root / "model";
  l->embed_tokens =
      (model / "embed_tokens").var("weight", {c.vocab_size, c.hidden_size}, weight_init());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    l->layers.emplace_back(model / "layers" / static_cast<int>(i), c);
    l->names.push_back("model.layers." + std::to_string(i));
  }
  l->norm.emplace(model / "norm", c.hidden_size, c.rms_norm_eps);
  l->lm_head = c.tie_word_embeddings
                   ? l->embed_tokens
                   : (root / "lm_head").var("weight", {c.vocab_size, c.hidden_size}, weight_init());
  l->inv_freq = detail::rope_inv_freq(c, store_->device());
  layers_ = std::move(l);
}

LlamaForCausalLM::~LlamaForCausalLM() = default;

KvCache LlamaForCausalLM::new_cache(int64_t batch, int64_t capacity) const {
  return KvCache(config_.num_hidden_layers, batch, config_.num_key_value_heads, capacity,
                 config_.head_dim, store_->dtype(), store_->device());
}

Tensor LlamaForCausalLM::forward(const Tensor& ids_in, KvCache& cache,
                                 const Tensor& attention_mask) const {
  const Tensor ids = detail::check_ids(ids_in, "models::LlamaForCausalLM::forward");
  const LlamaConfig& c = config_;
  const int64_t b = ids.dim(0), t = ids.dim(1), past = cache.length();
  if (cache.batch() != b || cache.layers() != c.num_hidden_layers ||
      cache.kv_heads() != c.num_key_value_heads)
    throw Error("models::LlamaForCausalLM::forward: the cache (batch " +
                std::to_string(cache.batch()) +
                ") was not made by this model's new_cache for a batch of " + std::to_string(b));
  const Device dev = store_->device();
  const DType dtype = store_->dtype();
  const Tensor keep = cache.begin_step(t, attention_mask);
  const Rotary rope =
      detail::rotary(detail::positions(past, t, keep, dev), layers_->inv_freq, dtype);
  const AttentionMask mask =
      detail::attention_mask(past, t, keep, true, c.sliding_window, dtype, dev);
  const double scale = 1.0 / std::sqrt(double(c.head_dim));

  Tensor h = layers_->embed_tokens.index_select(ids.to(dev).reshape({-1}), 0)
                 .reshape({b, t, c.hidden_size});
  for (size_t i = 0; i < layers_->layers.size(); ++i) {
    const ModuleScope scope(layers_->names[i]);
    const DecoderLayer& layer = layers_->layers[i];
    {
      const ModuleScope attention("self_attn");
      const Tensor x = layer.input_layernorm(h);
      const Tensor q =
          detail::apply_rotary(detail::split_heads(layer.q_proj(x), c.num_attention_heads), rope);
      const Tensor k =
          detail::apply_rotary(detail::split_heads(layer.k_proj(x), c.num_key_value_heads), rope);
      const Tensor v = detail::split_heads(layer.v_proj(x), c.num_key_value_heads);
      const auto kv = cache.write(static_cast<int>(i), k, v);
      const Tensor a = detail::grouped_attention(q, kv.first, kv.second, mask, scale);
      h = h + layer.o_proj(detail::merge_heads(a));
    }
    const ModuleScope mlp("mlp");
    const Tensor y = layer.post_attention_layernorm(h);
    h = h + layer.down_proj(detail::activate(layer.gate_proj(y), c.hidden_act) * layer.up_proj(y));
  }
  const ModuleScope scope("lm_head");
  const Tensor logits = (*layers_->norm)(h).matmul(layers_->lm_head.t()).to(DType::F32);
  cache.end_step(t, keep);
  return logits;
}

}  // namespace wick::models
