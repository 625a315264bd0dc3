#include "byte_level.hpp"

#include <array>

namespace wick::tokenizers::detail {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  Tables() {
    std::array<bool, 256> printable{};
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) to_char[b] = printable[b] ? static_cast<char32_t>(b) : next++;
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return tables().to_char[b]; }

std::optional<uint8_t> char_to_byte(char32_t c) {
  if (c < 256) {
    bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
    if (printable) return static_cast<uint8_t>(c);
    return std::nullopt;
  }
  if (c >= 256 && c < 256 + 68) {
    for (int b = 0; b < 256; ++b)
      if (tables().to_char[b] == c) return static_cast<uint8_t>(b);
  }
  return std::nullopt;
}

}  // namespace wick::tokenizers::detail
