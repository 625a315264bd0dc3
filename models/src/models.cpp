// models.cpp — checkpoints into stores, and causal LMs by model_type.
#include <wick/models/causal_lm.hpp>
#include <wick/models/gguf.hpp>

namespace wick::models {

namespace fs = std::filesystem;

std::unique_ptr<nn::VarStore> open_store(const ModelDir& dir, const LoadOptions& options) {
  std::vector<std::string> files;
  for (const fs::path& p : dir.weights) files.push_back(p.string());
  auto checkpoint = std::make_shared<const nn::Checkpoint>(files);
  const DType dtype = options.dtype.value_or(checkpoint->float_dtype());
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw Error(std::string("models: a model loads as f32, f16 or bf16, not ") + dtype_name(dtype) +
                " (" + dir.root.string() + ")");
  return std::make_unique<nn::VarStore>(std::move(checkpoint), options.device, dtype,
                                        options.trainable);
}

Tensor CausalLM::forward(const Tensor& ids, const Tensor& attention_mask) const {
  if (!ids.defined() || ids.rank() != 2)
    throw Error("models::CausalLM::forward: ids must be [batch, tokens]");
  KvCache cache = new_cache(ids.dim(0), ids.dim(1));
  return forward(ids, cache, attention_mask);
}

std::unique_ptr<CausalLM> load_causal_lm(const fs::path& dir, const LoadOptions& options) {
  if (is_gguf_file(dir)) return LlamaForCausalLM::from_gguf(dir, options);
  const ModelDir d = ModelDir::open(dir);
  const std::string type = d.model_type();
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    LlamaConfig c = LlamaConfig::from_file(d.config);
    if (!d.generation_config.empty()) read_generation_tokens(d.generation_config, c.tokens);
    return std::make_unique<LlamaForCausalLM>(std::move(c), open_store(d, options));
  }
  if (type == "gpt2") {
    Gpt2Config c = Gpt2Config::from_file(d.config);
    if (!d.generation_config.empty()) read_generation_tokens(d.generation_config, c.tokens);
    return std::make_unique<Gpt2LMHeadModel>(std::move(c), open_store(d, options));
  }
  throw Error("models::load_causal_lm: " + d.config.string() + ": model_type '" + type +
              "' is not a causal LM this layer knows (llama, mistral, qwen2, gpt2)");
}

}  // namespace wick::models
