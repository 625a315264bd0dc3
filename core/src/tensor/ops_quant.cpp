// ops_quant.cpp — wick/quant.hpp: GGML block-quantized tensors on the op table's QUANTIZE,
// DEQUANTIZE and MATMUL_QUANT (ABI 1.4).
#include <wick/quant.hpp>

#include "host/loaded_plugin.hpp"
#include "tensor/autograd_graph.hpp"

#include <wick/direct.hpp>
#include <wick/dispatch.hpp>
#include <wick/error.hpp>
#include <wick/sdk/ggml_quants.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace wick::quant {

namespace {

// The type's traits, when it is one the ops take; an error naming it otherwise.
sdk::ggml::TypeTraits reference_traits(Type type, const char* what) {
  if (!sdk::ggml::has_reference(type)) {
    throw Error(std::string(what) + ": GGML type " + sdk::ggml::type_name(type) +
                " has no quantize/dequantize here (these have: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K "
                "Q3_K Q4_K Q5_K Q6_K Q8_K)");
  }
  return sdk::ggml::traits(type);
}

// The bytes of one row of k values; an error when k is not a whole number of blocks.
int64_t row_bytes(Type type, int64_t k, const char* what) {
  const sdk::ggml::TypeTraits t = reference_traits(type, what);
  if (k <= 0 || k % t.block_size != 0) {
    throw Error(std::string(what) + ": a row of " + std::to_string(k) + " values is not a whole number of " +
                sdk::ggml::type_name(type) + " blocks (" + std::to_string(t.block_size) + " values each)");
  }
  return k / t.block_size * t.type_size;
}

wick_quant_params params(Type type, int64_t k, uint32_t flags = 0) {
  return {sizeof(wick_quant_params), static_cast<int32_t>(type), k, flags};
}

// Whether the device's plugin reads wick_quant_params.flags (ABI 1.6): an older one would not see
// the bit and would answer the unrounded product, so it is never sent one.
bool reads_quant_flags(const Device& device) { return device.plugin().api().abi_minor >= 6; }

void require_float(const Tensor& x, const char* what) {
  if (!x.defined()) throw Error(std::string(what) + ": an undefined tensor");
  if (!is_float(x.dtype())) {
    throw Error(std::string(what) + ": needs a float tensor, got " + dtype_name(x.dtype()) + " " +
                shape_to_string(x.shape()));
  }
}

}  // namespace

bool has_reference(Type type) { return sdk::ggml::has_reference(type); }

QTensor::QTensor(Tensor data, Type type, Shape shape) : data_(std::move(data)), type_(type), shape_(std::move(shape)) {
  const char* what = "QTensor";
  if (shape_.empty()) throw Error("QTensor: a quantized tensor needs rank >= 1, got a 0-d shape");
  const int64_t bytes = row_bytes(type_, shape_.back(), what);
  Shape want = shape_;
  want.back() = bytes;
  if (!data_.defined() || data_.dtype() != DType::U8 || data_.shape() != want || !data_.is_contiguous()) {
    throw Error("QTensor: " + sdk::ggml::type_name(type_) + " " + shape_to_string(shape_) + " needs contiguous u8 data " +
                shape_to_string(want) + ", got " +
                (data_.defined() ? std::string(dtype_name(data_.dtype())) + " " + shape_to_string(data_.shape()) +
                                       (data_.is_contiguous() ? "" : " (strided)")
                                 : std::string("an undefined tensor")));
  }
}

QTensor QTensor::to(const Device& device) const {
  return QTensor(data_.to(device), type_, shape_);
}

QTensor quantize(const Tensor& x, Type type) {
  const char* what = "quantize";
  require_float(x, what);
  if (x.rank() < 1) throw Error("quantize: needs rank >= 1, got a 0-d tensor");
  const int64_t k = x.shape().back();
  Shape out_shape = x.shape();
  const int64_t bytes = row_bytes(type, k, what);
  out_shape.back() = bytes;
  Tensor out = Tensor::empty(out_shape, DType::U8, x.device());
  if (out.numel() == 0) return QTensor(out, type, x.shape());
  const wick_quant_params p = params(type, k);
  if (query_op_direct(x.device(), WICK_OP_QUANTIZE, &p, {x}, {out}) == WICK_SUPPORT_YES) {
    dispatch(WICK_OP_QUANTIZE, &p, {x}, {out});
    return QTensor(out, type, x.shape());
  }
  // A device without the op: the SDK's reference on the host, the blocks uploaded.
  const std::vector<float> values = x.to(DType::F32).contiguous().to_vector<float>();
  std::vector<uint8_t> blocks(static_cast<size_t>(out.numel()));
  for (int64_t r = 0; r < out.numel() / bytes; ++r)
    sdk::ggml::quantize_row(type, values.data() + r * k, blocks.data() + r * bytes, k);
  return QTensor(Tensor::from_bytes(blocks.data(), blocks.size(), out_shape, DType::U8, x.device()), type, x.shape());
}

Tensor dequantize(const QTensor& q, DType dtype) {
  if (!q.defined()) throw Error("dequantize: an undefined quantized tensor");
  if (!is_float(dtype)) throw Error(std::string("dequantize: needs a float dtype, got ") + dtype_name(dtype));
  Tensor out = Tensor::empty(q.shape(), dtype, q.device());
  if (out.numel() == 0) return out;
  const wick_quant_params p = params(q.type(), q.k());
  if (query_op_direct(q.device(), WICK_OP_DEQUANTIZE, &p, {q.data()}, {out}) == WICK_SUPPORT_YES) {
    dispatch(WICK_OP_DEQUANTIZE, &p, {q.data()}, {out});
    return out;
  }
  // A device without the op: the SDK's reference on the host, the f32 values uploaded.
  const std::vector<uint8_t> blocks = q.data().to_vector<uint8_t>();
  const int64_t bytes = q.data().shape().back();
  std::vector<float> values(static_cast<size_t>(out.numel()));
  for (int64_t r = 0; r < out.numel() / q.k(); ++r)
    sdk::ggml::dequantize_row(q.type(), blocks.data() + r * bytes, values.data() + r * q.k(), q.k());
  return Tensor::from_vector(values, q.shape(), q.device()).to(dtype);
}

Type activation_type(Type weights) {
  const std::optional<Type> a = sdk::ggml::activation_type(weights);
  if (!a) {
    throw Error("quant::activation_type: GGML type " + sdk::ggml::type_name(weights) +
                " has no 8-bit activation type (these have: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K Q3_K Q4_K "
                "Q5_K Q6_K Q8_K)");
  }
  return *a;
}

Tensor round_activations(const Tensor& x, Type weights) {
  require_float(x, "quant::round_activations");
  return dequantize(quantize(x, quant::activation_type(weights)), x.dtype() == DType::F64 ? DType::F64 : DType::F32);
}

namespace {

// The unrounded product, on the device's MATMUL_QUANT or composed from DEQUANTIZE and MATMUL.
Tensor matmul_exact(const Tensor& x, const QTensor& w, const Shape& out_shape) {
  const Tensor xc = x.contiguous();
  const wick_quant_params p = params(w.type(), w.k());
  if (!detail::grad::needs(x)) {
    Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
    if (out.numel() == 0) return out;
    if (query_op_direct(x.device(), WICK_OP_MATMUL_QUANT, &p, {xc, w.data()}, {out}) == WICK_SUPPORT_YES) {
      dispatch(WICK_OP_MATMUL_QUANT, &p, {xc, w.data()}, {out});
      return out;
    }
  }
  // On a device without the op, and under autograd: the weights dequantized, then a matmul.
  return x.matmul(dequantize(w, x.dtype()).t());
}

// MatmulOptions::round_x: the device's flagged MATMUL_QUANT where its plugin takes the flag, else
// the definition composed: x rounded (round_activations), then the unrounded product.
Tensor matmul_rounded(const Tensor& x, const QTensor& w, const Shape& out_shape) {
  quant::activation_type(w.type());  // an error naming a type without one, before any plugin sees it
  if (!detail::grad::needs(x) && reads_quant_flags(x.device())) {
    const Tensor xc = x.contiguous();
    const wick_quant_params p = params(w.type(), w.k(), WICK_QUANT_ROUND_X);
    Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
    if (out.numel() == 0) return out;
    if (query_op_direct(x.device(), WICK_OP_MATMUL_QUANT, &p, {xc, w.data()}, {out}) == WICK_SUPPORT_YES) {
      dispatch(WICK_OP_MATMUL_QUANT, &p, {xc, w.data()}, {out});
      return out;
    }
  }
  Tensor xr = round_activations(x.detach(), w.type());
  // Straight-through under autograd: the value of x rounded, the gradient of x itself.
  if (detail::grad::needs(x)) xr = x.to(xr.dtype()) + (xr - x.detach().to(xr.dtype()));
  const Tensor y = matmul_exact(xr, w, out_shape);
  return y.dtype() == x.dtype() ? y : y.to(x.dtype());
}

}  // namespace

Tensor matmul(const Tensor& x, const QTensor& w, const MatmulOptions& options) {
  const char* what = "quant::matmul";
  require_float(x, what);
  if (!w.defined() || w.shape().size() != 2)
    throw Error("quant::matmul: the weights must be a 2-D quantized tensor [N, k]");
  if (x.rank() < 1 || x.shape().back() != w.k()) {
    throw Error("quant::matmul: x " + shape_to_string(x.shape()) + " and weights " + sdk::ggml::type_name(w.type()) + " " +
                shape_to_string(w.shape()) + " are incompatible: x's last axis must be k = " + std::to_string(w.k()));
  }
  if (!(x.device() == w.device())) {
    throw Error("quant::matmul: x is on " + x.device().name() + ", the weights on " + w.device().name());
  }
  Shape out_shape = x.shape();
  out_shape.back() = w.shape()[0];
  return options.round_x ? matmul_rounded(x, w, out_shape) : matmul_exact(x, w, out_shape);
}

}  // namespace wick::quant
