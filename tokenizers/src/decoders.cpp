// Decoders: WordPiece, ByteLevel, Metaspace, BPEDecoder, Replace, ByteFallback, Fuse, Strip,
// Sequence — as the Rust package's decoders/*.rs.
#include "byte_level.hpp"
#include "components.hpp"
#include "unicode.hpp"

namespace wick::tokenizers::detail {

// String::from_utf8_lossy: each maximal invalid prefix of a sequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view b) {
  std::string out;
  size_t i = 0;
  auto in = [](unsigned char c, int lo, int hi) { return c >= lo && c <= hi; };
  while (i < b.size()) {
    auto c = static_cast<unsigned char>(b[i]);
    size_t width = c < 0x80 ? 1 : in(c, 0xC2, 0xDF) ? 2 : in(c, 0xE0, 0xEF) ? 3 : in(c, 0xF0, 0xF4) ? 4 : 0;
    size_t ok = width == 0 ? 0 : 1;
    for (size_t k = 1; k < width && ok == k; ++k) {
      if (i + k >= b.size()) break;
      auto d = static_cast<unsigned char>(b[i + k]);
      int lo = 0x80, hi = 0xBF;
      if (k == 1) {
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
      }
      if (in(d, lo, hi)) ++ok;
    }
    if (width != 0 && ok == width) {
      out.append(b.substr(i, width));
      i += width;
    } else {
      out += "\xEF\xBF\xBD";
      i += ok == 0 ? 1 : ok;
    }
  }
  return out;
}

namespace {

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  std::string out;
  size_t i = 0;
  for (size_t j; (j = s.find(from, i)) != std::string::npos; i = j + from.size()) {
    out.append(s, i, j - i);
    out.append(to);
  }
  out.append(s, i, std::string::npos);
  return out;
}

class WordPieceDec final : public Decoder {
 public:
  WordPieceDec(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.rfind(prefix_, 0) == 0) {
          t = t.substr(prefix_.size());
        } else {
          t = " " + t;
        }
      }
      if (cleanup_) t = cleanup(t);
    }
    return tokens;
  }
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_all(std::move(s), from, to);
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class ByteLevelDec final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      std::string mapped;
      bool all = true;
      for (char32_t c : code_points(t)) {
        auto b = char_to_byte(c);
        if (!b) {
          all = false;
          break;
        }
        mapped += static_cast<char>(*b);
      }
      bytes += all ? mapped : t;
    }
    return {utf8_lossy(bytes)};
  }
};

class MetaspaceDec final : public Decoder {
 public:
  MetaspaceDec(char32_t rep, bool prepend_never) : rep_(rep), never_(prepend_never) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (char32_t c : code_points(tokens[i])) {
        if (c == rep_) {
          if (!(i == 0 && !never_)) out += ' ';
        } else {
          append_utf8(out, c);
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  char32_t rep_;
  bool never_;
};

class BpeDec final : public Decoder {
 public:
  explicit BpeDec(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    return tokens;
  }

 private:
  std::string suffix_;
};

class ReplaceDec final : public Decoder {
 public:
  ReplaceDec(Regex re, std::string content) : re_(std::move(re)), content_(std::move(content)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) {
      std::string out;
      size_t last = 0;
      for (auto [s, e] : re_.find_all(t)) {
        out.append(t, last, s - last);
        out += content_;
        last = e;
      }
      out.append(t, last, std::string::npos);
      t = std::move(out);
    }
    return tokens;
  }

 private:
  Regex re_;
  std::string content_;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class ByteFallbackDec final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&]() {
      if (pending.empty()) return;
      if (is_valid_utf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (auto& t : tokens) {
      if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>' && hex_value(t[3]) >= 0 && hex_value(t[4]) >= 0) {
        pending += static_cast<char>(hex_value(t[3]) * 16 + hex_value(t[4]));
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    return out;
  }
};

class FuseDec final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
};

class StripDec final : public Decoder {
 public:
  StripDec(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) {
      auto cps = code_points(t);
      size_t start_cut = 0;
      for (size_t i = 0; i < cps.size() && i < start_ && cps[i] == content_; ++i) start_cut = i + 1;
      size_t stop_cut = cps.size();
      for (size_t i = 0; i < cps.size() && i < stop_ && cps[cps.size() - 1 - i] == content_; ++i) stop_cut = cps.size() - i - 1;
      std::string out;
      for (size_t i = start_cut; i < stop_cut; ++i) append_utf8(out, cps[i]);
      t = std::move(out);
    }
    return tokens;
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class SequenceDec final : public Decoder {
 public:
  explicit SequenceDec(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& d : items_) tokens = d->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

char32_t one_char(const json& j, const char* key, const Where& w, const char* fallback) {
  std::string s = has(j, key) ? get_string(j, key, w) : fallback;
  auto cps = code_points(s);
  if (cps.size() != 1) (w / key).fail("expected one character, got '" + s + "'");
  return cps[0];
}

size_t get_size(const json& j, const char* key, const Where& w) {
  int64_t v = get_int(j, key, w);
  if (v < 0) (w / key).fail("must not be negative");
  return static_cast<size_t>(v);
}

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDec>(has(j, "prefix") ? get_string(j, "prefix", w) : "##", get_bool(j, "cleanup", w, true));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDec>();
  if (type == "Metaspace") {
    bool never = false;
    if (has(j, "prepend_scheme")) {
      std::string s = get_string(j, "prepend_scheme", w);
      if (s != "always" && s != "first" && s != "never") (w / "prepend_scheme").fail("unsupported value '" + s + "'");
      never = s == "never";
    } else if (has(j, "add_prefix_space")) {
      never = !get_bool(j, "add_prefix_space", w, true);
    }
    return std::make_unique<MetaspaceDec>(one_char(j, "replacement", w, "\xE2\x96\x81"), never);
  }
  if (type == "BPEDecoder") return std::make_unique<BpeDec>(has(j, "suffix") ? get_string(j, "suffix", w) : "</w>");
  if (type == "Replace") return std::make_unique<ReplaceDec>(parse_pattern(field(j, "pattern", w), w / "pattern"), get_string(j, "content", w));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDec>();
  if (type == "Fuse") return std::make_unique<FuseDec>();
  if (type == "Strip") return std::make_unique<StripDec>(one_char(j, "content", w, " "), get_size(j, "start", w), get_size(j, "stop", w));
  if (type == "Sequence") return std::make_unique<SequenceDec>(parse_each<Decoder>(j, "decoders", w, parse_decoder));
  unsupported_type("decoder", type, w);
}

}  // namespace wick::tokenizers::detail
