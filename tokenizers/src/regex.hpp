// PCRE2 (UTF + UCP, JIT where available) behind the one operation the pipeline needs: every
// non-overlapping match in a text, as Oniguruma's find_iter reports them. Patterns written for
// Oniguruma or Rust's regex crate are translated first so that \s, \S, \w and \W mean what they
// mean there rather than PCRE2's narrower classes.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wick::tokenizers::detail {

class Regex {
 public:
  // Throws Error (naming `where`) when the pattern does not compile.
  Regex(const std::string& pattern, const std::string& where);
  static Regex literal(std::string_view text, const std::string& where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Byte ranges of all matches; thread-safe (match data is per call).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // Whether the pattern matches starting at or after `start` (anchoring is up to the pattern).
  bool search(std::string_view text, size_t* match_start, size_t* match_end) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

}  // namespace wick::tokenizers::detail
