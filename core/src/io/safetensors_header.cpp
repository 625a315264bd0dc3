// safetensors_header.cpp — validation of a safetensors file in memory (no device work), kept apart
// from load/save so the fuzzer links only this, shape.cpp and nlohmann-json.
#include <wick/safetensors.hpp>

#include <wick/shape.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <functional>
#include <unordered_set>

namespace wick::safetensors {
namespace {

using json = nlohmann::json;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"F64", DType::F64}, {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16},
    {"I64", DType::I64}, {"I32", DType::I32}, {"I16", DType::I16}, {"I8", DType::I8},
    {"U8", DType::U8},   {"U64", DType::U64}, {"U32", DType::U32}, {"BOOL", DType::Bool},
};
// Names the format defines that Wick has no dtype for.
constexpr const char* kUnsupported[] = {"F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3",
                                        "F6_E3M2", "F4",      "U16",     "C64"};

// Containers deeper than this cannot be part of a valid header (object -> entry -> shape); the
// limit keeps hostile nesting from costing memory before it is rejected.
constexpr int kMaxDepth = 3;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw Error(source + ": " + what);
}
[[noreturn]] void fail_tensor(const std::string& source, const std::string& name,
                              const std::string& what) {
  throw Error(source + ": tensor '" + printable_name(name) + "': " + what);
}

// Two lowercase hex digits.
std::string hex_byte(uint8_t c) {
  constexpr char kHex[] = "0123456789abcdef";
  return {kHex[c >> 4], kHex[c & 15]};
}

// "[begin, end)" (built by appends: GCC 12 warns falsely on "[" + std::to_string(...)).
std::string byte_range(uint64_t begin, uint64_t end) {
  std::string s(1, '[');
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += ')';
  return s;
}

std::string known_dtypes() {
  std::string s;
  for (const DTypeName& d : kDTypes) {
    if (!s.empty()) s += ' ';
    s += d.name;
  }
  return s;
}

DType parse_dtype(const std::string& source, const std::string& name, const json& v) {
  if (!v.is_string()) fail_tensor(source, name, "dtype is " + v.dump() + ", not a string");
  const auto& s = v.get_ref<const std::string&>();
  for (const DTypeName& d : kDTypes)
    if (s == d.name) return d.dtype;
  for (const char* u : kUnsupported)
    if (s == u)
      fail_tensor(source, name,
                  "dtype " + s + " is not supported by Wick (supported: " + known_dtypes() + ")");
  fail_tensor(source, name, "unknown dtype " + v.dump() + " (supported: " + known_dtypes() + ")");
}

// A non-negative integer that fits int64 (shape extents and offsets).
uint64_t parse_count(const std::string& source, const std::string& name, const char* field,
                     const json& v) {
  if (v.is_number_unsigned()) {
    const auto n = v.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail_tensor(source, name, std::string(field) + " value " + std::to_string(n) +
                                    " is larger than 2^63 - 1");
    return n;
  }
  if (v.is_number_integer()) {
    const auto n = v.get<int64_t>();
    if (n >= 0) return static_cast<uint64_t>(n);  // "-0"
    fail_tensor(source, name, std::string(field) + " value " + v.dump() + " is negative");
  }
  fail_tensor(source, name, std::string(field) + " value " + v.dump() + " is not an integer");
}

Entry parse_entry(const std::string& source, const std::string& name, const json& v,
                  uint64_t data_size) {
  if (!v.is_object()) fail_tensor(source, name, "entry is " + v.dump() + ", not an object");
  for (const auto& [key, value] : v.items()) {
    (void)value;
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail_tensor(source, name, "unknown field '" + printable_name(key) + "' (expected dtype, shape, data_offsets)");
  }
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail_tensor(source, name, std::string("has no ") + key);

  Entry e;
  e.name = name;
  e.dtype = parse_dtype(source, name, v["dtype"]);

  const json& shape = v["shape"];
  if (!shape.is_array()) fail_tensor(source, name, "shape is " + shape.dump() + ", not an array");
  for (const json& d : shape) e.shape.push_back(static_cast<int64_t>(parse_count(source, name, "shape", d)));
  uint64_t bytes = 0;
  try {
    bytes = bytes_of(e.shape, e.dtype);
  } catch (const Error& err) {
    fail_tensor(source, name, err.what());
  }

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail_tensor(source, name, "data_offsets is " + off.dump() + ", not [begin, end]");
  e.begin = parse_count(source, name, "data_offsets", off[0]);
  e.end = parse_count(source, name, "data_offsets", off[1]);
  if (e.begin > e.end)
    fail_tensor(source, name, "data_offsets [" + std::to_string(e.begin) + ", " +
                                  std::to_string(e.end) + "] end before they begin");
  if (e.end > data_size)
    fail_tensor(source, name, "data_offsets [" + std::to_string(e.begin) + ", " +
                                  std::to_string(e.end) + "] reach past the data buffer's " +
                                  std::to_string(data_size) + " bytes (truncated file?)");
  if (e.end - e.begin != bytes)
    fail_tensor(source, name, "shape " + shape_to_string(e.shape) + " of " + format_dtype_name(e.dtype) +
                                  " needs " + std::to_string(bytes) + " bytes, data_offsets [" +
                                  std::to_string(e.begin) + ", " + std::to_string(e.end) +
                                  "] hold " + std::to_string(e.end - e.begin));
  return e;
}

// The header length in the first 8 bytes, checked against the limit and against what follows it.
uint64_t header_length(const uint8_t* bytes, size_t size, const std::string& source) {
  if (size < 8)
    fail(source, "is " + std::to_string(size) +
                     " bytes, too short for a safetensors file (an 8-byte header length first)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];  // little-endian on any host
  if (n > kMaxHeaderBytes)
    fail(source, "header length " + std::to_string(n) + " is more than the " +
                     std::to_string(kMaxHeaderBytes) + " bytes allowed (not a safetensors file?)");
  if (n > size - 8)
    fail(source, "header length " + std::to_string(n) + " is more than the " +
                     std::to_string(size - 8) + " bytes that follow it (truncated file?)");
  if (n == 0 || bytes[8] != '{') fail(source, "header does not start with '{' (not a safetensors file?)");
  return n;
}

// The header's JSON as SAX events, in one pass: each top-level member is built as a json value and
// handed to `member` as soon as it ends, so time and memory stay linear in the header's size (the
// callback parser rescanned the header object at each member: quadratic). Duplicate keys would
// silently hide a tensor (a json object keeps the last); they are refused, and so is nesting no
// valid header has.
class HeaderSax final : public json::json_sax_t {
 public:
  using Member = std::function<void(const std::string&, const json&)>;
  // header_bytes: the JSON's size, to size the set of member names once (an entry takes 45 bytes
  // or more).
  HeaderSax(const std::string& source, uint64_t header_bytes, Member member)
      : source_(source), member_(std::move(member)) {
    names_.reserve(static_cast<size_t>(header_bytes / 45));
  }

  bool null() override { return put(json()); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(json::number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) override { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) override { return put(json(v)); }
  bool string(json::string_t& v) override { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) override { return put(json(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(json::string_t& k) override {
    // The header's members are not kept (names_ is); an object under one is built as it comes.
    if (depth_ == 1 ? !names_.insert(k).second : stack_.back()->contains(k))
      fail(source_, "header has the key '" + printable_name(k) + "' twice");
    (depth_ == 1 ? name_ : key_) = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const json::exception& e) override {
    fail(source_, std::string("header is not valid JSON: ") + e.what());
  }

 private:
  bool open(json&& v) {
    if (depth_ >= kMaxDepth) fail(source_, "header nests objects or arrays deeper than a header can");
    if (depth_++ == 0) {
      if (!v.is_object()) fail(source_, "header is not a JSON object");
      return true;  // the header object itself is never built
    }
    stack_.push_back(&place(std::move(v)));
    return true;
  }
  bool close() {
    if (--depth_ == 0) return true;  // the header is complete
    stack_.pop_back();
    if (depth_ == 1) member_(name_, value_);
    return true;
  }
  bool put(json&& v) {
    if (depth_ == 0) fail(source_, "header is not a JSON object");
    const json& placed = place(std::move(v));
    if (depth_ == 1) member_(name_, placed);
    return true;
  }
  // v where the parse is: the current member's value, or in the container open under it.
  json& place(json&& v) {
    if (stack_.empty()) return value_ = std::move(v);
    json& parent = *stack_.back();
    if (!parent.is_array()) return parent[key_] = std::move(v);
    parent.push_back(std::move(v));
    return parent.back();
  }

  const std::string& source_;
  Member member_;
  int depth_ = 0;                                      // containers open
  std::unordered_set<std::string> names_;  // the header's member names so far
  std::vector<json*> stack_;               // containers open under the member
  std::string name_, key_;                 // the member's name, the key in an object under it
  json value_;                             // the member's value
};

// One past the closing brace of the JSON object the header starts with (brackets counted outside
// strings; run on JSON already parsed), n when it has none.
uint64_t json_end(const uint8_t* p, uint64_t n) {
  int depth = 0;
  bool in_string = false;
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t c = p[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return n;
}

// The reference implementation reads the header as one JSON value followed by nothing but
// whitespace (the format pads with spaces); a NUL or any other byte after it is refused, with its
// offset in the file (the JSON parser alone would stop at a NUL and ignore what follows).
void check_padding(const uint8_t* header, uint64_t n, const std::string& source, bool parsed) {
  if (!parsed) {
    if (const void* nul = std::memchr(header, 0, n))
      fail(source, "header has a NUL byte at byte offset " +
                       std::to_string(8 + (static_cast<const uint8_t*>(nul) - header)) +
                       " (only whitespace may follow its JSON)");
    return;
  }
  for (uint64_t i = json_end(header, n); i < n; ++i) {
    const uint8_t c = header[i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      fail(source, "header has the byte 0x" + hex_byte(c) + " at byte offset " + std::to_string(8 + i) +
                       " after the JSON (only whitespace may follow it)");
  }
}

// The header's __metadata__ and tensor entries into out, in the header's order.
void read_header(const uint8_t* bytes, uint64_t n, uint64_t data_size, const std::string& source,
                 Header& out) {
  check_padding(bytes + 8, n, source, false);
  HeaderSax sax(source, n, [&](const std::string& name, const json& value) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail(source, "__metadata__ is " + value.dump() + ", not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          fail(source, "__metadata__ '" + printable_name(k) + "' is " + v.dump() + ", not a string");
        out.metadata[k] = v.get<std::string>();
      }
      return;
    }
    if (name.empty()) fail(source, "a tensor has an empty name");
    out.entries.push_back(parse_entry(source, name, value, data_size));
  });
  json::sax_parse(bytes + 8, bytes + 8 + n, &sax, json::input_format_t::json, /*strict=*/false);
  check_padding(bytes + 8, n, source, true);
}

// The data buffer must be covered exactly once: sorted by offset, each tensor starts where the
// previous one ended, and the last ends at the end of the file. Sorts entries so.
void check_coverage(std::vector<Entry>& entries, uint64_t data_size, const std::string& source) {
  // Stable: ties (empty tensors at one offset) stay in the header's order.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      fail_tensor(source, e.name, "bytes " + byte_range(e.begin, e.end) + " overlap tensor '" +
                                      printable_name(prev->name) + "' " + byte_range(prev->begin, prev->end));
    if (e.begin > covered)
      fail_tensor(source, e.name, "bytes " + byte_range(covered, e.begin) +
                                      " before it belong to no tensor (the format allows no holes)");
    covered = e.end;
    prev = &e;
  }
  if (covered != data_size)
    fail(source, "the last " + std::to_string(data_size - covered) +
                     " bytes of the data buffer belong to no tensor (the format allows none)");
}

// Wick's kernels assume a bool byte is 0 or 1.
void check_bools(const uint8_t* data_buffer, const std::vector<Entry>& entries,
                 const std::string& source) {
  for (const Entry& e : entries) {
    if (e.dtype != DType::Bool) continue;
    const uint8_t* p = data_buffer + e.begin;
    for (uint64_t i = 0; i < e.end - e.begin; ++i)
      if (p[i] > 1)
        fail_tensor(source, e.name, "BOOL element " + std::to_string(i) + " is " +
                                        std::to_string(p[i]) + ", not 0 or 1");
  }
}

}  // namespace

std::string printable_name(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<uint8_t>(name[i]);
    const auto next = i + 1 < name.size() ? static_cast<uint8_t>(name[i + 1]) : 0;
    if (c < 0x20 || c == 0x7f) {
      out += "\\x" + hex_byte(c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // C1 controls, U+0080..U+009F
      out += "\\u00" + hex_byte(next);
      ++i;
    } else {
      out += name[i];
    }
  }
  return out;
}

const char* format_dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

Header parse(const void* data, size_t size, const std::string& source) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const uint64_t n = header_length(bytes, size, source);
  Header out;
  out.data_start = 8 + n;
  const uint64_t data_size = size - out.data_start;
  read_header(bytes, n, data_size, source, out);
  check_coverage(out.entries, data_size, source);
  check_bools(bytes + out.data_start, out.entries, source);
  return out;
}

}  // namespace wick::safetensors
