// nn.hpp — what convolution and the window ops share.
#pragma once

#include "kernels.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace wick::cpu {

// Advances the multi-index over the first `dims` axes of `extent` (odometer order, last axis
// fastest); false after the last index, when idx is back at zeros.
inline bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& extent, size_t dims) {
  for (size_t i = dims; i-- > 0;) {
    if (++idx[i] < extent[i]) return true;
    idx[i] = 0;
  }
  return false;
}

}  // namespace wick::cpu
