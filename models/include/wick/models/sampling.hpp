// Token sampling for generation: the settings of one request (GenerationConfig) and a Sampler that
// turns one row's f32 logits, copied to the host, into the next token id. Working on host floats
// with our own generator makes a seed give the same draws on every device (the logits themselves
// may differ in their last bits between devices; with well-separated logits the tokens agree).
//
// The steps, in transformers' order (GenerationMixin._get_logits_processor, 4.46):
//   1. min_new_tokens: while fewer tokens than that are generated, the stop tokens get -inf;
//   2. repetition penalty (RepetitionPenaltyLogitsProcessor): every id seen in the row (prompt and
//      generated tokens, padding excluded) has its logit l replaced by l * p when l < 0, else l / p;
//   3. greedy (temperature == 0): the first index of the largest logit (torch.argmax);
//   4. otherwise temperature (l / T), top-k (TopKLogitsWarper: drop logits strictly below the
//      k-th largest, so ties with it stay), top-p (TopPLogitsWarper: sort ascending, drop the
//      leading tokens whose cumulative probability is <= 1 - top_p, always keep the last one);
//   5. the draw: probabilities p_i = exp(l_i - max) (double) over the kept tokens, u = the top
//      53 bits of one std::mt19937_64 output times 2^-53, and the token is the first index i in
//      id order with (p_0 + ... + p_i) > u * (p_0 + ... + p_{V-1}). The generator of row r is
//      seeded once per request with splitmix64(seed + r) (splitmix64 as in Vigna's reference),
//      and advances by exactly one output per sampled token.
// Ties in top-p's ascending sort are ordered by id (a stable sort); torch's sort leaves them in an
// unspecified order, so only there may transformers keep a different one of two equal logits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <span>
#include <vector>

namespace wick::models {

struct GenerationConfig {
  int64_t max_new_tokens = 32;
  int64_t min_new_tokens = 0;      // stop tokens are masked until this many were generated
  double temperature = 0.0;        // 0: greedy (argmax); > 0: sampling
  int64_t top_k = 0;               // 0: off
  double top_p = 1.0;              // 1: off; in (0, 1]
  double repetition_penalty = 1.0; // 1: off; > 0
  uint64_t seed = 0;
  std::vector<int64_t> stop_token_ids;  // a row ends after emitting one of these

  // Throws wick::Error naming the first setting out of range.
  void validate() const;
  bool greedy() const { return temperature == 0.0; }
};

// The generation defaults of a model directory: generation_config.json's eos_token_id (a number or
// a list) become stop_token_ids; repetition_penalty and max_new_tokens are read when present
// (max_length is not); do_sample true samples with transformers' defaults (temperature 1, top_k
// 50, top_p 1) unless the file gives temperature/top_k/top_p; do_sample false or absent keeps
// greedy. Without generation_config.json, config.json's eos_token_id is used. A directory with
// neither gives the defaults above with no stop tokens. Malformed JSON throws naming the file.
GenerationConfig read_generation_config(const std::filesystem::path& model_dir);

// The processing steps on their own (in place), for tests and for callers composing their own.
void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> seen, float penalty);
void apply_temperature(std::span<float> logits, float temperature);
void apply_top_k(std::span<float> logits, int64_t top_k);
void apply_top_p(std::span<float> logits, double top_p);
int64_t argmax(std::span<const float> logits);

uint64_t splitmix64(uint64_t x);

// One row's sampler for one request. Not thread-safe; one per row and thread.
class Sampler {
 public:
  Sampler(const GenerationConfig& config, uint64_t row);
  // The next token from this row's logits (copied: the caller's span is left as it was), given
  // the ids seen so far in the row and how many tokens were generated before this one.
  int64_t next(std::span<const float> logits, std::span<const int64_t> seen, int64_t generated);
  // A draw from already processed logits (-inf = dropped), advancing the generator once.
  int64_t draw(std::span<const float> logits);

 private:
  GenerationConfig config_;
  std::mt19937_64 rng_;
  std::vector<float> work_;
};

}  // namespace wick::models
