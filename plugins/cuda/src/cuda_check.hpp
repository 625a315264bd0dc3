// cuda_check.hpp — the one place CUDA runtime status codes become wick::sdk::Error.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace wick::cuda {

// "cudaErrorNoDevice (100): no CUDA-capable device is detected"
std::string describe_cuda_error(cudaError_t code);

// Throws sdk::Error "<call> failed: <name> (<code>): <text> on <where>" unless code is cudaSuccess.
// cudaErrorMemoryAllocation carries WICK_STATUS_OUT_OF_MEMORY; every other code
// WICK_STATUS_DEVICE_ERROR.
void cuda_check(cudaError_t code, const char* call, const std::string& where);

}  // namespace wick::cuda
