// GPT-2's reversible map of the 256 bytes onto printable characters (bytes_to_unicode).
#pragma once

#include <cstdint>
#include <optional>

namespace wick::tokenizers::detail {

char32_t byte_to_char(uint8_t b);
std::optional<uint8_t> char_to_byte(char32_t c);

// GPT-2's pre-tokenization pattern, used by ByteLevel with use_regex.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace wick::tokenizers::detail
