#include "dynlib.hpp"

#include <wick/sdk/plugin.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <utility>
#include <vector>

namespace wick::cuda {

DynLib::DynLib(DynLib&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

DynLib& DynLib::operator=(DynLib&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

DynLib::~DynLib() {
  if (handle_ != nullptr) dlclose(handle_);
}

DynLib DynLib::open(std::initializer_list<const char*> names, std::string& why) {
  std::vector<std::string> dirs = {""};
  if (const char* home = ::secure_getenv("CUDA_HOME"); home != nullptr && home[0] == '/')
    dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back("/usr/local/cuda/lib/");
  std::string tried, last;
  for (const std::string& dir : dirs) {
    for (const char* name : names) {
      const std::string path = dir + name;
      dlerror();
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        DynLib lib;
        lib.handle_ = h;
        lib.path_ = path;
        return lib;
      }
      if (const char* e = dlerror()) last = e;
      if (dir.empty()) tried += (tried.empty() ? "" : ", ") + path;
    }
  }
  why = "could not open " + tried + " (also looked in $CUDA_HOME/lib64 and /usr/local/cuda): " +
        last;
  return DynLib();
}

void* DynLib::symbol(const char* name) const {
  dlerror();
  void* s = handle_ != nullptr ? dlsym(handle_, name) : nullptr;
  if (s == nullptr)
    throw sdk::Error(WICK_STATUS_DEVICE_ERROR,
                     std::string("function ") + name + " is missing from " + path_);
  return s;
}

}  // namespace wick::cuda
