// wick/models/bert.hpp — BERT encoders and sentence-transformers' embedding pipeline.
//
//   auto embedder = models::SentenceEmbedder::load(WICK_MODELS_DIR "/all-MiniLM-L6-v2", {device});
//   Tensor e = embedder->encode(ids, attention_mask);   // [B, 384] f32, unit rows
//
// A loaded model is const and may be shared by any number of threads; its parameters do not
// require grad unless LoadOptions::trainable.
#pragma once

#include <wick/models/config.hpp>
#include <wick/nn/nn.hpp>

#include <filesystem>
#include <memory>

namespace wick::models {

class BertModel {
 public:
  // Names embeddings.{word,position,token_type}_embeddings, embeddings.LayerNorm,
  // encoder.layer.N.{attention.self.{query,key,value}, attention.output.{dense,LayerNorm},
  // intermediate.dense, output.{dense,LayerNorm}}, with or without the "bert." prefix (the pooler
  // and heads of a checkpoint are not used).
  BertModel(BertConfig config, std::unique_ptr<nn::VarStore> store);
  ~BertModel();
  static std::unique_ptr<BertModel> load(const std::filesystem::path& dir,
                                         const LoadOptions& options = {});

  const BertConfig& config() const { return config_; }
  const nn::VarStore& store() const { return *store_; }

  // ids [B, T] integer; attention_mask [B, T] (1 keep, 0 pad; undefined: all kept);
  // token_type_ids [B, T] (undefined: zeros). Returns last_hidden_state [B, T, H] in the model's
  // dtype. Padded query rows stay finite (additive masks with the dtype's lowest finite value).
  Tensor forward(const Tensor& ids, const Tensor& attention_mask = {},
                 const Tensor& token_type_ids = {}) const;

 private:
  struct Layers;
  BertConfig config_;
  std::unique_ptr<nn::VarStore> store_;
  std::unique_ptr<const Layers> layers_;
};

// sentence-transformers' Pooling: the mean of the hidden states of the kept tokens (mask 1) ->
// [B, H] f32 (a row with no kept token gives zeros, as the reference's clamp of the count to 1e-9).
Tensor mean_pool(const Tensor& hidden, const Tensor& attention_mask);
// The first token's hidden state -> [B, H] f32.
Tensor cls_pool(const Tensor& hidden);
// The largest value over the kept tokens -> [B, H] f32 (padding set to -1e9 first, as the
// reference).
Tensor max_pool(const Tensor& hidden, const Tensor& attention_mask);
// Rows of x [..., H] divided by max(||row||, eps) (torch.nn.functional.normalize).
Tensor l2_normalize(const Tensor& x, double eps = 1e-12);

struct PoolingConfig {
  enum class Mode { Mean, Cls, Max, MeanSqrtLen };
  Mode mode = Mode::Mean;
  bool normalize = false;  // a sentence_transformers.models.Normalize module follows
};

// BertModel + pooling + normalisation as modules.json and 1_Pooling/config.json say (only the
// module types Transformer, Pooling and Normalize; any other is an error naming it).
class SentenceEmbedder {
 public:
  SentenceEmbedder(std::unique_ptr<BertModel> model, PoolingConfig pooling, int64_t max_seq_length);
  static std::unique_ptr<SentenceEmbedder> load(const std::filesystem::path& dir,
                                                const LoadOptions& options = {});

  const BertModel& model() const { return *model_; }
  const PoolingConfig& pooling() const { return pooling_; }
  // sentence_bert_config.json's max_seq_length (else the model's max_position_embeddings): the
  // tokenizer's truncation length.
  int64_t max_seq_length() const { return max_seq_length_; }

  // ids, attention_mask [B, T] -> embeddings [B, H] f32.
  Tensor encode(const Tensor& ids, const Tensor& attention_mask = {}) const;

 private:
  std::unique_ptr<BertModel> model_;
  PoolingConfig pooling_;
  int64_t max_seq_length_;
};

// The pooling of a sentence-transformers directory (modules.json, its Pooling module's config);
// a directory without modules.json is an error naming it.
PoolingConfig read_pooling_config(const std::filesystem::path& dir);

}  // namespace wick::models
