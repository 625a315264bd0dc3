#include "unicode.hpp"

#include <utf8proc.h>

#include <algorithm>

namespace wick::tokenizers::detail {

char32_t decode_utf8(std::string_view s, size_t i, size_t* len) {
  utf8proc_int32_t cp = 0;
  utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                        static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  if (n <= 0) {
    *len = 1;
    return 0xFFFD;
  }
  *len = static_cast<size_t>(n);
  return static_cast<char32_t>(cp);
}

void append_utf8(std::string& out, char32_t c) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

size_t utf8_size(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                          static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0, n = 0; i < s.size(); i += n) out.push_back(decode_utf8(s, i, &n));
  return out;
}

static utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

bool is_white_space(char32_t c) {
  if ((c >= 0x9 && c <= 0xD) || c == 0x85) return true;
  auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_alphanumeric(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool is_numeric(char32_t c) {
  auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_unicode_punctuation(char32_t c) {
  auto cat = category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_other(char32_t c) {
  auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_CN || (cat >= UTF8PROC_CATEGORY_CC && cat <= UTF8PROC_CATEGORY_CO);
}

bool is_mark(char32_t c) {
  auto cat = category(c);
  return cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME;
}

bool is_nonspacing_mark(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void to_lowercase(char32_t c, std::vector<char32_t>& out) {
  // The one unconditional multi-character lowercase mapping of SpecialCasing.txt, which Rust's
  // char::to_lowercase applies and utf8proc's simple mapping does not.
  if (c == 0x130) {
    out.push_back(0x69);
    out.push_back(0x307);
    return;
  }
  out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

static int combining_class(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

static void decompose_char(char32_t c, bool compat, std::vector<std::pair<char32_t, int>>& out) {
  utf8proc_int32_t buf[32];
  int options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
  utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf, 32,
                                               static_cast<utf8proc_option_t>(options), nullptr);
  if (n <= 0 || n > 32) {
    out.emplace_back(c, 0);
    return;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) out.emplace_back(static_cast<char32_t>(buf[k]), k == 0 ? 0 : 1);
}

// Canonical ordering: runs of non-starters sorted stably by combining class, changes travelling
// with their characters.
static void canonical_order(std::vector<std::pair<char32_t, int>>& v) {
  size_t i = 0;
  while (i < v.size()) {
    if (combining_class(v[i].first) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < v.size() && combining_class(v[j].first) != 0) ++j;
    std::stable_sort(v.begin() + static_cast<std::ptrdiff_t>(i), v.begin() + static_cast<std::ptrdiff_t>(j),
                     [](const auto& a, const auto& b) { return combining_class(a.first) < combining_class(b.first); });
    i = j;
  }
}

static char32_t compose_pair(char32_t a, char32_t b) {
  utf8proc_int32_t buf[2] = {static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b)};
  utf8proc_ssize_t n = utf8proc_normalize_utf32(buf, 2, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE));
  return n == 1 ? static_cast<char32_t>(buf[0]) : 0;
}

// Canonical composition (UAX #15): a composed character carries the changes of its parts, less
// one for each character it absorbed.
static void compose(std::vector<std::pair<char32_t, int>>& v) {
  std::vector<std::pair<char32_t, int>> out;
  out.reserve(v.size());
  std::ptrdiff_t starter = -1;
  int last_class = 0;  // of the last character kept after the starter
  for (const auto& item : v) {
    int cc = combining_class(item.first);
    if (starter >= 0) {
      bool adjacent = static_cast<size_t>(starter) + 1 == out.size();
      if (adjacent || (last_class != 0 && last_class < cc)) {
        auto& st = out[static_cast<size_t>(starter)];
        char32_t composed = compose_pair(st.first, item.first);
        if (composed != 0) {
          st.first = composed;
          st.second += item.second - 1;
          continue;
        }
      }
    }
    if (cc == 0) starter = static_cast<std::ptrdiff_t>(out.size());
    last_class = cc;
    out.push_back(item);
  }
  v = std::move(out);
}

std::vector<std::pair<char32_t, int>> normalize_with_changes(std::string_view s, NormalForm form) {
  bool compat = form == NormalForm::NFKC || form == NormalForm::NFKD;
  std::vector<std::pair<char32_t, int>> v;
  v.reserve(s.size());
  for (size_t i = 0, n = 0; i < s.size(); i += n) decompose_char(decode_utf8(s, i, &n), compat, v);
  canonical_order(v);
  if (form == NormalForm::NFC || form == NormalForm::NFKC) compose(v);
  return v;
}

}  // namespace wick::tokenizers::detail
