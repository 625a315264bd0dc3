// Placeholder until the tokenizer lands.
namespace wick::tokenizers {}
