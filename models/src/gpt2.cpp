// gpt2.cpp — GPT-2 (transformers' GPT2LMHeadModel): learned positions, pre-LayerNorm blocks,
// Conv1D projections (weight [in, out]) and a head tied to the token embeddings.
#include <wick/models/causal_lm.hpp>

#include <wick/module_scope.hpp>

#include "blocks.hpp"

#include <cmath>

namespace wick::models {

namespace {

// transformers' Conv1D: y = x W + b with W [in, out].
struct Conv1D {
  Conv1D(const nn::Path& p, int64_t in, int64_t out)
      : weight(p.var("weight", {in, out}, nn::Init::normal(0.0, 0.02))),
        bias(p.var("bias", {out}, nn::Init::zeros())) {}
  Tensor operator()(const Tensor& x) const { return x.matmul(weight) + bias; }
  Tensor weight, bias;
};

struct Block {
  Block(const nn::Path& p, const Gpt2Config& c)
      : ln_1(p / "ln_1", {c.n_embd}, c.layer_norm_epsilon),
        ln_2(p / "ln_2", {c.n_embd}, c.layer_norm_epsilon),
        c_attn(p / "attn" / "c_attn", c.n_embd, 3 * c.n_embd),
        attn_proj(p / "attn" / "c_proj", c.n_embd, c.n_embd),
        c_fc(p / "mlp" / "c_fc", c.n_embd, c.n_inner),
        mlp_proj(p / "mlp" / "c_proj", c.n_inner, c.n_embd) {}
  nn::LayerNorm ln_1, ln_2;
  Conv1D c_attn, attn_proj, c_fc, mlp_proj;
};

}  // namespace

struct Gpt2LMHeadModel::Layers {
  Tensor wte, wpe, lm_head;
  std::vector<Block> blocks;
  std::optional<nn::LayerNorm> ln_f;
  std::vector<std::string> names;
};

Gpt2LMHeadModel::Gpt2LMHeadModel(Gpt2Config config, std::unique_ptr<nn::VarStore> store)
    : config_(std::move(config)), store_(std::move(store)) {
  if (!store_) throw Error("models::Gpt2LMHeadModel: no store");
  const Gpt2Config& c = config_;
  const std::string prefix = detail::find_prefix(*store_, "wte.weight", {"transformer"});
  const nn::Path root = detail::under(*store_, prefix);
  auto l = std::make_unique<Layers>();
  l->wte = (root / "wte").var("weight", {c.vocab_size, c.n_embd}, nn::Init::normal(0.0, 0.02));
  l->wpe = (root / "wpe").var("weight", {c.n_positions, c.n_embd}, nn::Init::normal(0.0, 0.01));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    l->blocks.emplace_back(root / "h" / static_cast<int>(i), c);
    l->names.push_back((prefix.empty() ? "" : prefix + ".") + "h." + std::to_string(i));
  }
  l->ln_f.emplace(root / "ln_f", Shape{c.n_embd}, c.layer_norm_epsilon);
  l->lm_head = c.tie_word_embeddings
                   ? l->wte
                   : (store_->root() / "lm_head")
                         .var("weight", {c.vocab_size, c.n_embd}, nn::Init::normal(0.0, 0.02));
  layers_ = std::move(l);
}

Gpt2LMHeadModel::~Gpt2LMHeadModel() = default;

KvCache Gpt2LMHeadModel::new_cache(int64_t batch, int64_t capacity) const {
  return KvCache(config_.n_layer, batch, config_.n_head, capacity, config_.n_embd / config_.n_head,
                 store_->dtype(), store_->device());
}

Tensor Gpt2LMHeadModel::forward(const Tensor& ids_in, KvCache& cache,
                                const Tensor& attention_mask) const {
  const Tensor ids = detail::check_ids(ids_in, "models::Gpt2LMHeadModel::forward");
  const Gpt2Config& c = config_;
  const int64_t b = ids.dim(0), t = ids.dim(1), past = cache.length(), e = c.n_embd,
                d = e / c.n_head;
  if (cache.batch() != b || cache.layers() != c.n_layer || cache.kv_heads() != c.n_head)
    throw Error("models::Gpt2LMHeadModel::forward: the cache (batch " +
                std::to_string(cache.batch()) +
                ") was not made by this model's new_cache for a batch of " + std::to_string(b));
  if (past + t > c.n_positions)
    throw Error("models::Gpt2LMHeadModel::forward: " + std::to_string(past + t) +
                " positions exceed n_positions " + std::to_string(c.n_positions));
  const Device dev = store_->device();
  const Tensor keep = cache.begin_step(t, attention_mask);
  const Tensor pos = detail::positions(past, t, keep, dev);
  const detail::AttentionMask mask =
      detail::attention_mask(past, t, keep, true, std::nullopt, store_->dtype(), dev);

  Tensor h = layers_->wte.index_select(ids.to(dev).reshape({-1}), 0).reshape({b, t, e}) +
             layers_->wpe.index_select(pos.reshape({-1}), 0).reshape({pos.dim(0), t, e});
  for (size_t i = 0; i < layers_->blocks.size(); ++i) {
    const ModuleScope scope(layers_->names[i]);
    const Block& block = layers_->blocks[i];
    {
      const ModuleScope attention("attn");
      const Tensor qkv = block.c_attn(block.ln_1(h));
      const Tensor q = detail::split_heads(qkv.narrow(-1, 0, e), c.n_head);
      const Tensor k = detail::split_heads(qkv.narrow(-1, e, e), c.n_head);
      const Tensor v = detail::split_heads(qkv.narrow(-1, 2 * e, e), c.n_head);
      const auto kv = cache.write(static_cast<int>(i), k, v);
      double scale = c.scale_attn_weights ? 1.0 / std::sqrt(double(d)) : 1.0;
      if (c.scale_attn_by_inverse_layer_idx) scale /= double(i + 1);
      const Tensor a = Tensor::attention(q, kv.first, kv.second, mask.additive, scale, mask.causal);
      h = h + block.attn_proj(detail::merge_heads(a));
    }
    const ModuleScope mlp("mlp");
    h = h + block.mlp_proj(detail::activate(block.c_fc(block.ln_2(h)), c.activation));
  }
  const ModuleScope scope("lm_head");
  const Tensor logits = (*layers_->ln_f)(h).matmul(layers_->lm_head.t()).to(DType::F32);
  cache.end_step(t, keep);
  return logits;
}

}  // namespace wick::models
