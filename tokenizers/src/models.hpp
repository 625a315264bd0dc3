// The model parsers (one source file per model).
#pragma once

#include <memory>

#include "components.hpp"
#include "vocab.hpp"

namespace wick::tokenizers::detail {

Vocab parse_vocab_object(const json& j, const Where& w);
std::unique_ptr<Model> parse_wordpiece(const json& j, const Where& w);
std::unique_ptr<Model> parse_bpe(const json& j, const Where& w);
std::unique_ptr<Model> parse_unigram(const json& j, const Where& w);

}  // namespace wick::tokenizers::detail
