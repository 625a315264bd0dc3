// json_file.hpp — typed reads of a JSON config file whose errors name the file and the key.
#pragma once

#include <wick/error.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace wick::models::detail {

class JsonFile {
 public:
  // Parses `path` (an error naming it when unreadable or malformed); the top level must be `kind`
  // (an object, unless array is asked).
  explicit JsonFile(const std::filesystem::path& path, bool array = false);
  JsonFile(nlohmann::json value, std::string where)
      : j_(std::move(value)), where_(std::move(where)) {}

  const nlohmann::json& json() const { return j_; }
  const std::string& where() const { return where_; }
  // A present, non-null key.
  bool has(const std::string& key) const;

  int64_t integer(const std::string& key) const;  // required
  std::optional<int64_t> integer_or_none(const std::string& key) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  double number(const std::string& key, double fallback) const;
  std::optional<double> number_or_none(const std::string& key) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key) const;  // required
  std::string string(const std::string& key, const std::string& fallback) const;
  // A number or a list of numbers ("eos_token_id": 2 or [128001, 128009]); empty when absent.
  std::vector<int64_t> integers(const std::string& key) const;
  // A nested object (an error when it is something else); nullopt when absent or null.
  std::optional<JsonFile> object(const std::string& key) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json& at(const std::string& key) const;
  nlohmann::json j_;
  std::string where_;
};

}  // namespace wick::models::detail
