// terminal.hpp — what the wick CLI writes never carries control characters from its inputs.
//
// Plugin names, reasons, config keys and file contents end up in messages; a config or manifest
// holding "\x1b]0;..." or "\x1b[2J" would otherwise drive the user's terminal. EscapeControls
// wraps a stream's buffer for its lifetime: C0 controls other than newline, tab and carriage
// return, DEL, and the C1 controls (U+0080..U+009F in UTF-8) are written as visible escapes
// ("\x1b", "\u009b"); everything else passes through unchanged.
#pragma once

#include <cstdio>
#include <ostream>
#include <streambuf>

namespace wick::cli {

class EscapeControls : public std::streambuf {
 public:
  explicit EscapeControls(std::ostream& stream) : stream_(stream), target_(stream.rdbuf()) { stream_.rdbuf(this); }
  ~EscapeControls() override {
    if (lead_) target_->sputc(static_cast<char>(0xC2));
    stream_.rdbuf(target_);
  }
  EscapeControls(const EscapeControls&) = delete;
  EscapeControls& operator=(const EscapeControls&) = delete;

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const auto c = static_cast<unsigned char>(traits_type::to_char_type(ch));
    if (lead_) {  // a 0xC2 seen: a C1 control follows, or an ordinary two-byte character
      lead_ = false;
      if (c >= 0x80 && c <= 0x9F) return escape("\\u%04x", c);
      if (target_->sputc(static_cast<char>(0xC2)) == traits_type::eof()) return traits_type::eof();
    }
    if (c == 0xC2) {
      lead_ = true;
      return ch;
    }
    const bool control = (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7F;
    if (control) return escape("\\x%02x", c);
    return target_->sputc(static_cast<char>(c));
  }
  int sync() override { return target_->pubsync(); }

 private:
  int_type escape(const char* format, unsigned char c) {
    char text[8];
    const int n = std::snprintf(text, sizeof text, format, c);
    return target_->sputn(text, n) == n ? traits_type::to_int_type(static_cast<char>(c)) : traits_type::eof();
  }

  std::ostream& stream_;
  std::streambuf* target_;
  bool lead_ = false;
};

}  // namespace wick::cli
