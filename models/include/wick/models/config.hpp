// wick/models/config.hpp — a Hugging Face model directory and the typed configs read from its
// config.json. Every config refuses, by name and file, what the models cannot honour (an unknown
// model_type, hidden_act or rope_scaling type, a missing required key, a key of the wrong type):
// nothing runs on a silent default. Keys a model does not use (dropout, initializer_range,
// architectures, ...) are ignored.
#pragma once

#include <wick/device.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace wick::models {

// The files of one model directory (transformers' save_pretrained, sentence-transformers' save).
struct ModelDir {
  std::filesystem::path root;
  std::filesystem::path config;                // config.json (required)
  std::vector<std::filesystem::path> weights;  // model.safetensors, or every shard that
                                               // model.safetensors.index.json's weight_map names
  std::filesystem::path tokenizer;             // tokenizer.json; empty when absent
  std::filesystem::path generation_config;     // generation_config.json; empty when absent

  // Finds the files of `dir`: an error naming the directory and what is missing (no config.json,
  // no model.safetensors nor an index, an index naming a shard that is not there).
  static ModelDir open(const std::filesystem::path& dir);
  // config.json's "model_type" ("bert", "llama", "mistral", "qwen2", "gpt2", ...).
  std::string model_type() const;
};

// How a checkpoint becomes a model.
struct LoadOptions {
  Device device;                            // invalid: Runtime::global().default_device()
  std::optional<DType> dtype = DType::F32;  // f32, f16 or bf16; nullopt: the checkpoint's own
  bool trainable = false;                   // parameters require grad (training is opt-in)
  // GGUF models: every product with quantized weights rounds each row of x to the weights' 8-bit
  // activation type first (Q8_0, Q8_1, Q8_K), as llama.cpp does (quant::MatmulOptions::round_x,
  // docs/models.md: faster, and its logits a little farther from the f32 model's); false keeps x
  // exact. Checkpoints of plain weights ignore it.
  bool round_activations = true;
};

// Token ids a config names (config.json; for causal models generation_config.json's eos_token_id,
// a number or a list, replaces config.json's when present).
struct SpecialTokens {
  std::optional<int64_t> bos, pad;
  std::vector<int64_t> eos;
};

enum class Activation { GeluErf, GeluTanh, Silu, Relu };
// transformers' names: "gelu" (erf), "gelu_new", "gelu_pytorch_tanh", "gelu_fast" (tanh), "silu",
// "swish", "relu"; any other is an error naming it and `where`.
Activation parse_activation(const std::string& name, const std::string& where);

struct BertConfig {
  int64_t vocab_size = 0, hidden_size = 0, num_hidden_layers = 0, num_attention_heads = 0;
  int64_t intermediate_size = 0, max_position_embeddings = 512, type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  Activation hidden_act = Activation::GeluErf;
  int64_t pad_token_id = 0;
  // model_type "bert" with position_embedding_type "absolute" only, not a decoder.
  static BertConfig from_file(const std::filesystem::path& config_json);
};

struct RopeScaling {
  enum class Type { None, Linear, Llama3 };  // "dynamic", "yarn", "longrope" are refused by name
  Type type = Type::None;
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 8192;       // llama3
};

// Llama 2/3, Mistral and Qwen2: one decoder with RMSNorm, rotary positions, grouped-query
// attention and a SiLU-gated MLP.
struct LlamaConfig {
  std::string model_type;  // "llama", "mistral" or "qwen2"
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // A query attends to at most this many keys, itself included (Mistral; Qwen2 with
  // use_sliding_window); nullopt: no window.
  std::optional<int64_t> sliding_window;
  bool qkv_bias = false;  // q, k and v projections (Qwen2; Llama's attention_bias)
  bool o_bias = false;    // the output projection (Llama's attention_bias)
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  Activation hidden_act = Activation::Silu;
  SpecialTokens tokens;
  static LlamaConfig from_file(const std::filesystem::path& config_json);
};

struct Gpt2Config {
  int64_t vocab_size = 0, n_positions = 0, n_embd = 0, n_layer = 0, n_head = 0, n_inner = 0;
  double layer_norm_epsilon = 1e-5;
  Activation activation = Activation::GeluTanh;
  bool scale_attn_weights = true, scale_attn_by_inverse_layer_idx = false;
  bool tie_word_embeddings = true;  // false: the checkpoint's lm_head.weight
  SpecialTokens tokens;
  static Gpt2Config from_file(const std::filesystem::path& config_json);
};

// generation_config.json's eos_token_id (a number or a list), when present, over `tokens.eos`;
// likewise bos and pad. A malformed file is an error naming it.
void read_generation_tokens(const std::filesystem::path& generation_config_json,
                            SpecialTokens& tokens);

}  // namespace wick::models
