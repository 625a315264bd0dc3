// Sampling steps and the per-row sampler (the algorithm is written out in sampling.hpp).
#include <wick/models/sampling.hpp>

#include <wick/error.hpp>
#include <wick/models/config.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>

namespace wick::models {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string setting_error(const char* name, const std::string& value, const char* wanted) {
  return std::string("generation config: ") + name + " = " + value + " is out of range (" + wanted + ")";
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open " + path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

template <class T>
void read_number(const nlohmann::json& j, const char* key, T& out, const std::filesystem::path& file) {
  if (!j.contains(key) || j[key].is_null()) return;
  if (!j[key].is_number()) throw Error(file.string() + ": " + key + " is not a number");
  out = j[key].get<T>();
}

}  // namespace

void GenerationConfig::validate() const {
  if (max_new_tokens < 0) throw Error(setting_error("max_new_tokens", std::to_string(max_new_tokens), ">= 0"));
  if (min_new_tokens < 0) throw Error(setting_error("min_new_tokens", std::to_string(min_new_tokens), ">= 0"));
  if (!(temperature >= 0.0) || !std::isfinite(temperature))
    throw Error(setting_error("temperature", std::to_string(temperature), ">= 0, 0 for greedy"));
  if (top_k < 0) throw Error(setting_error("top_k", std::to_string(top_k), ">= 0, 0 for off"));
  if (!(top_p > 0.0 && top_p <= 1.0)) throw Error(setting_error("top_p", std::to_string(top_p), "(0, 1]"));
  if (!(repetition_penalty > 0.0) || !std::isfinite(repetition_penalty))
    throw Error(setting_error("repetition_penalty", std::to_string(repetition_penalty), "> 0, 1 for off"));
}

GenerationConfig read_generation_config(const std::filesystem::path& model_dir) {
  GenerationConfig config;
  const auto gen_file = model_dir / "generation_config.json";
  const auto model_file = model_dir / "config.json";
  // eos_token_id (a number or a list) as the models layer reads it, from either file.
  SpecialTokens tokens;
  if (std::filesystem::exists(gen_file)) {
    read_generation_tokens(gen_file, tokens);
    config.stop_token_ids = tokens.eos;
    const auto j = read_json(gen_file);
    if (j.contains("do_sample") && !j["do_sample"].is_boolean())
      throw Error(gen_file.string() + ": do_sample is not a boolean");
    if (j.value("do_sample", false)) {
      config.temperature = 1.0;
      config.top_k = 50;  // transformers' GenerationConfig defaults
      config.top_p = 1.0;
      read_number(j, "temperature", config.temperature, gen_file);
      read_number(j, "top_k", config.top_k, gen_file);
      read_number(j, "top_p", config.top_p, gen_file);
    }
    read_number(j, "repetition_penalty", config.repetition_penalty, gen_file);
    read_number(j, "max_new_tokens", config.max_new_tokens, gen_file);
  } else if (std::filesystem::exists(model_file)) {
    read_generation_tokens(model_file, tokens);
    config.stop_token_ids = tokens.eos;
  }
  return config;
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> seen, float penalty) {
  if (penalty == 1.0f) return;
  // transformers gathers the scores of every seen id, then scatters the penalised values back:
  // an id seen twice is penalised once.
  std::vector<uint8_t> done(logits.size(), 0);
  for (int64_t id : seen) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size())
      throw Error("repetition penalty: token id " + std::to_string(id) + " outside the vocabulary of " +
                  std::to_string(logits.size()));
    if (done[static_cast<size_t>(id)]) continue;
    done[static_cast<size_t>(id)] = 1;
    float& l = logits[static_cast<size_t>(id)];
    l = l < 0.0f ? l * penalty : l / penalty;
  }
}

void apply_temperature(std::span<float> logits, float temperature) {
  if (temperature == 1.0f) return;
  for (float& l : logits) l = l / temperature;
}

void apply_top_k(std::span<float> logits, int64_t top_k) {
  if (top_k <= 0 || static_cast<size_t>(top_k) >= logits.size()) return;
  std::vector<float> sorted(logits.begin(), logits.end());
  std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[static_cast<size_t>(top_k - 1)];
  for (float& l : logits)
    if (l < kth) l = kNegInf;
}

void apply_top_p(std::span<float> logits, double top_p) {
  if (top_p >= 1.0 || logits.empty()) return;
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] < logits[b]; });
  const float top = logits[order.back()];
  double total = 0.0;
  for (float l : logits) total += std::exp(static_cast<double>(l) - top);
  double cumulative = 0.0;
  // The last (largest) token is always kept: min_tokens_to_keep = 1.
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    cumulative += std::exp(static_cast<double>(logits[order[i]]) - top) / total;
    if (cumulative <= 1.0 - top_p) logits[order[i]] = kNegInf;
    else break;
  }
}

int64_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw Error("argmax: empty logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best] || (std::isnan(logits[i]) && !std::isnan(logits[best]))) best = i;
  return static_cast<int64_t>(best);
}

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Sampler::Sampler(const GenerationConfig& config, uint64_t row)
    : config_(config), rng_(splitmix64(config.seed + row)) {
  config_.validate();
}

int64_t Sampler::draw(std::span<const float> logits) {
  float top = kNegInf;
  for (float l : logits) top = std::max(top, l);
  if (top == kNegInf) throw Error("sampling: every token was filtered out (all logits -inf)");
  if (std::isnan(top) || std::isinf(top)) throw Error("sampling: logits hold NaN or +inf");
  double total = 0.0;
  for (float l : logits) total += std::exp(static_cast<double>(l) - top);
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double target = u * total;
  double cumulative = 0.0;
  int64_t last_kept = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kNegInf) continue;
    cumulative += std::exp(static_cast<double>(logits[i]) - top);
    last_kept = static_cast<int64_t>(i);
    if (cumulative > target) return last_kept;
  }
  return last_kept;  // rounding left the sum just short of target: the last kept token
}

int64_t Sampler::next(std::span<const float> logits, std::span<const int64_t> seen, int64_t generated) {
  work_.assign(logits.begin(), logits.end());
  std::span<float> w(work_);
  if (generated < config_.min_new_tokens)
    for (int64_t id : config_.stop_token_ids)
      if (id >= 0 && static_cast<size_t>(id) < w.size()) w[static_cast<size_t>(id)] = kNegInf;
  apply_repetition_penalty(w, seen, static_cast<float>(config_.repetition_penalty));
  if (config_.greedy()) return argmax(w);
  apply_temperature(w, static_cast<float>(config_.temperature));
  apply_top_k(w, config_.top_k);
  apply_top_p(w, config_.top_p);
  return draw(w);
}

}  // namespace wick::models
