// Text generation with a causal LM directory (Llama-family or GPT-2 with tokenizer.json): the
// prompt is tokenized, generate() streams each new token through the callback, and a
// DecodeStream turns the ids into text as they come.
//
//   wick-example-generate MODEL_DIR "Once upon a time" [max_new_tokens=32]
#include <wick/models/generate.hpp>
#include <wick/tokenizers/tokenizer.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR PROMPT [MAX_NEW_TOKENS]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const auto lm = wick::models::load_causal_lm(dir);
  const auto tok = wick::tokenizers::Tokenizer::from_file(dir + "/tokenizer.json");
  wick::models::GenerationConfig config = wick::models::read_generation_config(dir);  // eos, defaults
  config.max_new_tokens = argc > 3 ? std::atoll(argv[3]) : 32;
  const auto prompt = tok.encode(argv[2]).ids;
  wick::tokenizers::DecodeStream stream(tok);
  std::cout << argv[2] << std::flush;
  const auto result = wick::models::generate(*lm, {std::vector<int64_t>(prompt.begin(), prompt.end())}, config,
                                             [&](int64_t /*row*/, int64_t id) {
                                               if (auto piece = stream.step(static_cast<int32_t>(id))) std::cout << *piece << std::flush;
                                               return true;  // false would stop here
                                             });
  const size_t n = result.tokens[0].size();
  std::cout << "\n" << n << " tokens; " << result.prefill_seconds << " s to the first, then "
            << (n > 1 ? static_cast<double>(n - 1) / result.decode_seconds : 0.0) << " tokens/s\n";
  return 0;
} catch (const std::exception& ex) {
  std::cerr << "error: " << ex.what() << "\n";
  return 1;
}
