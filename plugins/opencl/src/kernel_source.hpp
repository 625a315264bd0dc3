// kernel_source.hpp — the OpenCL C source of every kernel of this plugin, and the rows of the
// plugin's kernel table that those kernels serve.
#pragma once

#include <wick/sdk/op_table.hpp>

namespace wick::opencl {

// One program per device is built from this (expects -DWICK_MAX_RANK=<kMaxRank>). Kernel names:
// copy_<u8|u16|u32|u64>, fill_<u8|u16|u32|u64> (by element size), and <op>_<dtype> for the other
// rows below, op being the op table's name (f64 only where cl_khr_fp64 is defined).
extern const char* const kKernelSource;

// An op and the dtypes the source has kernels for.
struct KernelRow {
  wick_op_code op;
  sdk::DTypeSet dtypes;
};
extern const KernelRow kKernelRows[];
extern const size_t kKernelRowCount;

}  // namespace wick::opencl
