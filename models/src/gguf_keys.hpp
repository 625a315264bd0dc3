// gguf_keys.hpp — what the GGUF reader (gguf_llama.cpp) and writer (gguf_convert.cpp) of the
// models layer share: metadata integers of any type as int64 (writers differ: llama.cpp writes
// uint32 counts, others int32 or uint64), and llama.cpp's names of a Llama's tensors.
#pragma once

#include <wick/gguf.hpp>

#include <array>
#include <optional>
#include <string>
#include <utility>

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

// A decoder layer's modules, transformers' name -> llama.cpp's, in the order llama.cpp's converter
// writes them (and `wick quantize` does).
inline constexpr std::array<std::pair<const char*, const char*>, 9> kLayerTensors = {{
    {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"}, {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"},
    {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"}}};

// transformers' name of a Llama module ("model.layers.3.mlp.up_proj") -> llama.cpp's
// ("blk.3.ffn_up").
inline std::string gguf_name(const std::string& hf) {
  if (hf == "model.embed_tokens") return "token_embd";
  if (hf == "model.norm") return "output_norm";
  if (hf == "lm_head") return "output";
  const std::string prefix = "model.layers.";
  if (hf.compare(0, prefix.size(), prefix) == 0) {
    const size_t dot = hf.find('.', prefix.size());
    const std::string rest = hf.substr(dot + 1);
    for (const auto& [from, to] : kLayerTensors)
      if (rest == from) return "blk." + hf.substr(prefix.size(), dot - prefix.size()) + "." + to;
  }
  throw Error("models: no GGUF name for '" + hf + "'");
}

}  // namespace wick::models::detail
