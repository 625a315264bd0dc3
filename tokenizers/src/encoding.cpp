// Encoding operations as tokenizer/encoding.rs and utils/{truncation,padding}.rs: merge (with the
// cross product of overflowing pieces), truncation with stride, padding.
#include "encoding_ops.hpp"

#include <algorithm>
#include <string>

namespace wick::tokenizers::detail {

void set_sequence_id(Encoding& e, uint32_t id) { e.sequence_ids.assign(e.ids.size(), id); }

void merge_into(Encoding& self, Encoding&& pair, bool growing_offsets) {
  std::vector<Encoding> overflowings;
  for (const Encoding& so : self.overflowing) {
    Encoding n = so;
    merge_into(n, Encoding(pair), growing_offsets);
    overflowings.push_back(std::move(n));
    for (const Encoding& po : pair.overflowing) {
      Encoding m = so;
      merge_into(m, Encoding(po), growing_offsets);
      overflowings.push_back(std::move(m));
    }
  }
  for (const Encoding& po : pair.overflowing) {
    Encoding n = self;
    merge_into(n, Encoding(po), growing_offsets);
    overflowings.push_back(std::move(n));
  }
  size_t start = growing_offsets && !self.offsets.empty() ? self.offsets.back().second : 0;
  auto append = [](auto& a, const auto& b) { a.insert(a.end(), b.begin(), b.end()); };
  append(self.ids, pair.ids);
  append(self.type_ids, pair.type_ids);
  append(self.tokens, pair.tokens);
  for (const auto& o : pair.offsets) self.offsets.emplace_back(o.first + start, o.second + start);
  append(self.special_tokens_mask, pair.special_tokens_mask);
  append(self.attention_mask, pair.attention_mask);
  append(self.sequence_ids, pair.sequence_ids);
  self.overflowing = std::move(overflowings);
}

Encoding merge_all(std::vector<Encoding> encodings, bool growing_offsets) {
  Encoding out;
  for (auto& e : encodings) merge_into(out, std::move(e), growing_offsets);
  return out;
}

static Encoding part(const Encoding& e, size_t start, size_t stop) {
  Encoding p;
  auto cut = [&](auto& dst, const auto& src) { dst.assign(src.begin() + static_cast<std::ptrdiff_t>(start), src.begin() + static_cast<std::ptrdiff_t>(stop)); };
  cut(p.ids, e.ids);
  cut(p.type_ids, e.type_ids);
  cut(p.tokens, e.tokens);
  cut(p.offsets, e.offsets);
  cut(p.special_tokens_mask, e.special_tokens_mask);
  cut(p.attention_mask, e.attention_mask);
  // Truncation clears the sequence ranges (as the package): no token keeps a sequence id.
  p.sequence_ids.assign(stop - start, std::nullopt);
  return p;
}

void truncate_encoding(Encoding& e, size_t max_len, size_t stride, Truncation::Side side) {
  size_t len = e.ids.size();
  if (max_len >= len) return;
  if (max_len == 0) {
    Encoding whole = std::move(e);
    e = Encoding{};
    e.overflowing.push_back(std::move(whole));
    return;
  }
  if (stride >= max_len) {
    throw Error("truncation: stride " + std::to_string(stride) + " must be strictly less than max_len=" + std::to_string(max_len) +
                " (the max length less the special tokens)");
  }
  size_t step = max_len - stride;
  std::vector<std::pair<size_t, size_t>> ranges;
  if (side == Truncation::Side::Right) {
    for (size_t start = 0; start < len; start += step) {
      size_t stop = std::min(start + max_len, len);
      ranges.emplace_back(start, stop);
      if (stop == len) break;
    }
  } else {
    for (size_t k = 0; k < len; k += step) {
      size_t stop = len - k;
      size_t start = stop < max_len ? 0 : stop - max_len;
      if (start >= stop) break;
      ranges.emplace_back(start, stop);
      if (start == 0) break;
    }
  }
  Encoding first = part(e, ranges[0].first, ranges[0].second);
  for (size_t i = 1; i < ranges.size(); ++i) first.overflowing.push_back(part(e, ranges[i].first, ranges[i].second));
  e = std::move(first);
}

void truncate_encodings(Encoding& a, std::optional<Encoding>& b, const Truncation& t, size_t max_length) {
  if (max_length == 0) {
    truncate_encoding(a, 0, t.stride, t.side);
    if (b) truncate_encoding(*b, 0, t.stride, t.side);
    return;
  }
  size_t total = a.ids.size() + (b ? b->ids.size() : 0);
  if (total <= max_length) return;
  size_t to_remove = total - max_length;
  switch (t.strategy) {
    case Truncation::Strategy::LongestFirst:
      if (b) {
        size_t n1 = a.ids.size(), n2 = b->ids.size();
        bool swap = n1 > n2;
        if (swap) std::swap(n1, n2);  // n1: the shorter
        n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
        if (n1 + n2 > max_length) {
          n1 = max_length / 2;
          n2 = n1 + max_length % 2;
        }
        if (swap) std::swap(n1, n2);
        truncate_encoding(a, n1, t.stride, t.side);
        truncate_encoding(*b, n2, t.stride, t.side);
      } else {
        truncate_encoding(a, a.ids.size() - to_remove, t.stride, t.side);
      }
      break;
    case Truncation::Strategy::OnlyFirst:
    case Truncation::Strategy::OnlySecond: {
      Encoding* target = t.strategy == Truncation::Strategy::OnlyFirst ? &a : (b ? &*b : nullptr);
      if (target == nullptr) throw Error("truncation: only_second needs a second sequence");
      if (target->ids.size() <= to_remove) {
        throw Error("truncation: the sequence to truncate is too short for max_length " + std::to_string(max_length));
      }
      truncate_encoding(*target, target->ids.size() - to_remove, t.stride, t.side);
      break;
    }
  }
}

void pad_encoding(Encoding& e, size_t target, const Padding& p) {
  for (auto& o : e.overflowing) pad_encoding(o, target, p);
  if (e.ids.size() >= target) return;
  size_t n = target - e.ids.size();
  auto pad = [&](auto& v, auto value) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    if (p.side == Padding::Side::Left) {
      v.insert(v.begin(), n, T(value));
    } else {
      v.insert(v.end(), n, T(value));
    }
  };
  pad(e.ids, p.pad_id);
  pad(e.type_ids, p.pad_type_id);
  pad(e.tokens, p.pad_token);
  pad(e.offsets, std::pair<size_t, size_t>{0, 0});
  pad(e.special_tokens_mask, 1);
  pad(e.attention_mask, 0);
  pad(e.sequence_ids, std::optional<uint32_t>{});
}

void pad_batch(std::vector<Encoding>& batch, const Padding& p) {
  if (batch.empty()) return;
  size_t target = 0;
  if (p.length) {
    target = *p.length;
  } else {
    for (const auto& e : batch) target = std::max(target, e.ids.size());
  }
  if (p.pad_to_multiple_of > 0 && target % p.pad_to_multiple_of != 0) target += p.pad_to_multiple_of - target % p.pad_to_multiple_of;
  for (auto& e : batch) pad_encoding(e, target, p);
}

}  // namespace wick::tokenizers::detail
