// wick/quant.hpp — GGML block-quantized tensors (docs/ops/quant.md): rows of k values stored as
// GGML blocks (32 values in 18-34 bytes, or 256 in 84-292 for the K-quants), the layout GGUF files
// use, so that a file's tensor is used where it lies, never widened to f32.
//
//   const wick::quant::QTensor w = wick::quant::quantize(weight, wick::quant::Type::Q4_K);
//   const wick::Tensor y = wick::quant::matmul(x, w);      // x [..., M, k] -> [..., M, N]
//   const wick::Tensor back = wick::quant::dequantize(w);  // [N, k] f32
//
// The ops are the op table's QUANTIZE, DEQUANTIZE and MATMUL_QUANT (ABI 1.4). QUANTIZE and
// DEQUANTIZE reproduce ggml's reference code byte for byte and bit for bit; for a device whose
// plugin lacks them the core runs the SDK's reference on the host and uploads the result (in
// strict mode too: a conversion of the data, as an upload is). MATMUL_QUANT is composed from
// DEQUANTIZE and MATMUL on the device when its plugin lacks it, and under autograd (the gradient
// flows to x; the quantized weights are constants).
#pragma once

#include <wick/tensor.hpp>

#include <wick/sdk/ggml_types.hpp>

#include <cstdint>

namespace wick::quant {

using Type = sdk::ggml::Type;

// A [..., k] tensor quantized in rows of k values: data() is u8 [..., k / block_size * type_size].
class QTensor {
 public:
  QTensor() = default;
  // Wraps existing blocks (a GGUF tensor's bytes, say): data must be u8 and contiguous, with
  // shape's leading axes and a last axis of shape.back() / block_size * type_size bytes. An error
  // names the type, the shape and the byte count otherwise.
  QTensor(Tensor data, Type type, Shape shape);

  bool defined() const { return data_.defined(); }
  const Tensor& data() const { return data_; }
  Type type() const { return type_; }
  const Shape& shape() const { return shape_; }
  int64_t k() const { return shape_.back(); }  // values per row
  Device device() const { return data_.device(); }
  QTensor to(const Device& device) const;

 private:
  Tensor data_;
  Type type_ = Type::Q8_0;
  Shape shape_;
};

// The types quantize, dequantize and matmul take: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, Q8_K. Any other is an error naming it.
bool has_reference(Type type);

// x (a float tensor of rank >= 1, its last axis a multiple of the type's block size) as blocks.
QTensor quantize(const Tensor& x, Type type);

// The values of q's blocks, in a float dtype.
Tensor dequantize(const QTensor& q, DType dtype = DType::F32);

// How quant::matmul treats x.
struct MatmulOptions {
  // Round each row of x to the 8-bit block type llama.cpp's dot products take for w's type
  // (activation_type: Q8_0, Q8_1 or Q8_K) first, as llama.cpp does: the result is then defined as
  // matmul(round_activations(x, w.type()), w) (docs/ops/quant.md), which integer block dot
  // products compute faster. Off: x is used as given. A device whose plugin does not take the
  // flag (ABI < 1.6, or declines it) gets exactly that composition, so every device gives the
  // same numbers. Under autograd the gradient to x is the unrounded op's (straight-through).
  bool round_x = false;
};

// The 8-bit type x is rounded to for a product with `weights` blocks (ggml's vec_dot_type): Q8_0
// for Q4_0, Q5_0, Q8_0; Q8_1 for Q4_1, Q5_1, Q8_1; Q8_K for the K-quants. Any other type is an
// error naming it.
Type activation_type(Type weights);

// dequantize(quantize(x, activation_type(weights))) in f32 (f64 for f64 x: the same values): what
// MatmulOptions::round_x multiplies.
Tensor round_activations(const Tensor& x, Type weights);

// x [..., M, k] (a float tensor) times the transpose of w [N, k]: [..., M, N] in x's dtype.
Tensor matmul(const Tensor& x, const QTensor& w, const MatmulOptions& options = {});

}  // namespace wick::quant
