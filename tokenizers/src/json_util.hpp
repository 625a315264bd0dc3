// Reading tokenizer.json fields with errors that name the file and the field path.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <wick/tokenizers/tokenizer.hpp>

namespace wick::tokenizers::detail {

using json = nlohmann::json;

struct Where {
  std::string file;
  std::string path;

  Where operator/(std::string_view key) const { return {file, path.empty() ? std::string(key) : path + "." + std::string(key)}; }
  Where at(size_t i) const { return {file, path + "[" + std::to_string(i) + "]"}; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file + ": " + (path.empty() ? std::string("top level") : path) + ": " + what);
  }
};

inline const json& field(const json& obj, const char* key, const Where& w) {
  if (!obj.is_object()) w.fail("expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) (w / key).fail("missing");
  return *it;
}

inline bool has(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && !obj.at(key).is_null();
}

inline std::string get_string(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_string()) (w / key).fail("expected a string, got " + v.dump());
  return v.get<std::string>();
}

inline bool get_bool(const json& obj, const char* key, const Where& w, bool fallback) {
  if (!has(obj, key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_boolean()) (w / key).fail("expected true or false, got " + v.dump());
  return v.get<bool>();
}

inline int64_t get_int(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_number_integer()) (w / key).fail("expected an integer, got " + v.dump());
  return v.get<int64_t>();
}

inline const json& get_array(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_array()) (w / key).fail("expected an array");
  return v;
}

inline std::string type_of(const json& obj, const Where& w) { return get_string(obj, "type", w); }

// The components of a Sequence: parse applied to each element of the array j[key].
template <class T, class Parse>
std::vector<std::unique_ptr<T>> parse_each(const json& j, const char* key, const Where& w, Parse parse) {
  std::vector<std::unique_ptr<T>> items;
  const json& arr = get_array(j, key, w);
  for (size_t i = 0; i < arr.size(); ++i) items.push_back(parse(arr[i], (w / key).at(i)));
  return items;
}

[[noreturn]] inline void unsupported_type(const std::string& kind, const std::string& type, const Where& w) {
  (w / "type").fail("unsupported " + kind + " type '" + type + "'");
}

}  // namespace wick::tokenizers::detail
