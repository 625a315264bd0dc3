#include "tokenizer_impl.hpp"

#include "unicode.hpp"

namespace wick::tokenizers {

Encoding TokenizerImpl::encode_sequence(std::string_view text, uint32_t type_id) const {
  if (!detail::is_valid_utf8(text)) throw Error("encode: the text is not valid UTF-8");
  detail::PreTokenizedString p = added.extract_and_normalize(text, normalizer.get());
  if (pre_tokenizer) pre_tokenizer->pre_tokenize(p);
  Encoding e;
  for (auto& split : p.splits) {
    if (!split.tokens) split.tokens = model->tokenize(split.normalized.get());
    const detail::NormalizedString& ns = split.normalized;
    for (auto& tok : *split.tokens) {
      auto o = ns.convert_offsets(tok.offsets);
      std::pair<size_t, size_t> off = o ? std::pair<size_t, size_t>{ns.original_shift() + o->first, ns.original_shift() + o->second} : tok.offsets;
      e.ids.push_back(tok.id);
      e.tokens.push_back(std::move(tok.value));
      e.offsets.push_back(off);
      e.type_ids.push_back(static_cast<int32_t>(type_id));
      e.special_tokens_mask.push_back(0);
      e.attention_mask.push_back(1);
      e.sequence_ids.emplace_back(std::nullopt);
    }
  }
  return e;
}

Encoding TokenizerImpl::post_process(Encoding a, std::optional<Encoding> b, bool add_special_tokens,
                                     const std::optional<Truncation>& truncation) const {
  if (truncation) {
    size_t added_n = post_processor ? post_processor->added_tokens(b.has_value()) : 0;
    size_t max_length = truncation->max_length;
    if (add_special_tokens && added_n > 0) {
      if (added_n > max_length) throw Error("truncation: max_length " + std::to_string(max_length) + " is shorter than the special tokens");
      max_length -= added_n;
    }
    detail::truncate_encodings(a, b, *truncation, max_length);
  }
  std::vector<Encoding> encs;
  encs.push_back(std::move(a));
  if (b) encs.push_back(std::move(*b));
  if (!post_processor) {
    if (encs.size() == 1) return std::move(encs[0]);
    for (size_t i = 0; i < encs.size(); ++i) detail::set_sequence_id(encs[i], static_cast<uint32_t>(i));
    return detail::merge_all(std::move(encs), false);
  }
  for (size_t i = 0; i < encs.size(); ++i) {
    detail::set_sequence_id(encs[i], static_cast<uint32_t>(i));
    for (auto& o : encs[i].overflowing) detail::set_sequence_id(o, static_cast<uint32_t>(i));
    encs[i].type_ids.assign(encs[i].ids.size(), static_cast<int32_t>(i));
  }
  return detail::merge_all(post_processor->process(std::move(encs), add_special_tokens), false);
}

std::string TokenizerImpl::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    std::optional<std::string> t = added.id_to_token(id);
    if (!t) t = model->id_to_token(id);
    if (!t) continue;  // as the package: unknown ids are left out
    if (skip_special_tokens && added.is_special(*t)) continue;
    tokens.push_back(std::move(*t));
  }
  if (!decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  std::string out;
  for (auto& piece : decoder->decode_chain(std::move(tokens))) out += piece;
  return out;
}

}  // namespace wick::tokenizers
