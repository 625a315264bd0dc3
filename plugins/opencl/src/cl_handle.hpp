// cl_handle.hpp — owning wrappers for OpenCL objects (released exactly once, movable, not
// copyable).
#pragma once

#include <CL/cl.h>

#include <utility>

namespace wick::opencl {

template <class T, cl_int(CL_API_CALL* Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}
  ClHandle(ClHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ~ClHandle() { reset(); }

  T get() const { return handle_; }
  // Releasing can only fail for an invalid handle, which would be our bug; nothing to report then.
  void reset() {
    if (handle_ != nullptr) Release(std::exchange(handle_, nullptr));
  }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T handle_ = nullptr;
};

using ClContext = ClHandle<cl_context, clReleaseContext>;
using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ClProgram = ClHandle<cl_program, clReleaseProgram>;
using ClKernel = ClHandle<cl_kernel, clReleaseKernel>;
using ClMem = ClHandle<cl_mem, clReleaseMemObject>;

}  // namespace wick::opencl
