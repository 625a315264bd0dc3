// wick/sdk/strided_args.hpp — the geometry of an elementwise op as a device kernel sees it: a
// plain struct with 64-bit fields only, so that host code, CUDA kernels and OpenCL C agree on its
// layout. Built by wick::sdk::make_strided_args (wick/sdk/elementwise.hpp).
#pragma once

#include <cstdint>

namespace wick::sdk {

inline constexpr int kMaxRank = 8;
inline constexpr int kMaxOperands = 4;  // out[0] plus up to three inputs (where)

struct StridedArgs {
  int64_t shape[kMaxRank];
  int64_t strides[kMaxOperands][kMaxRank];  // operand 0 is out[0], then the inputs
  int64_t offsets[kMaxOperands];            // element offset of element [0, ..., 0]
  int64_t rank;
  int64_t numel;
};
static_assert(sizeof(StridedArgs) == 8 * (kMaxRank * (1 + kMaxOperands) + kMaxOperands + 2), "no padding");

}  // namespace wick::sdk
