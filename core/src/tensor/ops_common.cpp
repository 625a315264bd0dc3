// ops_common.cpp — the building blocks every op family is written with (ops_common.hpp), and the
// dtype promotion of binary ops.
#include "tensor/ops_common.hpp"

#include <wick/autograd.hpp>
#include <wick/dispatch.hpp>
#include <wick/shape.hpp>
#include "tensor/storage.hpp"

#include <wick/sdk/ops.hpp>

#include <algorithm>
#include <limits>

namespace wick {

namespace {

int int_size(DType t) {
  return static_cast<int>(dtype_size(t));
}

DType signed_of_size(size_t bytes) {
  switch (bytes) {
    case 1: return DType::I8;
    case 2: return DType::I16;
    case 4: return DType::I32;
    default: return DType::I64;
  }
}

}  // namespace

namespace detail {

void require_defined(const Tensor& t, const char* op) {
  if (!t.defined())
    throw Error(std::string(op) + ": the tensor is undefined (default-constructed)");
}

bool is_unsigned(DType t) {
  return t == DType::U8 || t == DType::U32 || t == DType::U64;
}

void require_same_device(const Tensor& a, const Tensor& b, const char* op) {
  // Compared where the storages hold them: a Device copy is an atomic increment and decrement.
  if (!(a.storage()->device == b.storage()->device)) {
    throw Error(std::string(op) + ": operands are on different devices (" + a.device().name() +
                " and " + b.device().name() + "); move one with .to(device)");
  }
}

const Tensor& as_operand(const Tensor& x, DType t, const Shape& shape, Tensor& made) {
  if (x.dtype() == t && x.shape() == shape) return x;
  made = x.to(t).broadcast_to(shape);
  return made;
}

Tensor binary_op(wick_op_code op, const Tensor& a, const Tensor& b,
                 std::optional<DType> out_dtype) {
  const char* name = sdk::op_name(op);
  require_defined(a, name);
  require_defined(b, name);
  require_same_device(a, b, name);
  const DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = empty_on(a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name),
                        out_dtype.value_or(t), a.storage()->device);
  if (out.numel() == 0) return out;
  Tensor made_a, made_b;
  dispatch(op, nullptr, {&as_operand(a, t, out.shape(), made_a), &as_operand(b, t, out.shape(), made_b)},
           out);
  return out;
}

Tensor empty_on(Shape shape, DType dtype, const Device& device) {
  const uint64_t bytes = bytes_of(shape, dtype);  // checks the extents
  std::vector<int64_t> strides = contiguous_strides(shape);
  return Tensor(Storage::allocate(device, bytes), dtype, std::move(shape), std::move(strides), 0);
}

Tensor unary_op(wick_op_code op, const Tensor& x, const void* params,
                std::optional<DType> out_dtype) {
  require_defined(x, sdk::op_name(op));
  Tensor out = empty_on(x.shape(), out_dtype.value_or(x.dtype()), x.storage()->device);
  if (out.numel() > 0) dispatch(op, params, {&x}, out);
  return out;
}

std::vector<int32_t> normalize_axes(const std::vector<int>& axes, int rank, const char* op) {
  std::vector<int32_t> norm;
  for (int a : axes) {
    const int n = normalize_axis(a, rank, op);
    if (std::find(norm.begin(), norm.end(), n) != norm.end()) {
      throw Error(std::string(op) + ": axis " + std::to_string(a) + " is given twice");
    }
    norm.push_back(n);
  }
  std::sort(norm.begin(), norm.end());
  return norm;
}

Shape drop_axes(const Shape& shape, const std::vector<int32_t>& axes) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int32_t>(i)) == axes.end())
      out.push_back(shape[i]);
  }
  return out;
}

Tensor scalar_tensor(double value, DType dtype, const Device& device) {
  return Tensor::full(Shape{}, value, dtype, device);
}

Tensor attention_weights(const Tensor& scores) {
  if (scores.rank() == 0 || scores.dim(-1) == 0)
    return scores.softmax(-1);  // no keys: no rows to guard
  const Tensor zero = scalar_tensor(0.0, scores.dtype(), scores.device());
  Tensor dead;  // [..., L, 1]: the rows whose max is -inf (a NaN anywhere wins the max)
  {
    const autograd::NoGradGuard no_grad;
    const Tensor s = scores.detach();
    dead = s.max({-1}, true)
               .eq(scalar_tensor(-std::numeric_limits<double>::infinity(), s.dtype(), s.device()));
  }
  // The dead rows' scores replaced by 0 before the softmax, so that neither its output nor its
  // backward sees 0 / 0; their weights (and the gradient through them) are then 0.
  return Tensor::where(dead, zero, Tensor::where(dead, zero, scores).softmax(-1));
}

}  // namespace detail

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    if (a == DType::F64 || b == DType::F64) return DType::F64;
    return DType::F32;  // f32 with f16/bf16, or f16 with bf16
  }
  using detail::is_unsigned;
  if (is_unsigned(a) == is_unsigned(b)) return int_size(a) >= int_size(b) ? a : b;
  const DType u = is_unsigned(a) ? a : b;
  const DType s = is_unsigned(a) ? b : a;
  if (int_size(s) > int_size(u)) return s;
  // A signed type that holds every value of both, as NumPy does; none exists for u64.
  if (u == DType::U64) return DType::F64;
  return signed_of_size(dtype_size(u) * 2);
}

}  // namespace wick
