// wick/models/generate.hpp — text generation with a causal LM: a prefill of the prompts, then one
// token at a time from the model's KvCache, each row sampled on the host (sampling.hpp).
//
//   auto lm = models::load_causal_lm(dir);
//   models::GenerationConfig g = models::read_generation_config(dir);   // eos -> stop tokens
//   g.max_new_tokens = 64;
//   auto out = models::generate(*lm, {prompt_ids}, g, [&](int64_t row, int64_t id) {
//     std::cout << decoder.step(id).value_or("");  // streaming; return false to stop the row
//     return true;
//   });
//
// Batches: prompts of different lengths are left-padded to the longest (padding is masked and
// positions count only real tokens, causal_lm.hpp), so each row gives the tokens of its prompt
// alone. The cache is allocated once, for the longest prompt + max_new_tokens positions.
//
// A row ends when it emits a stop token (the token is kept in its output and passed to the
// callback), when the callback returns false for it, or after max_new_tokens tokens; generation
// ends when every row has. Rows that ended keep being fed their last token (so the batch stays
// one tensor) but their outputs are ignored. Row r samples with the generator seeded from
// config.seed + r (sampling.hpp), so a batch of one row reproduces row 0 of any batch.
//
// Thread safety: generate reads the model and writes only its own cache, so any number of
// threads may generate with one shared model at once. The callback runs on the calling thread.
#pragma once

#include <wick/models/causal_lm.hpp>
#include <wick/models/sampling.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace wick::models {

// Called for every new token in order (row by row within a step); false ends that row.
using TokenCallback = std::function<bool(int64_t row, int64_t token)>;

enum class FinishReason { Stop, Length, Callback };

struct GenerationResult {
  std::vector<std::vector<int64_t>> tokens;  // the new tokens of each row
  std::vector<FinishReason> finish;          // why each row ended
  double prefill_seconds = 0;                // the prompt's forward and the first tokens
  double decode_seconds = 0;                 // every later step
  int64_t steps = 0;                         // forwards run (the prefill included)
};

// prompts: one list of token ids per row, none empty, each id in [0, vocab_size). Errors (an
// empty prompt, an id out of range, prompt + max_new_tokens past max_position_embeddings, a bad
// setting) name the row and the value.
GenerationResult generate(const CausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                          const GenerationConfig& config, const TokenCallback& on_token = {});

}  // namespace wick::models
