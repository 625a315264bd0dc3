// text.hpp — small string helpers shared inside libwick (not installed, not part of the API).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

inline char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return ascii_lower(c); });
  return out;
}

// `s` without leading and trailing spaces and tabs.
inline std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

// Splits on `separator` and trims each piece; empty pieces are kept so callers can reject them.
inline std::vector<std::string> split(std::string_view s, char separator) {
  std::vector<std::string> pieces;
  for (;;) {
    const auto at = s.find(separator);
    pieces.emplace_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return pieces;
    s.remove_prefix(at + 1);
  }
}

inline std::string join(const std::vector<std::string>& pieces, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out += separator;
    out += pieces[i];
  }
  return out;
}

// `s` as one word of a POSIX shell command: as it is when nothing in it is special, else in
// single quotes.
inline std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\*?[]$;&|<>()`!#~{}") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Damerau-Levenshtein distance (optimal string alignment): insertions, deletions, substitutions
// and transpositions of two adjacent characters each cost 1, so "wran" is 1 away from "warn".
// ASCII case is ignored: "Priority" is 0 away from "priority".
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  // Three rows suffice: the transposition step looks back two rows.
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = ascii_lower(a[i - 1]) == ascii_lower(b[j - 1]);
      current[j] =
          std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && ascii_lower(a[i - 1]) == ascii_lower(b[j - 2]) &&
          ascii_lower(a[i - 2]) == ascii_lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

}  // namespace wick::text
