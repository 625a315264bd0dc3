// Post-processors: BertProcessing, RobertaProcessing, TemplateProcessing, ByteLevel, Sequence — as
// the Rust package's processors/*.rs.
#include <map>

#include "byte_level.hpp"
#include "components.hpp"
#include "unicode.hpp"

namespace wick::tokenizers::detail {
namespace {

using IdToken = std::pair<int32_t, std::string>;

// [before...] e [after...]: the special tokens get type ids type_before / type_after.
Encoding wrap_one(const Encoding& e, const std::vector<IdToken>& before, const std::vector<IdToken>& after,
                  uint32_t type_before, uint32_t type_after, std::optional<uint32_t> content_type) {
  Encoding out;
  auto special = [&out](const IdToken& t, uint32_t type) {
    out.ids.push_back(t.first);
    out.tokens.push_back(t.second);
    out.type_ids.push_back(static_cast<int32_t>(type));
    out.offsets.emplace_back(0, 0);
    out.special_tokens_mask.push_back(1);
    out.attention_mask.push_back(1);
    out.sequence_ids.emplace_back(std::nullopt);
  };
  for (const auto& t : before) special(t, type_before);
  for (size_t i = 0; i < e.ids.size(); ++i) {
    out.ids.push_back(e.ids[i]);
    out.tokens.push_back(e.tokens[i]);
    out.type_ids.push_back(content_type ? static_cast<int32_t>(*content_type) : e.type_ids[i]);
    out.offsets.push_back(e.offsets[i]);
    out.special_tokens_mask.push_back(0);
    out.attention_mask.push_back(1);
    out.sequence_ids.push_back(e.sequence_ids[i]);
  }
  for (const auto& t : after) special(t, type_after);
  return out;
}

Encoding wrap(Encoding& e, const std::vector<IdToken>& before, const std::vector<IdToken>& after, uint32_t tb,
              uint32_t ta, std::optional<uint32_t> content_type) {
  Encoding out = wrap_one(e, before, after, tb, ta, content_type);
  for (const auto& o : e.overflowing) out.overflowing.push_back(wrap_one(o, before, after, tb, ta, content_type));
  return out;
}

bool is_space_like(char32_t c) { return c == byte_to_char(' ') || is_white_space(c); }

// utils: ByteLevel's process_offsets — leading/trailing spaces of each token out of its offsets.
void trim_offsets(Encoding& e, bool add_prefix_space) {
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    auto cps = code_points(e.tokens[i]);
    size_t leading = 0, trailing = 0;
    while (leading < cps.size() && is_space_like(cps[leading])) ++leading;
    while (trailing < cps.size() && is_space_like(cps[cps.size() - 1 - trailing])) ++trailing;
    auto& off = e.offsets[i];
    if (leading > 0) {
      bool is_first = i == 0 || off.first == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      off.first = std::min(off.first + leading, off.second);
    }
    if (trailing > 0 && off.second >= trailing) off.second = std::max(off.second - trailing, off.first);
  }
}

void trim_all(std::vector<Encoding>& encs, bool add_prefix_space) {
  for (auto& e : encs) {
    trim_offsets(e, add_prefix_space);
    for (auto& o : e.overflowing) trim_offsets(o, add_prefix_space);
  }
}

class BertProcessing final : public PostProcessor {
 public:
  BertProcessing(IdToken sep, IdToken cls) : sep_(std::move(sep)), cls_(std::move(cls)) {}
  size_t added_tokens(bool pair) const override { return pair ? 3 : 2; }
  std::vector<Encoding> process(std::vector<Encoding> encs, bool add) const override {
    if (!add) return encs;
    std::vector<Encoding> out;
    for (size_t i = 0; i < encs.size(); ++i) {
      if (i == 0) out.push_back(wrap(encs[i], {cls_}, {sep_}, 0, 0, std::nullopt));
      else out.push_back(wrap(encs[i], {}, {sep_}, 1, 1, std::nullopt));
    }
    return out;
  }

 private:
  IdToken sep_, cls_;
};

class RobertaProcessing final : public PostProcessor {
 public:
  RobertaProcessing(IdToken sep, IdToken cls, bool trim, bool prefix)
      : sep_(std::move(sep)), cls_(std::move(cls)), trim_(trim), prefix_(prefix) {}
  size_t added_tokens(bool pair) const override { return pair ? 4 : 2; }
  std::vector<Encoding> process(std::vector<Encoding> encs, bool add) const override {
    if (trim_) trim_all(encs, prefix_);
    for (auto& e : encs) e.type_ids.assign(e.ids.size(), 0);
    if (!add) return encs;
    std::vector<Encoding> out;
    for (size_t i = 0; i < encs.size(); ++i) {
      if (i == 0) out.push_back(wrap(encs[i], {cls_}, {sep_}, 0, 0, 0));
      else out.push_back(wrap(encs[i], {sep_}, {sep_}, 0, 0, 0));
    }
    return out;
  }

 private:
  IdToken sep_, cls_;
  bool trim_, prefix_;
};

class ByteLevelPost final : public PostProcessor {
 public:
  ByteLevelPost(bool trim, bool prefix) : trim_(trim), prefix_(prefix) {}
  size_t added_tokens(bool) const override { return 0; }
  std::vector<Encoding> process(std::vector<Encoding> encs, bool) const override {
    if (trim_) trim_all(encs, prefix_);
    for (size_t i = 0; i < encs.size(); ++i) set_sequence_id(encs[i], static_cast<uint32_t>(i));
    return encs;
  }

 private:
  bool trim_, prefix_;
};

struct Piece {
  bool is_sequence;
  std::string id;  // "A"/"B" or the special token's name
  uint32_t type_id;
};

class TemplateProcessing final : public PostProcessor {
 public:
  TemplateProcessing(std::vector<Piece> single, std::vector<Piece> pair, std::map<std::string, std::vector<IdToken>> specials)
      : single_(std::move(single)), pair_(std::move(pair)), specials_(std::move(specials)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const auto& p : pair ? pair_ : single_)
      if (!p.is_sequence) n += specials_.at(p.id).size();
    return n;
  }
  std::vector<Encoding> process(std::vector<Encoding> encs, bool add) const override {
    const auto& tmpl = encs.size() == 2 ? pair_ : single_;
    std::vector<Encoding> out;
    for (const auto& p : tmpl) {
      if (p.is_sequence) {
        size_t i = p.id == "A" ? 0 : 1;
        if (i >= encs.size()) throw Error("TemplateProcessing: the template names $B for a single sequence");
        Encoding& e = encs[i];
        e.type_ids.assign(e.ids.size(), static_cast<int32_t>(p.type_id));
        set_sequence_id(e, static_cast<uint32_t>(i));
        out.push_back(e);
      } else if (add) {
        Encoding s;
        for (const auto& t : specials_.at(p.id)) {
          s.ids.push_back(t.first);
          s.tokens.push_back(t.second);
          s.type_ids.push_back(static_cast<int32_t>(p.type_id));
          s.offsets.emplace_back(0, 0);
          s.special_tokens_mask.push_back(1);
          s.attention_mask.push_back(1);
          s.sequence_ids.emplace_back(std::nullopt);
        }
        out.push_back(std::move(s));
      }
    }
    return out;
  }

 private:
  std::vector<Piece> single_, pair_;
  std::map<std::string, std::vector<IdToken>> specials_;
};

class SequencePost final : public PostProcessor {
 public:
  explicit SequencePost(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const auto& p : items_) n += p->added_tokens(pair);
    return n;
  }
  std::vector<Encoding> process(std::vector<Encoding> encs, bool add) const override {
    for (const auto& p : items_) encs = p->process(std::move(encs), add);
    return encs;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> items_;
};

IdToken parse_id_token(const json& j, const char* key, const Where& w) {
  const json& v = field(j, key, w);
  if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer())
    (w / key).fail("expected [token, id], got " + v.dump());
  return {v[1].get<int32_t>(), v[0].get<std::string>()};
}

Piece parse_piece_string(const std::string& s, const Where& w) {
  std::string id = s;
  uint32_t type = 0;
  size_t colon = s.find(':');
  if (colon != std::string::npos) {
    id = s.substr(0, colon);
    try {
      type = static_cast<uint32_t>(std::stoul(s.substr(colon + 1)));
    } catch (const std::exception&) {
      w.fail("cannot read the template piece '" + s + "'");
    }
  }
  if (!id.empty() && id[0] == '$') {
    std::string rest = id.substr(1);
    if (rest.empty() || rest == "A" || rest == "a") return {true, "A", type};
    if (rest == "B" || rest == "b") return {true, "B", type};
    w.fail("cannot read the template piece '" + s + "'");
  }
  return {false, id, type};
}

std::vector<Piece> parse_template(const json& j, const Where& w, const std::map<std::string, std::vector<IdToken>>& specials) {
  std::vector<Piece> out;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    size_t i = 0;
    while (i < s.size()) {
      size_t e = s.find(' ', i);
      if (e == std::string::npos) e = s.size();
      if (e > i) out.push_back(parse_piece_string(s.substr(i, e - i), w));
      i = e + 1;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      const json& p = j[i];
      Where pw = w.at(i);
      if (p.is_object() && p.contains("Sequence")) {
        const json& q = p["Sequence"];
        std::string id = get_string(q, "id", pw / "Sequence");
        if (id != "A" && id != "B") (pw / "Sequence" / "id").fail("expected A or B, got '" + id + "'");
        out.push_back({true, id, static_cast<uint32_t>(get_int(q, "type_id", pw / "Sequence"))});
      } else if (p.is_object() && p.contains("SpecialToken")) {
        const json& q = p["SpecialToken"];
        out.push_back({false, get_string(q, "id", pw / "SpecialToken"), static_cast<uint32_t>(get_int(q, "type_id", pw / "SpecialToken"))});
      } else {
        pw.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, got " + p.dump());
      }
    }
  } else {
    w.fail("expected a template (array or string)");
  }
  for (const auto& p : out)
    if (!p.is_sequence && !specials.count(p.id)) w.fail("the special token '" + p.id + "' is not in special_tokens");
  return out;
}

std::unique_ptr<PostProcessor> parse_template_processing(const json& j, const Where& w) {
  std::map<std::string, std::vector<IdToken>> specials;
  const json& st = field(j, "special_tokens", w);
  if (!st.is_object()) (w / "special_tokens").fail("expected an object");
  for (auto it = st.begin(); it != st.end(); ++it) {
    Where sw = w / "special_tokens" / it.key();
    const json& ids = get_array(it.value(), "ids", sw);
    const json& toks = get_array(it.value(), "tokens", sw);
    if (ids.size() != toks.size()) sw.fail("ids and tokens differ in length");
    std::vector<IdToken> v;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!ids[i].is_number_integer() || !toks[i].is_string()) sw.fail("expected integer ids and string tokens");
      v.emplace_back(ids[i].get<int32_t>(), toks[i].get<std::string>());
    }
    specials[it.key()] = std::move(v);
  }
  return std::make_unique<TemplateProcessing>(parse_template(field(j, "single", w), w / "single", specials),
                                              parse_template(field(j, "pair", w), w / "pair", specials), std::move(specials));
}

}  // namespace

std::unique_ptr<PostProcessor> parse_post_processor(const json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "BertProcessing") return std::make_unique<BertProcessing>(parse_id_token(j, "sep", w), parse_id_token(j, "cls", w));
  if (type == "RobertaProcessing") {
    return std::make_unique<RobertaProcessing>(parse_id_token(j, "sep", w), parse_id_token(j, "cls", w),
                                               get_bool(j, "trim_offsets", w, true), get_bool(j, "add_prefix_space", w, true));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelPost>(get_bool(j, "trim_offsets", w, true), get_bool(j, "add_prefix_space", w, true));
  if (type == "TemplateProcessing") return parse_template_processing(j, w);
  if (type == "Sequence") return std::make_unique<SequencePost>(parse_each<PostProcessor>(j, "processors", w, parse_post_processor));
  unsupported_type("post_processor", type, w);
}

}  // namespace wick::tokenizers::detail
