// A token <-> id table shared by the models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wick::tokenizers::detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class Vocab {
 public:
  // Ids are not negative (the parsers check); a later token with the same text replaces the
  // earlier one in the token -> id direction, as the package's HashMap does.
  void add(const std::string& token, int32_t id) {
    map_[token] = id;
    rev_[id] = token;
  }
  std::optional<int32_t> find(std::string_view token) const {
    auto it = map_.find(token);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> token(int32_t id) const {
    auto it = rev_.find(id);
    if (it == rev_.end()) return std::nullopt;
    return it->second;
  }
  size_t size() const { return map_.size(); }

 private:
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> map_;
  std::unordered_map<int32_t, std::string> rev_;
};

}  // namespace wick::tokenizers::detail
