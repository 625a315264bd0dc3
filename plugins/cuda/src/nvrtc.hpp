// nvrtc.hpp — NVRTC, opened at run time (libnvrtc.so.<major>): compiles the kernel units that
// gpu-common renders to CUDA C, for the device's own architecture (a cubin, no driver JIT) or to
// PTX (the CI check, which then runs ptxas). Needs no driver and no GPU.
#pragma once

#include "dynlib.hpp"

#include <nvrtc.h>

#include <string>
#include <vector>

namespace wick::cuda {

class Nvrtc {
 public:
  // Opens NVRTC; an empty Nvrtc (operator bool false) when it is not there, with `why` saying so.
  static Nvrtc open(std::string& why);

  explicit operator bool() const { return static_cast<bool>(lib_); }
  // "13.0"
  std::string version() const;
  // The architectures this NVRTC compiles for (80 for sm_80, ...).
  std::vector<int> architectures() const;

  struct Output {
    bool ok = false;
    std::vector<char> code;  // cubin or PTX (with its terminating NUL)
    std::string log;         // the compiler's log (errors and warnings)
  };
  // Compiles `source` (named `name` in messages) for sm_<arch>: a cubin, or PTX when `ptx`.
  Output compile(const std::string& source, const std::string& name, int arch, bool ptx) const;

 private:
  DynLib lib_;
  decltype(&nvrtcVersion) version_ = nullptr;
  decltype(&nvrtcGetNumSupportedArchs) num_archs_ = nullptr;
  decltype(&nvrtcGetSupportedArchs) archs_ = nullptr;
  decltype(&nvrtcCreateProgram) create_ = nullptr;
  decltype(&nvrtcCompileProgram) compile_ = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size_ = nullptr;
  decltype(&nvrtcGetProgramLog) log_ = nullptr;
  decltype(&nvrtcGetPTXSize) ptx_size_ = nullptr;
  decltype(&nvrtcGetPTX) ptx_ = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size_ = nullptr;
  decltype(&nvrtcGetCUBIN) cubin_ = nullptr;
  decltype(&nvrtcDestroyProgram) destroy_ = nullptr;
  decltype(&nvrtcGetErrorString) error_string_ = nullptr;
};

}  // namespace wick::cuda
