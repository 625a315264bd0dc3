// libFuzzer entry for Wick::tokenizers. An input "JSON \0 TEXT" is read as a tokenizer.json and,
// if it loads, TEXT is encoded with it; an input without a NUL byte is TEXT alone, encoded (alone
// and as a pair, with truncation and padding) and decoded by the checked-in tokenizers of
// tests/data/tokenizers. Loading may throw wick::tokenizers::Error, encoding only for text that
// is not UTF-8; any other exception, crash or sanitizer report is a bug. Seeds: fuzz/seeds/tokenizer.
#include "../tests/read_gz.hpp"
#include <wick/tokenizers/tokenizer.hpp>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using wick::tokenizers::Error;
using wick::tokenizers::Tokenizer;

using wick::test::read_gz;

const std::vector<Tokenizer>& fixtures() {
  static const std::vector<Tokenizer> all = [] {
    std::vector<Tokenizer> v;
    const std::string dir = WICK_FUZZ_TOKENIZER_DIR;
    v.push_back(Tokenizer::from_file(dir + "/bert/tokenizer.json"));
    for (const char* name : {"gpt2", "llama3", "llama2", "unigram_albert", "split_misc", "bpe_suffix"}) {
      std::string path = dir + "/" + name + "/tokenizer.json.gz";
      v.push_back(Tokenizer::from_json(read_gz(path), path));
    }
    return v;
  }();
  return all;
}

void exercise(Tokenizer tok, std::string_view text) {
  wick::tokenizers::Encoding e;
  try {
    e = tok.encode(text);
  } catch (const Error&) {
    return;  // not UTF-8
  }
  if (e.ids.size() != e.tokens.size() || e.ids.size() != e.offsets.size()) __builtin_trap();
  for (const auto& [start, end] : e.offsets)
    if (start > end || end > text.size()) __builtin_trap();
  (void)tok.decode(e.ids, true);
  wick::tokenizers::DecodeStream stream(tok, false);
  for (int32_t id : e.ids) (void)stream.step(id);
  wick::tokenizers::Truncation t;
  t.max_length = 9;
  t.stride = 2;
  tok.set_truncation(t);
  wick::tokenizers::Padding p;
  p.pad_to_multiple_of = 4;
  tok.set_padding(p);
  try {
    // A truncated pair overflows into the product of both sides' pieces (as in the package), so
    // the pair is made of a short prefix only.
    std::string_view head = text.substr(0, 96);
    std::string half(head.substr(0, head.size() / 2));
    (void)tok.encode_pair(half, head.substr(head.size() / 2));
  } catch (const Error&) {  // a cut inside a character, or a stride longer than what is left
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  if (nul == std::string_view::npos) {
    for (const Tokenizer& tok : fixtures()) exercise(tok, input);
    return 0;
  }
  try {
    Tokenizer tok = Tokenizer::from_json(std::string(input.substr(0, nul)), "fuzz");
    exercise(tok, input.substr(nul + 1));
  } catch (const Error&) {
  }
  return 0;
}
