// Sampling (wick/models/sampling.hpp): hand-worked top-k / top-p / penalty cases, transformers'
// own processors on random logits (tests/data/generate/sampling.json, made by
// models/fixtures/make_sampling_fixtures.py), greedy = argmax, seeds, and the draw's frequencies.
#include <wick/error.hpp>
#include <wick/models/sampling.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

using namespace wick::models;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

std::vector<int64_t> kept(const std::vector<float>& logits) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -kInf) out.push_back(static_cast<int64_t>(i));
  return out;
}

std::vector<float> log_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

nlohmann::json fixture() {
  std::ifstream in(std::string(WICK_TEST_DATA_DIR) + "/generate/sampling.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("top-k keeps the k largest logits and every tie with the k-th") {
  std::vector<float> a{1, 3, 3, 2, 0};
  apply_top_k(a, 2);
  CHECK(kept(a) == std::vector<int64_t>{1, 2});
  std::vector<float> b{1, 3, 3, 2, 0};
  apply_top_k(b, 3);
  CHECK(kept(b) == std::vector<int64_t>{1, 2, 3});
  std::vector<float> c{5, 4, 4, 4, 1};
  apply_top_k(c, 2);
  CHECK(kept(c) == std::vector<int64_t>{0, 1, 2, 3});
  std::vector<float> d{0.5f, -1, 2};
  apply_top_k(d, 10);  // k past the vocabulary keeps all
  CHECK(kept(d) == std::vector<int64_t>{0, 1, 2});
  CHECK(d[1] == -1.0f);
}

TEST_CASE("top-p keeps the smallest set whose probability reaches p, at least one token") {
  // Probabilities 0.5, 0.3, 0.15, 0.05: ascending cumulative 0.05, 0.2, 0.5, 1.0.
  const std::vector<double> probs{0.5, 0.3, 0.15, 0.05};
  auto a = log_of(probs);
  apply_top_p(a, 0.7);  // drops cumulative <= 0.3: 0.05 and 0.15
  CHECK(kept(a) == std::vector<int64_t>{0, 1});
  auto b = log_of(probs);
  apply_top_p(b, 0.9);  // drops cumulative <= 0.1: 0.05
  CHECK(kept(b) == std::vector<int64_t>{0, 1, 2});
  auto c = log_of(probs);
  apply_top_p(c, 0.01);  // drops all but the largest
  CHECK(kept(c) == std::vector<int64_t>{0});
  auto d = log_of(probs);
  apply_top_p(d, 1.0);
  CHECK(kept(d) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(d[3] == static_cast<float>(std::log(0.05)));  // kept logits are unchanged
}

TEST_CASE("repetition penalty divides positive and multiplies negative logits of seen ids, once") {
  std::vector<float> l{2.0f, -1.0f, 0.5f, -3.0f};
  const std::vector<int64_t> seen{0, 1, 1, 0};
  apply_repetition_penalty(l, seen, 2.0f);
  CHECK(l == std::vector<float>{1.0f, -2.0f, 0.5f, -3.0f});
  std::vector<float> m{1.0f};
  CHECK_THROWS_WITH(apply_repetition_penalty(m, std::vector<int64_t>{3}, 2.0f),
                    Catch::Contains("token id 3 outside the vocabulary of 1"));
}

TEST_CASE("repetition penalty equals transformers' RepetitionPenaltyLogitsProcessor") {
  const auto f = fixture();  // a named copy: a temporary's element would dangle in the loop
  for (const auto& c : f["repetition_penalty"]) {
    auto logits = c["logits"].get<std::vector<float>>();
    apply_repetition_penalty(logits, c["seen"].get<std::vector<int64_t>>(), c["penalty"].get<float>());
    const auto expected = c["expected"].get<std::vector<float>>();
    REQUIRE(logits.size() == expected.size());
    for (size_t i = 0; i < logits.size(); ++i) CHECK(logits[i] == Approx(expected[i]).epsilon(1e-6));
  }
}

TEST_CASE("top-k and top-p keep the tokens transformers' warpers keep") {
  const auto f = fixture();
  for (const auto& c : f["top_k"]) {
    auto logits = c["logits"].get<std::vector<float>>();
    apply_top_k(logits, c["k"].get<int64_t>());
    CHECK(kept(logits) == c["kept"].get<std::vector<int64_t>>());
  }
  for (const auto& c : f["top_p"]) {
    auto logits = c["logits"].get<std::vector<float>>();
    apply_top_p(logits, c["p"].get<double>());
    CHECK(kept(logits) == c["kept"].get<std::vector<int64_t>>());
  }
}

TEST_CASE("penalty, temperature, top-k and top-p chained as transformers chains them") {
  const auto f = fixture();
  for (const auto& c : f["chain"]) {
    auto logits = c["logits"].get<std::vector<float>>();
    apply_repetition_penalty(logits, c["seen"].get<std::vector<int64_t>>(), c["penalty"].get<float>());
    apply_temperature(logits, c["temperature"].get<float>());
    apply_top_k(logits, c["k"].get<int64_t>());
    apply_top_p(logits, c["p"].get<double>());
    const auto& expected = c["expected"];
    REQUIRE(logits.size() == expected.size());
    for (size_t i = 0; i < logits.size(); ++i) {
      if (expected[i].is_null()) CHECK(logits[i] == -kInf);
      else CHECK(logits[i] == Approx(expected[i].get<float>()).epsilon(1e-6));
    }
  }
}

TEST_CASE("greedy picks the first largest logit, after the repetition penalty") {
  GenerationConfig g;
  Sampler s(g, 0);
  const std::vector<float> l{0.1f, 2.0f, -1.0f, 2.0f};
  CHECK(s.next(l, {}, 0) == 1);
  g.repetition_penalty = 4.0;
  Sampler p(g, 0);
  const std::vector<int64_t> seen{1, 3};
  // 2/4 = 0.5 for ids 1 and 3: id 0 (0.1) is still below, so 1 again.
  CHECK(p.next(l, seen, 0) == 1);
  const std::vector<float> m{1.0f, 2.0f, 1.5f};
  CHECK(p.next(m, std::vector<int64_t>{1}, 0) == 2);  // 2/4 = 0.5 < 1.5
}

TEST_CASE("min_new_tokens masks the stop tokens until enough were generated") {
  GenerationConfig g;
  g.min_new_tokens = 2;
  g.stop_token_ids = {2};
  Sampler s(g, 0);
  const std::vector<float> l{0.0f, 1.0f, 5.0f};
  CHECK(s.next(l, {}, 0) == 1);
  CHECK(s.next(l, {}, 1) == 1);
  CHECK(s.next(l, {}, 2) == 2);
}

TEST_CASE("a seed reproduces its draws and another seed or row draws others") {
  GenerationConfig g;
  g.temperature = 1.0;
  g.seed = 42;
  const std::vector<float> flat(50, 0.0f);
  auto run = [&](uint64_t seed, uint64_t row) {
    GenerationConfig c = g;
    c.seed = seed;
    Sampler s(c, row);
    std::vector<int64_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.next(flat, {}, i));
    return out;
  };
  CHECK(run(42, 0) == run(42, 0));
  CHECK(run(42, 0) != run(43, 0));
  CHECK(run(42, 0) != run(42, 1));
}

TEST_CASE("draws follow the softmax of the kept logits") {
  GenerationConfig g;
  g.temperature = 1.0;
  g.seed = 7;
  Sampler s(g, 0);
  const auto logits = log_of({0.1, 0.2, 0.3, 0.4});
  std::vector<int> counts(4, 0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.next(logits, {}, 0))];
  // Binomial standard deviation at n = 40000 is at most 0.0025: 0.012 is almost 5 of them.
  CHECK(counts[0] / double(n) == Approx(0.1).margin(0.012));
  CHECK(counts[1] / double(n) == Approx(0.2).margin(0.012));
  CHECK(counts[2] / double(n) == Approx(0.3).margin(0.012));
  CHECK(counts[3] / double(n) == Approx(0.4).margin(0.012));
  // Temperature 0.5 squares the probabilities: 1, 4, 9, 16 over 30. Top-k 2 keeps 9 and 16.
  g.temperature = 0.5;
  g.top_k = 2;
  Sampler t(g, 0);
  std::vector<int> k2(4, 0);
  for (int i = 0; i < n; ++i) ++k2[static_cast<size_t>(t.next(logits, {}, 0))];
  CHECK(k2[0] + k2[1] == 0);
  CHECK(k2[2] / double(n) == Approx(9.0 / 25).margin(0.012));
}

TEST_CASE("out-of-range generation settings are refused by name") {
  GenerationConfig g;
  g.top_p = 0.0;
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("top_p"));
  g = {};
  g.temperature = -1;
  CHECK_THROWS_WITH(Sampler(g, 0), Catch::Contains("temperature"));
  g = {};
  g.repetition_penalty = 0;
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("repetition_penalty"));
  g = {};
  g.top_k = -2;
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("top_k"));
}

TEST_CASE("read_generation_config takes eos and the sampling settings from generation_config.json") {
  const auto tiny = read_generation_config(std::string(WICK_TEST_DATA_DIR) + "/generate/tiny-llama");
  CHECK(tiny.stop_token_ids == std::vector<int64_t>{2});
  CHECK(tiny.greedy());
  const auto dir = std::filesystem::temp_directory_path() / ("wick-test-genconfig-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const char* text) { std::ofstream(dir / name) << text; };
  write("config.json", R"({"model_type": "llama", "eos_token_id": 7})");
  CHECK(read_generation_config(dir).stop_token_ids == std::vector<int64_t>{7});  // no generation_config.json
  write("generation_config.json", R"({"do_sample": true, "temperature": 0.6, "top_p": 0.9,
                                      "eos_token_id": [128001, 128009], "max_new_tokens": 40})");
  const auto g = read_generation_config(dir);
  CHECK(g.stop_token_ids == std::vector<int64_t>{128001, 128009});
  CHECK(g.temperature == 0.6);
  CHECK(g.top_k == 50);  // transformers' default when sampling
  CHECK(g.top_p == 0.9);
  CHECK(g.max_new_tokens == 40);
  write("generation_config.json", R"({"do_sample": "yes"})");
  CHECK_THROWS_WITH(read_generation_config(dir), Catch::Contains("generation_config.json") && Catch::Contains("do_sample"));
  write("generation_config.json", R"({"temperature": )");
  CHECK_THROWS_WITH(read_generation_config(dir), Catch::Contains("generation_config.json"));
  std::filesystem::remove_all(dir);
}
