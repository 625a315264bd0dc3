// Tokenizer: tokenizer.json loading and the pipeline (tokenizer/mod.rs): added tokens, normalizer,
// pre-tokenizer, model, truncation, post-processor, padding; decoding.
#include <wick/tokenizers/tokenizer.hpp>

#include <fstream>
#include <sstream>

#include "added_vocabulary.hpp"
#include "components.hpp"
#include "tokenizer_impl.hpp"
#include "unicode.hpp"

namespace wick::tokenizers {

using detail::json;
using detail::Where;

namespace {

// Padding lengths beyond this are refused rather than allocated (a corrupt file, not a model).
constexpr size_t kMaxPadding = size_t{1} << 24;

template <class T, class Parse>
std::unique_ptr<T> optional_component(const json& root, const char* key, const Where& w, Parse parse) {
  if (!root.contains(key) || root.at(key).is_null()) return nullptr;
  return parse(root.at(key), w / key);
}

std::vector<detail::AddedToken> parse_added_tokens(const json& root, const Where& w) {
  std::vector<detail::AddedToken> out;
  if (!detail::has(root, "added_tokens")) return out;
  const json& arr = detail::get_array(root, "added_tokens", w);
  for (size_t i = 0; i < arr.size(); ++i) {
    Where tw = (w / "added_tokens").at(i);
    detail::AddedToken t;
    t.content = detail::get_string(arr[i], "content", tw);
    t.single_word = detail::get_bool(arr[i], "single_word", tw, false);
    t.lstrip = detail::get_bool(arr[i], "lstrip", tw, false);
    t.rstrip = detail::get_bool(arr[i], "rstrip", tw, false);
    t.normalized = detail::get_bool(arr[i], "normalized", tw, true);
    t.special = detail::get_bool(arr[i], "special", tw, false);
    out.push_back(std::move(t));
  }
  return out;
}

// "direction": "Right" (the default) or "Left"; true for Left.
bool parse_left(const json& j, const Where& w) {
  std::string d = detail::has(j, "direction") ? detail::get_string(j, "direction", w) : "Right";
  if (d != "Right" && d != "Left") (w / "direction").fail("unsupported value '" + d + "'");
  return d == "Left";
}

std::optional<Truncation> parse_truncation(const json& root, const Where& w) {
  if (!detail::has(root, "truncation")) return std::nullopt;
  const json& j = root.at("truncation");
  Where tw = w / "truncation";
  Truncation t;
  int64_t max_length = detail::get_int(j, "max_length", tw);
  int64_t stride = detail::has(j, "stride") ? detail::get_int(j, "stride", tw) : 0;
  if (max_length < 0) (tw / "max_length").fail("must not be negative");
  if (stride < 0) (tw / "stride").fail("must not be negative");
  t.max_length = static_cast<size_t>(max_length);
  t.stride = static_cast<size_t>(stride);
  std::string s = detail::has(j, "strategy") ? detail::get_string(j, "strategy", tw) : "LongestFirst";
  if (s == "LongestFirst") t.strategy = Truncation::Strategy::LongestFirst;
  else if (s == "OnlyFirst") t.strategy = Truncation::Strategy::OnlyFirst;
  else if (s == "OnlySecond") t.strategy = Truncation::Strategy::OnlySecond;
  else (tw / "strategy").fail("unsupported value '" + s + "'");
  t.side = parse_left(j, tw) ? Truncation::Side::Left : Truncation::Side::Right;
  return t;
}

std::optional<Padding> parse_padding(const json& root, const Where& w) {
  if (!detail::has(root, "padding")) return std::nullopt;
  const json& j = root.at("padding");
  Where pw = w / "padding";
  Padding p;
  const json& strategy = detail::field(j, "strategy", pw);
  if (strategy.is_string() && strategy.get<std::string>() == "BatchLongest") {
    p.length.reset();
  } else if (strategy.is_object() && strategy.contains("Fixed") && strategy["Fixed"].is_number_unsigned()) {
    p.length = strategy["Fixed"].get<size_t>();
    if (*p.length > kMaxPadding) (pw / "strategy" / "Fixed").fail("padding to " + std::to_string(*p.length) + " tokens is more than this reader allows");
  } else {
    (pw / "strategy").fail("expected \"BatchLongest\" or {\"Fixed\": n}, got " + strategy.dump());
  }
  p.side = parse_left(j, pw) ? Padding::Side::Left : Padding::Side::Right;
  int64_t multiple = detail::has(j, "pad_to_multiple_of") ? detail::get_int(j, "pad_to_multiple_of", pw) : 0;
  if (multiple < 0 || static_cast<size_t>(multiple) > kMaxPadding) (pw / "pad_to_multiple_of").fail("out of range: " + std::to_string(multiple));
  p.pad_to_multiple_of = static_cast<size_t>(multiple);
  p.pad_id = detail::has(j, "pad_id") ? static_cast<int32_t>(detail::get_int(j, "pad_id", pw)) : 0;
  p.pad_type_id = detail::has(j, "pad_type_id") ? static_cast<int32_t>(detail::get_int(j, "pad_type_id", pw)) : 0;
  p.pad_token = detail::has(j, "pad_token") ? detail::get_string(j, "pad_token", pw) : "[PAD]";
  return p;
}

}  // namespace

Tokenizer Tokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the tokenizer file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path);
}

Tokenizer Tokenizer::from_json(const std::string& text, const std::string& where) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(where + ": not valid JSON: " + e.what());
  }
  Where w{where, ""};
  if (!root.is_object()) w.fail("expected a JSON object");
  auto impl = std::make_shared<TokenizerImpl>();
  impl->normalizer = optional_component<detail::Normalizer>(root, "normalizer", w, detail::parse_normalizer);
  impl->pre_tokenizer = optional_component<detail::PreTokenizer>(root, "pre_tokenizer", w, detail::parse_pre_tokenizer);
  impl->model = detail::parse_model(detail::field(root, "model", w), w / "model");
  impl->post_processor = optional_component<detail::PostProcessor>(root, "post_processor", w, detail::parse_post_processor);
  impl->decoder = optional_component<detail::Decoder>(root, "decoder", w, detail::parse_decoder);
  impl->added.add(parse_added_tokens(root, w), *impl->model, impl->normalizer.get());
  Tokenizer t(std::move(impl));
  t.padding_ = parse_padding(root, w);
  t.truncation_ = parse_truncation(root, w);
  return t;
}

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

void Tokenizer::set_padding(std::optional<Padding> padding) { padding_ = std::move(padding); }
void Tokenizer::set_truncation(std::optional<Truncation> truncation) { truncation_ = std::move(truncation); }
const std::optional<Padding>& Tokenizer::padding() const { return padding_; }
const std::optional<Truncation>& Tokenizer::truncation() const { return truncation_; }

Encoding Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  Encoding e = impl_->post_process(impl_->encode_sequence(text, 0), std::nullopt, add_special_tokens, truncation_);
  if (padding_) {
    std::vector<Encoding> one{std::move(e)};
    detail::pad_batch(one, *padding_);
    e = std::move(one[0]);
  }
  return e;
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b, bool add_special_tokens) const {
  Encoding e = impl_->post_process(impl_->encode_sequence(a, 0), impl_->encode_sequence(b, 1), add_special_tokens, truncation_);
  if (padding_) {
    std::vector<Encoding> one{std::move(e)};
    detail::pad_batch(one, *padding_);
    e = std::move(one[0]);
  }
  return e;
}

std::vector<Encoding> Tokenizer::encode_batch(const std::vector<std::string>& texts, bool add_special_tokens) const {
  std::vector<Encoding> out;
  out.reserve(texts.size());
  for (const auto& t : texts) out.push_back(impl_->post_process(impl_->encode_sequence(t, 0), std::nullopt, add_special_tokens, truncation_));
  if (padding_) detail::pad_batch(out, *padding_);
  return out;
}

std::vector<Encoding> Tokenizer::encode_batch_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                                    bool add_special_tokens) const {
  std::vector<Encoding> out;
  out.reserve(pairs.size());
  for (const auto& [a, b] : pairs)
    out.push_back(impl_->post_process(impl_->encode_sequence(a, 0), impl_->encode_sequence(b, 1), add_special_tokens, truncation_));
  if (padding_) detail::pad_batch(out, *padding_);
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

std::vector<std::string> Tokenizer::decode_batch(const std::vector<std::vector<int32_t>>& batch, bool skip_special_tokens) const {
  std::vector<std::string> out;
  out.reserve(batch.size());
  for (const auto& ids : batch) out.push_back(decode(ids, skip_special_tokens));
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = impl_->added.token_to_id(token)) return id;
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (auto t = impl_->added.id_to_token(id)) return t;
  return impl_->model->id_to_token(id);
}

size_t Tokenizer::vocab_size(bool with_added_tokens) const {
  size_t n = impl_->model->vocab_size();
  return with_added_tokens ? n + impl_->added.count_not_in(*impl_->model) : n;
}

DecodeStream::DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

// The package's step_decode_stream (as on its main branch, 0.22): the text of the ids kept since
// the last piece, less the prefix (the text of the ids before it), once it no longer ends in U+FFFD;
// then only the ids of the new piece are kept as the next prefix.
std::optional<std::string> DecodeStream::step(int32_t id) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
  auto ends_incomplete = [](const std::string& s) {
    return s.size() >= kReplacement.size() && s.compare(s.size() - kReplacement.size(), kReplacement.size(), kReplacement) == 0;
  };
  if (prefix_.empty() && !ids_.empty()) {
    std::string p = tokenizer_->decode(ids_, skip_special_tokens_);
    if (!ends_incomplete(p)) {
      prefix_ = std::move(p);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  std::string text = tokenizer_->decode(ids_, skip_special_tokens_);
  if (text.size() <= prefix_.size() || ends_incomplete(text)) return std::nullopt;
  if (text.compare(0, prefix_.size(), prefix_) != 0) {
    throw Error("DecodeStream: the text of id " + std::to_string(id) + " does not start with the text already given out");
  }
  std::string piece = text.substr(prefix_.size());
  size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  prefix_ = tokenizer_->decode(ids_, skip_special_tokens_);
  prefix_index_ = new_prefix_index;
  return piece;
}

}  // namespace wick::tokenizers
