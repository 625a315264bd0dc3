// llama_source.hpp — where a Llama-family model's tensors come from: a safetensors checkpoint
// through an nn::VarStore (llama.cpp), or a GGUF file whose matrices stay block-quantized
// (gguf_llama.cpp). Names are transformers' ("model.layers.0.self_attn.q_proj").
#pragma once

#include <wick/models/config.hpp>
#include <wick/nn/nn.hpp>
#include <wick/quant.hpp>

#include <string>

namespace wick::models::detail {

// y = x W^T (+ b), with W [out, in] plain or block-quantized, then y's last axis reordered by
// out_rows when defined (y[..., i] = (x W^T + b)[..., out_rows[i]]: a GGUF file's q and k rows
// put back in transformers' order without copying the mapped weights).
struct Linear {
  Tensor weight, bias;
  quant::QTensor qweight;  // defined instead of weight for a quantized matrix
  Tensor out_rows;         // i64 [out], or undefined
  bool round_x = false;    // qweight's products round x to 8 bits (quant::MatmulOptions::round_x)
  Tensor operator()(const Tensor& x) const;
};

// Rows of a [vocab, dim] table, plain or block-quantized (a row dequantized when looked up).
struct Embedding {
  Tensor table;
  quant::QTensor qtable;
  DType dtype = DType::F32;        // of the rows looked up
  bool round_x = false;            // the tied head's Linear::round_x
  Tensor lookup(const Tensor& flat_ids) const;  // [n] i64 -> [n, dim]
  Linear as_linear() const;                     // the tied output head
};

class LlamaSource {
 public:
  virtual ~LlamaSource() = default;
  // A norm's weight or a bias of `dim` values (init: for a fresh store).
  virtual Tensor vector(const std::string& name, int64_t dim, const nn::Init& init) = 0;
  virtual Linear linear(const std::string& name, int64_t in, int64_t out, bool bias) = 0;
  virtual Embedding embedding(const std::string& name, int64_t vocab, int64_t dim) = 0;
};

}  // namespace wick::models::detail
