// gguf_tokenizer.cpp — a GGUF file's tokenizer.ggml.* metadata as the tokenizer.json that
// transformers' converters would write for it, read by wick::tokenizers: "gpt2" files are
// byte-level BPE (vocabulary, merges, and the pre-tokenizer `tokenizer.ggml.pre` names), "llama"
// files are SentencePiece BPE (vocabulary and scores; the merges derived from the scores as
// transformers' SentencePieceExtractor derives them, byte fallback to the <0xXX> tokens).
#include <wick/models/gguf.hpp>

#include "gguf_keys.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>

namespace wick::models {

namespace {

using detail::int_key;

using nlohmann::json;

// llama.cpp's token types (llama_token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5,
                           kByte = 6 };

// Any integer metadata value as int64 (writers differ: llama.cpp writes uint32).
bool bool_key(const gguf::GgufFile& f, const std::string& key, bool otherwise) {
  return f.find(key) != nullptr ? f.get<bool>(key) : otherwise;
}

// The pre-tokenizer of a "gpt2" file, by tokenizer.ggml.pre (as the model's own tokenizer.json).
json byte_level_pre_tokenizer(const gguf::GgufFile& f, const std::string& pre) {
  const auto split_then_bytes = [](const std::string& regex) {
    return json{{"type", "Sequence"},
                {"pretokenizers",
                 json::array({json{{"type", "Split"},
                                   {"pattern", {{"Regex", regex}}},
                                   {"behavior", "Isolated"},
                                   {"invert", false}},
                              json{{"type", "ByteLevel"},
                                   {"add_prefix_space", false},
                                   {"trim_offsets", true},
                                   {"use_regex", false}}})}};
  };
  if (pre == "gpt-2")
    return json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                {"use_regex", true}};
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3")
    return split_then_bytes(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
        "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  if (pre == "qwen2")
    return split_then_bytes(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
        "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  throw Error(f.source() + ": tokenizer.ggml.pre '" + pre +
              "' is a pre-tokenizer Wick does not know (it knows gpt-2, llama-bpe and qwen2)");
}

// transformers' SentencePieceExtractor: every split of a piece into two pieces of the vocabulary
// is a merge; merges rank by the merged piece's score (highest first), a piece's own splits by
// the ids of their halves.
json merges_from_scores(const std::vector<std::string>& tokens, const std::vector<float>& scores) {
  std::unordered_map<std::string, int64_t> id;
  for (size_t i = 0; i < tokens.size(); ++i) id.emplace(tokens[i], static_cast<int64_t>(i));
  struct Merge {
    int64_t left, right;
    float score;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& piece = tokens[i];
    std::vector<Merge> local;
    for (size_t at = 1; at < piece.size(); ++at) {
      if ((static_cast<unsigned char>(piece[at]) & 0xC0) == 0x80) continue;  // inside a character
      const auto l = id.find(piece.substr(0, at)), r = id.find(piece.substr(at));
      if (l != id.end() && r != id.end()) local.push_back({l->second, r->second, scores[i]});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  json out = json::array();
  for (const Merge& m : merges)
    out.push_back(json::array({tokens[static_cast<size_t>(m.left)],
                               tokens[static_cast<size_t>(m.right)]}));
  return out;
}

json template_processing(const std::optional<std::string>& bos, const std::optional<std::string>& eos,
                         const std::vector<std::string>& tokens) {
  json single = json::array(), special = json::object();
  const auto add = [&](const std::string& t) {
    single.push_back({{"SpecialToken", {{"id", t}, {"type_id", 0}}}});
    const auto i = std::find(tokens.begin(), tokens.end(), t) - tokens.begin();
    special[t] = {{"id", t}, {"ids", json::array({i})}, {"tokens", json::array({t})}};
  };
  if (bos) add(*bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) add(*eos);
  json pair = single;
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair},
          {"special_tokens", special}};
}

// A "llama" (SentencePiece BPE) file's normalizer, decoder and merges, into tokenizer.json `j`.
void add_sentencepiece(const gguf::GgufFile& f, const std::vector<std::string>& tokens, json& j,
                       json& bpe, const std::optional<std::string>& unk) {
  const auto scores = f.get<std::vector<float>>("tokenizer.ggml.scores");
  if (scores.size() != tokens.size())
    throw Error(f.source() + ": tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                " entries for " + std::to_string(tokens.size()) + " tokens");
  const bool prefix = bool_key(f, "tokenizer.ggml.add_space_prefix", true);
  json norm = json::array();
  if (prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
  norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
  j["pre_tokenizer"] = nullptr;
  json dec = json::array({json{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}},
                               {"content", " "}},
                          json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}}});
  if (prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  j["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
  bpe["merges"] = merges_from_scores(tokens, scores);
  bpe["byte_fallback"] = true;
  bpe["fuse_unk"] = true;
  bpe["ignore_merges"] = false;
  bpe["unk_token"] = unk ? json(*unk) : json(nullptr);
}

// A "gpt2" (byte-level BPE) file's pre-tokenizer, decoder and merges, into tokenizer.json `j`.
void add_byte_level(const gguf::GgufFile& f, json& j, json& bpe, bool llama3) {
  if (f.find("tokenizer.ggml.pre") == nullptr)
    throw Error(f.source() + ": a gpt2 tokenizer without tokenizer.ggml.pre (its pre-tokenizer)");
  const std::string pre = f.get<std::string>("tokenizer.ggml.pre");
  j["normalizer"] = pre == "qwen2" ? json{{"type", "NFC"}} : json(nullptr);
  j["pre_tokenizer"] = byte_level_pre_tokenizer(f, pre);
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                  {"use_regex", true}};
  json merges = json::array();
  for (const std::string& m : f.get<std::vector<std::string>>("tokenizer.ggml.merges"))
    merges.push_back(m);
  bpe["merges"] = merges;
  bpe["byte_fallback"] = false;
  bpe["fuse_unk"] = false;
  bpe["ignore_merges"] = llama3;
  bpe["unk_token"] = nullptr;
}

}  // namespace

tokenizers::Tokenizer tokenizer_from_gguf(const gguf::GgufFile& f) {
  const std::string model = f.get<std::string>("tokenizer.ggml.model");
  if (model != "gpt2" && model != "llama")
    throw Error(f.source() + ": tokenizer.ggml.model '" + model +
                "' is a tokenizer Wick does not read from GGUF (it reads gpt2 and llama)");
  const auto tokens = f.get<std::vector<std::string>>("tokenizer.ggml.tokens");
  std::vector<int32_t> types(tokens.size(), kNormal);
  if (f.find("tokenizer.ggml.token_type") != nullptr)
    types = f.get<std::vector<int32_t>>("tokenizer.ggml.token_type");
  if (types.size() != tokens.size())
    throw Error(f.source() + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                " entries for " + std::to_string(tokens.size()) + " tokens");
  const auto token_of = [&](const char* key) -> std::optional<std::string> {
    const auto i = int_key(f, key);
    if (!i) return std::nullopt;
    if (*i < 0 || *i >= static_cast<int64_t>(tokens.size()))
      throw Error(f.source() + ": " + key + " " + std::to_string(*i) + " is not a token id (" +
                  std::to_string(tokens.size()) + " tokens)");
    return tokens[static_cast<size_t>(*i)];
  };
  const bool spm = model == "llama";
  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab[tokens[i]] = i;
    const int32_t t = types[i];
    if (t == kControl || t == kUserDefined || t == kUnknown)
      added.push_back({{"id", i}, {"content", tokens[i]}, {"single_word", false},
                       {"lstrip", false}, {"rstrip", false}, {"normalized", t == kUserDefined},
                       {"special", t != kUserDefined}});
  }
  json j = {{"version", "1.0"}, {"added_tokens", added}, {"truncation", nullptr},
            {"padding", nullptr}};
  json bpe = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"vocab", vocab}};
  // llama.cpp's defaults: a bos for SentencePiece and for Llama 3's pre-tokenizer.
  const std::string pre_name =
      f.find("tokenizer.ggml.pre") != nullptr ? f.get<std::string>("tokenizer.ggml.pre") : "";
  const bool llama3 = pre_name == "llama-bpe" || pre_name == "llama3" || pre_name == "llama-v3";
  const bool add_bos = bool_key(f, "tokenizer.ggml.add_bos_token", spm || llama3);
  const bool add_eos = bool_key(f, "tokenizer.ggml.add_eos_token", false);
  const auto bos = add_bos ? token_of("tokenizer.ggml.bos_token_id") : std::nullopt;
  const auto eos = add_eos ? token_of("tokenizer.ggml.eos_token_id") : std::nullopt;
  if (add_bos && !bos)
    throw Error(f.source() + ": tokenizer.ggml.add_bos_token is set but there is no bos_token_id");
  if (add_eos && !eos)
    throw Error(f.source() + ": tokenizer.ggml.add_eos_token is set but there is no eos_token_id");
  j["post_processor"] = (bos || eos) ? template_processing(bos, eos, tokens) : json(nullptr);
  if (spm)
    add_sentencepiece(f, tokens, j, bpe, token_of("tokenizer.ggml.unknown_token_id"));
  else
    add_byte_level(f, j, bpe, llama3);
  j["model"] = bpe;
  return tokenizers::Tokenizer::from_json(j.dump(), f.source() + " (tokenizer.ggml.*)");
}

}  // namespace wick::models
