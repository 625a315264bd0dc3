// gguf_llama.cpp — LlamaForCausalLM from a llama.cpp GGUF file: the config from its metadata, its
// tensors under transformers' names, matrices left in their GGML block types.
#include <wick/models/causal_lm.hpp>
#include <wick/models/gguf.hpp>

#include "gguf_keys.hpp"

#include "llama_source.hpp"

#include <array>
#include <fstream>
#include <set>
#include <utility>

namespace wick::models {

namespace {

using detail::gguf_name;
using detail::int_key;

int64_t required_int(const gguf::GgufFile& f, const std::string& key) {
  const auto v = int_key(f, key);
  if (!v) throw Error(f.source() + ": metadata key '" + key + "' is absent");
  if (*v <= 0) throw Error(f.source() + ": metadata key '" + key + "' is " + std::to_string(*v));
  return *v;
}

std::optional<double> float_key(const gguf::GgufFile& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type() == gguf::ValueType::Float32) return double(v->as<float>());
  if (v->type() == gguf::ValueType::Float64) return v->as<double>();
  throw Error(f.source() + ": metadata key '" + key + "' is " + v->describe() + ", not a float");
}

// The {arch}.* keys the model computes (or that change nothing it computes).
const std::set<std::string>& known_arch_keys() {
  static const std::set<std::string> keys = {
      "context_length", "embedding_length", "block_count", "feed_forward_length", "vocab_size",
      "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon",
      "attention.key_length", "attention.value_length", "rope.freq_base", "rope.dimension_count",
      "rope.scaling.type", "rope.scaling.factor", "rope.scaling.original_context_length",
      "rope.scaling.finetuned", "expert_count", "expert_used_count", "tensor_data_layout"};
  return keys;
}

void read_rope(const gguf::GgufFile& f, const std::string& a, LlamaConfig& c) {
  c.rope_theta = float_key(f, a + "rope.freq_base").value_or(10000.0);
  if (const auto dims = int_key(f, a + "rope.dimension_count"); dims && *dims != c.head_dim)
    throw Error(f.source() + ": " + a + "rope.dimension_count is " + std::to_string(*dims) +
                ", but the model rotates whole heads of " + std::to_string(c.head_dim));
  if (f.find(a + "rope.scaling.type") != nullptr) {
    const std::string type = f.get<std::string>(a + "rope.scaling.type");
    if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::Linear;
      c.rope_scaling.factor = float_key(f, a + "rope.scaling.factor").value_or(1.0);
    } else if (type != "none") {
      throw Error(f.source() + ": " + a + "rope.scaling.type '" + type +
                  "' is a rope scaling Wick does not compute (none, linear)");
    }
  }
  if (f.find_tensor("rope_freqs.weight") != nullptr)
    throw Error(f.source() + ": tensor 'rope_freqs.weight' (per-frequency rope factors, Llama "
                "3.1's scaling) is not computed by Wick's GGUF loader");
}

void read_special_tokens(const gguf::GgufFile& f, SpecialTokens& t) {
  t.bos = int_key(f, "tokenizer.ggml.bos_token_id");
  t.pad = int_key(f, "tokenizer.ggml.padding_token_id");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    const auto id = int_key(f, key);
    if (id && std::find(t.eos.begin(), t.eos.end(), *id) == t.eos.end()) t.eos.push_back(*id);
  }
}

class GgufSource final : public detail::LlamaSource {
 public:
  GgufSource(const gguf::GgufFile& f, const LlamaConfig& c, Device device, DType dtype, bool round_x)
      : f_(f), c_(c), device_(std::move(device)), dtype_(dtype), round_x_(round_x) {}

  Tensor vector(const std::string& name, int64_t dim, const nn::Init&) override {
    const size_t dot = name.rfind('.');
    return plain(gguf_name(name.substr(0, dot)) + name.substr(dot), {dim});
  }

  detail::Linear linear(const std::string& name, int64_t in, int64_t out, bool bias) override {
    const std::string g = gguf_name(name);
    detail::Linear l;
    const gguf::TensorInfo& info = tensor(g + ".weight", {out, in});
    if (gguf::wick_dtype(info.type)) {
      l.weight = f_.to_tensor(info, device_).to(dtype_);
    } else {
      l.qweight = f_.to_qtensor(info, device_);
      l.round_x = round_x_;
    }
    if (bias) l.bias = plain(g + ".bias", {out});
    // llama.cpp's converter interleaves the two halves of each q and k head (for its rope of
    // adjacent pairs); transformers' rope rotates the halves: reorder the outputs (the weights
    // stay mapped as they are).
    const bool q = name.ends_with("q_proj"), k = name.ends_with("k_proj");
    if (c_.model_type == "llama" && (q || k))
      l.out_rows = unpermutation(q ? c_.num_attention_heads : c_.num_key_value_heads);
    return l;
  }

  detail::Embedding embedding(const std::string& name, int64_t vocab, int64_t dim) override {
    const gguf::TensorInfo& info = tensor(gguf_name(name) + ".weight", {vocab, dim});
    detail::Embedding e;
    e.dtype = dtype_;
    e.round_x = round_x_;
    if (gguf::wick_dtype(info.type))
      e.table = f_.to_tensor(info, device_).to(dtype_);
    else
      e.qtable = f_.to_qtensor(info, device_);
    return e;
  }

 private:
  const gguf::TensorInfo& tensor(const std::string& name, const Shape& shape) const {
    const gguf::TensorInfo* info = f_.find_tensor(name);
    if (info == nullptr) throw Error(f_.source() + ": no tensor '" + name + "'");
    if (info->shape() != shape)
      throw Error(f_.source() + ": tensor '" + name + "' is " + shape_to_string(info->shape()) +
                  ", the config makes it " + shape_to_string(shape));
    return *info;
  }
  Tensor plain(const std::string& name, const Shape& shape) const {
    const gguf::TensorInfo& info = tensor(name, shape);
    if (!gguf::wick_dtype(info.type))
      throw Error(f_.source() + ": tensor '" + name + "' is " +
                  sdk::ggml::type_name(info.type) + "; a norm or bias must be a plain type");
    return f_.to_tensor(info, device_).to(dtype_);
  }
  // Row r = h*D + 2i + j of the file holds transformers' row h*D + j*D/2 + i.
  Tensor unpermutation(int64_t heads) const {
    const int64_t d = c_.head_dim, half = d / 2;
    std::vector<int64_t> rows(static_cast<size_t>(heads * d));
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t i = 0; i < half; ++i)
          rows[static_cast<size_t>(h * d + j * half + i)] = h * d + 2 * i + j;
    return Tensor::from_vector(rows, device_);
  }

  const gguf::GgufFile& f_;
  const LlamaConfig c_;  // a copy: the model takes the original
  Device device_;
  DType dtype_;
  bool round_x_;  // LoadOptions::round_activations
};

}  // namespace

bool is_gguf_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

LlamaConfig llama_config_from_gguf(const gguf::GgufFile& f) {
  LlamaConfig c;
  c.model_type = f.get<std::string>("general.architecture");
  if (c.model_type != "llama" && c.model_type != "qwen2")
    throw Error(f.source() + ": general.architecture '" + c.model_type +
                "' is not one Wick loads from GGUF (llama, qwen2)");
  const std::string a = c.model_type + ".";
  for (const gguf::KeyValue& kv : f.metadata())
    if (kv.key.compare(0, a.size(), a) == 0 && !known_arch_keys().count(kv.key.substr(a.size())))
      throw Error(f.source() + ": metadata key '" + kv.key +
                  "' is one Wick's Llama does not compute");
  for (const char* key : {"expert_count", "expert_used_count"})
    if (const auto n = int_key(f, a + key); n && *n != 0)
      throw Error(f.source() + ": " + a + key + " is " + std::to_string(*n) +
                  ": mixture-of-experts models are not loaded");
  c.hidden_size = required_int(f, a + "embedding_length");
  c.num_hidden_layers = required_int(f, a + "block_count");
  c.intermediate_size = required_int(f, a + "feed_forward_length");
  c.num_attention_heads = required_int(f, a + "attention.head_count");
  c.num_key_value_heads = int_key(f, a + "attention.head_count_kv").value_or(c.num_attention_heads);
  c.max_position_embeddings = required_int(f, a + "context_length");
  c.head_dim = int_key(f, a + "attention.key_length").value_or(c.hidden_size / c.num_attention_heads);
  if (const auto v = int_key(f, a + "attention.value_length"); v && *v != c.head_dim)
    throw Error(f.source() + ": " + a + "attention.value_length " + std::to_string(*v) +
                " differs from the key length " + std::to_string(c.head_dim));
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0 ||
      c.head_dim % 2 != 0)
    throw Error(f.source() + ": " + std::to_string(c.num_attention_heads) + " heads over " +
                std::to_string(c.num_key_value_heads) + " key/value heads of size " +
                std::to_string(c.head_dim) + " is not a grouped-query attention");
  const auto eps = float_key(f, a + "attention.layer_norm_rms_epsilon");
  if (!eps) throw Error(f.source() + ": metadata key '" + a + "attention.layer_norm_rms_epsilon' is absent");
  c.rms_norm_eps = *eps;
  read_rope(f, a, c);
  const gguf::TensorInfo* embed = f.find_tensor("token_embd.weight");
  if (embed == nullptr || embed->shape().size() != 2)
    throw Error(f.source() + ": no 2-D tensor 'token_embd.weight'");
  c.vocab_size = embed->shape()[0];
  if (const auto v = int_key(f, a + "vocab_size"); v && *v != c.vocab_size)
    throw Error(f.source() + ": " + a + "vocab_size " + std::to_string(*v) +
                " differs from token_embd's " + std::to_string(c.vocab_size) + " rows");
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.mlp_bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
  read_special_tokens(f, c.tokens);
  return c;
}

std::unique_ptr<LlamaForCausalLM> LlamaForCausalLM::from_gguf(const std::filesystem::path& file,
                                                              const LoadOptions& options) {
  return from_gguf(gguf::GgufFile(file.string()), options);
}

std::unique_ptr<LlamaForCausalLM> LlamaForCausalLM::from_gguf(const gguf::GgufFile& f,
                                                              const LoadOptions& options) {
  LlamaConfig c = llama_config_from_gguf(f);
  const DType dtype = options.dtype.value_or(DType::F32);
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw Error(std::string("models: a model loads as f32, f16 or bf16, not ") + dtype_name(dtype));
  if (options.trainable)
    throw Error(f.source() + ": a GGUF model's quantized weights are constants; it loads untrainable");
  auto store = std::make_unique<nn::VarStore>(options.device, dtype);
  store->set_trainable(false);
  GgufSource src(f, c, store->device(), dtype, options.round_activations);
  return std::unique_ptr<LlamaForCausalLM>(new LlamaForCausalLM(std::move(c), std::move(store), src));
}

}  // namespace wick::models
