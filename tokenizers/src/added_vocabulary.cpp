#include "added_vocabulary.hpp"

#include <algorithm>

namespace wick::tokenizers::detail {

// Rust regex's \w (Alphabetic, marks, decimal numbers, connector punctuation, joiners) and \s
// (White_Space), in PCRE2's terms.
AddedVocabulary::AddedVocabulary()
    : starts_word_(R"(^[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])", "added tokens"),
      ends_word_(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]\z)", "added tokens"),
      lead_space_(R"(^[\p{White_Space}]*)", "added tokens"),
      trail_space_(R"([\p{White_Space}]*\z)", "added tokens") {}

void AddedVocabulary::add(const std::vector<AddedToken>& tokens, const Model& model, const Normalizer* normalizer) {
  for (const auto& t : tokens) {
    if (t.special && !t.content.empty() && !special_set_.count(t.content)) {
      special_.push_back(t);
      special_set_.insert(t.content);
    }
  }
  for (const auto& t : tokens) {
    bool dup = t.content.empty();
    for (const auto& [id, known] : by_id_) dup = dup || known.content == t.content;
    if (dup) continue;
    std::optional<int32_t> id = token_to_id(t.content);
    if (!id) id = model.token_to_id(t.content);
    if (!id) {
      auto vs = static_cast<int32_t>(model.vocab_size());
      std::optional<int32_t> max;
      for (const auto& kv : by_content_) max = std::max(max.value_or(kv.second), kv.second);
      id = !max ? vs : (*max >= vs || vs == 0) ? *max + 1 : vs;
    }
    by_content_[t.content] = *id;
    by_id_[*id] = t;
    if (!special_set_.count(t.content)) added_.push_back(t);
  }
  raw_.clear();
  normalized_.clear();
  std::vector<const AddedToken*> all;
  for (const auto& t : special_) all.push_back(&t);
  for (const auto& t : added_) all.push_back(&t);
  for (const AddedToken* t : all) {
    int32_t id = *token_to_id(t->content);
    if (!t->normalized) {
      raw_.push_back({t->content, id});
      continue;
    }
    NormalizedString ns(t->content);
    if (normalizer) normalizer->normalize(ns);
    normalized_.push_back({ns.get(), id});
  }
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view token) const {
  auto it = by_content_.find(std::string(token));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> AddedVocabulary::id_to_token(int32_t id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second.content;
}

bool AddedVocabulary::is_special(std::string_view token) const { return special_set_.count(std::string(token)) > 0; }

size_t AddedVocabulary::count_not_in(const Model& model) const {
  size_t n = 0;
  for (const auto& kv : by_content_) n += model.token_to_id(kv.first) ? 0 : 1;
  return n;
}

std::vector<std::pair<Offsets, std::optional<int32_t>>> AddedVocabulary::find_matches(std::string_view s, const std::vector<Pattern>& pats) const {
  if (s.empty()) return {{{0, 0}, std::nullopt}};
  std::vector<std::pair<Offsets, std::optional<int32_t>>> out;
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    // Leftmost-longest: the earliest start, then the longest pattern there.
    size_t best_start = std::string_view::npos, best_len = 0;
    int32_t best_id = -1;
    for (const auto& p : pats) {
      if (p.text.empty()) continue;
      size_t f = s.find(p.text, pos);
      if (f == std::string_view::npos) continue;
      if (f < best_start || (f == best_start && p.text.size() > best_len)) {
        best_start = f;
        best_len = p.text.size();
        best_id = p.id;
      }
    }
    if (best_start == std::string_view::npos) break;
    size_t start = best_start, stop = best_start + best_len;
    pos = stop;
    const AddedToken& tok = by_id_.at(best_id);
    if (tok.single_word) {
      bool start_space = start == 0 || !ends_word_.search(s.substr(0, start), nullptr, nullptr);
      bool stop_space = stop == s.size() || !starts_word_.search(s.substr(stop), nullptr, nullptr);
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) {
      size_t ms = start, me = start;
      trail_space_.search(s.substr(0, start), &ms, &me);
      start = std::max(ms, start_offset);
    }
    if (tok.rstrip) {
      size_t ms = 0, me = 0;
      lead_space_.search(s.substr(stop), &ms, &me);
      stop += me;
    }
    if (start_offset < start) out.push_back({{start_offset, start}, std::nullopt});
    out.push_back({{start, stop}, best_id});
    start_offset = stop;
  }
  if (start_offset != s.size()) out.push_back({{start_offset, s.size()}, std::nullopt});
  return out;
}

std::vector<Split> AddedVocabulary::split_with(NormalizedString&& s, const std::vector<Pattern>& pats) const {
  std::vector<Split> out;
  for (const auto& [range, id] : find_matches(s.get(), pats)) {
    auto piece = s.slice(range);
    if (!piece) throw Error("added tokens: a split fell outside the text");
    if (id) {
      std::string value = piece->get();
      size_t len = value.size();
      out.push_back(Split{std::move(*piece), std::vector<Token>{Token{*id, std::move(value), {0, len}}}});
    } else {
      out.push_back(Split{std::move(*piece), std::nullopt});
    }
  }
  return out;
}

PreTokenizedString AddedVocabulary::extract_and_normalize(std::string_view text, const Normalizer* normalizer) const {
  PreTokenizedString p;
  p.splits.push_back(Split{NormalizedString(text), std::nullopt});
  p.split([this](NormalizedString&& s) { return split_with(std::move(s), raw_); });
  p.split([this, normalizer](NormalizedString&& s) {
    if (normalizer) normalizer->normalize(s);
    return split_with(std::move(s), normalized_);
  });
  return p;
}

}  // namespace wick::tokenizers::detail

