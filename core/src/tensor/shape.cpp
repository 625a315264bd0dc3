#include <wick/shape.hpp>

#include <algorithm>

namespace wick {

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw Error("shape " + shape_to_string(shape) + " has a negative extent");
    empty = empty || d == 0;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  if (empty) return 0;  // an empty tensor, whatever its other extents
  if (overflow)
    throw Error("shape " + shape_to_string(shape) + " has more than 2^63 - 1 elements");
  return n;
}

uint64_t bytes_of(const Shape& shape, DType dtype) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel_of(shape), static_cast<int64_t>(dtype_size(dtype)), &bytes))
    throw Error("shape " + shape_to_string(shape) + " of " + dtype_name(dtype) +
                " needs more than 2^63 - 1 bytes");
  return static_cast<uint64_t>(bytes);
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  (void)numel_of(shape);  // extents valid and their product representable
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s)) s = 0;  // unused beyond
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error(op + ": shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                  " do not broadcast (axis " + std::to_string(i) + " of the result: " +
                  std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(int axis, int rank, const std::string& op) {
  if (axis < -rank || axis >= rank) {
    throw Error(op + ": axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                std::to_string(rank) + " (valid: " + std::to_string(-rank) + " to " +
                std::to_string(rank - 1) + ")");
  }
  return axis < 0 ? axis + rank : axis;
}

std::pair<int64_t, int64_t> element_span(const Shape& shape, const std::vector<int64_t>& strides,
                                         int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t reach = (shape[i] - 1) * strides[i];
    if (reach < 0) lo += reach;
    else hi += reach;
  }
  return {lo, hi};
}

}  // namespace wick
