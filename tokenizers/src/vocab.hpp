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
  void add(const std::string& token, int32_t id) {
    map_[token] = id;
    if (id >= 0) {
      if (static_cast<size_t>(id) >= rev_.size()) rev_.resize(static_cast<size_t>(id) + 1);
      rev_[static_cast<size_t>(id)] = token;
      if (static_cast<size_t>(id) >= has_.size()) has_.resize(static_cast<size_t>(id) + 1, false);
      has_[static_cast<size_t>(id)] = true;
    }
  }
  std::optional<int32_t> find(std::string_view token) const {
    auto it = map_.find(token);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= has_.size() || !has_[static_cast<size_t>(id)]) return std::nullopt;
    return rev_[static_cast<size_t>(id)];
  }
  size_t size() const { return map_.size(); }

 private:
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> map_;
  std::vector<std::string> rev_;
  std::vector<bool> has_;
};

}  // namespace wick::tokenizers::detail
