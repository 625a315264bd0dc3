#include "regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <wick/tokenizers/tokenizer.hpp>

#include <cctype>

#include "unicode.hpp"

namespace wick::tokenizers::detail {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Oniguruma's Unicode \s: 0009-000D, 0085 and the separators (Z*); \w: letters, marks, numbers,
// connector punctuation. PCRE2 10.42's UCP \s adds U+180E and its \w leaves out the marks.
constexpr const char* kSpaceSet = "\\x{09}-\\x{0D}\\x{85}\\p{Z}";
constexpr const char* kWordSet = "\\p{L}\\p{M}\\p{N}\\p{Pc}";

std::string translate(const std::string& p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      std::string set = n == 's' || n == 'S' ? kSpaceSet : n == 'w' || n == 'W' ? kWordSet : "";
      bool negated = n == 'S' || n == 'W';
      if (!set.empty() && (in_class ? !negated : true)) {
        out += in_class ? set : (negated ? "[^" : "[") + set + "]";
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

// A match that fails (match or JIT stack limits on a huge input) is an error, never a silent
// "no more matches".
[[noreturn]] void fail_match(const std::string& pattern, int rc) {
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(rc, msg, sizeof(msg));
  throw Error("regular expression '" + pattern + "' failed: " + reinterpret_cast<const char*>(msg));
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where) : pattern_(pattern), code_(new Code) {
  std::string translated = translate(pattern);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (code_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    throw Error(where + ": regular expression '" + pattern + "' does not compile: " +
                reinterpret_cast<const char*>(msg) + " (at offset " + std::to_string(err_off) + ")");
  }
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);  // a failure leaves the interpreter
}

Regex Regex::literal(std::string_view text, const std::string& where) {
  std::string escaped;  // every ASCII punctuation character escaped (regex::escape)
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != ' ' && c != '_' && std::isprint(u)) escaped += '\\';
    escaped += c;
  }
  return Regex(escaped, where);
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  size_t pos = 0;
  std::optional<size_t> last_match_end;
  while (pos <= text.size()) {
    int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                         PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      fail_match(pattern_, rc);
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (s == e) {
      // An empty match right after the previous one is skipped (Oniguruma's find_iter).
      size_t step = 1;
      if (e < text.size()) decode_utf8(text, e, &step);
      bool skip = last_match_end && *last_match_end == e;
      pos = e + step;
      if (skip) continue;
      out.emplace_back(s, e);
      last_match_end = e;
      continue;
    }
    out.emplace_back(s, e);
    last_match_end = e;
    pos = e;
  }
  pcre2_match_data_free(md);
  return out;
}

bool Regex::search(std::string_view text, size_t* match_start, size_t* match_end) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                       PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
    pcre2_match_data_free(md);
    fail_match(pattern_, rc);
  }
  if (rc >= 0) {
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (match_start) *match_start = ov[0];
    if (match_end) *match_end = ov[1];
  }
  pcre2_match_data_free(md);
  return rc >= 0;
}

}  // namespace wick::tokenizers::detail
