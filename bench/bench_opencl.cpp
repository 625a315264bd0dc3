// wick_bench_opencl: Wick's ops on the OpenCL device next to references on the same OpenCL device
// in the same process: CLBlast's SGEMM (Debian's libclblast) for matmul, and the driver's own
// clEnqueueCopyBuffer for the bandwidth of elementwise add. scripts/bench.sh --opencl runs it and
// prints the ratios (bench/report.py). Not a test.
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <benchmark/benchmark.h>
#include <clblast.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using wick::DType;
using wick::Tensor;

wick::Device opencl() {
  return wick::Runtime::global().registry().find_device("opencl");
}

// The first OpenCL device of the platform Wick's device runs on (PoCL here), with its own context
// and queue for the references.
struct Reference {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;

  static Reference& get() {
    static Reference r;
    return r;
  }
  cl_mem buffer(size_t bytes, const std::vector<float>* init = nullptr) {
    cl_int status = CL_SUCCESS;
    cl_mem m = clCreateBuffer(context, init ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                              init ? const_cast<float*>(init->data()) : nullptr, &status);
    if (status != CL_SUCCESS) throw std::runtime_error("clCreateBuffer: " + std::to_string(status));
    return m;
  }

 private:
  Reference() {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    cl_uint count = 0;
    if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS)
      throw std::runtime_error("no OpenCL device for the references");
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    queue = clCreateCommandQueue(context, device, 0, &status);
    if (status != CL_SUCCESS) throw std::runtime_error("clCreateCommandQueue failed");
  }
};

std::vector<float> values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return v;
}

void flops(benchmark::State& state, double per_iteration) {
  state.counters["FLOP/s"] =
      benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

void wick_matmul(benchmark::State& state, int64_t n) {
  const wick::Device d = opencl();
  const Tensor a = Tensor::from_vector(values(n * n, 1), {n, n}, d);
  const Tensor b = Tensor::from_vector(values(n * n, 2), {n, n}, d);
  (void)a.matmul(b);  // compile and first-use costs stay out of the loop
  d.synchronize();
  for (auto _ : state) {
    Tensor c = a.matmul(b);
    d.synchronize();
    benchmark::DoNotOptimize(c);
  }
  flops(state, 2.0 * static_cast<double>(n * n * n));
}

void clblast_matmul(benchmark::State& state, int64_t n) {
  Reference& r = Reference::get();
  const std::vector<float> av = values(n * n, 1), bv = values(n * n, 2);
  const size_t bytes = static_cast<size_t>(n * n) * sizeof(float);
  cl_mem a = r.buffer(bytes, &av), b = r.buffer(bytes, &bv), c = r.buffer(bytes);
  auto run = [&] {
    const auto s = clblast::Gemm(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                                 clblast::Transpose::kNo, static_cast<size_t>(n),
                                 static_cast<size_t>(n), static_cast<size_t>(n), 1.0f, a, 0,
                                 static_cast<size_t>(n), b, 0, static_cast<size_t>(n), 0.0f, c, 0,
                                 static_cast<size_t>(n), &r.queue);
    clFinish(r.queue);
    return s;
  };
  if (run() != clblast::StatusCode::kSuccess) state.SkipWithError("CLBlast's Gemm failed");
  for (auto _ : state) benchmark::DoNotOptimize(run());
  flops(state, 2.0 * static_cast<double>(n * n * n));
  for (cl_mem m : {a, b, c}) clReleaseMemObject(m);
}

void wick_add(benchmark::State& state, int64_t n) {
  const wick::Device d = opencl();
  const Tensor a = Tensor::from_vector(values(n, 1), {n}, d);
  const Tensor b = Tensor::from_vector(values(n, 2), {n}, d);
  (void)(a + b);
  d.synchronize();
  for (auto _ : state) {
    Tensor c = a + b;
    d.synchronize();
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<int64_t>(3 * 4 * n) * state.iterations());
}

// The driver's own copy of n floats: read n, write n.
void copy_buffer(benchmark::State& state, int64_t n) {
  Reference& r = Reference::get();
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  const std::vector<float> av = values(n, 1);
  cl_mem a = r.buffer(bytes, &av), c = r.buffer(bytes);
  for (auto _ : state) {
    clEnqueueCopyBuffer(r.queue, a, c, 0, 0, bytes, 0, nullptr, nullptr);
    clFinish(r.queue);
  }
  state.SetBytesProcessed(static_cast<int64_t>(2 * bytes) * state.iterations());
  for (cl_mem m : {a, c}) clReleaseMemObject(m);
}

}  // namespace

int main(int argc, char** argv) {
  wick::Config config = wick::default_config();
  config.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  config.log_level = "error";
  wick::Runtime::configure(config);
  if (!opencl().valid()) {
    std::fprintf(stderr, "wick_bench_opencl: no usable OpenCL device\n");
    return 1;
  }
  benchmark::AddCustomContext("wick_device", opencl().description());
  for (int64_t n : {int64_t{512}, int64_t{1024}}) {
    const std::string name = "cl_matmul_f32_" + std::to_string(n);
    benchmark::RegisterBenchmark((name + "/wick").c_str(), wick_matmul, n)->UseRealTime();
    benchmark::RegisterBenchmark((name + "/clblast").c_str(), clblast_matmul, n)->UseRealTime();
  }
  const int64_t n = 10000000;
  benchmark::RegisterBenchmark("cl_add_f32_10000000/wick", wick_add, n)->UseRealTime();
  benchmark::RegisterBenchmark("cl_add_f32_10000000/copy", copy_buffer, n)->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
