// cuda_kernels.hpp — host entry points of the kernels in cuda_kernels.cu. Each enqueues on
// `stream` (the caller has made the right device current) and returns the launch status.
#pragma once

#include <wick/sdk/strided_args.hpp>

#include <cuda_runtime_api.h>
#include <wick/wick_plugin.h>

#include <cstddef>

namespace wick::cuda {

using sdk::kMaxOperands;
using sdk::kMaxRank;
using sdk::StridedArgs;

// Pointers are buffer starts; StridedArgs carries the element offsets. Copy and fill move bits,
// so any dtype is served by its element size (1, 2, 4 or 8).
cudaError_t launch_copy(size_t element_size, void* dst, const void* src, const StridedArgs& args,
                        cudaStream_t stream);
// `value` points at one element's bytes.
cudaError_t launch_fill(size_t element_size, void* dst, const void* value, const StridedArgs& args,
                        cudaStream_t stream);
// dtype: f32, f64, i32, i64, f16 or bf16 (the halves are computed in f32, rounded to nearest-even).
cudaError_t launch_add(wick_dtype dtype, void* out, const void* x, const void* y, const StridedArgs& args,
                       cudaStream_t stream);

}  // namespace wick::cuda
