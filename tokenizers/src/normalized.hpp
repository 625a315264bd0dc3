// NormalizedString and PreTokenizedString as the Rust package has them: the normalized text with,
// for each of its bytes, the byte range of the original text it came from; and a list of such
// pieces, some already tokenized (added tokens), the others waiting for the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "regex.hpp"

namespace wick::tokenizers::detail {

using Offsets = std::pair<size_t, size_t>;

struct Token {
  int32_t id;
  std::string value;
  Offsets offsets;  // in the piece's normalized text
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A split pattern: (range, is_match) covering the text, as Rust's Pattern::find_matches.
using Matches = std::vector<std::pair<Offsets, bool>>;
char32_t decode_utf8_for_matches(std::string_view s, size_t i, size_t* len);
Matches regex_matches(const Regex& re, std::string_view text);
template <class Pred>
Matches char_matches(std::string_view text, Pred is_match);

class NormalizedString {
 public:
  NormalizedString() = default;
  explicit NormalizedString(std::string_view original);

  const std::string& get() const { return normalized_; }
  const std::string& original() const { return original_; }
  size_t original_shift() const { return original_shift_; }
  bool empty() const { return normalized_.empty(); }

  // Rewrites the whole text: see normalize_with_changes for the meaning of the changes;
  // `initial_offset` characters are removed before the first one.
  void transform(const std::vector<std::pair<char32_t, int>>& changes, size_t initial_offset);
  void prepend(std::string_view s);
  void replace(const Matches& matches, std::string_view content);
  void strip(bool left, bool right);
  template <class Keep>
  void filter(Keep keep);
  void lowercase();

  // Original byte range (relative to this piece's original) of a normalized range.
  std::optional<Offsets> convert_offsets(Offsets normalized) const;
  std::optional<NormalizedString> slice(Offsets normalized) const;
  std::vector<NormalizedString> split(const Matches& matches, SplitBehavior behavior) const;

 private:
  std::string original_;
  std::string normalized_;
  std::vector<Offsets> alignments_;  // one per byte of normalized_
  size_t original_shift_ = 0;
};

struct Split {
  NormalizedString normalized;
  std::optional<std::vector<Token>> tokens;
};

struct PreTokenizedString {
  std::vector<Split> splits;

  // Replaces each untokenized piece by what fn returns (empty pieces dropped).
  template <class Fn>
  void split(Fn fn) {
    std::vector<Split> out;
    out.reserve(splits.size());
    for (auto& s : splits) {
      if (s.tokens) {
        out.push_back(std::move(s));
        continue;
      }
      for (auto& piece : fn(std::move(s.normalized))) {
        if (!piece.normalized.empty()) out.push_back(std::move(piece));
      }
    }
    splits = std::move(out);
  }
};

std::vector<Split> as_splits(std::vector<NormalizedString> pieces);

template <class Pred>
Matches char_matches(std::string_view text, Pred is_match) {
  Matches out;
  if (text.empty()) return {{{0, 0}, false}};
  size_t last = 0;
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    char32_t c = decode_utf8_for_matches(text, i, &n);
    if (is_match(c)) {
      if (last < i) out.push_back({{last, i}, false});
      out.push_back({{i, i + n}, true});
      last = i + n;
    }
  }
  if (text.size() > last) out.push_back({{last, text.size()}, false});
  return out;
}

template <class Keep>
void NormalizedString::filter(Keep keep) {
  std::vector<std::pair<char32_t, int>> changes;
  int removed = 0;
  size_t removed_start = 0;
  std::optional<char32_t> last;
  for (size_t i = 0, n = 0; i < normalized_.size(); i += n) {
    char32_t c = decode_utf8_for_matches(normalized_, i, &n);
    if (keep(c)) {
      if (last) {
        changes.emplace_back(*last, -removed);
      } else {
        removed_start = static_cast<size_t>(removed);
      }
      last = c;
      removed = 0;
    } else {
      ++removed;
    }
  }
  if (last) changes.emplace_back(*last, -removed);
  transform(changes, removed_start);
}

}  // namespace wick::tokenizers::detail
