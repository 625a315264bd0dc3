// safetensors_header.cpp — validation of a safetensors file in memory (no device work), kept apart
// from load/save so the fuzzer links only this, shape.cpp and nlohmann-json.
#include <wick/safetensors.hpp>

#include <wick/shape.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

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
  throw Error(source + ": tensor '" + name + "': " + what);
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
      fail_tensor(source, name, "unknown field '" + key + "' (expected dtype, shape, data_offsets)");
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

// The n bytes of JSON after the length, which must be an object.
json parse_header_json(const uint8_t* bytes, uint64_t n, const std::string& source) {
  // Duplicate keys would silently hide a tensor (the parser keeps the last); refuse them, and
  // refuse nesting no valid header has.
  std::vector<std::set<std::string>> keys(kMaxDepth + 2);
  const auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) {
      if (depth >= kMaxDepth) fail(source, "header nests objects or arrays deeper than a header can");
      if (event == json::parse_event_t::object_start) keys[static_cast<size_t>(depth) + 1].clear();
    } else if (event == json::parse_event_t::key) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!keys[static_cast<size_t>(depth)].insert(k).second)
        fail(source, "header has the key '" + k + "' twice");
    }
    return true;
  };
  json header;
  try {
    header = json::parse(bytes + 8, bytes + 8 + n, check);
  } catch (const json::exception& e) {
    fail(source, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(source, "header is not a JSON object");
  return header;
}

// The header's __metadata__ and tensor entries into out, in the header's order.
void read_header_items(const json& header, uint64_t data_size, const std::string& source,
                       Header& out) {
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail(source, "__metadata__ is " + value.dump() + ", not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          fail(source, "__metadata__ '" + k + "' is " + v.dump() + ", not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    if (name.empty()) fail(source, "a tensor has an empty name");
    out.entries.push_back(parse_entry(source, name, value, data_size));
  }
}

// The data buffer must be covered exactly once: sorted by offset, each tensor starts where the
// previous one ended, and the last ends at the end of the file. Sorts entries so.
void check_coverage(std::vector<Entry>& entries, uint64_t data_size, const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      fail_tensor(source, e.name, "bytes " + byte_range(e.begin, e.end) + " overlap tensor '" +
                                      prev->name + "' " + byte_range(prev->begin, prev->end));
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

const char* format_dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

Header parse(const void* data, size_t size, const std::string& source) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const uint64_t n = header_length(bytes, size, source);
  const json header = parse_header_json(bytes, n, source);
  Header out;
  out.data_start = 8 + n;
  const uint64_t data_size = size - out.data_start;
  read_header_items(header, data_size, source, out);
  check_coverage(out.entries, data_size, source);
  check_bools(bytes + out.data_start, out.entries, source);
  return out;
}

}  // namespace wick::safetensors
