// bert.cpp — BERT encoders (transformers' BertModel, without the pooler) and sentence-transformers'
// pooling and normalisation.
#include <wick/models/bert.hpp>
#include <wick/models/causal_lm.hpp>

#include <wick/module_scope.hpp>

#include "blocks.hpp"
#include "json_file.hpp"

#include <cmath>
#include <limits>

namespace wick::models {

namespace fs = std::filesystem;

namespace {

struct EncoderLayer {
  EncoderLayer(const nn::Path& p, const BertConfig& c)
      : query(p / "attention" / "self" / "query", c.hidden_size, c.hidden_size),
        key(p / "attention" / "self" / "key", c.hidden_size, c.hidden_size),
        value(p / "attention" / "self" / "value", c.hidden_size, c.hidden_size),
        attention_dense(p / "attention" / "output" / "dense", c.hidden_size, c.hidden_size),
        attention_norm(p / "attention" / "output" / "LayerNorm", {c.hidden_size}, c.layer_norm_eps),
        intermediate(p / "intermediate" / "dense", c.hidden_size, c.intermediate_size),
        output_dense(p / "output" / "dense", c.intermediate_size, c.hidden_size),
        output_norm(p / "output" / "LayerNorm", {c.hidden_size}, c.layer_norm_eps) {}
  nn::Linear query, key, value, attention_dense;
  nn::LayerNorm attention_norm;
  nn::Linear intermediate, output_dense;
  nn::LayerNorm output_norm;
};

}  // namespace

struct BertModel::Layers {
  std::optional<nn::Embedding> word, position, token_type;
  std::optional<nn::LayerNorm> embedding_norm;
  std::vector<EncoderLayer> layers;
  std::vector<std::string> names;
};

BertModel::BertModel(BertConfig config, std::unique_ptr<nn::VarStore> store)
    : config_(std::move(config)), store_(std::move(store)) {
  if (!store_) throw Error("models::BertModel: no store");
  const BertConfig& c = config_;
  const std::string prefix =
      detail::find_prefix(*store_, "embeddings.word_embeddings.weight", {"bert", "model"});
  const nn::Path root = detail::under(*store_, prefix);
  auto l = std::make_unique<Layers>();
  const nn::Path emb = root / "embeddings";
  l->word.emplace(emb / "word_embeddings", c.vocab_size, c.hidden_size);
  l->position.emplace(emb / "position_embeddings", c.max_position_embeddings, c.hidden_size);
  l->token_type.emplace(emb / "token_type_embeddings", c.type_vocab_size, c.hidden_size);
  l->embedding_norm.emplace(emb / "LayerNorm", Shape{c.hidden_size}, c.layer_norm_eps);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    l->layers.emplace_back(root / "encoder" / "layer" / static_cast<int>(i), c);
    l->names.push_back((prefix.empty() ? "" : prefix + ".") + "encoder.layer." + std::to_string(i));
  }
  layers_ = std::move(l);
}

BertModel::~BertModel() = default;

std::unique_ptr<BertModel> BertModel::load(const fs::path& dir, const LoadOptions& options) {
  const ModelDir d = ModelDir::open(dir);
  return std::make_unique<BertModel>(BertConfig::from_file(d.config), open_store(d, options));
}

Tensor BertModel::forward(const Tensor& ids_in, const Tensor& attention_mask,
                          const Tensor& token_type_ids) const {
  const Tensor ids = detail::check_ids(ids_in, "models::BertModel::forward");
  const BertConfig& c = config_;
  const int64_t b = ids.dim(0), t = ids.dim(1);
  if (t > c.max_position_embeddings)
    throw Error("models::BertModel::forward: " + std::to_string(t) +
                " tokens exceed max_position_embeddings " +
                std::to_string(c.max_position_embeddings));
  for (const Tensor* m : {&attention_mask, &token_type_ids})
    if (m->defined() && m->shape() != ids.shape())
      throw Error("models::BertModel::forward: a mask or token types of shape " +
                  shape_to_string(m->shape()) + " for ids " + shape_to_string(ids.shape()));
  const Device dev = store_->device();
  const DType dtype = store_->dtype();
  const Tensor types = token_type_ids.defined()
                           ? detail::check_ids(token_type_ids, "models::BertModel::forward")
                           : Tensor::zeros({b, t}, DType::I64, dev);
  const Tensor pos = Tensor::iota({1, t}, 1, DType::I64, dev);
  Tensor h;
  {
    const ModuleScope embeddings("embeddings");
    h = (*layers_->word)(ids.to(dev)) + (*layers_->token_type)(types.to(dev)) +
        (*layers_->position)(pos);
    h = (*layers_->embedding_norm)(h);
  }
  Tensor keep;
  if (attention_mask.defined())
    keep = attention_mask.to(dev).ne(Tensor::zeros({}, attention_mask.dtype(), dev));
  const detail::AttentionMask mask =
      detail::attention_mask(0, t, keep, false, std::nullopt, dtype, dev);
  const int64_t heads = c.num_attention_heads;
  const double scale = 1.0 / std::sqrt(double(c.hidden_size / heads));
  for (size_t i = 0; i < layers_->layers.size(); ++i) {
    const ModuleScope scope(layers_->names[i]);
    const EncoderLayer& layer = layers_->layers[i];
    {
      const ModuleScope attention("attention");
      const Tensor a = Tensor::attention(
          detail::split_heads(layer.query(h), heads), detail::split_heads(layer.key(h), heads),
          detail::split_heads(layer.value(h), heads), mask.additive, scale, false);
      h = layer.attention_norm(layer.attention_dense(detail::merge_heads(a)) + h);
    }
    const ModuleScope output("output");
    h = layer.output_norm(
        layer.output_dense(detail::activate(layer.intermediate(h), c.hidden_act)) + h);
  }
  return h;
}

// ---- pooling
// -------------------------------------------------------------------------------------

namespace {

Tensor float_mask(const Tensor& hidden, const Tensor& attention_mask) {
  if (!attention_mask.defined())
    return Tensor::ones({hidden.dim(0), hidden.dim(1), 1}, DType::F32, hidden.device());
  if (attention_mask.rank() != 2 || attention_mask.dim(0) != hidden.dim(0) ||
      attention_mask.dim(1) != hidden.dim(1))
    throw Error("models: attention_mask " + shape_to_string(attention_mask.shape()) +
                " does not fit hidden states " + shape_to_string(hidden.shape()));
  return attention_mask.to(hidden.device()).to(DType::F32).unsqueeze(-1);
}

}  // namespace

Tensor mean_pool(const Tensor& hidden, const Tensor& attention_mask) {
  const Tensor m = float_mask(hidden, attention_mask);
  return (hidden.to(DType::F32) * m).sum({1}) /
         m.sum({1}).clamp(1e-9, std::numeric_limits<double>::infinity());
}

Tensor cls_pool(const Tensor& hidden) {
  return hidden.narrow(1, 0, 1).squeeze(1).to(DType::F32);
}

Tensor max_pool(const Tensor& hidden, const Tensor& attention_mask) {
  const Tensor m = float_mask(hidden, attention_mask);
  const Tensor h = hidden.to(DType::F32);
  return Tensor::where(m.gt(Tensor::zeros({}, DType::F32, h.device())), h,
                       Tensor::full({}, -1e9, DType::F32, h.device()))
      .max({1});
}

Tensor l2_normalize(const Tensor& x, double eps) {
  const Tensor norm = x.sqr().sum({-1}, true).sqrt();
  return x / norm.clamp(eps, std::numeric_limits<double>::infinity());
}

PoolingConfig read_pooling_config(const fs::path& dir) {
  const fs::path modules = dir / "modules.json";
  if (!fs::is_regular_file(modules))
    throw Error("models: " + dir.string() +
                " has no modules.json (not a sentence-transformers directory)");
  const detail::JsonFile list(modules, true);
  PoolingConfig out;
  bool pooled = false;
  for (const nlohmann::json& m : list.json()) {
    const detail::JsonFile module(m, modules.string());
    const std::string type = module.string("type");
    if (type == "sentence_transformers.models.Transformer") continue;
    if (type == "sentence_transformers.models.Normalize") {
      out.normalize = true;
      continue;
    }
    if (type != "sentence_transformers.models.Pooling")
      throw Error(modules.string() + ": module type '" + type +
                  "' is not supported (Transformer, Pooling, Normalize)");
    const detail::JsonFile p(dir / module.string("path") / "config.json");
    std::vector<PoolingConfig::Mode> modes;
    if (p.boolean("pooling_mode_cls_token", false)) modes.push_back(PoolingConfig::Mode::Cls);
    if (p.boolean("pooling_mode_mean_tokens", false)) modes.push_back(PoolingConfig::Mode::Mean);
    if (p.boolean("pooling_mode_max_tokens", false)) modes.push_back(PoolingConfig::Mode::Max);
    if (p.boolean("pooling_mode_mean_sqrt_len_tokens", false))
      modes.push_back(PoolingConfig::Mode::MeanSqrtLen);
    for (const char* other : {"pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
      if (p.boolean(other, false)) p.fail(other, "is true, which is not supported");
    if (modes.size() != 1)
      p.fail("pooling_mode_mean_tokens", "and the other modes: exactly one must be true");
    out.mode = modes[0];
    pooled = true;
  }
  if (!pooled) throw Error(modules.string() + ": no Pooling module");
  return out;
}

SentenceEmbedder::SentenceEmbedder(std::unique_ptr<BertModel> model, PoolingConfig pooling,
                                   int64_t max_seq_length)
    : model_(std::move(model)), pooling_(pooling), max_seq_length_(max_seq_length) {}

std::unique_ptr<SentenceEmbedder> SentenceEmbedder::load(const fs::path& dir,
                                                         const LoadOptions& options) {
  const PoolingConfig pooling = read_pooling_config(dir);
  auto model = BertModel::load(dir, options);
  int64_t max_len = model->config().max_position_embeddings;
  if (fs::is_regular_file(dir / "sentence_bert_config.json"))
    max_len =
        detail::JsonFile(dir / "sentence_bert_config.json").integer("max_seq_length", max_len);
  return std::make_unique<SentenceEmbedder>(std::move(model), pooling, max_len);
}

Tensor SentenceEmbedder::encode(const Tensor& ids, const Tensor& attention_mask) const {
  const Tensor hidden = model_->forward(ids, attention_mask);
  Tensor pooled;
  switch (pooling_.mode) {
    case PoolingConfig::Mode::Mean: pooled = mean_pool(hidden, attention_mask); break;
    case PoolingConfig::Mode::Cls: pooled = cls_pool(hidden); break;
    case PoolingConfig::Mode::Max: pooled = max_pool(hidden, attention_mask); break;
    case PoolingConfig::Mode::MeanSqrtLen: {
      const Tensor m = float_mask(hidden, attention_mask);
      pooled = (hidden.to(DType::F32) * m).sum({1}) /
               m.sum({1}).clamp(1e-9, std::numeric_limits<double>::infinity()).sqrt();
      break;
    }
  }
  return pooling_.normalize ? l2_normalize(pooled) : pooled;
}

}  // namespace wick::models
