// base64.hpp — the RFC 4648 decoder for the golden files' binary payloads.
#pragma once

#include <string>
#include <vector>

namespace wick::conformance {

// Decodes standard base64 (padding optional); characters outside the alphabet are skipped.
inline std::vector<unsigned char> base64_decode(const std::string& text) {
  static const auto table = [] {
    std::vector<int> t(256, -1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = i;
    return t;
  }();
  std::vector<unsigned char> out;
  out.reserve(text.size() / 4 * 3);
  unsigned int buffer = 0;
  int bits = 0;
  for (unsigned char c : text) {
    const int v = table[c];
    if (v < 0) continue;
    buffer = (buffer << 6) | static_cast<unsigned int>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((buffer >> bits) & 0xFFu));
    }
  }
  return out;
}

}  // namespace wick::conformance
