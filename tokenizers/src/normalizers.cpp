// Normalizers: BertNormalizer, NFC/NFD/NFKC/NFKD, Lowercase, StripAccents, Strip, Replace, Prepend,
// Sequence — as the Rust package's normalizers/*.rs.
#include "components.hpp"
#include "unicode.hpp"

namespace wick::tokenizers::detail {
namespace {

void map_chars(NormalizedString& s, char32_t (*fn)(char32_t)) {
  std::vector<std::pair<char32_t, int>> changes;
  for (char32_t c : code_points(s.get())) changes.emplace_back(fn(c), 0);
  s.transform(changes, 0);
}

void apply_form(NormalizedString& s, NormalForm form) { s.transform(normalize_with_changes(s.get(), form), 0); }

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean, bool chinese, bool strip, bool lower)
      : clean_(clean), chinese_(chinese), strip_(strip), lower_(lower) {}
  void normalize(NormalizedString& s) const override {
    if (clean_) {
      s.filter([](char32_t c) {
        bool control = c != '\t' && c != '\n' && c != '\r' && is_other(c);
        return !(c == 0 || c == 0xFFFD || control);
      });
      map_chars(s, [](char32_t c) -> char32_t { return is_white_space(c) ? U' ' : c; });
    }
    if (chinese_) {
      std::vector<std::pair<char32_t, int>> changes;
      for (char32_t c : code_points(s.get())) {
        if (is_chinese_char(c)) {
          changes.emplace_back(U' ', 0);
          changes.emplace_back(c, 1);
          changes.emplace_back(U' ', 1);
        } else {
          changes.emplace_back(c, 0);
        }
      }
      s.transform(changes, 0);
    }
    if (strip_) {
      apply_form(s, NormalForm::NFD);
      s.filter([](char32_t c) { return !is_nonspacing_mark(c); });
    }
    if (lower_) s.lowercase();
  }

 private:
  bool clean_, chinese_, strip_, lower_;
};

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm f) : form_(f) {}
  void normalize(NormalizedString& s) const override { apply_form(s, form_); }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { s.lowercase(); }
};

class StripAccents final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override {
    s.filter([](char32_t c) { return !is_mark(c); });
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool l, bool r) : left_(l), right_(r) {}
  void normalize(NormalizedString& s) const override { s.strip(left_, right_); }

 private:
  bool left_, right_;
};

class Replace final : public Normalizer {
 public:
  Replace(Regex re, std::string content) : re_(std::move(re)), content_(std::move(content)) {}
  void normalize(NormalizedString& s) const override { s.replace(regex_matches(re_, s.get()), content_); }

 private:
  Regex re_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  void normalize(NormalizedString& s) const override { s.prepend(prepend_); }

 private:
  std::string prepend_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> items) : items_(std::move(items)) {}
  void normalize(NormalizedString& s) const override {
    for (const auto& n : items_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

}  // namespace
}  // namespace wick::tokenizers::detail

namespace wick::tokenizers::detail {

Regex parse_pattern(const json& j, const Where& w) {
  if (j.is_object() && j.size() == 1 && j.contains("String") && j["String"].is_string())
    return Regex::literal(j["String"].get<std::string>(), w.file + ": " + w.path);
  if (j.is_object() && j.size() == 1 && j.contains("Regex") && j["Regex"].is_string())
    return Regex(j["Regex"].get<std::string>(), w.file + ": " + w.path);
  w.fail("expected {\"String\": ...} or {\"Regex\": ...}, got " + j.dump());
}

std::unique_ptr<Normalizer> parse_normalizer(const json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "BertNormalizer") {
    bool lower = get_bool(j, "lowercase", w, true);
    bool strip = has(j, "strip_accents") ? get_bool(j, "strip_accents", w, lower) : lower;
    return std::make_unique<BertNormalizer>(get_bool(j, "clean_text", w, true),
                                            get_bool(j, "handle_chinese_chars", w, true), strip, lower);
  }
  if (type == "NFC") return std::make_unique<UnicodeForm>(NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip") {
    return std::make_unique<Strip>(get_bool(j, "strip_left", w, true), get_bool(j, "strip_right", w, true));
  }
  if (type == "Replace") {
    return std::make_unique<Replace>(parse_pattern(field(j, "pattern", w), w / "pattern"), get_string(j, "content", w));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(get_string(j, "prepend", w));
  if (type == "Sequence") return std::make_unique<Sequence>(parse_each<Normalizer>(j, "normalizers", w, parse_normalizer));
  unsupported_type("normalizer", type, w);
}

}  // namespace wick::tokenizers::detail
