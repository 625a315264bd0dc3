// The shared, immutable part of a Tokenizer: its components and added tokens.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <wick/tokenizers/tokenizer.hpp>

#include "added_vocabulary.hpp"
#include "components.hpp"

namespace wick::tokenizers {

class TokenizerImpl {
 public:
  std::unique_ptr<detail::Normalizer> normalizer;
  std::unique_ptr<detail::PreTokenizer> pre_tokenizer;
  std::unique_ptr<detail::Model> model;
  std::unique_ptr<detail::PostProcessor> post_processor;
  std::unique_ptr<detail::Decoder> decoder;
  detail::AddedVocabulary added;

  // One sequence through added tokens, normalizer, pre-tokenizer and model (type_id on each token).
  Encoding encode_sequence(std::string_view text, uint32_t type_id) const;
  // Truncation, then the post-processor (or the plain merge when there is none).
  Encoding post_process(Encoding a, std::optional<Encoding> b, bool add_special_tokens,
                        const std::optional<Truncation>& truncation) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
};

}  // namespace wick::tokenizers
