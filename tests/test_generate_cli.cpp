// `wick embed` and `wick generate` (tools/wick/cmd_models.cpp) run as a user runs them: the real
// all-MiniLM-L6-v2 against sentence-transformers' vectors (tests/data/generate/minilm_cli.json,
// models/fixtures/make_cli_fixtures.py), and the tiny Llama's streamed text against the text of
// transformers' greedy tokens (tests/data/generate/tiny-llama/expected.json).
#include "cli_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

const std::string kData = std::string(WICK_TEST_DATA_DIR) + "/generate";
const std::string kMiniLM = std::string(WICK_MODELS_DIR) + "/all-MiniLM-L6-v2";

using Run = wick::test::CliRun;
using wick::test::wick_cli;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::string quoted_texts(const nlohmann::json& texts) {
  std::string s;
  for (const auto& t : texts) s += " '" + t.get<std::string>() + "'";  // the fixture's texts hold no quote
  return s;
}

void check_vectors(const std::vector<std::vector<double>>& got, const nlohmann::json& want) {
  REQUIRE(got.size() == want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    REQUIRE(got[r].size() == want[r].size());
    double worst = 0;
    for (size_t c = 0; c < got[r].size(); ++c) worst = std::max(worst, std::abs(got[r][c] - want[r][c].get<double>()));
    INFO("row " << r);
    CHECK(worst < 1e-5);
  }
}

}  // namespace

TEST_CASE("wick embed --json gives sentence-transformers' all-MiniLM-L6-v2 vectors to 1e-5") {
  const auto fx = read_json(kData + "/minilm_cli.json");
  const Run r = wick_cli("embed --model '" + kMiniLM + "' --json" + quoted_texts(fx["texts"]));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["dimension"] == 384);
  check_vectors(j["embeddings"].get<std::vector<std::vector<double>>>(), fx["embeddings"]);
}

TEST_CASE("wick embed prints one vector per line without --json") {
  const auto fx = read_json(kData + "/minilm_cli.json");
  const Run r = wick_cli("embed --model '" + kMiniLM + "'" + quoted_texts(fx["texts"]));
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::vector<std::vector<double>> rows;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    rows.emplace_back(std::istream_iterator<double>(in), std::istream_iterator<double>());
  }
  check_vectors(rows, fx["embeddings"]);
}

TEST_CASE("wick generate streams the text of transformers' greedy tokens and reports tokens/s") {
  const auto fx = read_json(kData + "/tiny-llama/expected.json")["text"];
  const Run r = wick_cli("generate --model '" + kData + "/tiny-llama' --prompt '" + fx["prompt"].get<std::string>() +
                         "' --max-tokens " + std::to_string(fx["new"].size()));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == fx["text"].get<std::string>() + "\n");
  CHECK_THAT(r.err, Catch::Contains(std::to_string(fx["new"].size()) + " tokens in") && Catch::Contains("tokens/s"));
}

TEST_CASE("wick generate and embed name the bad input: a missing directory, a setting, a model type") {
  const Run missing = wick_cli("generate --model /nonexistent/model --prompt hi");
  CHECK(missing.status != 0);
  CHECK_THAT(missing.err, Catch::Contains("/nonexistent/model"));
  const Run temp = wick_cli("generate --model '" + kData + "/tiny-llama' --prompt hi --temperature -1");
  CHECK(temp.status != 0);
  CHECK_THAT(temp.err, Catch::Contains("temperature"));
  const Run dtype = wick_cli("generate --model '" + kData + "/tiny-llama' --prompt hi --dtype f64");
  CHECK(dtype.status != 0);
  CHECK_THAT(dtype.err, Catch::Contains("dtype"));
  const Run bert = wick_cli("embed --model '" + kData + "/tiny-llama' hello");
  CHECK(bert.status != 0);
  CHECK_THAT(bert.err, Catch::Contains("llama"));
}

TEST_CASE("wick generate runs a quantized GGUF file with the tokenizer it carries") {
  const std::string gguf = std::string(WICK_TEST_DATA_DIR) + "/gguf_llama/q4_k_m.gguf";
  const Run r = wick_cli("generate --model '" + gguf + "' --prompt 'The quick brown fox' --max-tokens 16");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_FALSE(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("16 tokens in") && Catch::Contains("tokens/s"));
  // x not rounded to 8 bits (models::LoadOptions::round_activations off; its numbers:
  // test_gguf_models.cpp)
  const Run exact = wick_cli("generate --model '" + gguf + "' --prompt 'The quick brown fox' --max-tokens 16 --exact-activations");
  INFO(exact.err);
  CHECK(exact.status == 0);
  CHECK_THAT(exact.err, Catch::Contains("16 tokens in"));
  const Run bad = wick_cli("generate --model '" + std::string(WICK_TEST_DATA_DIR) +
                           "/gguf_llama/spm.gguf' --prompt hi");  // a tokenizer, no model
  CHECK(bad.status != 0);
  CHECK_THAT(bad.err, Catch::Contains("spm.gguf") && Catch::Contains("llama.embedding_length"));
}

TEST_CASE("wick quantize writes the gguf package's bytes for a Llama directory") {
  const std::string out = "/tmp/wick-quantize-test-" + std::to_string(::getpid()) + ".gguf";
  for (const char* type : {"Q8_0", "Q4_0"}) {
    INFO(type);
    const Run r = wick_cli("quantize --model '" + kData + "/tiny-llama' --type " + type + " --output '" + out + "'");
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::string lower = type;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const auto bytes = [](const std::string& path) {
      std::ifstream in(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string want = bytes(std::string(WICK_TEST_DATA_DIR) + "/gguf_llama/tiny-llama." + lower + ".gguf");
    REQUIRE(want.size() > 1000);
    CHECK(bytes(out) == want);
  }
  std::remove(out.c_str());
  const Run type = wick_cli("quantize --model '" + kData + "/tiny-llama' --type IQ2_XS --output '" + out + "'");
  CHECK(type.status != 0);
  CHECK_THAT(type.err, Catch::Contains("IQ2_XS"));
  const Run gpt2 = wick_cli("quantize --model '" + std::string(WICK_TEST_DATA_DIR) +
                            "/models/gpt2' --type Q8_0 --output '" + out + "'");
  CHECK(gpt2.status != 0);
  CHECK_THAT(gpt2.err, Catch::Contains("gpt2"));
}
