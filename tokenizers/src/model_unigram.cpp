// Unigram: the best-scoring segmentation (Viterbi over the vocabulary's prefix matches), as
// models/unigram/model.rs (encode_optimized); unknown pieces fused, byte_fallback.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "models.hpp"
#include "unicode.hpp"

namespace wick::tokenizers::detail {
namespace {

// A byte trie over the pieces, for common-prefix search.
class Trie {
 public:
  Trie() : nodes_(1) {}
  void insert(const std::string& s, int32_t id) {
    size_t n = 0;
    for (unsigned char b : s) {
      auto it = nodes_[n].next.find(b);
      if (it == nodes_[n].next.end()) {
        nodes_.emplace_back();
        it = nodes_[n].next.emplace(b, nodes_.size() - 1).first;
      }
      n = it->second;
    }
    nodes_[n].id = id;
  }
  template <class Fn>
  void prefixes(std::string_view s, size_t start, Fn fn) const {
    size_t n = 0;
    for (size_t i = start; i < s.size(); ++i) {
      auto it = nodes_[n].next.find(static_cast<unsigned char>(s[i]));
      if (it == nodes_[n].next.end()) return;
      n = it->second;
      if (nodes_[n].id >= 0) fn(i + 1 - start, nodes_[n].id);
    }
  }

 private:
  struct Node {
    std::map<unsigned char, size_t> next;
    int32_t id = -1;
  };
  std::vector<Node> nodes_;
};

class Unigram final : public Model {
 public:
  Unigram(std::vector<std::pair<std::string, double>> pieces, std::optional<int32_t> unk, bool byte_fallback)
      : pieces_(std::move(pieces)), unk_(unk), byte_fallback_(byte_fallback) {
    min_score_ = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < pieces_.size(); ++i) {
      vocab_.add(pieces_[i].first, static_cast<int32_t>(i));
      min_score_ = std::min(min_score_, pieces_[i].second);
    }
    for (size_t i = 0; i < pieces_.size(); ++i) {
      auto id = vocab_.find(pieces_[i].first);
      trie_.insert(pieces_[i].first, *id);
    }
  }

  std::vector<Token> tokenize(std::string_view s) const override {
    std::vector<Token> out;
    size_t offset = 0;
    for (const std::string& piece : encode(s)) {
      size_t len = piece.size();
      auto id = vocab_.find(piece);
      if (!id && byte_fallback_) {
        std::vector<Token> bytes;
        for (unsigned char b : piece) {
          char code[8];
          std::snprintf(code, sizeof(code), "<0x%02X>", b);
          auto bid = vocab_.find(code);
          if (!bid) break;
          bytes.push_back(Token{*bid, code, {offset, offset + len}});
        }
        if (bytes.size() == piece.size()) {
          for (auto& t : bytes) out.push_back(std::move(t));
          offset += len;
          continue;
        }
      }
      if (!id) id = unk_or_throw();
      out.push_back(Token{*id, piece, {offset, offset + len}});
      offset += len;
    }
    return out;
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab_.find(t); }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return std::nullopt;
    return pieces_[static_cast<size_t>(id)].first;
  }
  size_t vocab_size() const override { return pieces_.size(); }

 private:
  int32_t unk_or_throw() const {
    if (!unk_) throw Error("Unigram: a piece is unknown and the model has no unk_id");
    return *unk_;
  }

  struct Node {
    int32_t id = 0;
    double score = 0;
    std::optional<size_t> starts_at;
  };

  std::vector<std::string> encode(std::string_view s) const {
    if (s.empty()) return {};
    const double unk_score = min_score_ - 10.0;
    std::vector<Node> best(s.size() + 1);
    for (size_t start = 0, mblen = 0; start < s.size(); start += mblen) {
      decode_utf8(s, start, &mblen);
      double here = best[start].score;
      bool single = false;
      trie_.prefixes(s, start, [&](size_t length, int32_t id) {
        Node& t = best[start + length];
        double cand = pieces_[static_cast<size_t>(id)].second + here;
        if (!t.starts_at || cand > t.score) t = Node{id, cand, start};
        if (length == mblen) single = true;
      });
      if (!single) {
        Node& t = best[start + mblen];
        double cand = unk_score + here;
        if (!t.starts_at || cand > t.score) t = Node{unk_or_throw(), cand, start};
      }
    }
    std::vector<std::string> results, fused;
    for (size_t end = s.size(); end > 0;) {
      const Node& n = best[end];
      size_t start = *n.starts_at;
      if (unk_ && n.id == *unk_) {
        fused.emplace_back(s.substr(start, end - start));
      } else {
        flush(fused, results);
        results.push_back(pieces_[static_cast<size_t>(n.id)].first);
      }
      end = start;
    }
    flush(fused, results);
    std::reverse(results.begin(), results.end());
    return results;
  }

  static void flush(std::vector<std::string>& fused, std::vector<std::string>& results) {
    if (fused.empty()) return;
    std::string joined;
    for (auto it = fused.rbegin(); it != fused.rend(); ++it) joined += *it;
    results.push_back(std::move(joined));
    fused.clear();
  }

  std::vector<std::pair<std::string, double>> pieces_;
  Vocab vocab_;
  Trie trie_;
  std::optional<int32_t> unk_;
  bool byte_fallback_;
  double min_score_;
};

// The package reads scores with serde_json's default (not correctly rounded) float parser:
// the digits as a u64 significand (further digits dropped), then one multiplication or division
// by a power of ten. The file's text is the shortest representation of the exactly parsed
// double, so that text is rebuilt here and read serde_json's way.
double serde_json_f64(double exact) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), exact);
  std::string_view t(buf, static_cast<size_t>(res.ptr - buf));
  bool positive = true;
  size_t i = 0;
  if (i < t.size() && t[i] == '-') {
    positive = false;
    ++i;
  }
  uint64_t sig = 0;
  int exponent = 0;
  bool overflow = false;
  auto digit_in = [&](char c, bool fraction) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    if (overflow || (sig >= max / 10 && (sig > max / 10 || d > max % 10))) {
      overflow = true;
      if (!fraction) ++exponent;  // integer digits past the overflow still scale the value
      return;
    }
    sig = sig * 10 + d;
    if (fraction) --exponent;
  };
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) digit_in(t[i], false);
  if (i < t.size() && t[i] == '.')
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) digit_in(t[i], true);
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) exponent += std::atoi(std::string(t.substr(i + 1)).c_str());
  static const std::vector<double> pow10 = [] {
    std::vector<double> p;
    for (int k = 0; k <= 308; ++k) p.push_back(std::strtod(("1e" + std::to_string(k)).c_str(), nullptr));
    return p;
  }();
  double f = static_cast<double>(sig);
  while (true) {
    auto a = static_cast<size_t>(std::abs(exponent));
    if (a < pow10.size()) {
      f = exponent >= 0 ? f * pow10[a] : f / pow10[a];
      break;
    }
    if (f == 0.0 || exponent >= 0) break;
    f /= 1e308;
    exponent += 308;
  }
  return positive ? f : -f;
}

}  // namespace

std::unique_ptr<Model> parse_unigram(const json& j, const Where& w) {
  const json& arr = get_array(j, "vocab", w);
  std::vector<std::pair<std::string, double>> pieces;
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& p = arr[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number())
      (w / "vocab").at(i).fail("expected [piece, score], got " + p.dump());
    pieces.emplace_back(p[0].get<std::string>(), serde_json_f64(p[1].get<double>()));
  }
  std::optional<int32_t> unk;
  if (has(j, "unk_id")) {
    int64_t u = get_int(j, "unk_id", w);
    if (u < 0 || static_cast<size_t>(u) >= pieces.size()) (w / "unk_id").fail("out of the vocabulary's range");
    unk = static_cast<int32_t>(u);
  }
  return std::make_unique<Unigram>(std::move(pieces), unk, get_bool(j, "byte_fallback", w, false));
}

}  // namespace wick::tokenizers::detail
