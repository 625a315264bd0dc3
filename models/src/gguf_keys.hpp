// gguf_keys.hpp — metadata values as the models layer reads them: any integer type as int64
// (writers differ: llama.cpp writes uint32 counts, others int32 or uint64).
#pragma once

#include <wick/gguf.hpp>

#include <optional>
#include <string>

namespace wick::models::detail {

inline std::optional<int64_t> int_key(const gguf::GgufFile& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>)
            if (x > uint64_t(INT64_MAX))
              throw Error(f.source() + ": metadata key '" + key + "' is out of range");
          return static_cast<int64_t>(x);
        } else {
          throw Error(f.source() + ": metadata key '" + key + "' is " + v->describe() +
                      ", not an integer");
        }
      },
      v->variant());
}

}  // namespace wick::models::detail
