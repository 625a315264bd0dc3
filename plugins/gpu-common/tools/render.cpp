// wick-gpu-render DIALECT: prints the kernel program rendered for "opencl" or "cuda" (for checks
// such as compiling the CUDA rendering with nvcc or NVRTC where no GPU is present).
#include <wick/gpu/kernels.hpp>

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "opencl") != 0 && std::strcmp(argv[1], "cuda") != 0)) {
    std::cerr << "usage: wick-gpu-render opencl|cuda\n";
    return 2;
  }
  const bool cuda = std::strcmp(argv[1], "cuda") == 0;
  std::cout << wick::gpu::render_program(cuda ? wick::gpu::Dialect::CUDA : wick::gpu::Dialect::OpenCL);
  return 0;
}
