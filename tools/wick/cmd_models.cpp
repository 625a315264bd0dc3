// `wick embed`, `wick generate` and `wick quantize`: Hugging Face model directories (and, for
// generate, GGUF files) from the command line.
#include "commands.hpp"

#include <wick/models/bert.hpp>
#include <wick/models/generate.hpp>
#include <wick/models/gguf.hpp>
#include <wick/runtime.hpp>
#include <wick/tokenizers/tokenizer.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

namespace wick::cli {

namespace {

namespace fs = std::filesystem;

Device configured_device(const ConfigOverrides& overrides) {
  Runtime::configure(resolve_config(overrides));
  return Runtime::global().default_device();
}

tokenizers::Tokenizer open_tokenizer(const std::string& model_dir) {
  const models::ModelDir dir = models::ModelDir::open(model_dir);
  if (dir.tokenizer.empty())
    throw Error("model directory " + model_dir + " has no tokenizer.json (needed to turn text into tokens)");
  return tokenizers::Tokenizer::from_file(dir.tokenizer.string());
}

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "auto") return std::nullopt;
  if (name == "f32") return DType::F32;
  if (name == "bf16") return DType::BF16;
  if (name == "f16") return DType::F16;
  throw Error("--dtype " + name + ": expected f32, bf16, f16 or auto (the checkpoint's own)");
}

// sentence-transformers' pipeline where the directory has modules.json; otherwise the encoder's
// mean-pooled hidden states, not normalised.
std::unique_ptr<models::SentenceEmbedder> open_embedder(const std::string& dir, const models::LoadOptions& options) {
  if (fs::exists(fs::path(dir) / "modules.json")) return models::SentenceEmbedder::load(dir, options);
  auto bert = models::BertModel::load(dir, options);
  const int64_t max_len = bert->config().max_position_embeddings;
  return std::make_unique<models::SentenceEmbedder>(std::move(bert), models::PoolingConfig{}, max_len);
}

std::vector<float> embed_texts(const models::SentenceEmbedder& embedder, tokenizers::Tokenizer tok,
                               const std::vector<std::string>& texts, const Device& device, int64_t& dim) {
  tokenizers::Truncation trunc;
  trunc.max_length = static_cast<size_t>(embedder.max_seq_length());
  tok.set_truncation(trunc);
  tokenizers::Padding pad = tok.padding().value_or(tokenizers::Padding{});
  pad.length = std::nullopt;  // the longest text of the batch, as sentence-transformers pads
  pad.side = tokenizers::Padding::Side::Right;
  tok.set_padding(pad);
  const auto enc = tok.encode_batch(texts);
  const int64_t rows = static_cast<int64_t>(enc.size()), cols = static_cast<int64_t>(enc[0].size());
  std::vector<int64_t> ids, mask;
  for (const auto& e : enc) {
    ids.insert(ids.end(), e.ids.begin(), e.ids.end());
    mask.insert(mask.end(), e.attention_mask.begin(), e.attention_mask.end());
  }
  const Tensor out = embedder.encode(Tensor::from_vector(ids, Shape{rows, cols}, device),
                                     Tensor::from_vector(mask, Shape{rows, cols}, device));
  dim = out.dim(1);
  return out.to(DType::F32).to_vector<float>();
}

}  // namespace

int run_embed(const ConfigOverrides& overrides, const EmbedArgs& args) {
  if (args.texts.empty()) throw Error("wick embed: no text given (wick embed --model DIR TEXT...)");
  const Device device = configured_device(overrides);
  models::LoadOptions options;
  options.device = device;
  options.dtype = parse_dtype(args.dtype);
  const auto embedder = open_embedder(args.model, options);
  int64_t dim = 0;
  const std::vector<float> v = embed_texts(*embedder, open_tokenizer(args.model), args.texts, device, dim);
  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model;
    j["device"] = device.name();
    j["dimension"] = dim;
    j["embeddings"] = nlohmann::json::array();
    for (size_t r = 0; r < args.texts.size(); ++r)
      j["embeddings"].push_back(std::vector<float>(v.begin() + static_cast<int64_t>(r) * dim,
                                                   v.begin() + static_cast<int64_t>(r + 1) * dim));
    std::cout << j.dump() << "\n";
    return 0;
  }
  for (size_t r = 0; r < args.texts.size(); ++r) {
    for (int64_t c = 0; c < dim; ++c) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[r * static_cast<size_t>(dim) + static_cast<size_t>(c)]));
      std::cout << (c ? " " : "") << buf;
    }
    std::cout << "\n";
  }
  return 0;
}

int run_generate(const ConfigOverrides& overrides, const GenerateArgs& args) {
  const Device device = configured_device(overrides);
  models::LoadOptions options;
  options.device = device;
  options.dtype = parse_dtype(args.dtype);
  options.round_activations = !args.exact_activations;
  // A GGUF file is opened (mapped and validated) once, for the model and its tokenizer.
  std::optional<gguf::GgufFile> file;
  if (models::is_gguf_file(args.model)) file.emplace(args.model);
  const std::unique_ptr<models::CausalLM> lm =
      file ? models::LlamaForCausalLM::from_gguf(*file, options) : models::load_causal_lm(args.model, options);
  const tokenizers::Tokenizer tok = file ? models::tokenizer_from_gguf(*file) : open_tokenizer(args.model);
  models::GenerationConfig g;
  if (file)
    g.stop_token_ids = lm->special_tokens().eos;  // a GGUF file's eos, eot and eom tokens
  else
    g = models::read_generation_config(args.model);
  if (args.max_tokens) g.max_new_tokens = *args.max_tokens;
  if (args.temperature) g.temperature = *args.temperature;
  if (args.top_k) g.top_k = *args.top_k;
  if (args.top_p) g.top_p = *args.top_p;
  if (args.repetition_penalty) g.repetition_penalty = *args.repetition_penalty;
  if (args.seed) g.seed = *args.seed;
  g.validate();
  const auto enc = tok.encode(args.prompt);
  if (enc.ids.empty()) throw Error("wick generate: the prompt encodes to no tokens");
  const std::vector<int64_t> prompt(enc.ids.begin(), enc.ids.end());
  tokenizers::DecodeStream stream(tok);
  const auto result = models::generate(*lm, {prompt}, g, [&](int64_t, int64_t id) {
    if (auto piece = stream.step(static_cast<int32_t>(id))) std::cout << *piece << std::flush;
    return true;
  });
  std::cout << "\n";
  const size_t n = result.tokens[0].size();
  const double total = result.prefill_seconds + result.decode_seconds;
  char line[256];
  // The decode rate counts the tokens after the first, whose time is the prompt's prefill.
  std::snprintf(line, sizeof line,
                "%zu tokens in %.3f s (%.2f tokens/s; prompt of %zu tokens %.3f s, then %.2f tokens/s) on %s\n",
                n, total, total > 0 ? static_cast<double>(n) / total : 0.0, prompt.size(), result.prefill_seconds,
                n > 1 && result.decode_seconds > 0 ? static_cast<double>(n - 1) / result.decode_seconds : 0.0,
                device.name().c_str());
  std::cerr << line;
  return 0;
}

int run_quantize(const ConfigOverrides& overrides, const QuantizeArgs& args) {
  Runtime::configure(resolve_config(overrides));
  models::convert_to_gguf(args.model, args.type, args.output);
  std::cerr << "wrote " << args.output << " (" << fs::file_size(args.output) << " bytes)\n";
  return 0;
}

}  // namespace wick::cli
