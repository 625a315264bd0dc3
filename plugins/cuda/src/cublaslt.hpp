// cublaslt.hpp — matmul through cuBLASLt, opened at run time (libcublasLt.so.<major>): f32
// (without TF32 unless allowed), f64, and f16/bf16 with f32 accumulation; batched and transposed
// views without copies where each operand has a unit stride in one of its two matrix dims and its
// batch dims walk as one stride. Anything else (integers, odd strides, no algorithm) is declined,
// and the caller runs the generated kernel instead.
#pragma once

#include "dynlib.hpp"

#include <wick/sdk/plugin.hpp>

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

namespace wick::cuda {

class CublasLt {
 public:
  // Opens cuBLASLt; nullptr (and `why`) when it is not there.
  static std::unique_ptr<CublasLt> open(std::string& why);
  ~CublasLt();

  // Runs op (a MATMUL whose buffers' device pointers are out, a, b) on `stream`, or returns false
  // without touching anything when cuBLASLt cannot take it. `workspace` (workspace_bytes) is the
  // device's. Throws sdk::Error when cuBLASLt accepted the problem and then failed.
  bool matmul(const wick_op_desc& op, void* out, const void* a, const void* b, bool allow_tf32,
              void* workspace, size_t workspace_bytes, cudaStream_t stream,
              const std::string& where);

  const std::string& path() const { return lib_.path(); }

 private:
  struct Api;
  DynLib lib_;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
};

}  // namespace wick::cuda
