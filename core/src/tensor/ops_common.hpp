// ops_common.hpp — the building blocks every op of the Tensor API is written with (core internal).
#pragma once

#include <wick/tensor.hpp>
#include <wick/wick_plugin.h>

#include <optional>
#include <vector>

namespace wick::detail {

void require_defined(const Tensor& t, const char* op);
bool is_unsigned(DType t);
// Throws naming the op and both devices when a and b are on different devices.
void require_same_device(const Tensor& a, const Tensor& b, const char* op);

// x as an op's operand of dtype t and shape `shape`: x itself where it already is one (no copy: a
// Tensor copy costs two heap allocations), else x converted and broadcast into `made`.
const Tensor& as_operand(const Tensor& x, DType t, const Shape& shape, Tensor& made);

// A new contiguous tensor on `device` (a valid one) that takes `shape` without copying it: an op's
// result, where Tensor::empty's copies of the shape and the device are measurable per-op costs.
Tensor empty_on(Shape shape, DType dtype, const Device& device);
// Promotes a and b to a common dtype, broadcasts them, and runs `op` into a new tensor whose dtype
// is the common one, or out_dtype when given (comparisons give Bool).
Tensor binary_op(wick_op_code op, const Tensor& a, const Tensor& b,
                 std::optional<DType> out_dtype = std::nullopt);
// Runs a one-input op into a new tensor of x's shape (dtype: x's, or out_dtype).
Tensor unary_op(wick_op_code op, const Tensor& x, const void* params = nullptr,
                std::optional<DType> out_dtype = std::nullopt);
// Normalises, sorts and de-duplicates reduction axes (a repeat is an error naming the op).
std::vector<int32_t> normalize_axes(const std::vector<int>& axes, int rank, const char* op);
// The shape with the given (normalised) axes removed.
Shape drop_axes(const Shape& shape, const std::vector<int32_t>& axes);
// A 0-d tensor holding value in dtype on device.
Tensor scalar_tensor(double value, DType dtype, const Device& device);
// softmax over the last axis of attention scores, except that a row whose every score is -inf
// (fully masked) gives weights of 0, and so an output row of 0, with gradient 0 (the
// flash-attention convention), where softmax would give 0 / 0. Records for autograd.
Tensor attention_weights(const Tensor& scores);

}  // namespace wick::detail
