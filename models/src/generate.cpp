// The generation loop (wick/models/generate.hpp): prefill, then one step per token.
#include <wick/models/generate.hpp>

#include <wick/error.hpp>

#include <algorithm>
#include <chrono>
#include <string>

namespace wick::models {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void check_prompts(const CausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                   const GenerationConfig& config, size_t longest) {
  if (prompts.empty()) throw Error("generate: no prompts (the batch is empty)");
  for (size_t r = 0; r < prompts.size(); ++r) {
    if (prompts[r].empty()) throw Error("generate: prompt " + std::to_string(r) + " is empty");
    for (int64_t id : prompts[r])
      if (id < 0 || id >= model.vocab_size())
        throw Error("generate: prompt " + std::to_string(r) + " holds token id " + std::to_string(id) +
                    ", outside the model's vocabulary of " + std::to_string(model.vocab_size()));
  }
  const int64_t needed = static_cast<int64_t>(longest) + config.max_new_tokens;
  if (needed > model.max_position_embeddings())
    throw Error("generate: the longest prompt (" + std::to_string(longest) + " tokens) + max_new_tokens (" +
                std::to_string(config.max_new_tokens) + ") = " + std::to_string(needed) +
                " positions, past the model's max_position_embeddings of " +
                std::to_string(model.max_position_embeddings()));
}

// The state of one request: every row's sampler, history and output.
struct Batch {
  const GenerationConfig& config;
  std::vector<Sampler> samplers;
  std::vector<std::vector<int64_t>> seen;  // prompt (no padding) + generated, for the penalty
  std::vector<uint8_t> done;
  GenerationResult result;

  int64_t rows() const { return static_cast<int64_t>(samplers.size()); }
  bool all_done() const { return std::all_of(done.begin(), done.end(), [](uint8_t d) { return d != 0; }); }
};

bool is_stop(const GenerationConfig& config, int64_t token) {
  return std::find(config.stop_token_ids.begin(), config.stop_token_ids.end(), token) !=
         config.stop_token_ids.end();
}

// Samples the next token of every row still running from the last position's logits [B, T, V].
void sample_step(Batch& b, const Tensor& logits, const TokenCallback& on_token) {
  const int64_t t = logits.dim(1), vocab = logits.dim(2);
  const std::vector<float> last = logits.narrow(1, t - 1, 1).contiguous().to(DType::F32).to_vector<float>();
  for (int64_t r = 0; r < b.rows(); ++r) {
    if (b.done[static_cast<size_t>(r)]) continue;
    auto& out = b.result.tokens[static_cast<size_t>(r)];
    const std::span<const float> row(last.data() + r * vocab, static_cast<size_t>(vocab));
    const int64_t token = b.samplers[static_cast<size_t>(r)].next(row, b.seen[static_cast<size_t>(r)],
                                                                 static_cast<int64_t>(out.size()));
    out.push_back(token);
    b.seen[static_cast<size_t>(r)].push_back(token);
    FinishReason& why = b.result.finish[static_cast<size_t>(r)];
    if (on_token && !on_token(r, token)) {
      why = FinishReason::Callback;
      b.done[static_cast<size_t>(r)] = 1;
    } else if (is_stop(b.config, token)) {
      why = FinishReason::Stop;
      b.done[static_cast<size_t>(r)] = 1;
    } else if (static_cast<int64_t>(out.size()) >= b.config.max_new_tokens) {
      why = FinishReason::Length;
      b.done[static_cast<size_t>(r)] = 1;
    }
  }
}

// The next step's input: each row's last token [B, 1]. No mask: the cache extends its own with
// ones (kv_cache.hpp), the prefill's padding staying masked.
Tensor next_ids(const Batch& b, const Device& device) {
  std::vector<int64_t> ids(static_cast<size_t>(b.rows()));
  for (int64_t r = 0; r < b.rows(); ++r) ids[static_cast<size_t>(r)] = b.seen[static_cast<size_t>(r)].back();
  return Tensor::from_vector(ids, Shape{b.rows(), 1}, device);
}

}  // namespace

GenerationResult generate(const CausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                          const GenerationConfig& config, const TokenCallback& on_token) {
  config.validate();
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  check_prompts(model, prompts, config, longest);
  const int64_t rows = static_cast<int64_t>(prompts.size());
  const int64_t width = static_cast<int64_t>(longest);
  Batch b{config, {}, {}, std::vector<uint8_t>(prompts.size(), 0), {}};
  b.result.tokens.resize(prompts.size());
  b.result.finish.assign(prompts.size(), FinishReason::Length);
  if (config.max_new_tokens == 0) return b.result;
  // Left padding: pad id 0 (any id in range; masked out) before the shorter prompts.
  std::vector<int64_t> ids(static_cast<size_t>(rows * width), 0);
  std::vector<int64_t> mask(ids.size(), 0);
  bool padded = false;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& p = prompts[static_cast<size_t>(r)];
    const int64_t pad = width - static_cast<int64_t>(p.size());
    padded = padded || pad > 0;
    std::copy(p.begin(), p.end(), ids.begin() + r * width + pad);
    std::fill(mask.begin() + r * width + pad, mask.begin() + (r + 1) * width, 1);
    b.samplers.emplace_back(config, static_cast<uint64_t>(r));
    b.seen.push_back(p);
  }
  const Device device = model.device();
  const Tensor prompt_mask = padded ? Tensor::from_vector(mask, Shape{rows, width}, device) : Tensor{};
  const auto t0 = Clock::now();
  KvCache cache = model.new_cache(rows, width + config.max_new_tokens);
  Tensor logits = model.forward(Tensor::from_vector(ids, Shape{rows, width}, device), cache, prompt_mask);
  b.result.steps = 1;
  sample_step(b, logits, on_token);
  b.result.prefill_seconds = seconds_since(t0);
  const auto t1 = Clock::now();
  while (!b.all_done()) {
    const Tensor step = next_ids(b, device);
    logits = model.forward(step, cache);
    ++b.result.steps;
    sample_step(b, logits, on_token);
  }
  b.result.decode_seconds = seconds_since(t1);
  return b.result;
}

}  // namespace wick::models
