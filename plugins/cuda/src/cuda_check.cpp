#include "cuda_check.hpp"

#include <wick/sdk/plugin.hpp>

namespace wick::cuda {

std::string describe_cuda_error(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + " (" + std::to_string(static_cast<int>(code)) +
         "): " + cudaGetErrorString(code);
}

void cuda_check(cudaError_t code, const char* call, const std::string& where) {
  if (code == cudaSuccess) return;
  throw sdk::Error(code == cudaErrorMemoryAllocation ? WICK_STATUS_OUT_OF_MEMORY : WICK_STATUS_DEVICE_ERROR,
                   std::string(call) + " failed: " + describe_cuda_error(code) + " on " + where);
}

}  // namespace wick::cuda
