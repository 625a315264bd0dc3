// Added tokens (tokenizer.json's "added_tokens"): matched in the raw text (normalized: false) or
// in the normalized text (normalized: true) before the model runs, with single_word, lstrip and
// rstrip as tokenizer/added_vocabulary.rs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "components.hpp"
#include "regex.hpp"

namespace wick::tokenizers::detail {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary();
  // Adds the tokens in order, as the package's add_tokens: a token already known (to this table or
  // the model) keeps its id, a new one gets the next id after the model's vocabulary.
  void add(const std::vector<AddedToken>& tokens, const Model& model, const Normalizer* normalizer);

  // Splits the text around the added tokens and normalizes the rest (extract_and_normalize).
  PreTokenizedString extract_and_normalize(std::string_view text, const Normalizer* normalizer) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(std::string_view token) const;
  size_t count_not_in(const Model& model) const;

 private:
  struct Pattern {
    std::string text;  // what is searched for
    int32_t id;
  };
  std::vector<std::pair<Offsets, std::optional<int32_t>>> find_matches(std::string_view s, const std::vector<Pattern>& pats) const;
  std::vector<Split> split_with(NormalizedString&& s, const std::vector<Pattern>& pats) const;

  std::unordered_map<std::string, int32_t> by_content_;
  std::unordered_map<int32_t, AddedToken> by_id_;
  std::vector<AddedToken> special_, added_;  // the package's two lists, in order
  std::unordered_set<std::string> special_set_;
  std::vector<Pattern> raw_, normalized_;
  Regex starts_word_, ends_word_, lead_space_, trail_space_;
};

}  // namespace wick::tokenizers::detail
