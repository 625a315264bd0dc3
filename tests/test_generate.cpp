// Generation (wick/models/generate.hpp) on the models layer's causal fixtures (tests/data/models,
// models/fixtures/make_fixtures.py) and on the tiny Llama of models/fixtures/make_generate_fixtures.py
// (tests/data/generate/tiny-llama): greedy tokens equal transformers' generate(), a left-padded
// batch equals each prompt alone, stop tokens and the callback end rows, and 8 threads sharing
// one model give the tokens of serial runs.
#include "test_support.hpp"

#include <wick/models/generate.hpp>
#include <wick/safetensors.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

using namespace wick;
using namespace wick::models;

namespace {

const std::string kTiny = std::string(WICK_TEST_DATA_DIR) + "/generate/tiny-llama";

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(kTiny + "/expected.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return j;
}

const CausalLM& tiny() {
  static const std::unique_ptr<CausalLM> lm = load_causal_lm(kTiny, LoadOptions{test::cpu()});
  return *lm;
}

GenerationConfig greedy_config() {
  GenerationConfig g;
  g.max_new_tokens = expected()["max_new_tokens"].get<int64_t>();
  g.stop_token_ids = {expected()["eos"].get<int64_t>()};
  return g;
}

std::vector<int64_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

}  // namespace

TEST_CASE("greedy generation gives transformers' generate() tokens for each prompt") {
  for (const auto& c : expected()["greedy"]) {
    const GenerationResult r = generate(tiny(), {ids_of(c["prompt"])}, greedy_config());
    CHECK(r.tokens.at(0) == ids_of(c["new"]));
    CHECK(r.finish.at(0) == FinishReason::Length);
    CHECK(r.steps == static_cast<int64_t>(r.tokens[0].size()));
  }
}

TEST_CASE("greedy generation of a left-padded batch gives transformers' tokens on every causal fixture") {
  for (const std::string name : {"llama2", "llama3", "mistral", "qwen2", "gpt2"}) {
    INFO(name);
    const std::string dir = std::string(WICK_TEST_DATA_DIR) + "/models/" + name;
    const auto want = safetensors::load(dir + ".expected.safetensors", test::cpu()).tensors;
    const Tensor ids = want.at("ids"), mask = want.at("attention_mask"), gen = want.at("generate_ids");
    const int64_t rows = ids.dim(0), width = ids.dim(1), steps = gen.dim(1) - width;
    const auto id = ids.to_vector<int64_t>(), keep = mask.to_vector<int64_t>(), all = gen.to_vector<int64_t>();
    std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows * width; ++i)
      if (keep[static_cast<size_t>(i)]) prompts[static_cast<size_t>(i / width)].push_back(id[static_cast<size_t>(i)]);
    const auto lm = load_causal_lm(dir, LoadOptions{test::cpu()});
    GenerationConfig g;  // the fixtures' generate() ran with eos_token_id None
    g.max_new_tokens = steps;
    const GenerationResult r = generate(*lm, prompts, g);
    for (int64_t row = 0; row < rows; ++row) {
      const auto first = all.begin() + row * (width + steps) + width;
      CHECK(r.tokens[static_cast<size_t>(row)] == std::vector<int64_t>(first, first + steps));
    }
  }
}

TEST_CASE("a left-padded batch gives each prompt's tokens alone and transformers' batch") {
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& p : expected()["batch"]["prompts"]) prompts.push_back(ids_of(p));
  REQUIRE(prompts[0].size() != prompts[1].size());
  const GenerationResult batch = generate(tiny(), prompts, greedy_config());
  REQUIRE(batch.tokens.size() == prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    CHECK(batch.tokens[r] == ids_of(expected()["batch"]["new"][r]));
    CHECK(batch.tokens[r] == generate(tiny(), {prompts[r]}, greedy_config()).tokens[0]);
  }
}

TEST_CASE("a stop token ends its row, kept, while the other rows go on") {
  // Prompt 1's greedy tokens are 310 294 ...: 294 as a stop token ends it after two.
  const auto& cases = expected()["greedy"];
  const auto second = ids_of(cases[1]["new"]);
  REQUIRE(second.size() > 2);
  GenerationConfig g = greedy_config();
  g.stop_token_ids = {second[1]};
  const GenerationResult r = generate(tiny(), {ids_of(cases[1]["prompt"]), ids_of(cases[0]["prompt"])}, g);
  CHECK(r.tokens[0] == std::vector<int64_t>(second.begin(), second.begin() + 2));
  CHECK(r.finish[0] == FinishReason::Stop);
  const auto first = ids_of(cases[0]["new"]);
  // Row 1 runs on unless it emits the stop token itself.
  const auto stop_at = std::find(first.begin(), first.end(), second[1]);
  const auto until = stop_at == first.end() ? first.end() : stop_at + 1;
  CHECK(r.tokens[1] == std::vector<int64_t>(first.begin(), until));
}

TEST_CASE("the callback streams every new token in order and may end a row early") {
  const auto& c = expected()["greedy"][0];
  std::vector<int64_t> streamed;
  const GenerationResult r = generate(tiny(), {ids_of(c["prompt"])}, greedy_config(), [&](int64_t row, int64_t id) {
    CHECK(row == 0);
    streamed.push_back(id);
    return streamed.size() < 4;
  });
  const auto want = ids_of(c["new"]);
  CHECK(streamed == std::vector<int64_t>(want.begin(), want.begin() + 4));
  CHECK(r.tokens[0] == streamed);
  CHECK(r.finish[0] == FinishReason::Callback);
  CHECK(r.steps == 4);
}

TEST_CASE("8 threads generating concurrently with one model give exactly the tokens of serial runs") {
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& c : expected()["greedy"]) prompts.push_back(ids_of(c["prompt"]));
  // Thread i: prompt i % 3, greedy for even i, sampled (seed i, temperature 0.8, top-k 20) for odd.
  auto config_of = [](int i) {
    GenerationConfig g;
    g.max_new_tokens = 6;
    if (i % 2) {
      g.temperature = 0.8;
      g.top_k = 20;
      g.seed = static_cast<uint64_t>(i);
    }
    return g;
  };
  std::vector<std::vector<int64_t>> serial, concurrent(8);
  for (int i = 0; i < 8; ++i) serial.push_back(generate(tiny(), {prompts[i % 3]}, config_of(i)).tokens[0]);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { concurrent[i] = generate(tiny(), {prompts[i % 3]}, config_of(i)).tokens[0]; });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) CHECK(concurrent[i] == serial[i]);
  const auto want = ids_of(expected()["greedy"][0]["new"]);
  CHECK(serial[0] == std::vector<int64_t>(want.begin(), want.begin() + 6));
}

TEST_CASE("sampled generation reproduces with its seed and row 0 of a batch is the prompt alone") {
  const auto& c = expected()["greedy"];
  GenerationConfig g;
  g.max_new_tokens = 8;
  g.temperature = 1.5;
  g.top_p = 0.9;
  g.repetition_penalty = 1.3;
  g.seed = 99;
  const auto a = generate(tiny(), {ids_of(c[0]["prompt"])}, g).tokens[0];
  CHECK(a == generate(tiny(), {ids_of(c[0]["prompt"])}, g).tokens[0]);
  CHECK(a == generate(tiny(), {ids_of(c[0]["prompt"]), ids_of(c[1]["prompt"])}, g).tokens[0]);
  g.seed = 100;
  CHECK(a != generate(tiny(), {ids_of(c[0]["prompt"])}, g).tokens[0]);
}

TEST_CASE("generate refuses empty prompts, ids outside the vocabulary and too many positions") {
  GenerationConfig g = greedy_config();
  CHECK_THROWS_WITH(generate(tiny(), {}, g), Catch::Contains("no prompts"));
  CHECK_THROWS_WITH(generate(tiny(), {{1, 2}, {}}, g), Catch::Contains("prompt 1 is empty"));
  CHECK_THROWS_WITH(generate(tiny(), {{1, 5000}}, g), Catch::Contains("token id 5000"));
  g.max_new_tokens = 200;
  CHECK_THROWS_WITH(generate(tiny(), {{1, 2}}, g), Catch::Contains("max_position_embeddings of 128"));
}

TEST_CASE("a seed samples the same tokens on every device and greedy gives transformers' tokens on each") {
  const auto& c = expected()["greedy"][0];
  GenerationConfig g;
  g.max_new_tokens = 10;
  g.temperature = 0.9;
  g.top_k = 40;
  g.top_p = 0.95;
  g.repetition_penalty = 1.1;
  g.seed = 5;
  const auto on_cpu = generate(tiny(), {ids_of(c["prompt"])}, g).tokens[0];
  for (const Device& d : test::cpu_and_opencl()) {
    INFO(d.name());
    const auto lm = load_causal_lm(kTiny, LoadOptions{d});
    CHECK(generate(*lm, {ids_of(c["prompt"])}, g).tokens[0] == on_cpu);
    CHECK(generate(*lm, {ids_of(c["prompt"])}, greedy_config()).tokens[0] == ids_of(c["new"]));
  }
}
