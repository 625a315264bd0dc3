// kernel_source.hpp — the OpenCL C source of every kernel of this plugin.
#pragma once

namespace wick::opencl {

// One program per device is built from this (expects -DWICK_MAX_RANK=<kMaxRank>). Kernel names:
// copy_<u8|u16|u32|u64>, fill_<u8|u16|u32|u64> (by element size), add_<f32|i32|i64|f64> (f64
// only where cl_khr_fp64 is defined).
extern const char* const kKernelSource;

}  // namespace wick::opencl
