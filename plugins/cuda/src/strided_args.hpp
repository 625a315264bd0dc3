// strided_args.hpp — the geometry of an elementwise op as the kernels see it.
// (The OpenCL plugin holds the same logic; plugins share nothing but the SDK.)
//
// The host hands us strided views (shape, strides in elements of any sign, byte offsets). Before a
// launch we validate them, check every reachable element lies inside its buffer, and collapse the
// dimensions (drop extent-1 axes, merge axes that are contiguous in every operand) so that the
// kernel's index -> offset loop runs over as few axes as possible: a contiguous tensor becomes
// rank 1.
#pragma once

#include <wick/wick_plugin.h>

#include <cstdint>
#include <string>

namespace wick::cuda {

inline constexpr int kMaxRank = 8;
inline constexpr int kMaxOperands = 3;  // out[0] plus up to two inputs

// Passed to every kernel by value (cuda_kernels.cu includes this header, so host and device share
// one definition).
struct StridedArgs {
  int64_t shape[kMaxRank];
  int64_t strides[kMaxOperands][kMaxRank];  // operand 0 is out[0], then in[0], in[1]
  int64_t offsets[kMaxOperands];            // element offset of element [0, ..., 0]
  int64_t rank;
  int64_t numel;
};
static_assert(sizeof(StridedArgs) == 8 * (kMaxRank * (1 + kMaxOperands) + kMaxOperands + 2), "no padding");

// Why an op cannot run: the support code op_supports answers, and a reason for op_execute's error.
struct Verdict {
  wick_support support = WICK_SUPPORT_YES;
  std::string reason;
  bool ok() const { return support == WICK_SUPPORT_YES; }
};

// Checks what supports() may look at (no buffers): one output, `num_inputs` inputs with the
// output's dtype and shape, rank <= kMaxRank, byte offsets aligned to the element size.
Verdict check_elementwise_geometry(const wick_op_desc& op, size_t num_inputs);

// Builds the kernel arguments for out[0] followed by the inputs. The op must have passed
// check_elementwise_geometry. Throws INVALID_ARGUMENT when an operand has no buffer or reaches
// outside its buffer.
StridedArgs make_strided_args(const wick_op_desc& op);

}  // namespace wick::cuda
