// wick-nvrtc-check OUTDIR ARCH...: compiles every kernel unit of the GPU plugins' shared
// description, rendered to CUDA C, with NVRTC to PTX for each virtual architecture (80 for
// compute_80, ...), writing OUTDIR/<unit>.sm_<arch>.ptx. No driver or GPU needed. Exit 1 naming
// each unit that fails, with NVRTC's log; 2 when NVRTC cannot be opened.
#include "nvrtc.hpp"

#include <wick/gpu/kernels.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: wick-nvrtc-check OUTDIR ARCH...\n";
    return 2;
  }
  std::string why;
  const wick::cuda::Nvrtc nvrtc = wick::cuda::Nvrtc::open(why);
  if (!nvrtc) {
    std::cerr << "wick-nvrtc-check: " << why << "\n";
    return 2;
  }
  int failed = 0, compiled = 0;
  for (int a = 2; a < argc; ++a) {
    const int arch = std::atoi(argv[a]);
    for (const std::string& unit : wick::gpu::program_units()) {
      const std::string source = wick::gpu::render_unit(wick::gpu::Dialect::CUDA, unit);
      const auto out = nvrtc.compile(source, unit + ".cu", arch, true);
      if (!out.ok) {
        std::cerr << "FAIL " << unit << " for compute_" << arch << ":\n" << out.log << "\n";
        ++failed;
        continue;
      }
      std::ofstream(std::string(argv[1]) + "/" + unit + ".sm_" + std::to_string(arch) + ".ptx")
          << out.code.data();
      ++compiled;
    }
  }
  std::cout << "NVRTC " << nvrtc.version() << ": " << compiled << " units compiled, " << failed
            << " failed\n";
  return failed == 0 ? 0 : 1;
}
