// llama.cpp — Llama 2/3, Mistral and Qwen2 (transformers' LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM): RMSNorm, rotary positions, grouped-query attention, a gated MLP.
#include <wick/models/causal_lm.hpp>

#include <wick/module_scope.hpp>

#include "blocks.hpp"
#include "llama_source.hpp"

#include <algorithm>
#include <cmath>

namespace wick::models {

using detail::AttentionMask;
using detail::Rotary;

namespace {

nn::Init weight_init() {
  return nn::Init::normal(0.0, 0.02);
}

struct RmsNorm {
  RmsNorm(detail::LlamaSource& src, const std::string& name, int64_t dim, double eps_)
      : weight(src.vector(name + ".weight", dim, nn::Init::ones())), eps(eps_) {}
  Tensor operator()(const Tensor& x) const { return x.rms_norm(weight, eps); }
  Tensor weight;
  double eps;
};

struct DecoderLayer {
  DecoderLayer(detail::LlamaSource& src, const std::string& p, const LlamaConfig& c)
      : input_layernorm(src, p + ".input_layernorm", c.hidden_size, c.rms_norm_eps),
        post_attention_layernorm(src, p + ".post_attention_layernorm", c.hidden_size,
                                 c.rms_norm_eps),
        q_proj(src.linear(p + ".self_attn.q_proj", c.hidden_size,
                          c.num_attention_heads * c.head_dim, c.qkv_bias)),
        k_proj(src.linear(p + ".self_attn.k_proj", c.hidden_size,
                          c.num_key_value_heads * c.head_dim, c.qkv_bias)),
        v_proj(src.linear(p + ".self_attn.v_proj", c.hidden_size,
                          c.num_key_value_heads * c.head_dim, c.qkv_bias)),
        o_proj(src.linear(p + ".self_attn.o_proj", c.num_attention_heads * c.head_dim,
                          c.hidden_size, c.o_bias)),
        gate_proj(src.linear(p + ".mlp.gate_proj", c.hidden_size, c.intermediate_size,
                             c.mlp_bias)),
        up_proj(src.linear(p + ".mlp.up_proj", c.hidden_size, c.intermediate_size, c.mlp_bias)),
        down_proj(src.linear(p + ".mlp.down_proj", c.intermediate_size, c.hidden_size,
                             c.mlp_bias)) {}
  RmsNorm input_layernorm, post_attention_layernorm;
  detail::Linear q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
};

// A safetensors checkpoint's (or a fresh store's) tensors, as the store's dtype.
class StoreSource final : public detail::LlamaSource {
 public:
  explicit StoreSource(nn::VarStore& store) : root_(store.root()), dtype_(store.dtype()) {}
  Tensor vector(const std::string& name, int64_t dim, const nn::Init& init) override {
    const size_t dot = name.rfind('.');
    return path(name.substr(0, dot)).var(name.substr(dot + 1), {dim}, init);
  }
  detail::Linear linear(const std::string& name, int64_t in, int64_t out, bool bias) override {
    detail::Linear l;
    const nn::Path p = path(name);
    l.weight = p.var("weight", {out, in}, weight_init());
    if (bias) l.bias = p.var("bias", {out}, nn::Init::zeros());
    return l;
  }
  detail::Embedding embedding(const std::string& name, int64_t vocab, int64_t dim) override {
    detail::Embedding e;
    e.table = path(name).var("weight", {vocab, dim}, weight_init());
    e.dtype = dtype_;
    return e;
  }

 private:
  nn::Path path(const std::string& dotted) const {  // "model.layers.0" -> root / model / layers / 0
    nn::Path p = root_;
    for (size_t at = 0; at <= dotted.size();) {
      const size_t dot = std::min(dotted.find('.', at), dotted.size());
      p = p / dotted.substr(at, dot - at);
      at = dot + 1;
    }
    return p;
  }
  nn::Path root_;
  DType dtype_;
};

}  // namespace

struct LlamaForCausalLM::Layers {
  detail::Embedding embed_tokens;
  detail::Linear lm_head;
  Tensor inv_freq;
  std::vector<DecoderLayer> layers;
  std::optional<RmsNorm> norm;
  std::vector<std::string> names;  // "model.layers.N", for ModuleScope
};

LlamaForCausalLM::LlamaForCausalLM(LlamaConfig config, std::unique_ptr<nn::VarStore> store)
    : config_(std::move(config)), store_(std::move(store)) {
  if (!store_) throw Error("models::LlamaForCausalLM: no store");
  StoreSource src(*store_);
  build(src);
}

LlamaForCausalLM::LlamaForCausalLM(LlamaConfig config, std::unique_ptr<nn::VarStore> store,
                                   detail::LlamaSource& src)
    : config_(std::move(config)), store_(std::move(store)) {
  build(src);
}

void LlamaForCausalLM::build(detail::LlamaSource& src) {
  const LlamaConfig& c = config_;
  auto l = std::make_unique<Layers>();
  l->embed_tokens = src.embedding("model.embed_tokens", c.vocab_size, c.hidden_size);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    l->names.push_back("model.layers." + std::to_string(i));
    l->layers.emplace_back(src, l->names.back(), c);
  }
  l->norm.emplace(src, "model.norm", c.hidden_size, c.rms_norm_eps);
  l->lm_head = c.tie_word_embeddings ? l->embed_tokens.as_linear()
                                     : src.linear("lm_head", c.hidden_size, c.vocab_size, false);
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

  Tensor h = layers_->embed_tokens.lookup(ids.to(dev).reshape({-1})).reshape({b, t, c.hidden_size});
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
  const Tensor logits = layers_->lm_head((*layers_->norm)(h)).to(DType::F32);
  cache.end_step(t, keep);
  return logits;
}

namespace detail {

Tensor Linear::operator()(const Tensor& x) const {
  Tensor y = qweight.defined() ? quant::matmul(x, qweight, quant::MatmulOptions{round_x}) : x.matmul(weight.t());
  if (bias.defined()) y = y + bias;
  return out_rows.defined() ? y.index_select(out_rows, static_cast<int>(y.rank()) - 1) : y;
}

Tensor Embedding::lookup(const Tensor& flat_ids) const {
  if (!qtable.defined()) return table.index_select(flat_ids, 0);
  // A row of blocks is a row of the u8 data: pick the rows, then widen only those.
  const Tensor rows = qtable.data().index_select(flat_ids, 0);
  return quant::dequantize(quant::QTensor(rows, qtable.type(), {flat_ids.dim(0), qtable.k()}),
                           dtype);
}

Linear Embedding::as_linear() const {
  Linear l;
  l.weight = table;
  l.qweight = qtable;
  l.round_x = round_x;
  return l;
}

}  // namespace detail

}  // namespace wick::models
