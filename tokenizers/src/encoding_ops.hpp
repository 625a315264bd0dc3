// Encoding operations shared by the post-processors and the tokenizer (encoding.cpp).
#pragma once

#include <optional>
#include <vector>

#include <wick/tokenizers/tokenizer.hpp>

namespace wick::tokenizers::detail {

void set_sequence_id(Encoding& e, uint32_t id);
void merge_into(Encoding& into, Encoding&& other, bool growing_offsets);
Encoding merge_all(std::vector<Encoding> encodings, bool growing_offsets);
void truncate_encoding(Encoding& e, size_t max_len, size_t stride, Truncation::Side side);
// Truncates a (and b) to max_length tokens in all, by the strategy (utils/truncation.rs).
void truncate_encodings(Encoding& a, std::optional<Encoding>& b, const Truncation& t, size_t max_length);
void pad_encoding(Encoding& e, size_t target, const Padding& p);
void pad_batch(std::vector<Encoding>& batch, const Padding& p);

}  // namespace wick::tokenizers::detail
