// wick/models/causal_lm.hpp — decoder-only language models (Llama 2/3, Mistral, Qwen2, GPT-2)
// behind one interface, loaded from a Hugging Face model directory.
//
//   auto lm = models::load_causal_lm("path/to/model", {device});
//   models::KvCache cache = lm->new_cache(batch, prompt_len + max_new_tokens);
//   Tensor logits = lm->forward(prompt_ids, cache, prompt_mask);   // [B, T, V] f32, cache filled
//   Tensor next = lm->forward(next_ids /* [B, 1] */, cache);        // the mask extends by itself
//
// A loaded model is const and may be shared by any number of threads, each with its own KvCache:
// forward writes nothing but the cache. Parameters do not require grad unless LoadOptions::
// trainable, so no thread records autograd through a loaded model.
//
// Positions: a token's position is the number of tokens (mask 1) before it in its row, as
// transformers' generate() computes position_ids from the attention mask; a left-padded row
// therefore gives the logits of the same prompt alone. Padded positions are never attended to;
// a padded query row (nothing to attend to) stays finite, as masks are additive with the dtype's
// lowest finite value (transformers' finfo.min), never -inf.
#pragma once

#include <wick/models/config.hpp>
#include <wick/models/kv_cache.hpp>
#include <wick/nn/nn.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace wick::gguf {
class GgufFile;
}

namespace wick::models {

namespace detail {
class LlamaSource;
}

class CausalLM {
 public:
  virtual ~CausalLM() = default;

  virtual const std::string& model_type() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t max_position_embeddings() const = 0;
  // From config.json, with generation_config.json's eos/bos/pad over them when the directory had
  // it.
  virtual const SpecialTokens& special_tokens() const = 0;
  virtual const nn::VarStore& store() const = 0;
  Device device() const { return store().device(); }
  DType dtype() const { return store().dtype(); }

  // A cache for `batch` rows of up to `capacity` positions (prompt and generated tokens).
  virtual KvCache new_cache(int64_t batch, int64_t capacity) const = 0;
  // ids [B, T] integer (the new tokens); the cache holds the past (its batch must be B);
  // attention_mask [B, past + T] (1 keep, 0 pad; for left-padded batches) optional: when
  // undefined the cache's own mask extends with ones. Returns logits [B, T, V] f32 and advances
  // the cache by T.
  virtual Tensor forward(const Tensor& ids, KvCache& cache,
                         const Tensor& attention_mask = {}) const = 0;
  // The whole sequence without a kept cache: logits [B, T, V] f32.
  Tensor forward(const Tensor& ids, const Tensor& attention_mask = {}) const;
};

class LlamaForCausalLM final : public CausalLM {
 public:
  // Builds the model on `store` (a checkpoint's, or a fresh one for training from scratch). The
  // checkpoint's names: model.embed_tokens, model.layers.N.{self_attn.{q,k,v,o}_proj,
  // mlp.{gate,up,down}_proj, input_layernorm, post_attention_layernorm}, model.norm, lm_head.
  LlamaForCausalLM(LlamaConfig config, std::unique_ptr<nn::VarStore> store);
  // A llama.cpp model file (general.architecture "llama" or "qwen2"; docs/models.md): the config
  // from its metadata, its matrices kept in their GGML block types (quant::matmul) and its plain
  // tensors (norms, biases) as options.dtype. On a device whose buffers are host memory the
  // matrices are views of the file's mapping, not copies (GgufFile::to_qtensor), so the model
  // occupies about the file's size; a GPU gets one copy. The store holds none of them: it only
  // names the device and dtype. llama.cpp's interleaving of q and k rows is undone (for "llama",
  // by reordering the projections' outputs), so the model computes what transformers computes on
  // the dequantized weights. Anything the file sets that this class does not compute (experts,
  // another rope) is an error naming the key.
  static std::unique_ptr<LlamaForCausalLM> from_gguf(const std::filesystem::path& file,
                                                     const LoadOptions& options = {});
  // The same from a file already open (its tokenizer read from it too, say); the model's views
  // keep the mapping alive on their own.
  static std::unique_ptr<LlamaForCausalLM> from_gguf(const gguf::GgufFile& file,
                                                     const LoadOptions& options = {});
  ~LlamaForCausalLM() override;
  const LlamaConfig& config() const { return config_; }

  const std::string& model_type() const override { return config_.model_type; }
  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t max_position_embeddings() const override { return config_.max_position_embeddings; }
  const SpecialTokens& special_tokens() const override { return config_.tokens; }
  const nn::VarStore& store() const override { return *store_; }
  KvCache new_cache(int64_t batch, int64_t capacity) const override;
  Tensor forward(const Tensor& ids, KvCache& cache,
                 const Tensor& attention_mask = {}) const override;
  using CausalLM::forward;

 private:
  LlamaForCausalLM(LlamaConfig config, std::unique_ptr<nn::VarStore> store,
                   detail::LlamaSource& source);
  void build(detail::LlamaSource& source);
  struct Layers;
  LlamaConfig config_;
  std::unique_ptr<nn::VarStore> store_;
  std::unique_ptr<const Layers> layers_;
};

class Gpt2LMHeadModel final : public CausalLM {
 public:
  // Names wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f, with
  // or without the "transformer." prefix; the head is wte (lm_head.weight when the config unties
  // it).
  Gpt2LMHeadModel(Gpt2Config config, std::unique_ptr<nn::VarStore> store);
  ~Gpt2LMHeadModel() override;
  const Gpt2Config& config() const { return config_; }

  const std::string& model_type() const override { return type_; }
  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t max_position_embeddings() const override { return config_.n_positions; }
  const SpecialTokens& special_tokens() const override { return config_.tokens; }
  const nn::VarStore& store() const override { return *store_; }
  KvCache new_cache(int64_t batch, int64_t capacity) const override;
  Tensor forward(const Tensor& ids, KvCache& cache,
                 const Tensor& attention_mask = {}) const override;
  using CausalLM::forward;

 private:
  struct Layers;
  Gpt2Config config_;
  std::string type_ = "gpt2";
  std::unique_ptr<nn::VarStore> store_;
  std::unique_ptr<const Layers> layers_;
};

// The parameter store of a model directory: its checkpoint (one file or the shards), on
// options.device as options.dtype (nullopt: the checkpoint's one float dtype).
std::unique_ptr<nn::VarStore> open_store(const ModelDir& dir, const LoadOptions& options);

// A causal LM from a model directory by its config's model_type ("llama", "mistral", "qwen2",
// "gpt2"), or from a GGUF file (LlamaForCausalLM::from_gguf); any other type is an error naming
// it and the types known.
std::unique_ptr<CausalLM> load_causal_lm(const std::filesystem::path& dir,
                                         const LoadOptions& options = {});

}  // namespace wick::models
