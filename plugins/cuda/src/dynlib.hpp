// dynlib.hpp — a shared library opened at run time (NVRTC, cuBLASLt): the CUDA plugin links only
// the static CUDA runtime, so it loads on machines without these libraries and names the missing
// one in its reason instead.
#pragma once

#include <initializer_list>
#include <string>

namespace wick::cuda {

class DynLib {
 public:
  DynLib() = default;
  DynLib(DynLib&& other) noexcept;
  DynLib& operator=(DynLib&& other) noexcept;
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  ~DynLib();

  // The first of `names` that opens (each tried as given, then in $CUDA_HOME/lib64,
  // /usr/local/cuda/lib64 and /usr/local/cuda/lib); when none does, an empty DynLib and `why` says
  // what was tried and the loader's last message.
  static DynLib open(std::initializer_list<const char*> names, std::string& why);

  explicit operator bool() const { return handle_ != nullptr; }
  const std::string& path() const { return path_; }

  // A function of the library; throws sdk::Error naming it and the library when missing.
  template <class F>
  F function(const char* name) const {
    return reinterpret_cast<F>(symbol(name));
  }

 private:
  void* symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace wick::cuda
