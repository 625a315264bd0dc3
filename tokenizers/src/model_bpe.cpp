// BPE: merges applied by rank (lowest first, then leftmost), as models/bpe/{model,word}.rs with
// dropout off. byte_fallback, fuse_unk, ignore_merges, continuing_subword_prefix, end_of_word_suffix.
#include <cstdio>
#include <queue>
#include <unordered_map>

#include "models.hpp"
#include "unicode.hpp"

namespace wick::tokenizers::detail {
namespace {

struct PairHash {
  size_t operator()(uint64_t k) const { return std::hash<uint64_t>{}(k); }
};

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

struct Symbol {
  int32_t c;
  std::ptrdiff_t prev, next;
  size_t len;
};

struct Merge {
  size_t pos;
  uint32_t rank;
  int32_t new_id;
  bool operator<(const Merge& o) const {  // max-heap order: lowest rank, then lowest pos on top
    if (rank != o.rank) return rank > o.rank;
    return pos > o.pos;
  }
};

class Bpe final : public Model {
 public:
  struct Config {
    std::optional<std::string> unk, prefix, suffix;
    bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  };
  Bpe(Vocab v, std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>, PairHash> merges, Config c)
      : vocab_(std::move(v)), merges_(std::move(merges)), cfg_(std::move(c)) {}

  std::vector<Token> tokenize(std::string_view seq) const override {
    if (seq.empty()) return {};
    if (cfg_.ignore_merges) {
      if (auto id = vocab_.find(seq)) return {Token{*id, std::string(seq), {0, seq.size()}}};
    }
    std::vector<Symbol> word = initial_symbols(seq);
    merge_all(word);
    std::vector<Token> out;
    size_t offset = 0;
    for (const auto& s : word) {
      if (s.len == 0) continue;
      out.push_back(Token{s.c, *vocab_.token(s.c), {offset, offset + s.len}});
      offset += s.len;
    }
    return out;
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab_.find(t); }
  std::optional<std::string> id_to_token(int32_t id) const override { return vocab_.token(id); }
  size_t vocab_size() const override { return vocab_.size(); }

 private:
  static void add(std::vector<Symbol>& w, int32_t c, size_t len) {
    std::ptrdiff_t prev = w.empty() ? -1 : static_cast<std::ptrdiff_t>(w.size()) - 1;
    if (!w.empty()) w.back().next = static_cast<std::ptrdiff_t>(w.size());
    w.push_back(Symbol{c, prev, -1, len});
  }

  bool add_bytes(std::vector<Symbol>& w, const std::string& s) const {
    std::vector<int32_t> ids;
    for (unsigned char b : s) {
      char code[8];
      std::snprintf(code, sizeof(code), "<0x%02X>", b);
      auto id = vocab_.find(code);
      if (!id) return false;
      ids.push_back(*id);
    }
    for (int32_t id : ids) add(w, id, 1);
    return true;
  }

  std::vector<Symbol> initial_symbols(std::string_view seq) const {
    std::vector<Symbol> w;
    bool unk = false;  // an unknown run is pending: (unk_id, unk_len)
    int32_t unk_id = 0;
    size_t unk_len = 0;
    for (size_t i = 0, n = 0; i < seq.size(); i += n) {
      decode_utf8(seq, i, &n);
      std::string s(seq.substr(i, n));
      if (i > 0 && cfg_.prefix) s = *cfg_.prefix + s;
      if (i + n == seq.size() && cfg_.suffix) s += *cfg_.suffix;
      if (auto id = vocab_.find(s)) {
        if (unk) add(w, unk_id, unk_len);
        unk = false;
        add(w, *id, n);
        continue;
      }
      // As the package: bytes are added while an unknown run may still be pending.
      if (cfg_.byte_fallback && add_bytes(w, s)) continue;
      if (cfg_.unk) {
        if (unk && cfg_.fuse_unk) {
          unk_len += n;
        } else {
          if (unk) add(w, unk_id, unk_len);
          unk = true;
          unk_id = unk_id_or_throw();
          unk_len = n;
        }
      }
    }
    if (unk) add(w, unk_id, unk_len);
    return w;
  }

  int32_t unk_id_or_throw() const {
    auto id = vocab_.find(*cfg_.unk);
    if (!id) throw Error("BPE: the unk token '" + *cfg_.unk + "' is not in the vocabulary");
    return *id;
  }

  const std::pair<uint32_t, int32_t>* find_merge(int32_t a, int32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }

  void merge_all(std::vector<Symbol>& w) const {
    std::priority_queue<Merge> queue;
    for (size_t i = 0; i + 1 < w.size(); ++i)
      if (auto m = find_merge(w[i].c, w[i + 1].c)) queue.push(Merge{i, m->first, m->second});
    while (!queue.empty()) {
      Merge top = queue.top();
      queue.pop();
      Symbol& cur = w[top.pos];
      if (cur.len == 0 || cur.next == -1) continue;
      auto next_pos = static_cast<size_t>(cur.next);
      Symbol right = w[next_pos];
      auto m = find_merge(cur.c, right.c);
      if (!m || m->second != top.new_id) continue;
      cur.c = top.new_id;
      cur.len += right.len;
      cur.next = right.next;
      w[next_pos].len = 0;
      if (right.next > -1 && static_cast<size_t>(right.next) < w.size()) w[static_cast<size_t>(right.next)].prev = static_cast<std::ptrdiff_t>(top.pos);
      if (cur.prev >= 0) {
        if (auto pm = find_merge(w[static_cast<size_t>(cur.prev)].c, cur.c))
          queue.push(Merge{static_cast<size_t>(cur.prev), pm->first, pm->second});
      }
      if (cur.next >= 0 && static_cast<size_t>(cur.next) < w.size()) {
        if (auto nm = find_merge(cur.c, w[static_cast<size_t>(cur.next)].c)) queue.push(Merge{top.pos, nm->first, nm->second});
      }
    }
  }

  Vocab vocab_;
  std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>, PairHash> merges_;
  Config cfg_;
};

std::optional<std::string> opt_string(const json& j, const char* key, const Where& w) {
  if (!has(j, key)) return std::nullopt;
  return get_string(j, key, w);
}

std::pair<std::string, std::string> parse_merge(const json& m, const Where& w) {
  if (m.is_string()) {
    std::string s = m.get<std::string>();
    size_t sp = s.find(' ');
    if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) w.fail("a merge must be two tokens separated by one space, got '" + s + "'");
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) return {m[0].get<std::string>(), m[1].get<std::string>()};
  w.fail("a merge must be \"a b\" or [\"a\", \"b\"], got " + m.dump());
}

}  // namespace

std::unique_ptr<Model> parse_bpe(const json& j, const Where& w) {
  if (has(j, "dropout")) {
    const json& d = j.at("dropout");
    if (!d.is_number()) (w / "dropout").fail("expected a number or null");
    if (d.get<double>() != 0.0) (w / "dropout").fail("BPE dropout " + d.dump() + " is not supported (only null or 0)");
  }
  Vocab v = parse_vocab_object(field(j, "vocab", w), w / "vocab");
  Bpe::Config c;
  c.unk = opt_string(j, "unk_token", w);
  c.prefix = opt_string(j, "continuing_subword_prefix", w);
  c.suffix = opt_string(j, "end_of_word_suffix", w);
  c.fuse_unk = get_bool(j, "fuse_unk", w, false);
  c.byte_fallback = get_bool(j, "byte_fallback", w, false);
  c.ignore_merges = get_bool(j, "ignore_merges", w, false);
  size_t prefix_len = c.prefix ? c.prefix->size() : 0;
  std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>, PairHash> merges;
  const json& arr = get_array(j, "merges", w);
  for (size_t i = 0; i < arr.size(); ++i) {
    Where mw = (w / "merges").at(i);
    auto [a, b] = parse_merge(arr[i], mw);
    auto a_id = v.find(a), b_id = v.find(b);
    std::string joined = a + (b.size() >= prefix_len ? b.substr(prefix_len) : std::string());
    auto new_id = v.find(joined);
    if (!a_id || !b_id || !new_id) mw.fail("merge token not in the vocabulary: '" + (!a_id ? a : !b_id ? b : joined) + "'");
    merges[pair_key(*a_id, *b_id)] = {static_cast<uint32_t>(i), *new_id};
  }
  return std::make_unique<Bpe>(std::move(v), std::move(merges), std::move(c));
}

}  // namespace wick::tokenizers::detail
