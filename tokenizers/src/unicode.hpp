// Unicode helpers on UTF-8 text, all through utf8proc: decoding, character classes as the Rust
// `tokenizers` package defines them, case mapping and normal forms with the per-character size
// changes that NormalizedString::transform expects.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wick::tokenizers::detail {

// One code point at byte i of valid UTF-8; *len gets its size in bytes.
char32_t decode_utf8(std::string_view s, size_t i, size_t* len);
void append_utf8(std::string& out, char32_t c);
size_t utf8_size(char32_t c);
bool is_valid_utf8(std::string_view s);
std::vector<char32_t> code_points(std::string_view s);

bool is_white_space(char32_t c);      // Rust char::is_whitespace (White_Space)
bool is_alphanumeric(char32_t c);     // Rust char::is_alphanumeric
bool is_numeric(char32_t c);          // Rust char::is_numeric (Nd, Nl, No)
bool is_unicode_punctuation(char32_t c);  // general category P*
bool is_other(char32_t c);            // general category C* (unicode_categories' is_other)
bool is_mark(char32_t c);             // general category M*
bool is_nonspacing_mark(char32_t c);  // Mn
bool is_chinese_char(char32_t c);     // BERT's CJK ranges
void to_lowercase(char32_t c, std::vector<char32_t>& out);  // Rust char::to_lowercase

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// The text in the form, as (character, change) pairs: 0 replaces one input character, +1 is
// inserted, -n replaces one and removes n more (unicode-normalization-alignments' convention).
std::vector<std::pair<char32_t, int>> normalize_with_changes(std::string_view s, NormalForm form);

}  // namespace wick::tokenizers::detail
