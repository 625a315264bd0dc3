// wick/models/gguf.hpp — llama.cpp's GGUF model files as Wick models (docs/models.md).
//
//   auto lm = models::load_causal_lm("tinyllama.Q4_K_M.gguf", {device});  // or from_gguf
//   const gguf::GgufFile file("tinyllama.Q4_K_M.gguf");
//   const tokenizers::Tokenizer tok = models::tokenizer_from_gguf(file);
#pragma once

#include <wick/gguf.hpp>
#include <wick/models/config.hpp>
#include <wick/tokenizers/tokenizer.hpp>

#include <filesystem>

namespace wick::models {

// Whether `path` is a regular file that starts with GGUF's magic.
bool is_gguf_file(const std::filesystem::path& path);

// The config of a "llama" or "qwen2" file from its {arch}.* metadata and tensor shapes (the
// vocabulary from token_embd, an untied head when `output.weight` is there, q/k/v biases when
// blk.0.attn_q.bias is there) and the special tokens from tokenizer.ggml.*. A key whose meaning
// the Llama model does not compute — experts, a rope other than plain or linear, rope frequency
// factors, a key or value length other than the head size — is an error naming it.
LlamaConfig llama_config_from_gguf(const gguf::GgufFile& file);

// The tokenizer a GGUF file carries (tokenizer.ggml.*): "gpt2" (byte-level BPE; the
// pre-tokenizers gpt-2, llama-bpe and qwen2) and "llama" (SentencePiece BPE with byte fallback,
// merges ranked by the tokens' scores). Others are an error naming them.
tokenizers::Tokenizer tokenizer_from_gguf(const gguf::GgufFile& file);

// Writes the Llama-family model directory `model_dir` (model_type llama or qwen2) as a GGUF file
// at `out`, as llama.cpp's convert_hf_to_gguf.py lays one out: its tensor names, q and k rows
// interleaved (llama), 2-D weights as `type` ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K" ..
// "Q6_K", "F16", "F32"; F16 for a matrix whose rows are not whole blocks, as the converter falls
// back), 1-D ones as F32, the config as {arch}.* metadata, and a byte-level BPE tokenizer.json
// as tokenizer.ggml.* (pre-tokenizer "gpt-2"; other tokenizers are refused by name). The quantized
// bytes are ggml's reference quantizer's (quant::quantize), the same as the `gguf` package's for
// the 32-value types. A config the loader would not read back as the same model (rope scaling, a
// sliding window, biases other than Qwen2's) is refused by name. `out` is replaced whole or not
// at all (gguf::write).
void convert_to_gguf(const std::filesystem::path& model_dir, const std::string& type,
                     const std::filesystem::path& out);

}  // namespace wick::models
