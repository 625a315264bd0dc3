// Wick::tokenizers — Hugging Face `tokenizer.json` files read and run in C++, with the ids, tokens
// and byte offsets of the Rust `tokenizers` package (0.20.3).
//
// Pipeline (as the package's): the added tokens are split out of the input first; each remaining
// piece goes through the normalizer, the pre-tokenizer and the model (WordPiece, BPE or Unigram);
// the post-processor adds the special tokens of a template (BERT's [CLS] ... [SEP], Llama's <s>)
// and the type ids; truncation comes before the post-processor, padding after it. Decoding maps
// ids to tokens and runs the decoder chain (ByteLevel, Metaspace, WordPiece, ByteFallback ...).
//
// Supported JSON "type" names:
//   normalizers     BertNormalizer NFC NFD NFKC NFKD Lowercase StripAccents Strip Replace Prepend
//                   Sequence
//   pre_tokenizers  BertPreTokenizer Whitespace WhitespaceSplit ByteLevel Split Metaspace Digits
//                   Punctuation Sequence
//   models          WordPiece BPE (dropout null only) Unigram
//   post_processors BertProcessing RobertaProcessing TemplateProcessing ByteLevel Sequence
//   decoders        WordPiece ByteLevel Metaspace BPEDecoder Replace ByteFallback Fuse Strip
//                   Sequence
// Any other type, or a field value not implemented, is refused with an Error that names the field
// and the file; nothing is silently ignored. Not implemented (refused): the Precompiled
// normalizer (SentencePiece charsmaps: T5/ALBERT files need it replaced by NFKC), NMT, ByteLevel
// normalizer, WordLevel model, BPE dropout > 0, UnicodeScripts / CharDelimiterSplit / Split
// FixedLength pre-tokenizers, CTC decoder.
//
// Proof of equality: tests/test_tokenizers.cpp against tests/data/tokenizers (made by
// tokenizers/fixtures/make_fixtures.py with the package): every line of a 10,500-line corpus
// (many scripts, emoji sequences, Unicode spaces, control characters) gives the package's ids for
// twelve tokenizers (all-MiniLM-L6-v2's real file; trained GPT-2, Llama 3, Qwen2, Llama 2,
// Mistral, T5-, ALBERT- and CLIP-like ones and mixes of the other components); tokens, offsets,
// masks, decodes, pairs, padding and truncation on a subset. The corpus keeps to characters of
// Unicode 3.2 (plus emoji up to Unicode 8): newer characters may differ where the package's
// Unicode tables (unicode_categories, Oniguruma) are older than utf8proc's. Regular expressions are PCRE2 (UTF + UCP, JIT where
// available), Unicode data (normal forms, categories, case) is utf8proc's.
//
// Offsets are byte offsets into the text given to encode (the Python API of the package reports
// character offsets of the same spans).
//
// Thread safety: a const Tokenizer may be used from any number of threads at once (encode, decode,
// encode_batch); set_padding / set_truncation must not run concurrently with anything else.
// A Tokenizer is cheap to copy (its components are shared, immutable).
//
//   auto tok = wick::tokenizers::Tokenizer::from_file("all-MiniLM-L6-v2/tokenizer.json");
//   wick::tokenizers::Encoding e = tok.encode("Hello world");   // e.ids: 101 7592 2088 102, then
//                                                               // [PAD] 0 up to the file's 128
//   std::string text = tok.decode(e.ids);                       // "hello world"
//
//   wick::tokenizers::DecodeStream stream(tok);                  // generation: one id at a time
//   for (int32_t id : generated) if (auto piece = stream.step(id)) std::cout << *piece;
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wick::tokenizers {

// Every failure of this layer: a malformed or unsupported tokenizer.json (the message names the
// file and the JSON field), an id out of range, a text that is not UTF-8.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  std::vector<std::string> tokens;
  // [start, end) byte offsets into the encoded text (for a pair: into the text the token came
  // from); special tokens added by the post-processor and padding get (0, 0).
  std::vector<std::pair<size_t, size_t>> offsets;
  std::vector<int32_t> special_tokens_mask;  // 1 for tokens added by the post-processor / padding
  std::vector<int32_t> attention_mask;       // 0 for padding
  // Sequence index of each token (0 or 1 for a pair; nullopt for added special tokens).
  std::vector<std::optional<uint32_t>> sequence_ids;
  // Pieces cut off by truncation (with its stride), each an Encoding of its own.
  std::vector<Encoding> overflowing;

  size_t size() const { return ids.size(); }
};

struct Padding {
  enum class Side { Right, Left };
  Side side = Side::Right;
  std::optional<size_t> length;  // nullopt: the longest encoding of the batch
  int32_t pad_id = 0;
  int32_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
  size_t pad_to_multiple_of = 0;  // 0: none
};

struct Truncation {
  enum class Side { Right, Left };
  enum class Strategy { LongestFirst, OnlyFirst, OnlySecond };
  size_t max_length = 512;
  Side side = Side::Right;
  Strategy strategy = Strategy::LongestFirst;
  size_t stride = 0;
};

class TokenizerImpl;  // internal

class Tokenizer {
 public:
  // Reads a tokenizer.json; its "padding" and "truncation" fields become the defaults.
  static Tokenizer from_file(const std::string& path);
  // `where` names the source in error messages (a path, "<memory>").
  static Tokenizer from_json(const std::string& text, const std::string& where);

  Encoding encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_pair(std::string_view a, std::string_view b, bool add_special_tokens = true) const;
  // Each text encoded as by encode, then padding (if set) applied across the batch.
  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts,
                                     bool add_special_tokens = true) const;
  std::vector<Encoding> encode_batch_pairs(
      const std::vector<std::pair<std::string, std::string>>& pairs,
      bool add_special_tokens = true) const;

  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const;
  std::vector<std::string> decode_batch(const std::vector<std::vector<int32_t>>& batch,
                                        bool skip_special_tokens = true) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  size_t vocab_size(bool with_added_tokens = true) const;

  void set_padding(std::optional<Padding> padding);
  void set_truncation(std::optional<Truncation> truncation);
  const std::optional<Padding>& padding() const;
  const std::optional<Truncation>& truncation() const;

  Tokenizer(const Tokenizer&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
  Tokenizer(Tokenizer&&) noexcept = default;
  Tokenizer& operator=(Tokenizer&&) noexcept = default;
  ~Tokenizer();

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerImpl> impl);
  std::shared_ptr<const TokenizerImpl> impl_;
  std::optional<Padding> padding_;
  std::optional<Truncation> truncation_;
};

// Incremental decoding for generation, as the package's DecodeStream (0.21+): feed one id at a
// time; step returns the new text once it is complete UTF-8 (nullopt while a character is still
// being assembled from byte tokens). The stream keeps a reference to its Tokenizer.
class DecodeStream {
 public:
  explicit DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens = true);
  std::optional<std::string> step(int32_t id);

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace wick::tokenizers
