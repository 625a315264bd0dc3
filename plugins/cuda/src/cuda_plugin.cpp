// cuda_plugin.cpp — libwick-cuda.so: every GPU the CUDA runtime (linked statically) can see, running
// the whole v1 op set from the kernel description the GPU plugins share (gpu-common), rendered to
// CUDA C and compiled at run time by NVRTC (opened when the plugin initializes) for the device's
// own architecture, in units built on first use and cached on disk like the OpenCL programs.
//
// One non-blocking stream per device; every call makes its device current first, since the host
// may call from any thread. Buffers come from the device's stream-ordered memory pool
// (cudaMallocAsync), which keeps freed memory for reuse; frees are stream-ordered too, so freeing
// never waits for queued kernels. Host transfers of large blocks go through pinned staging.
// Without a driver, a GPU or NVRTC, initialize answers zero devices and says why.
#include "cublaslt.hpp"
#include "cuda_check.hpp"
#include "nvrtc.hpp"

#include <wick/gpu/driver.hpp>
#include <wick/gpu/kernels.hpp>
#include <wick/gpu/program_cache.hpp>
#include <wick/sdk/dtype.hpp>
#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/kernel_table.hpp>
#include <wick/sdk/ops.hpp>
#include <wick/sdk/plugin.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace wick::cuda {

namespace {

// "13.0" from 13000, the way CUDART_VERSION and cudaDriverGetVersion count.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The runtime this plugin carries (linked statically), for messages.
std::string runtime_version() {
  return cuda_version_text(CUDART_VERSION);
}

struct CudaDevice final : wick_device {
  int ordinal = 0;
  int arch = 0;  // compute capability as major * 10 + minor
  std::string name;
  std::string label;     // "NVIDIA H200 (CUDA device 0)": what error messages name
  std::string identity;  // device, compute capability, driver, runtime, NVRTC: the cache key
  uint64_t memory_bytes = 0;
  uint32_t compute_units = 0;
  uint64_t capabilities = 0;
  cudaStream_t stream = nullptr;
  const Nvrtc* nvrtc = nullptr;
  CublasLt* cublas = nullptr;  // matmul's first choice; nullptr: generated kernels only
  bool allow_tf32 = false;

  // Kernel units (gpu::program_units) and kernels, loaded on first use under build_mutex; a failed
  // build is remembered per unit.
  std::mutex build_mutex;
  gpu::UnitCache<cudaLibrary_t> units;
  std::unordered_map<std::string, cudaKernel_t> kernels;
  sdk::KernelTable<CudaDevice> table;

  void* error_buffer = nullptr;  // two i64: an index kernel's error flag and the bad index
  size_t error_size = 0;
  void* scratch = nullptr;       // partials and columns of multi-pass launches, grown on demand
  size_t scratch_size = 0;
  void* staging = nullptr;  // pinned host memory for transfers (kStagingBytes), made on first use
  void* workspace = nullptr;  // cuBLASLt's (kWorkspaceBytes), made on first use
  size_t workspace_size = 0;

  ~CudaDevice() override {
    // Nothing to report to from a destructor; at process exit the runtime may already be gone.
    if (cudaSetDevice(ordinal) != cudaSuccess) return;
    if (stream != nullptr) cudaStreamSynchronize(stream);
    for (void* p : {error_buffer, scratch, workspace})
      if (p != nullptr) cudaFree(p);
    if (staging != nullptr) cudaFreeHost(staging);
    for (auto& [unit, library] : units.programs()) cudaLibraryUnload(library);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  // Makes this device current on the calling thread; every CUDA call below needs it.
  void activate() const { cuda_check(cudaSetDevice(ordinal), "cudaSetDevice", label); }
  void sync() const { cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", label); }
};

struct CudaBuffer final : wick_buffer {
  void* data = nullptr;
  char* bytes(uint64_t offset) const { return static_cast<char*>(data) + offset; }
};

CudaDevice& as_device(const wick_device* device) {
  if (device == nullptr) throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, "NULL device");
  return *static_cast<CudaDevice*>(const_cast<wick_device*>(device));
}

const CudaBuffer& as_buffer(const wick_buffer* buffer) {
  if (buffer == nullptr) throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, "NULL buffer");
  return *static_cast<const CudaBuffer*>(buffer);
}

// Why there is no device, worded for `wick devices`.
std::string unavailable_reason(cudaError_t status) {
  const std::string what = "cudaGetDeviceCount failed with " + describe_cuda_error(status);
  if (status == cudaErrorInsufficientDriver)
    return "no NVIDIA driver (or one older than this plugin's CUDA runtime " + runtime_version() +
           "): " + what;
  if (status == cudaErrorNoDevice) return "no CUDA device: " + what;
  return "CUDA unavailable: " + what;
}

// ----- kernel units: rendered, compiled by NVRTC (or found in the cache), loaded
// -----------------------------------------------------------------------------------------------

cudaLibrary_t load_unit(CudaDevice& dev, const std::string& unit) {
  const std::string source = gpu::render_unit(gpu::Dialect::CUDA, unit);
  const gpu::ProgramCache cache("cuda", dev.identity, source);
  std::vector<char> cubin;
  if (const auto cached = cache.load()) cubin.assign(cached->begin(), cached->end());
  cudaLibrary_t library = nullptr;
  if (!cubin.empty() &&
      cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) ==
          cudaSuccess)
    return library;
  cudaGetLastError();  // a stale cache entry the driver refused: compile afresh
  const Nvrtc::Output out = dev.nvrtc->compile(source, unit + ".cu", dev.arch, false);
  if (!out.ok)
    throw sdk::Error(WICK_STATUS_DEVICE_ERROR, "NVRTC " + dev.nvrtc->version() +
                                                   " could not compile kernel unit " + unit +
                                                   " for sm_" + std::to_string(dev.arch) + " on " +
                                                   dev.label + ":\n" + out.log);
  cuda_check(cudaLibraryLoadData(&library, out.code.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
             ("cudaLibraryLoadData (unit " + unit + ")").c_str(), dev.label);
  cache.store(std::vector<unsigned char>(out.code.begin(), out.code.end()));
  return library;
}

// A kernel by name, loading its unit first when this process has not yet.
cudaKernel_t find_kernel(CudaDevice& dev, const std::string& name) {
  std::lock_guard<std::mutex> lock(dev.build_mutex);
  if (auto it = dev.kernels.find(name); it != dev.kernels.end()) return it->second;
  const cudaLibrary_t library =
      dev.units.program_of(name, [&](const std::string& unit) { return load_unit(dev, unit); });
  cudaKernel_t kernel = nullptr;
  cuda_check(cudaLibraryGetKernel(&kernel, library, name.c_str()),
             ("cudaLibraryGetKernel(" + name + ")").c_str(), dev.label);
  return dev.kernels.emplace(name, kernel).first->second;
}

// ----- launching
// -----------------------------------------------------------------------------------------------

constexpr unsigned kBlock = 256;  // threads per block of 1-D launches

void launch(CudaDevice& dev, const gpu::KernelCall& call) {
  const cudaKernel_t kernel = find_kernel(dev, call.kernel);
  std::vector<void*> args(call.count());
  for (size_t i = 0; i < call.count(); ++i) args[i] = const_cast<void*>(call.value(i));
  dim3 grid(1, 1, 1), block(1, 1, 1);
  if (call.dims > 0) {  // the plan's own shape (global is a multiple of local)
    const int64_t* g = call.global;
    const int64_t* l = call.local;
    block = dim3(static_cast<unsigned>(l[0]), static_cast<unsigned>(l[1]), static_cast<unsigned>(l[2]));
    grid = dim3(static_cast<unsigned>(g[0] / l[0]), static_cast<unsigned>(g[1] / l[1]),
                static_cast<unsigned>(g[2] / l[2]));
  } else {  // one thread per element; kernels walk the rest (grid-stride) beyond 2^31 blocks
    block.x = kBlock;
    grid.x = static_cast<unsigned>(
        std::min<int64_t>((call.numel + kBlock - 1) / kBlock, int64_t{0x7fffffff}));
  }
  cuda_check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args.data(), 0,
                              dev.stream),
             ("cudaLaunchKernel(" + call.kernel + ")").c_str(), dev.label);
}

// Device memory that lives with the device (error report, scratch), grown when a launch needs more.
void* device_memory(CudaDevice& dev, void*& memory, size_t& size, size_t bytes) {
  if (memory == nullptr || size < bytes) {
    if (memory != nullptr) {
      dev.sync();  // queued launches may still use it
      cudaFree(memory);
      memory = nullptr;
    }
    cuda_check(cudaMalloc(&memory, bytes), "cudaMalloc (scratch)", dev.label);
    size = bytes;
  }
  return memory;
}

// Any generated kernel (gpu-common): the buffers' device pointers, output first, and the launches
// the kernel description plans for the op.
void run_generated(CudaDevice& dev, const wick_op_desc& op) {
  gpu::OperandHandles<void*, void* (*)(const wick_buffer*)> handles(
      op, &dev, dev.label, [](const wick_buffer* b) { return as_buffer(b).data; });
  gpu::Target target;  // doubles everywhere; neighbouring threads on neighbouring elements
  gpu::Launch plan = gpu::plan_launch(op, handles.pointers, sizeof(void*), target);
  dev.activate();
  void* scratch = nullptr;
  gpu::Runner runner;
  runner.handle_size = sizeof(void*);
  runner.scratch = [&](size_t bytes) {
    scratch = device_memory(dev, dev.scratch, dev.scratch_size, bytes);
    return static_cast<const void*>(&scratch);
  };
  runner.launch = [&](const gpu::KernelCall& call) { launch(dev, call); };
  runner.launch_checked = [&](gpu::KernelCall& call, int64_t report[2]) {
    void* flag = device_memory(dev, dev.error_buffer, dev.error_size, 2 * sizeof(int64_t));
    cuda_check(cudaMemsetAsync(flag, 0, 2 * sizeof(int64_t), dev.stream), "cudaMemsetAsync",
               dev.label);
    call.replace(static_cast<size_t>(call.error_slot), &flag, sizeof flag);
    launch(dev, call);
    cuda_check(cudaMemcpyAsync(report, flag, 2 * sizeof(int64_t), cudaMemcpyDeviceToHost, dev.stream),
               "cudaMemcpyAsync (error buffer)", dev.label);
    dev.sync();
  };
  gpu::run_plan(plan, runner);
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// Matmul: cuBLASLt where it takes the dtype and the views, else the generated tiled kernel.
void run_matmul(CudaDevice& dev, const wick_op_desc& op) {
  if (dev.cublas != nullptr) {
    sdk::check_operands_inside(op);
    const gpu::OperandHandles<void*, void* (*)(const wick_buffer*)> data(
        op, &dev, dev.label, [](const wick_buffer* b) { return as_buffer(b).data; });
    dev.activate();
    void* workspace = device_memory(dev, dev.workspace, dev.workspace_size, kWorkspaceBytes);
    if (dev.cublas->matmul(op, data.values[0], data.values[1], data.values[2], dev.allow_tf32,
                           workspace, kWorkspaceBytes, dev.stream, dev.label))
      return;
  }
  run_generated(dev, op);
}

// The device's kernel table: every op the kernel description covers, on every dtype.
sdk::KernelTable<CudaDevice> make_kernel_table() {
  sdk::KernelTable<CudaDevice> table;
  for (const sdk::OpInfo& o : sdk::kOps) {
    const sdk::DTypeSet dtypes = gpu::generated_dtypes(o.code);
    if (dtypes != 0)
      table.add({o.code, dtypes, o.code == WICK_OP_MATMUL ? &run_matmul : &run_generated,
                 &gpu::check_call});
  }
  return table;
}

std::unique_ptr<CudaDevice> open_device(int ordinal, const Nvrtc& nvrtc, std::string& unserved) {
  auto dev = std::make_unique<CudaDevice>();
  dev->ordinal = ordinal;
  dev->label = "CUDA device " + std::to_string(ordinal);
  dev->nvrtc = &nvrtc;
  dev->activate();
  cudaDeviceProp props{};
  cuda_check(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties", dev->label);
  dev->name = props.name;
  dev->label = dev->name + " (" + dev->label + ")";
  dev->arch = props.major * 10 + props.minor;
  const std::vector<int> archs = nvrtc.architectures();
  if (std::find(archs.begin(), archs.end(), dev->arch) == archs.end()) {
    unserved = dev->label + " has compute capability " + std::to_string(props.major) + "." +
               std::to_string(props.minor) + " (sm_" + std::to_string(dev->arch) + "), which NVRTC " +
               nvrtc.version() + " does not compile for (sm_" +
               (archs.empty() ? std::string("?") : std::to_string(archs.front())) + " to sm_" +
               (archs.empty() ? std::string("?") : std::to_string(archs.back())) + ")";
    return nullptr;
  }
  dev->memory_bytes = props.totalGlobalMem;
  dev->compute_units = static_cast<uint32_t>(props.multiProcessorCount);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  dev->identity = dev->name + "\nsm_" + std::to_string(dev->arch) + "\ndriver " +
                  std::to_string(driver) + "\nruntime " + runtime_version() + "\nnvrtc " +
                  nvrtc.version();
  // Ops are only enqueued, so they are asynchronous; every dtype runs (16-bit floats in f32).
  dev->capabilities = WICK_DEVICE_CAP_BUFFER_COPY | WICK_DEVICE_CAP_ASYNC | WICK_DEVICE_CAP_F64 |
                      WICK_DEVICE_CAP_F16 | WICK_DEVICE_CAP_BF16;
  // Non-blocking: our stream must not serialise with the legacy default stream of other code.
  cuda_check(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags", dev->label);
  // The pool keeps freed memory for reuse instead of returning it at each synchronisation.
  cudaMemPool_t pool = nullptr;
  cuda_check(cudaDeviceGetDefaultMemPool(&pool, ordinal), "cudaDeviceGetDefaultMemPool", dev->label);
  uint64_t keep = UINT64_MAX;
  cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
             "cudaMemPoolSetAttribute", dev->label);
  dev->table = make_kernel_table();
  return dev;
}

// Host transfers above this size go through pinned staging in halves, so that copying into one
// half overlaps the DMA of the other; smaller ones copy directly.
constexpr size_t kStagingBytes = size_t{32} << 20;

class CudaPlugin final : public sdk::Plugin {
 public:
  sdk::InitResult initialize(sdk::Options& options) override {
    // cuBLASLt for matmul (default on); TF32 for f32 matmul only when allowed (default off: f32
    // results then match the other backends' precision).
    const bool use_cublaslt = options.get_bool("cublaslt").value_or(true);
    const bool allow_tf32 = options.get_bool("allow_tf32").value_or(false);
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) return {{}, unavailable_reason(status)};
    if (count == 0) return {{}, "no CUDA device: cudaGetDeviceCount found 0 devices"};
    std::string why;
    nvrtc_ = Nvrtc::open(why);
    if (!nvrtc_) return {{}, "NVRTC (the CUDA runtime compiler the kernels need) is missing: " + why};

    // A device that fails to open, or that NVRTC cannot compile for, is skipped and named in the
    // message; the others still serve.
    std::string notes;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      try {
        std::string unserved;
        if (auto dev = open_device(ordinal, nvrtc_, unserved))
          devices_.push_back(std::move(dev));
        else
          notes += "; unavailable: " + unserved;
      } catch (const sdk::Error& e) {
        notes += std::string("; skipped a device: ") + e.what();
      }
    }
    std::string blas = "matmul by generated kernels (cublaslt = false)";
    if (use_cublaslt) {
      std::string missing;
      cublas_ = CublasLt::open(missing);
      blas = cublas_ ? "cuBLASLt " + cublas_->path() + (allow_tf32 ? " (TF32 allowed)" : "")
                     : "matmul by generated kernels: cuBLASLt unavailable: " + missing;
    }
    sdk::InitResult result;
    for (const auto& dev : devices_) {
      dev->cublas = cublas_.get();
      dev->allow_tf32 = allow_tf32;
      result.devices.push_back(dev.get());
    }
    int driver = 0;
    result.message =
        "CUDA runtime " + runtime_version() +
        (cudaDriverGetVersion(&driver) == cudaSuccess ? ", driver " + cuda_version_text(driver)
                                                      : "") +
        ", NVRTC " + nvrtc_.version() + ", " + blas + notes;
    return result;
  }

  wick_device_props properties(const wick_device* device) override {
    const CudaDevice& dev = as_device(device);
    wick_device_props props{};
    props.name = dev.name.c_str();
    props.vendor = "NVIDIA";
    props.kind = WICK_DEVICE_KIND_GPU;
    props.memory_bytes = dev.memory_bytes;
    props.capabilities = dev.capabilities;
    props.compute_units = dev.compute_units;
    return props;
  }

  void synchronize(wick_device* device) override {
    const CudaDevice& dev = as_device(device);
    dev.activate();
    dev.sync();
  }

  std::optional<uint64_t> free_memory(const wick_device* device) override {
    const CudaDevice& dev = as_device(device);
    dev.activate();
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo", dev.label);
    return free_bytes;
  }

  wick_buffer* allocate(wick_device* device, uint64_t size_bytes) override {
    CudaDevice& dev = as_device(device);
    dev.activate();
    auto buffer = std::make_unique<CudaBuffer>();
    buffer->device = &dev;
    buffer->size = size_bytes;
    // Stream-ordered, from the device's pool; an empty buffer still gets a real (unreachable) byte
    // so that every buffer has an address.
    cuda_check(cudaMallocAsync(&buffer->data, std::max<uint64_t>(size_bytes, 1), dev.stream),
               "cudaMallocAsync", dev.label);
    return buffer.release();
  }

  void free(wick_buffer* buffer) noexcept override {
    auto* b = static_cast<CudaBuffer*>(buffer);
    if (b != nullptr && b->data != nullptr) {
      const auto& dev = static_cast<const CudaDevice&>(*b->device);
      // Stream-ordered: the memory returns to the pool after the kernels queued before it.
      if (cudaSetDevice(dev.ordinal) == cudaSuccess) cudaFreeAsync(b->data, dev.stream);
    }
    delete b;
  }

  // ABI 1.8: the device pointer and the stream every op on the buffer runs on, so that NCCL (the
  // distributed layer) queues its collectives in order with ours. No kernel keeps data derived from
  // a buffer's contents across calls, so foreign writes need nothing more.
  wick_native_memory native_memory(wick_device* device, wick_buffer* buffer) override {
    const CudaDevice& dev = as_device(device);
    if (buffer->device != device)
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "buffer_native_memory: the buffer belongs to another device than " + dev.label);
    wick_native_memory m{};
    m.struct_size = sizeof m;
    m.kind = WICK_NATIVE_MEMORY_CUDA;
    m.device_ordinal = dev.ordinal;
    m.address = as_buffer(buffer).data;
    m.queue = dev.stream;
    return m;
  }

  void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) override {
    if (size == 0) return;
    const CudaBuffer& buffer = as_buffer(dst);
    CudaDevice& dev = as_device(buffer.device);
    dev.activate();
    transfer(dev, buffer.bytes(offset), src, size, cudaMemcpyHostToDevice);
  }

  void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) override {
    if (size == 0) return;
    const CudaBuffer& buffer = as_buffer(src);
    CudaDevice& dev = as_device(buffer.device);
    dev.activate();
    transfer(dev, dst, buffer.bytes(offset), size, cudaMemcpyDeviceToHost);
  }

  void copy(const wick_buffer* src, uint64_t src_offset, wick_buffer* dst, uint64_t dst_offset,
            uint64_t size) override {
    if (size == 0) return;
    const CudaBuffer& from = as_buffer(src);
    const CudaBuffer& to = as_buffer(dst);
    const CudaDevice& dev = as_device(from.device);
    const CudaDevice& dst_dev = as_device(to.device);
    if (&dev != &dst_dev) {
      // Two streams are involved: let both drain, copy, and wait, so that neither reorders.
      dst_dev.activate();
      dst_dev.sync();
      dev.activate();
      dev.sync();
      cuda_check(cudaMemcpyPeerAsync(to.bytes(dst_offset), dst_dev.ordinal, from.bytes(src_offset),
                                     dev.ordinal, size, dev.stream),
                 "cudaMemcpyPeerAsync", dev.label);
      dev.sync();
      return;
    }
    dev.activate();
    const bool overlap =
        &from == &to && src_offset < dst_offset + size && dst_offset < src_offset + size;
    if (!overlap) {
      enqueue_copy(dev, to.bytes(dst_offset), from.bytes(src_offset), size);
      return;
    }
    // cudaMemcpy does not allow overlapping regions: bounce through a scratch buffer (freed,
    // stream-ordered, when it goes out of scope).
    const auto release = [this](wick_buffer* b) { free(b); };
    std::unique_ptr<wick_buffer, decltype(release)> scratch(
        allocate(const_cast<CudaDevice*>(&dev), size), release);
    char* bounce = static_cast<const CudaBuffer&>(*scratch).bytes(0);
    enqueue_copy(dev, bounce, from.bytes(src_offset), size);
    enqueue_copy(dev, to.bytes(dst_offset), bounce, size);
  }

  wick_support supports(const wick_device* device, const wick_op_desc& op) override {
    return as_device(device).table.supports(op);
  }

  void execute(wick_device* device, const wick_op_desc& op) override {
    CudaDevice& dev = as_device(device);
    if (const wick_support s = dev.table.supports(op); s != WICK_SUPPORT_YES) {
      const bool unsupported = s == WICK_SUPPORT_NO_OP || s == WICK_SUPPORT_NO_DTYPE;
      throw sdk::Error(unsupported ? WICK_STATUS_UNSUPPORTED : WICK_STATUS_INVALID_ARGUMENT,
                       std::string(sdk::op_name(op.op)) +
                           " with these dtypes, shapes or params is not supported on " + dev.label +
                           " (supports() says so)");
    }
    dev.table.execute(dev, op);
  }

 private:
  static void enqueue_copy(const CudaDevice& dev, void* to, const void* from, uint64_t size) {
    cuda_check(cudaMemcpyAsync(to, from, size, cudaMemcpyDeviceToDevice, dev.stream),
               "cudaMemcpyAsync (device to device)", dev.label);
  }

  // A blocking host transfer on the device's stream (after the work queued before it). Large ones
  // go through the pinned staging buffer in two alternating halves: the host copies into one half
  // while the other half's DMA runs.
  static void transfer(CudaDevice& dev, void* to, const void* from, uint64_t size,
                       cudaMemcpyKind kind) {
    const char* what = kind == cudaMemcpyHostToDevice ? "cudaMemcpyAsync (host to device)"
                                                      : "cudaMemcpyAsync (device to host)";
    if (size < (uint64_t{1} << 20) ||
        (dev.staging == nullptr && cudaMallocHost(&dev.staging, kStagingBytes) != cudaSuccess)) {
      cudaGetLastError();  // no pinned memory: the driver stages pageable memory itself
      dev.staging = nullptr;
      cuda_check(cudaMemcpyAsync(to, from, size, kind, dev.stream), what, dev.label);
      dev.sync();
      return;
    }
    const uint64_t half = kStagingBytes / 2;
    char* halves[2] = {static_cast<char*>(dev.staging), static_cast<char*>(dev.staging) + half};
    cudaEvent_t done[2] = {nullptr, nullptr};
    for (cudaEvent_t& e : done)
      cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate", dev.label);
    const auto destroy = [&] {
      for (cudaEvent_t e : done) cudaEventDestroy(e);
    };
    try {
      const bool up = kind == cudaMemcpyHostToDevice;
      for (uint64_t at = 0, i = 0; at < size; at += half, ++i) {
        const uint64_t n = std::min(half, size - at);
        char* stage = halves[i % 2];
        cuda_check(cudaEventSynchronize(done[i % 2]), "cudaEventSynchronize", dev.label);
        if (up) {
          std::memcpy(stage, static_cast<const char*>(from) + at, n);
          cuda_check(cudaMemcpyAsync(static_cast<char*>(to) + at, stage, n, kind, dev.stream), what,
                     dev.label);
        } else {
          cuda_check(cudaMemcpyAsync(stage, static_cast<const char*>(from) + at, n, kind, dev.stream),
                     what, dev.label);
          dev.sync();  // the bytes must be there before the host copies them out
          std::memcpy(static_cast<char*>(to) + at, stage, n);
        }
        cuda_check(cudaEventRecord(done[i % 2], dev.stream), "cudaEventRecord", dev.label);
      }
      dev.sync();
    } catch (...) {
      destroy();
      throw;
    }
    destroy();
  }

  Nvrtc nvrtc_;
  std::unique_ptr<CublasLt> cublas_;
  std::vector<std::unique_ptr<CudaDevice>> devices_;
};

}  // namespace
}  // namespace wick::cuda

WICK_DEFINE_PLUGIN_EX(wick::cuda::CudaPlugin, "cuda", "0.2.0", true)
