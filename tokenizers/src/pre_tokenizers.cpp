// Pre-tokenizers: BertPreTokenizer, Whitespace, WhitespaceSplit, ByteLevel, Split, Metaspace,
// Digits, Punctuation, Sequence — as the Rust package's pre_tokenizers/*.rs.
#include "byte_level.hpp"
#include "components.hpp"
#include "unicode.hpp"

namespace wick::tokenizers::detail {

bool is_bert_punctuation(char32_t c) {
  bool ascii = c < 0x80 && ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126));
  return ascii || is_unicode_punctuation(c);
}

namespace {

std::vector<Split> split_by(NormalizedString&& s, const Matches& m, SplitBehavior b) { return as_splits(s.split(m, b)); }

class BertPre final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenizedString& p) const override {
    p.split([](NormalizedString&& s) { return split_by(std::move(s), char_matches(s.get(), is_white_space), SplitBehavior::Removed); });
    p.split([](NormalizedString&& s) { return split_by(std::move(s), char_matches(s.get(), is_bert_punctuation), SplitBehavior::Isolated); });
  }
};

class CharSplit final : public PreTokenizer {
 public:
  CharSplit(bool (*pred)(char32_t), SplitBehavior b) : pred_(pred), behavior_(b) {}
  void pre_tokenize(PreTokenizedString& p) const override {
    p.split([this](NormalizedString&& s) { return split_by(std::move(s), char_matches(s.get(), pred_), behavior_); });
  }

 private:
  bool (*pred_)(char32_t);
  SplitBehavior behavior_;
};

class RegexSplit final : public PreTokenizer {
 public:
  RegexSplit(Regex re, SplitBehavior b, bool invert) : re_(std::move(re)), behavior_(b), invert_(invert) {}
  void pre_tokenize(PreTokenizedString& p) const override {
    p.split([this](NormalizedString&& s) {
      Matches m = regex_matches(re_, s.get());
      if (invert_)
        for (auto& x : m) x.second = !x.second;
      return split_by(std::move(s), m, behavior_);
    });
  }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

void bytes_to_chars(NormalizedString& s) {
  std::vector<std::pair<char32_t, int>> changes;
  const std::string& t = s.get();
  changes.reserve(t.size());
  for (size_t i = 0, n = 0; i < t.size(); i += n) {
    decode_utf8(t, i, &n);
    for (size_t k = 0; k < n; ++k) changes.emplace_back(byte_to_char(static_cast<uint8_t>(t[i + k])), k > 0 ? 1 : 0);
  }
  s.transform(changes, 0);
}

class ByteLevelPre final : public PreTokenizer {
 public:
  ByteLevelPre(bool prefix, bool use_regex, const Where& w)
      : prefix_(prefix), use_regex_(use_regex), re_(kGpt2Pattern, w.file + ": " + w.path) {}
  void pre_tokenize(PreTokenizedString& p) const override {
    p.split([this](NormalizedString&& s) {
      if (prefix_ && s.get().rfind(' ', 0) != 0) s.prepend(" ");
      if (use_regex_) return split_by(std::move(s), regex_matches(re_, s.get()), SplitBehavior::Isolated);
      std::vector<Split> one;
      one.push_back(Split{std::move(s), std::nullopt});
      return one;
    });
    for (auto& sp : p.splits)
      if (!sp.tokens) bytes_to_chars(sp.normalized);
  }

 private:
  bool prefix_, use_regex_;
  Regex re_;
};

enum class Prepend { Always, First, Never };

class MetaspacePre final : public PreTokenizer {
 public:
  MetaspacePre(char32_t rep, Prepend scheme, bool split) : rep_(rep), scheme_(scheme), split_(split) { append_utf8(rep_str_, rep); }
  void pre_tokenize(PreTokenizedString& p) const override {
    p.split([this](NormalizedString&& s) {
      s.replace(char_matches(s.get(), [](char32_t c) { return c == U' '; }), rep_str_);
      bool starts = s.get().rfind(rep_str_, 0) == 0;
      if (!starts && (scheme_ == Prepend::Always || (scheme_ == Prepend::First && s.original_shift() == 0)))
        s.prepend(rep_str_);
      if (split_) {
        char32_t r = rep_;
        return split_by(std::move(s), char_matches(s.get(), [r](char32_t c) { return c == r; }), SplitBehavior::MergedWithNext);
      }
      std::vector<Split> one;
      one.push_back(Split{std::move(s), std::nullopt});
      return one;
    });
  }

 private:
  char32_t rep_;
  std::string rep_str_;
  Prepend scheme_;
  bool split_;
};

class SequencePre final : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> items) : items_(std::move(items)) {}
  void pre_tokenize(PreTokenizedString& p) const override {
    for (const auto& t : items_) t->pre_tokenize(p);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> items_;
};

SplitBehavior parse_behavior(const json& j, const char* key, const Where& w, SplitBehavior fallback) {
  if (!has(j, key)) return fallback;
  std::string b = get_string(j, key, w);
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  (w / key).fail("unsupported split behavior '" + b + "'");
}

char32_t parse_replacement(const json& j, const Where& w) {
  std::string r = has(j, "replacement") ? get_string(j, "replacement", w) : "\xE2\x96\x81";
  auto cps = code_points(r);
  if (cps.size() != 1) (w / "replacement").fail("expected one character, got '" + r + "'");
  return cps[0];
}

std::unique_ptr<PreTokenizer> parse_metaspace(const json& j, const Where& w) {
  Prepend scheme = Prepend::Always;
  if (has(j, "prepend_scheme")) {
    std::string s = get_string(j, "prepend_scheme", w);
    if (s == "always") scheme = Prepend::Always;
    else if (s == "first") scheme = Prepend::First;
    else if (s == "never") scheme = Prepend::Never;
    else (w / "prepend_scheme").fail("unsupported value '" + s + "'");
  } else if (has(j, "add_prefix_space")) {
    scheme = get_bool(j, "add_prefix_space", w, true) ? Prepend::Always : Prepend::Never;
  }
  return std::make_unique<MetaspacePre>(parse_replacement(j, w), scheme, get_bool(j, "split", w, true));
}

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "BertPreTokenizer") return std::make_unique<BertPre>();
  if (type == "Whitespace") {
    // Rust regex's \w+|[^\w\s]+ kept, the rest (whitespace) removed. This one is the regex
    // crate's (its \w has Alphabetic and the joiners, its \s is White_Space), not Oniguruma's.
    return std::make_unique<RegexSplit>(
        Regex(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}\p{White_Space}]+)", w.file),
        SplitBehavior::Removed, true);
  }
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(is_white_space, SplitBehavior::Removed);
  if (type == "Punctuation") {
    return std::make_unique<CharSplit>(is_bert_punctuation, parse_behavior(j, "behavior", w, SplitBehavior::Isolated));
  }
  if (type == "Digits") {
    bool individual = get_bool(j, "individual_digits", w, false);
    return std::make_unique<CharSplit>(is_numeric, individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPre>(get_bool(j, "add_prefix_space", w, true), get_bool(j, "use_regex", w, true), w);
  }
  if (type == "Split") {
    Regex re = parse_pattern(field(j, "pattern", w), w / "pattern");
    SplitBehavior b = parse_behavior(j, "behavior", w, SplitBehavior::Removed);
    if (!has(j, "behavior")) (w / "behavior").fail("missing");
    return std::make_unique<RegexSplit>(std::move(re), b, get_bool(j, "invert", w, false));
  }
  if (type == "Metaspace") return parse_metaspace(j, w);
  if (type == "Sequence") return std::make_unique<SequencePre>(parse_each<PreTokenizer>(j, "pretokenizers", w, parse_pre_tokenizer));
  unsupported_type("pre_tokenizer", type, w);
}

}  // namespace wick::tokenizers::detail
