// config.cpp — model directories and the typed configs of wick/models/config.hpp.
#include <wick/models/config.hpp>

#include "json_file.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace wick::models {

namespace fs = std::filesystem;
using detail::JsonFile;

// ---- JsonFile
// -------------------------------------------------------------------------------------

namespace detail {

JsonFile::JsonFile(const fs::path& path, bool array) : where_(path.string()) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where_ + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  try {
    j_ = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(where_ + ": not valid JSON: " + e.what());
  }
  if (array ? !j_.is_array() : !j_.is_object())
    throw Error(where_ + ": the top level must be a JSON " + (array ? "array" : "object"));
}

bool JsonFile::has(const std::string& key) const {
  return j_.contains(key) && !j_.at(key).is_null();
}

void JsonFile::fail(const std::string& key, const std::string& message) const {
  throw Error(where_ + ": '" + key + "' " + message);
}

const nlohmann::json& JsonFile::at(const std::string& key) const {
  if (!has(key)) fail(key, "is missing");
  return j_.at(key);
}

int64_t JsonFile::integer(const std::string& key) const {
  const nlohmann::json& v = at(key);
  if (!v.is_number_integer()) fail(key, "must be an integer, not " + v.dump());
  return v.get<int64_t>();
}

std::optional<int64_t> JsonFile::integer_or_none(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

int64_t JsonFile::integer(const std::string& key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

std::optional<double> JsonFile::number_or_none(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const nlohmann::json& v = at(key);
  if (!v.is_number()) fail(key, "must be a number, not " + v.dump());
  return v.get<double>();
}

double JsonFile::number(const std::string& key, double fallback) const {
  return number_or_none(key).value_or(fallback);
}

bool JsonFile::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  if (!v.is_boolean()) fail(key, "must be true or false, not " + v.dump());
  return v.get<bool>();
}

std::string JsonFile::string(const std::string& key) const {
  const nlohmann::json& v = at(key);
  if (!v.is_string()) fail(key, "must be a string, not " + v.dump());
  return v.get<std::string>();
}

std::string JsonFile::string(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

std::vector<int64_t> JsonFile::integers(const std::string& key) const {
  if (!has(key)) return {};
  const nlohmann::json& v = at(key);
  if (v.is_number_integer()) return {v.get<int64_t>()};
  std::vector<int64_t> out;
  if (!v.is_array()) fail(key, "must be an integer or a list of integers, not " + v.dump());
  for (const nlohmann::json& e : v) {
    if (!e.is_number_integer())
      fail(key, "must be an integer or a list of integers, not " + v.dump());
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::optional<JsonFile> JsonFile::object(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  if (!at(key).is_object()) fail(key, "must be an object, not " + at(key).dump());
  return JsonFile(at(key), where_ + ": '" + key + "'");
}

}  // namespace detail

// ---- the directory
// -------------------------------------------------------------------------------

ModelDir ModelDir::open(const fs::path& dir) {
  ModelDir d;
  d.root = dir;
  if (!fs::is_directory(dir)) throw Error("models: " + dir.string() + " is not a directory");
  d.config = dir / "config.json";
  if (!fs::is_regular_file(d.config))
    throw Error("models: " + dir.string() + " has no config.json");
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (fs::is_regular_file(single)) {
    d.weights = {single};
  } else if (fs::is_regular_file(index)) {
    const JsonFile j(index);
    const auto map = j.object("weight_map");
    if (!map) j.fail("weight_map", "is missing");
    std::set<std::string> shards;
    for (const auto& kv : map->json().items()) {
      if (!kv.value().is_string()) map->fail(kv.key(), "must name a shard file");
      shards.insert(kv.value().get<std::string>());
    }
    for (const std::string& s : shards) {
      if (s.find('/') != std::string::npos || s == "..")
        throw Error(index.string() + ": shard '" + s + "' is not a file name in the directory");
      if (!fs::is_regular_file(dir / s))
        throw Error(index.string() + ": names shard " + s + ", which is not there");
      d.weights.push_back(dir / s);
    }
    if (d.weights.empty()) throw Error(index.string() + ": its weight_map names no shard");
  } else {
    throw Error("models: " + dir.string() +
                " has neither model.safetensors nor model.safetensors.index.json (only safetensors "
                "checkpoints are read)");
  }
  if (fs::is_regular_file(dir / "tokenizer.json")) d.tokenizer = dir / "tokenizer.json";
  if (fs::is_regular_file(dir / "generation_config.json"))
    d.generation_config = dir / "generation_config.json";
  return d;
}

std::string ModelDir::model_type() const {
  return JsonFile(config).string("model_type");
}

// ---- configs
// -------------------------------------------------------------------------------------

Activation parse_activation(const std::string& name, const std::string& where) {
  if (name == "gelu") return Activation::GeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return Activation::GeluTanh;
  if (name == "silu" || name == "swish") return Activation::Silu;
  if (name == "relu") return Activation::Relu;
  throw Error(where + ": activation '" + name +
              "' is not supported (known: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, silu, "
              "swish, relu)");
}

namespace {

void require_type(const JsonFile& j, std::initializer_list<const char*> types) {
  const std::string t = j.string("model_type");
  std::string known;
  for (const char* k : types) {
    if (t == k) return;
    known += (known.empty() ? "" : ", ") + std::string(k);
  }
  j.fail("model_type", "is '" + t + "'; this config reads " + known);
}

void require_positive(const JsonFile& j,
                      std::initializer_list<std::pair<const char*, int64_t>> values) {
  for (const auto& kv : values)
    if (kv.second <= 0) j.fail(kv.first, "must be positive, not " + std::to_string(kv.second));
}

SpecialTokens read_tokens(const JsonFile& j) {
  SpecialTokens t;
  t.bos = j.integer_or_none("bos_token_id");
  t.pad = j.integer_or_none("pad_token_id");
  t.eos = j.integers("eos_token_id");
  return t;
}

RopeScaling read_rope_scaling(const JsonFile& j) {
  RopeScaling r;
  const auto s = j.object("rope_scaling");
  if (!s) return r;
  const std::string type = s->has("rope_type") ? s->string("rope_type") : s->string("type");
  if (type == "default") return r;
  r.factor = s->number("factor", 0.0);
  if (!(r.factor >= 1.0)) s->fail("factor", "must be a number >= 1");
  if (type == "linear") {
    r.type = RopeScaling::Type::Linear;
  } else if (type == "llama3") {
    r.type = RopeScaling::Type::Llama3;
    r.low_freq_factor = s->number("low_freq_factor", 0.0);
    r.high_freq_factor = s->number("high_freq_factor", 0.0);
    r.original_max_position_embeddings = s->integer("original_max_position_embeddings");
    if (!(r.low_freq_factor > 0 && r.high_freq_factor > r.low_freq_factor))
      s->fail("high_freq_factor", "must exceed low_freq_factor, both positive");
  } else {
    s->fail("rope_type",
            "is '" + type + "', which is not supported (supported: default, linear, llama3)");
  }
  return r;
}

}  // namespace

BertConfig BertConfig::from_file(const fs::path& path) {
  const JsonFile j(path);
  require_type(j, {"bert"});
  BertConfig c;
  c.vocab_size = j.integer("vocab_size");
  c.hidden_size = j.integer("hidden_size");
  c.num_hidden_layers = j.integer("num_hidden_layers");
  c.num_attention_heads = j.integer("num_attention_heads");
  c.intermediate_size = j.integer("intermediate_size");
  c.max_position_embeddings = j.integer("max_position_embeddings", 512);
  c.type_vocab_size = j.integer("type_vocab_size", 2);
  c.layer_norm_eps = j.number("layer_norm_eps", 1e-12);
  c.hidden_act = parse_activation(j.string("hidden_act", "gelu"), j.where() + ": 'hidden_act'");
  c.pad_token_id = j.integer("pad_token_id", 0);
  for (const char* flag : {"is_decoder", "add_cross_attention"})
    if (j.boolean(flag, false))
      j.fail(flag, "is true; only the bidirectional encoder is supported");
  const std::string pos = j.string("position_embedding_type", "absolute");
  if (pos != "absolute")
    j.fail("position_embedding_type", "is '" + pos + "'; only 'absolute' is supported");
  require_positive(j, {{"vocab_size", c.vocab_size},
                       {"hidden_size", c.hidden_size},
                       {"num_hidden_layers", c.num_hidden_layers},
                       {"num_attention_heads", c.num_attention_heads},
                       {"intermediate_size", c.intermediate_size}});
  if (c.hidden_size % c.num_attention_heads != 0)
    j.fail("hidden_size",
           "(" + std::to_string(c.hidden_size) + ") must be a multiple of num_attention_heads");
  return c;
}

LlamaConfig LlamaConfig::from_file(const fs::path& path) {
  const JsonFile j(path);
  require_type(j, {"llama", "mistral", "qwen2"});
  LlamaConfig c;
  c.model_type = j.string("model_type");
  c.vocab_size = j.integer("vocab_size");
  c.hidden_size = j.integer("hidden_size");
  c.intermediate_size = j.integer("intermediate_size");
  c.num_hidden_layers = j.integer("num_hidden_layers");
  c.num_attention_heads = j.integer("num_attention_heads");
  c.num_key_value_heads = j.integer("num_key_value_heads", c.num_attention_heads);
  require_positive(j, {{"vocab_size", c.vocab_size},
                       {"hidden_size", c.hidden_size},
                       {"intermediate_size", c.intermediate_size},
                       {"num_hidden_layers", c.num_hidden_layers},
                       {"num_attention_heads", c.num_attention_heads},
                       {"num_key_value_heads", c.num_key_value_heads}});
  c.head_dim = j.integer("head_dim", c.hidden_size / c.num_attention_heads);
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) j.fail("head_dim", "must be positive and even");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    j.fail("num_key_value_heads", "must divide num_attention_heads");
  c.max_position_embeddings = j.integer("max_position_embeddings", 2048);
  c.rms_norm_eps = j.number("rms_norm_eps", 1e-6);
  c.rope_theta = j.number("rope_theta", 10000.0);
  c.rope_scaling = read_rope_scaling(j);
  c.hidden_act = parse_activation(j.string("hidden_act", "silu"), j.where() + ": 'hidden_act'");
  c.tie_word_embeddings = j.boolean("tie_word_embeddings", false);
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;
    if (j.boolean("use_sliding_window", false))
      j.fail("use_sliding_window",
             "is true; Qwen2's per-layer sliding window (max_window_layers) is not supported");
  } else {
    c.qkv_bias = c.o_bias = j.boolean("attention_bias", false);
    c.mlp_bias = j.boolean("mlp_bias", false);
  }
  if (c.model_type == "mistral") {
    c.sliding_window = j.integer_or_none("sliding_window");
    if (c.sliding_window && *c.sliding_window <= 0) j.fail("sliding_window", "must be positive");
  }
  if (j.integer("pretraining_tp", 1) > 1) j.fail("pretraining_tp", "above 1 is not supported");
  c.tokens = read_tokens(j);
  return c;
}

Gpt2Config Gpt2Config::from_file(const fs::path& path) {
  const JsonFile j(path);
  require_type(j, {"gpt2"});
  Gpt2Config c;
  c.vocab_size = j.integer("vocab_size");
  c.n_positions = j.integer("n_positions");
  c.n_embd = j.integer("n_embd");
  c.n_layer = j.integer("n_layer");
  c.n_head = j.integer("n_head");
  c.n_inner = j.integer("n_inner", 4 * c.n_embd);
  require_positive(j, {{"vocab_size", c.vocab_size},
                       {"n_positions", c.n_positions},
                       {"n_embd", c.n_embd},
                       {"n_layer", c.n_layer},
                       {"n_head", c.n_head},
                       {"n_inner", c.n_inner}});
  if (c.n_embd % c.n_head != 0) j.fail("n_embd", "must be a multiple of n_head");
  c.layer_norm_epsilon = j.number("layer_norm_epsilon", 1e-5);
  c.activation = parse_activation(j.string("activation_function", "gelu_new"),
                                  j.where() + ": 'activation_function'");
  c.scale_attn_weights = j.boolean("scale_attn_weights", true);
  c.scale_attn_by_inverse_layer_idx = j.boolean("scale_attn_by_inverse_layer_idx", false);
  c.tie_word_embeddings = j.boolean("tie_word_embeddings", true);
  c.tokens = read_tokens(j);
  return c;
}

void read_generation_tokens(const fs::path& path, SpecialTokens& tokens) {
  const JsonFile j(path);
  if (j.has("eos_token_id")) tokens.eos = j.integers("eos_token_id");
  if (j.has("bos_token_id")) tokens.bos = j.integer("bos_token_id");
  if (j.has("pad_token_id")) tokens.pad = j.integer("pad_token_id");
}

}  // namespace wick::models
