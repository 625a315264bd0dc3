// wick/shape.hpp — shape and stride arithmetic shared by views, ops and the readers of every layer
// (checked element counts and byte sizes).
#pragma once

#include <wick/tensor.hpp>

#include <string>
#include <utility>
#include <vector>

namespace wick {

// Element counts and byte sizes are formed only here, checked: a negative extent, or a product
// beyond 2^63 - 1 elements (or bytes), is a wick::Error naming the shape, never a wrapped value
// that would size a buffer too small for the kernels that fill it.
int64_t numel_of(const Shape& shape);
uint64_t bytes_of(const Shape& shape, DType dtype);
std::vector<int64_t> contiguous_strides(const Shape& shape);
// NumPy broadcasting; throws naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);
// axis in [-rank, rank) -> [0, rank); throws naming `op`.
int normalize_axis(int axis, int rank, const std::string& op);
// The smallest and largest element offsets a view touches (numel > 0).
std::pair<int64_t, int64_t> element_span(const Shape& shape, const std::vector<int64_t>& strides,
                                         int64_t offset);

}  // namespace wick
