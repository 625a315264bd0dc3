// wick_bench_cuda: Wick's ops on the cuda device, with the references that need no library beyond
// the CUDA runtime in the same process: f32 add of 2^28 elements against cudaMemcpyAsync of the
// same bytes device to device (bandwidth counting bytes read and written), and the matmuls whose
// reference (torch.matmul, i.e. cuBLAS) bench/gpu_reference.py times on the same GPU in the same
// script (scripts/gpu-check.sh). Prints one JSON object per case: medians of 9 after a warm-up.
// Not a test; needs a GPU.
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

double median_seconds(const std::function<void()>& run) {
  run();  // warm-up: kernel units compiled or loaded, memory pools filled
  std::vector<double> t;
  for (int i = 0; i < 9; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void print(const std::string& name, double seconds, double flops, double bytes) {
  std::printf("{\"case\": \"%s\", \"seconds\": %.6g, \"tflops\": %.4g, \"gbytes_per_s\": %.4g}\n",
              name.c_str(), seconds, flops / seconds / 1e12, bytes / seconds / 1e9);
  std::fflush(stdout);
}

}  // namespace

int main() {
  using wick::DType;
  using wick::Tensor;
  wick::Config config = wick::default_config();
  config.log_level = "error";
  wick::Runtime::configure(config);
  const wick::Device d = wick::Runtime::global().registry().find_device("cuda");
  if (!d.valid()) {
    std::fprintf(stderr, "wick_bench_cuda: no usable cuda device\n");
    return 1;
  }
  for (const auto& [dtype, name] : {std::pair{DType::BF16, "bf16"}, std::pair{DType::F32, "f32"}}) {
    const int64_t n = 8192;
    const Tensor a = Tensor::rand({n, n}, -1, 1, DType::F32, d).to(dtype);
    const Tensor b = Tensor::rand({n, n}, -1, 1, DType::F32, d, 2).to(dtype);
    const double s = median_seconds([&] {
      Tensor c = a.matmul(b);
      d.synchronize();
    });
    print(std::string("matmul_") + name + "_8192/wick", s, 2.0 * n * n * n, 0);
  }
  const int64_t n = int64_t{1} << 28;
  const Tensor x = Tensor::rand({n}, -1, 1, DType::F32, d), y = Tensor::rand({n}, -1, 1, DType::F32, d, 2);
  const double add = median_seconds([&] {
    Tensor z = x + y;
    d.synchronize();
  });
  print("add_f32_268435456/wick", add, 0, 3.0 * 4 * n);
  void *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&src, 4 * n) != cudaSuccess || cudaMalloc(&dst, 4 * n) != cudaSuccess ||
      cudaStreamCreate(&stream) != cudaSuccess) {
    std::fprintf(stderr, "wick_bench_cuda: cudaMalloc failed\n");
    return 1;
  }
  const double copy = median_seconds([&] {
    cudaMemcpyAsync(dst, src, 4 * n, cudaMemcpyDeviceToDevice, stream);
    cudaStreamSynchronize(stream);
  });
  print("add_f32_268435456/d2d_copy", copy, 0, 2.0 * 4 * n);
  return 0;
}
