// gguf_convert.cpp — a Llama-family model directory written as a llama.cpp GGUF file, as
// llama.cpp's convert_hf_to_gguf.py writes one: llama.cpp's tensor names, q and k rows
// interleaved for its rope ("llama" only), matrices in the asked block type (F16 where a row is
// not a whole number of blocks, as the converter falls back), vectors in F32, and the config and a
// byte-level BPE tokenizer as metadata.
#include <wick/models/gguf.hpp>

#include <wick/models/causal_lm.hpp>
#include <wick/runtime.hpp>

#include "gguf_keys.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

namespace wick::models {

namespace {

using gguf::KeyValue;
using gguf::Value;
using sdk::ggml::Type;

// llama.cpp's general.file_type (LlamaFileType) of a whole-model type.
uint32_t file_type(Type t) {
  static const std::map<Type, uint32_t> types = {
      {Type::F32, 0},  {Type::F16, 1},  {Type::Q4_0, 2},  {Type::Q4_1, 3},  {Type::Q8_0, 7},
      {Type::Q5_0, 8}, {Type::Q5_1, 9}, {Type::Q2_K, 10}, {Type::Q3_K, 11}, {Type::Q4_K, 14},
      {Type::Q5_K, 16}, {Type::Q6_K, 18}};
  return types.at(t);
}

Type parse_type(const std::string& name) {
  for (const auto& t : sdk::ggml::kTypes)
    if (t.name == name && (t.type == Type::F32 || t.type == Type::F16 ||
                           (t.quantized && quant::has_reference(t.type) && t.type != Type::Q8_1 &&
                            t.type != Type::Q8_K)))
      return t.type;
  throw Error("quantize: type '" + name +
              "' is not one Wick writes (F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, "
              "Q4_K, Q5_K, Q6_K)");
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw Error("quantize: cannot read " + p.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error("quantize: " + p.string() + ": " + e.what());
  }
}

// tokenizer.json's byte-level BPE as tokenizer.ggml.* (the pre-tokenizer named as llama.cpp names
// it); anything else is refused by name.
void add_tokenizer(const std::filesystem::path& file, const SpecialTokens& special,
                   std::vector<KeyValue>& meta) {
  const nlohmann::json j = read_json(file);
  const nlohmann::json& model = j.at("model");
  const nlohmann::json& pre = j.at("pre_tokenizer");
  const bool byte_level = model.value("type", "") == "BPE" && pre.is_object() &&
                          pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true) &&
                          j.at("normalizer").is_null() && !model.value("byte_fallback", false);
  if (!byte_level)
    throw Error("quantize: " + file.string() +
                " is not a GPT-2 style byte-level BPE (a ByteLevel pre-tokenizer with its regex, "
                "no normalizer); Wick writes only that tokenizer to GGUF");
  std::vector<std::string> tokens(model.at("vocab").size());
  for (const auto& [token, id] : model.at("vocab").items()) {
    const int64_t i = id.get<int64_t>();
    if (i < 0 || i >= static_cast<int64_t>(tokens.size()) || !tokens[static_cast<size_t>(i)].empty())
      throw Error("quantize: " + file.string() + ": the vocabulary's ids are not 0.." +
                  std::to_string(tokens.size() - 1) + " once each");
    tokens[static_cast<size_t>(i)] = token;
  }
  std::vector<int32_t> types(tokens.size(), 1);  // normal
  for (const auto& a : j.at("added_tokens")) {
    const auto i = a.at("id").get<size_t>();
    if (i >= tokens.size() || tokens[i] != a.at("content").get<std::string>())
      throw Error("quantize: " + file.string() + ": added token " + a.dump() +
                  " is not in the vocabulary");
    types[i] = a.value("special", false) ? 3 : 4;  // control, user-defined
  }
  std::vector<std::string> merges;
  for (const auto& m : model.at("merges"))
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
  meta.push_back({"tokenizer.ggml.model", "gpt2"});
  meta.push_back({"tokenizer.ggml.pre", "gpt-2"});
  meta.push_back({"tokenizer.ggml.tokens", Value::array(tokens)});
  meta.push_back({"tokenizer.ggml.token_type", Value::array(types)});
  meta.push_back({"tokenizer.ggml.merges", Value::array(merges)});
  if (special.bos) meta.push_back({"tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*special.bos)});
  if (!special.eos.empty())
    meta.push_back({"tokenizer.ggml.eos_token_id", static_cast<uint32_t>(special.eos[0])});
  if (special.pad) meta.push_back({"tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*special.pad)});
  const nlohmann::json& post = j.at("post_processor");
  bool add_bos = false;
  if (post.is_object() && post.value("type", "") == "TemplateProcessing" && special.bos) {
    const nlohmann::json& first = post.at("single").at(0);
    add_bos = first.contains("SpecialToken") &&
              first["SpecialToken"].at("id").get<std::string>() == tokens.at(static_cast<size_t>(*special.bos));
  }
  meta.push_back({"tokenizer.ggml.add_bos_token", add_bos});
}

std::vector<KeyValue> metadata(const LlamaConfig& c, Type type) {
  const std::string a = c.model_type + ".";
  std::vector<KeyValue> m = {
      {"general.architecture", c.model_type},
      {a + "context_length", static_cast<uint32_t>(c.max_position_embeddings)},
      {a + "embedding_length", static_cast<uint32_t>(c.hidden_size)},
      {a + "block_count", static_cast<uint32_t>(c.num_hidden_layers)},
      {a + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size)},
      {a + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads)},
      {a + "attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads)},
      {a + "attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps)},
      {a + "rope.freq_base", static_cast<float>(c.rope_theta)},
      {a + "rope.dimension_count", static_cast<uint32_t>(c.head_dim)},
      {"general.file_type", file_type(type)}};
  if (type != Type::F32 && type != Type::F16) m.push_back({"general.quantization_version", uint32_t{2}});
  return m;
}

// What convert_to_gguf refuses: what the GGUF loader could not read back as the same model.
void check_convertible(const LlamaConfig& c, const std::string& where) {
  const auto refuse = [&](const std::string& what) {
    throw Error("quantize: " + where + ": " + what + " has no GGUF form Wick writes");
  };
  if (c.model_type != "llama" && c.model_type != "qwen2") refuse("model_type '" + c.model_type + "'");
  if (c.rope_scaling.type != RopeScaling::Type::None) refuse("rope_scaling");
  if (c.sliding_window) refuse("a sliding window");
  if (c.o_bias || c.mlp_bias || (c.qkv_bias && c.model_type == "llama")) refuse("attention or MLP biases");
  if (c.hidden_act != Activation::Silu) refuse("an activation other than silu");
  if (c.head_dim * c.num_attention_heads != c.hidden_size) refuse("head_dim * heads != hidden_size");
}

}  // namespace

void convert_to_gguf(const std::filesystem::path& model_dir, const std::string& type_name,
                     const std::filesystem::path& out) {
  const Type type = parse_type(type_name);
  const ModelDir dir = ModelDir::open(model_dir);
  LlamaConfig c = LlamaConfig::from_file(dir.config);
  if (!dir.generation_config.empty()) read_generation_tokens(dir.generation_config, c.tokens);
  check_convertible(c, dir.config.string());
  std::vector<KeyValue> meta = metadata(c, type);
  if (!dir.tokenizer.empty()) add_tokenizer(dir.tokenizer, c.tokens, meta);

  std::vector<std::string> files;
  for (const auto& p : dir.weights) files.push_back(p.string());
  const nn::Checkpoint ck(files);
  const Device cpu = Runtime::global().cpu_device();
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<gguf::TensorToWrite> tensors;
  const auto add = [&](const std::string& hf, const std::string& name, int64_t heads) {
    Tensor t = ck.read(hf, cpu, DType::F32);
    if (heads > 0 && c.model_type == "llama") {  // convert_hf_to_gguf.py's LlamaModel.permute
      const int64_t rows = t.dim(0), in = t.dim(1);
      t = t.reshape({heads, 2, rows / heads / 2, in}).permute({0, 2, 1, 3}).contiguous().reshape({rows, in});
    }
    Type as = t.rank() == 2 ? type : Type::F32;
    const auto traits = *sdk::ggml::type_traits(static_cast<uint32_t>(as));
    if (t.rank() == 2 && t.dim(1) % traits.block_size != 0) as = Type::F16;
    std::vector<uint8_t> b;
    if (as == Type::F32 || as == Type::F16) {
      const Tensor v = t.to(as == Type::F32 ? DType::F32 : DType::F16);
      b.resize(static_cast<size_t>(v.numel()) * dtype_size(v.dtype()));
      v.copy_to_host(b.data(), b.size());
    } else {
      b = quant::quantize(t, as).data().to_vector<uint8_t>();
    }
    std::vector<uint64_t> ne(t.shape().rbegin(), t.shape().rend());
    bytes.push_back(std::move(b));
    tensors.push_back({name, as, ne, {}});
  };
  add("model.embed_tokens.weight", "token_embd.weight", 0);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".", g = "blk." + std::to_string(i) + ".";
    for (const auto& [from_c, to_c] : detail::kLayerTensors) {
      const std::string from = from_c, to = to_c;
      const int64_t heads = from == "self_attn.q_proj"   ? c.num_attention_heads
                            : from == "self_attn.k_proj" ? c.num_key_value_heads
                                                         : 0;
      add(hf + from + ".weight", g + to + ".weight", heads);
      if (c.qkv_bias && (to == "attn_q" || to == "attn_k" || to == "attn_v"))
        add(hf + from + ".bias", g + to + ".bias", 0);
    }
  }
  add("model.norm.weight", "output_norm.weight", 0);
  if (!c.tie_word_embeddings) add("lm_head.weight", "output.weight", 0);
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].data = bytes[i];
  gguf::write(out.string(), meta, tensors);
}

}  // namespace wick::models
