#include "normalized.hpp"

#include <algorithm>

#include "unicode.hpp"

namespace wick::tokenizers::detail {

char32_t decode_utf8_for_matches(std::string_view s, size_t i, size_t* len) { return decode_utf8(s, i, len); }

Matches regex_matches(const Regex& re, std::string_view text) {
  if (text.empty()) return {{{0, 0}, false}};
  Matches out;
  size_t prev = 0;
  for (auto [s, e] : re.find_all(text)) {
    if (prev != s) out.push_back({{prev, s}, false});
    out.push_back({{s, e}, true});
    prev = e;
  }
  if (prev != text.size()) out.push_back({{prev, text.size()}, false});
  return out;
}

NormalizedString::NormalizedString(std::string_view original) : original_(original), normalized_(original) {
  alignments_.reserve(original.size());
  for (size_t i = 0, n = 0; i < original.size(); i += n) {
    decode_utf8(original, i, &n);
    for (size_t k = 0; k < n; ++k) alignments_.emplace_back(i, i + n);
  }
}

void NormalizedString::transform(const std::vector<std::pair<char32_t, int>>& changes, size_t initial_offset) {
  std::vector<size_t> old_sizes;  // byte size of each old character, in order
  for (size_t i = 0, n = 0; i < normalized_.size(); i += n) {
    decode_utf8(normalized_, i, &n);
    old_sizes.push_back(n);
  }
  size_t next_old = 0, offset = 0;
  auto consume = [&](size_t count) {
    for (size_t k = 0; k < count && next_old < old_sizes.size(); ++k) offset += old_sizes[next_old++];
  };
  consume(initial_offset);
  std::string out;
  std::vector<Offsets> aligns;
  out.reserve(normalized_.size());
  aligns.reserve(normalized_.size());
  for (const auto& [c, change] : changes) {
    Offsets align{0, 0};
    if (change > 0) {
      if (offset >= 1 && offset - 1 < alignments_.size()) align = alignments_[offset - 1];
    } else if (offset < alignments_.size()) {
      align = alignments_[offset];
    } else if (!alignments_.empty()) {
      align = alignments_.back();
    }
    if (change <= 0) consume(1);
    if (change < 0) consume(static_cast<size_t>(-change));
    size_t before = out.size();
    append_utf8(out, c);
    aligns.insert(aligns.end(), out.size() - before, align);
  }
  normalized_ = std::move(out);
  alignments_ = std::move(aligns);
}

void NormalizedString::prepend(std::string_view s) {
  if (normalized_.empty()) return;
  std::vector<std::pair<char32_t, int>> changes;
  bool first = true;
  for (char32_t c : code_points(s)) {
    changes.emplace_back(c, first ? 0 : 1);
    first = false;
  }
  bool head = true;
  for (char32_t c : code_points(normalized_)) {
    changes.emplace_back(c, head ? 1 : 0);
    head = false;
  }
  transform(changes, 0);
}

void NormalizedString::replace(const Matches& matches, std::string_view content) {
  std::string out;
  std::vector<Offsets> aligns;
  size_t last_end = 0;
  for (const auto& [range, is_match] : matches) {
    if (!is_match) continue;
    auto [start, end] = range;
    out.append(normalized_, last_end, start - last_end);
    aligns.insert(aligns.end(), alignments_.begin() + static_cast<std::ptrdiff_t>(last_end),
                  alignments_.begin() + static_cast<std::ptrdiff_t>(start));
    // Every replacing character is "inserted" after the whole match: it takes the alignment of
    // the match's last byte.
    Offsets align = end >= 1 ? alignments_[end - 1] : Offsets{0, 0};
    size_t before = out.size();
    out.append(content);
    aligns.insert(aligns.end(), out.size() - before, align);
    last_end = end;
  }
  out.append(normalized_, last_end, std::string::npos);
  aligns.insert(aligns.end(), alignments_.begin() + static_cast<std::ptrdiff_t>(last_end), alignments_.end());
  normalized_ = std::move(out);
  alignments_ = std::move(aligns);
}

void NormalizedString::strip(bool left, bool right) {
  std::vector<char32_t> cps = code_points(normalized_);
  size_t leading = 0, trailing = 0;
  if (left)
    while (leading < cps.size() && is_white_space(cps[leading])) ++leading;
  if (right)
    while (trailing < cps.size() && is_white_space(cps[cps.size() - 1 - trailing])) ++trailing;
  if (leading == 0 && trailing == 0) return;
  std::vector<std::pair<char32_t, int>> changes;
  // The package compares the character index with the byte length here; kept as it is.
  auto last_index = static_cast<std::ptrdiff_t>(normalized_.size()) - static_cast<std::ptrdiff_t>(trailing) - 1;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i < leading || i + trailing >= cps.size()) continue;
    int change = static_cast<std::ptrdiff_t>(i) == last_index ? -static_cast<int>(trailing) : 0;
    changes.emplace_back(cps[i], change);
  }
  transform(changes, leading);
}

void NormalizedString::lowercase() {
  std::vector<std::pair<char32_t, int>> changes;
  std::vector<char32_t> lower;
  for (char32_t c : code_points(normalized_)) {
    lower.clear();
    to_lowercase(c, lower);
    for (size_t k = 0; k < lower.size(); ++k) changes.emplace_back(lower[k], k > 0 ? 1 : 0);
  }
  transform(changes, 0);
}

std::optional<Offsets> NormalizedString::convert_offsets(Offsets r) const {
  if (r.first == r.second) return r;
  if (r.first > r.second) return std::nullopt;
  if (normalized_.empty()) return Offsets{0, original_.size()};
  if (r.second > alignments_.size()) return std::nullopt;
  return Offsets{alignments_[r.first].first, alignments_[r.second - 1].second};
}

std::optional<NormalizedString> NormalizedString::slice(Offsets r) const {
  auto o = convert_offsets(r);
  if (!o || r.second > normalized_.size() || o->second > original_.size()) return std::nullopt;
  NormalizedString s;
  s.original_ = original_.substr(o->first, o->second - o->first);
  s.normalized_ = normalized_.substr(r.first, r.second - r.first);
  s.alignments_.reserve(r.second - r.first);
  for (size_t i = r.first; i < r.second; ++i)
    s.alignments_.emplace_back(alignments_[i].first - o->first, alignments_[i].second - o->first);
  s.original_shift_ = original_shift_ + o->first;
  return s;
}

std::vector<NormalizedString> NormalizedString::split(const Matches& matches, SplitBehavior behavior) const {
  std::vector<std::pair<Offsets, bool>> splits;  // (range, remove)
  bool previous = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& m : matches) splits.push_back({m.first, false});
      break;
    case SplitBehavior::Removed:
      splits = matches;
      break;
    case SplitBehavior::Contiguous:
      for (const auto& [r, is_match] : matches) {
        if (is_match == previous && !splits.empty()) {
          splits.back().first.second = r.second;
        } else {
          splits.push_back({r, false});
        }
        previous = is_match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& [r, is_match] : matches) {
        if (is_match && !previous && !splits.empty()) {
          splits.back().first.second = r.second;
        } else {
          splits.push_back({r, false});
        }
        previous = is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->second && !previous && !splits.empty()) {
          splits.back().first.first = it->first.first;
        } else {
          splits.push_back({it->first, false});
        }
        previous = it->second;
      }
      std::reverse(splits.begin(), splits.end());
      break;
  }
  std::vector<NormalizedString> out;
  for (const auto& [r, remove] : splits) {
    if (remove) continue;
    auto s = slice(r);
    if (s) out.push_back(std::move(*s));
  }
  return out;
}

std::vector<Split> as_splits(std::vector<NormalizedString> pieces) {
  std::vector<Split> out;
  out.reserve(pieces.size());
  for (auto& p : pieces) out.push_back(Split{std::move(p), std::nullopt});
  return out;
}

}  // namespace wick::tokenizers::detail
