// GGUF files as models (wick/models/gguf.hpp): the tiny Llama of models/fixtures/
// make_gguf_fixtures.py (tests/data/gguf_llama), written by the `gguf` package in Q8_0 and
// quantized by llama.cpp to Q4_K_M, and a tiny Qwen2 in Q8_0, generate llama.cpp's greedy tokens,
// and their logits are transformers' on the dequantized weights; its tokenizers (byte-level BPE, and a SentencePiece
// BPE) give llama.cpp's ids; metadata the model does not compute is refused by name.
#include "test_support.hpp"

#include <wick/models/causal_lm.hpp>
#include <wick/models/generate.hpp>
#include <wick/models/gguf.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>

using namespace wick;
using namespace wick::models;

namespace {

const std::string kDir = std::string(WICK_TEST_DATA_DIR) + "/gguf_llama";

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(kDir + "/expected.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return j;
}

std::vector<int64_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

// The file's metadata and tensors with `edit` applied to the metadata, parsed from memory.
LlamaConfig config_with(const std::function<void(std::vector<gguf::KeyValue>&)>& edit) {
  const gguf::GgufFile f(kDir + "/q8_0.gguf");
  std::vector<gguf::KeyValue> meta = f.metadata();
  edit(meta);
  std::vector<gguf::TensorToWrite> tensors;
  for (const gguf::TensorInfo& t : f.tensors()) tensors.push_back({t.name, t.type, t.ne, f.tensor_data(t)});
  const std::string bytes = gguf::write_bytes(meta, tensors);
  return llama_config_from_gguf(gguf::parse(bytes.data(), bytes.size(), "edited.gguf"));
}

}  // namespace

TEST_CASE("a GGUF file's metadata gives the Llama config and its special tokens") {
  const LlamaConfig c = llama_config_from_gguf(gguf::GgufFile(kDir + "/q8_0.gguf"));
  CHECK(c.model_type == "llama");
  CHECK(c.vocab_size == 320);
  CHECK(c.hidden_size == 256);
  CHECK(c.intermediate_size == 256);
  CHECK(c.num_hidden_layers == 2);
  CHECK(c.num_attention_heads == 4);
  CHECK(c.num_key_value_heads == 2);
  CHECK(c.head_dim == 64);
  CHECK(c.max_position_embeddings == 128);
  CHECK(c.rms_norm_eps == Approx(1e-6));
  CHECK(c.rope_theta == 10000.0);
  CHECK_FALSE(c.tie_word_embeddings);
  CHECK_FALSE(c.qkv_bias);
  CHECK(c.tokens.bos == 1);
  CHECK(c.tokens.pad == 0);
  CHECK(c.tokens.eos == std::vector<int64_t>{2});
}

TEST_CASE("a qwen2 GGUF file gives Qwen2's config: q/k/v biases, the file's own q/k order") {
  const LlamaConfig c = llama_config_from_gguf(gguf::GgufFile(kDir + "/qwen2_q8_0.gguf"));
  CHECK(c.model_type == "qwen2");
  CHECK(c.qkv_bias);
  CHECK_FALSE(c.o_bias);
  CHECK_FALSE(c.mlp_bias);
  CHECK(c.num_key_value_heads == 2);
  CHECK(c.head_dim == 64);
}

TEST_CASE("a GGUF file's byte-level BPE tokenizer gives llama.cpp's ids, and decodes them") {
  const tokenizers::Tokenizer tok = tokenizer_from_gguf(gguf::GgufFile(kDir + "/q8_0.gguf"));
  const auto enc = tok.encode(expected()["prompt"].get<std::string>());
  const std::vector<int64_t> ids(enc.ids.begin(), enc.ids.end());
  CHECK(ids == ids_of(expected()["prompt_ids"]));
  const std::vector<int32_t> back(enc.ids.begin(), enc.ids.end());
  CHECK(tok.decode(back, true) == expected()["prompt"].get<std::string>());
}

TEST_CASE("a GGUF file's SentencePiece tokenizer gives sentencepiece's and llama.cpp's ids") {
  const tokenizers::Tokenizer tok = tokenizer_from_gguf(gguf::GgufFile(kDir + "/spm.gguf"));
  for (const auto& c : expected()["spm"]["cases"]) {
    const std::string text = c["text"].get<std::string>();
    INFO(text);
    const auto enc = tok.encode(text);
    const std::vector<int64_t> ids(enc.ids.begin(), enc.ids.end());
    CHECK(ids == ids_of(c["ids"]));
  }
}

namespace {

// The largest |got - want| over the logits, and the largest |want|.
std::pair<double, double> logit_error(const std::vector<float>& got, const std::vector<std::vector<double>>& want) {
  double worst = 0, scale = 0;
  for (size_t t = 0; t < want.size(); ++t)
    for (size_t v = 0; v < want[t].size(); ++v) {
      worst = std::max(worst, std::abs(got[t * want[t].size() + v] - want[t][v]));
      scale = std::max(scale, std::abs(want[t][v]));
    }
  return {worst, scale};
}

}  // namespace

// By default (LoadOptions::round_activations) x is rounded to 8 bits before each quantized
// matmul, as llama.cpp does: its greedy tokens are the check, and the logits are as far from
// PyTorch's (on the dequantized weights) as llama.cpp's are, which the fixture measured (a few
// percent of their range). With x exact (round_activations off) they are within 2e-4 of the range
// of PyTorch's (docs/models.md).
TEST_CASE("a quantized GGUF Llama generates llama.cpp's greedy tokens, and PyTorch's logits") {
  for (const char* name : {"q8_0", "q4_k_m", "qwen2_q8_0"}) {
    const nlohmann::json& e = expected()[name];
    const std::vector<int64_t> prompt = ids_of(expected()["prompt_ids"]);
    const std::vector<int64_t> greedy = ids_of(e["greedy"]);
    const auto want = e["logits"].get<std::vector<std::vector<double>>>();
    std::vector<int64_t> all = prompt;
    all.insert(all.end(), greedy.begin(), greedy.end());
    const Tensor ids = Tensor::from_vector(all, {1, static_cast<int64_t>(all.size())});
    for (const Device& d : test::cpu_and_opencl()) {
      INFO(name << " on " << d.name());
      const auto lm = load_causal_lm(kDir + "/" + name + ".gguf", LoadOptions{d});
      GenerationConfig g;
      g.max_new_tokens = static_cast<int64_t>(greedy.size());
      g.stop_token_ids = {};
      CHECK(generate(*lm, {prompt}, g).tokens[0] == greedy);
      const std::vector<float> rounded = lm->forward(ids).to_vector<float>();
      REQUIRE(rounded.size() == want.size() * want[0].size());
      const auto [rounded_worst, scale] = logit_error(rounded, want);
      // As far from PyTorch's as llama.cpp's own logits are (the fixture measured them: it rounds x
      // the same way), give or take 5%.
      const double llama_cpp = e["llama_cpp_max_abs_difference"].get<double>();
      INFO("x rounded: max |logit| " << scale << ", max error " << rounded_worst << " (llama.cpp's " << llama_cpp << ")");
      CHECK(rounded_worst <= 1.05 * llama_cpp);

      LoadOptions exact{d};
      exact.round_activations = false;
      const auto lm_exact = load_causal_lm(kDir + "/" + name + ".gguf", exact);
      const auto [worst, scale_exact] = logit_error(lm_exact->forward(ids).to_vector<float>(), want);
      INFO("x exact: max |logit| " << scale_exact << ", max error " << worst);
      CHECK(worst < 2e-4 * scale_exact);
      // The option changes the numbers: rounded x is not the exact model.
      CHECK(rounded_worst > worst);
    }
  }
}

TEST_CASE("GGUF metadata the Llama does not compute is refused by name") {
  using KV = std::vector<gguf::KeyValue>;
  const auto set = [](KV& m, const std::string& key, gguf::Value v) {
    const auto it = std::find_if(m.begin(), m.end(), [&](const gguf::KeyValue& kv) { return kv.key == key; });
    if (it != m.end()) it->value = std::move(v);
    else m.push_back({key, std::move(v)});
  };
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "llama.expert_count", uint32_t{8}); }),
                    Catch::Contains("llama.expert_count") && Catch::Contains("mixture-of-experts"));
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "llama.attention.sliding_window", uint32_t{64}); }),
                    Catch::Contains("llama.attention.sliding_window"));
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "llama.rope.scaling.type", "yarn"); }),
                    Catch::Contains("yarn"));
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "llama.rope.dimension_count", uint32_t{32}); }),
                    Catch::Contains("rope.dimension_count"));
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "general.architecture", "falcon"); }),
                    Catch::Contains("falcon"));
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "llama.block_count", "two"); }),
                    Catch::Contains("llama.block_count") && Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(config_with([&](KV& m) {
                      m.erase(std::remove_if(m.begin(), m.end(), [](const gguf::KeyValue& kv) {
                                return kv.key == "llama.embedding_length";
                              }), m.end());
                    }),
                    Catch::Contains("llama.embedding_length") && Catch::Contains("absent"));
  CHECK_THROWS_WITH(config_with([&](KV& m) { set(m, "llama.vocab_size", uint32_t{321}); }),
                    Catch::Contains("vocab_size 321"));
}

TEST_CASE("a GGUF tokenizer Wick cannot reproduce is refused by name") {
  const gguf::GgufFile f(kDir + "/q8_0.gguf");
  const auto with = [&](const std::string& key, const gguf::Value& v) {
    std::vector<gguf::KeyValue> meta = f.metadata();
    for (auto& kv : meta)
      if (kv.key == key) kv.value = v;
    const std::string bytes = gguf::write_bytes(meta, {});
    return tokenizer_from_gguf(gguf::parse(bytes.data(), bytes.size(), "edited.gguf"));
  };
  CHECK_THROWS_WITH(with("tokenizer.ggml.pre", "deepseek-coder"), Catch::Contains("deepseek-coder"));
  CHECK_THROWS_WITH(with("tokenizer.ggml.model", "t5"), Catch::Contains("'t5'"));
  CHECK_THROWS_WITH(with("tokenizer.ggml.bos_token_id", uint32_t{999}), Catch::Contains("999"));
}
