// The pipeline's components, each an immutable object shared by every encode/decode call:
// normalizer -> pre-tokenizer -> model -> post-processor; decoder. Parsers build them from the
// tokenizer.json objects and refuse any type or field value they do not implement.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <wick/tokenizers/tokenizer.hpp>

#include "encoding_ops.hpp"
#include "json_util.hpp"
#include "normalized.hpp"

namespace wick::tokenizers::detail {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& s) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenizedString& s) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::vector<Token> tokenize(std::string_view piece) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual size_t vocab_size() const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual size_t added_tokens(bool is_pair) const = 0;
  // One encoding per sequence in, the processed ones out (merged afterwards).
  virtual std::vector<Encoding> process(std::vector<Encoding> encodings, bool add_special_tokens) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

std::unique_ptr<Normalizer> parse_normalizer(const json& j, const Where& w);
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, const Where& w);
std::unique_ptr<Model> parse_model(const json& j, const Where& w);
std::unique_ptr<PostProcessor> parse_post_processor(const json& j, const Where& w);
std::unique_ptr<Decoder> parse_decoder(const json& j, const Where& w);

// Shared by the normalizers and the pre-tokenizers: {"String": s} or {"Regex": r}.
Matches pattern_matches(const Regex& re, std::string_view text);
Regex parse_pattern(const json& j, const Where& w);
bool is_bert_punctuation(char32_t c);

}  // namespace wick::tokenizers::detail
