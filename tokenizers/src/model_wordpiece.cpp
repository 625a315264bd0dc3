// WordPiece: greedy longest-match-first, as models/wordpiece/mod.rs.
#include <cstdint>

#include "components.hpp"
#include "models.hpp"
#include "unicode.hpp"
#include "vocab.hpp"

namespace wick::tokenizers::detail {
namespace {

class WordPiece final : public Model {
 public:
  WordPiece(Vocab v, std::string unk, std::string prefix, size_t max_chars)
      : vocab_(std::move(v)), unk_(std::move(unk)), prefix_(std::move(prefix)), max_chars_(max_chars) {}

  std::vector<Token> tokenize(std::string_view seq) const override {
    if (code_points(seq).size() > max_chars_) return {unk_token(seq)};
    std::vector<Token> out;
    size_t start = 0;
    while (start < seq.size()) {
      size_t end = seq.size();
      bool found = false;
      while (start < end) {
        std::string sub = start > 0 ? prefix_ + std::string(seq.substr(start, end - start)) : std::string(seq.substr(start, end - start));
        if (auto id = vocab_.find(sub)) {
          out.push_back(Token{*id, sub, {start, end}});
          found = true;
          break;
        }
        // Back off one character (the last one of the candidate).
        size_t k = end - 1;
        while (k > start && (static_cast<unsigned char>(seq[k]) & 0xC0) == 0x80) --k;
        end = k;
      }
      if (!found) return {unk_token(seq)};
      start = end;
    }
    return out;
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab_.find(t); }
  std::optional<std::string> id_to_token(int32_t id) const override { return vocab_.token(id); }
  size_t vocab_size() const override { return vocab_.size(); }

 private:
  Token unk_token(std::string_view seq) const {
    auto id = vocab_.find(unk_);
    if (!id) throw Error("WordPiece: the unk token '" + unk_ + "' is not in the vocabulary");
    return Token{*id, unk_, {0, seq.size()}};
  }
  Vocab vocab_;
  std::string unk_, prefix_;
  size_t max_chars_;
};

}  // namespace

Vocab parse_vocab_object(const json& j, const Where& w) {
  if (!j.is_object()) w.fail("expected an object of token: id");
  Vocab v;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const json& id = it.value();
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      (w / it.key()).fail("expected a non-negative 32-bit integer id, got " + id.dump());
    v.add(it.key(), id.get<int32_t>());
  }
  return v;
}

std::unique_ptr<Model> parse_wordpiece(const json& j, const Where& w) {
  Vocab v = parse_vocab_object(field(j, "vocab", w), w / "vocab");
  std::string unk = has(j, "unk_token") ? get_string(j, "unk_token", w) : "[UNK]";
  std::string prefix = has(j, "continuing_subword_prefix") ? get_string(j, "continuing_subword_prefix", w) : "##";
  size_t max_chars = has(j, "max_input_chars_per_word") ? static_cast<size_t>(get_int(j, "max_input_chars_per_word", w)) : 100;
  return std::make_unique<WordPiece>(std::move(v), unk, prefix, max_chars);
}

std::unique_ptr<Model> parse_model(const json& j, const Where& w) {
  std::string type = has(j, "type") ? type_of(j, w) : "";
  if (type == "WordPiece") return parse_wordpiece(j, w);
  if (type == "BPE") return parse_bpe(j, w);
  if (type == "Unigram") return parse_unigram(j, w);
  unsupported_type("model", type, w);
}

}  // namespace wick::tokenizers::detail
