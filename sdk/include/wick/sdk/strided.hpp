// wick/sdk/strided.hpp — the one strided N-d walker for host-memory kernels.
//
// for_each_row visits every innermost row of a shape for N operands that share the shape but have
// their own strides (in elements, any sign, 0 for broadcast). Adjacent dimensions that are
// contiguous in every operand are merged first, so a contiguous tensor is one long row.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace wick::sdk {

template <size_t N>
struct Row {
  std::array<int64_t, N> offset;  // element offset of the row's first element, per operand
  std::array<int64_t, N> stride;  // element stride along the row, per operand
  int64_t length;                 // elements in the row
};

// Number of elements of a shape (1 for rank 0).
inline int64_t shape_numel(const int64_t* shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

// Whether elements laid out with these strides are dense in C order (extent-1 axes may have any
// stride).
inline bool is_c_dense(const int64_t* shape, const int64_t* strides, int rank) {
  int64_t expected = 1;
  for (int i = rank; i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

template <size_t N, class F>
void for_each_row(const int64_t* shape, int rank, const std::array<const int64_t*, N>& strides, F&& f) {
  if (shape_numel(shape, rank) == 0) return;
  // Collapse: drop extent-1 dims, merge dim i into i+1 when stride[i] == stride[i+1] * shape[i+1]
  // for every operand.
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, N>> st;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] == 1) continue;
    std::array<int64_t, N> s{};
    for (size_t k = 0; k < N; ++k) s[k] = strides[k][i];
    if (!dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k) merge = merge && st.back()[k] == s[k] * shape[i];
      if (merge) {
        dims.back() *= shape[i];
        st.back() = s;
        continue;
      }
    }
    dims.push_back(shape[i]);
    st.push_back(s);
  }
  Row<N> row{};
  if (dims.empty()) {
    row.length = 1;
    f(row);
    return;
  }
  const size_t inner = dims.size() - 1;
  row.length = dims[inner];
  row.stride = st[inner];
  std::vector<int64_t> index(inner, 0);
  for (;;) {
    f(row);
    // Advance the outer index like an odometer, updating offsets incrementally.
    size_t d = inner;
    while (d > 0) {
      --d;
      for (size_t k = 0; k < N; ++k) row.offset[k] += st[d][k];
      if (++index[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) row.offset[k] -= st[d][k] * dims[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

}  // namespace wick::sdk
