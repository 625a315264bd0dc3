#include "nvrtc.hpp"

#include <wick/sdk/plugin.hpp>

#include <memory>

namespace wick::cuda {

Nvrtc Nvrtc::open(std::string& why) {
  Nvrtc n;
  // This build's major first (its PTX and cubins the driver surely takes), then others.
  n.lib_ = DynLib::open({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, why);
  if (!n.lib_) return n;
  try {
    n.version_ = n.lib_.function<decltype(&nvrtcVersion)>("nvrtcVersion");
    n.num_archs_ = n.lib_.function<decltype(&nvrtcGetNumSupportedArchs)>("nvrtcGetNumSupportedArchs");
    n.archs_ = n.lib_.function<decltype(&nvrtcGetSupportedArchs)>("nvrtcGetSupportedArchs");
    n.create_ = n.lib_.function<decltype(&nvrtcCreateProgram)>("nvrtcCreateProgram");
    n.compile_ = n.lib_.function<decltype(&nvrtcCompileProgram)>("nvrtcCompileProgram");
    n.log_size_ = n.lib_.function<decltype(&nvrtcGetProgramLogSize)>("nvrtcGetProgramLogSize");
    n.log_ = n.lib_.function<decltype(&nvrtcGetProgramLog)>("nvrtcGetProgramLog");
    n.ptx_size_ = n.lib_.function<decltype(&nvrtcGetPTXSize)>("nvrtcGetPTXSize");
    n.ptx_ = n.lib_.function<decltype(&nvrtcGetPTX)>("nvrtcGetPTX");
    n.cubin_size_ = n.lib_.function<decltype(&nvrtcGetCUBINSize)>("nvrtcGetCUBINSize");
    n.cubin_ = n.lib_.function<decltype(&nvrtcGetCUBIN)>("nvrtcGetCUBIN");
    n.destroy_ = n.lib_.function<decltype(&nvrtcDestroyProgram)>("nvrtcDestroyProgram");
    n.error_string_ = n.lib_.function<decltype(&nvrtcGetErrorString)>("nvrtcGetErrorString");
  } catch (const sdk::Error& e) {
    why = e.what();
    return Nvrtc();
  }
  return n;
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  if (version_ == nullptr || version_(&major, &minor) != NVRTC_SUCCESS) return "?";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> Nvrtc::architectures() const {
  int count = 0;
  if (num_archs_ == nullptr || num_archs_(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(count));
  if (archs_(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

Nvrtc::Output Nvrtc::compile(const std::string& source, const std::string& name, int arch,
                             bool ptx) const {
  Output out;
  nvrtcProgram program = nullptr;
  nvrtcResult r = create_(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCreateProgram failed: ") + error_string_(r);
    return out;
  }
  // PTX for a virtual architecture, or a cubin for the real one; -w: the generated source's
  // expected warnings (comparisons made constant by a type) are not news.
  const std::string target =
      std::string("--gpu-architecture=") + (ptx ? "compute_" : "sm_") + std::to_string(arch);
  const char* options[] = {target.c_str(), "-w", "--std=c++17"};
  r = compile_(program, 3, options);
  size_t log_size = 0;
  if (log_size_(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    log_(program, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    if ((ptx ? ptx_size_(program, &size) : cubin_size_(program, &size)) == NVRTC_SUCCESS && size > 0) {
      out.code.resize(size);
      out.ok = (ptx ? ptx_(program, out.code.data()) : cubin_(program, out.code.data())) == NVRTC_SUCCESS;
    }
  } else {
    out.log = std::string(error_string_(r)) + (out.log.empty() ? "" : ":\n" + out.log);
  }
  destroy_(&program);
  return out;
}

}  // namespace wick::cuda
