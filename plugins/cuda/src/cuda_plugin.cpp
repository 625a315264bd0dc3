// cuda_plugin.cpp — libwick-cuda.so: every GPU the CUDA runtime (linked statically) can see.
//
// One non-blocking stream per device; every call makes its device current first, since the host
// may call from any thread. Ops: COPY and FILL for every dtype (by element size), ADD for f32,
// f64, i32, i64, f16 and bf16; anything else is answered "unsupported" so the host falls back.
// Without a driver or a GPU, initialize answers zero devices and says why.
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"

#include <wick/sdk/dtype.hpp>
#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/kernel_table.hpp>
#include <wick/sdk/ops.hpp>
#include <wick/sdk/plugin.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace wick::cuda {

using sdk::kMaxOperands;
using sdk::StridedArgs;

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
  std::string name;
  std::string label;  // "NVIDIA H200 (CUDA device 0)": what error messages name
  uint64_t memory_bytes = 0;
  uint32_t compute_units = 0;
  uint64_t capabilities = 0;
  cudaStream_t stream = nullptr;

  ~CudaDevice() override {
    // Nothing to report to from a destructor; at process exit the runtime may already be gone.
    if (stream != nullptr && cudaSetDevice(ordinal) == cudaSuccess) cudaStreamDestroy(stream);
  }

  // Makes this device current on the calling thread; every CUDA call below needs it.
  void activate() const { cuda_check(cudaSetDevice(ordinal), "cudaSetDevice", label); }
  void sync() const { cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", label); }
};

struct CudaBuffer final : wick_buffer {
  void* data = nullptr;

  ~CudaBuffer() override {
    if (data == nullptr) return;
    const auto& dev = static_cast<const CudaDevice&>(*device);
    // cudaFree must not pull memory from under kernels still queued on our non-blocking stream.
    if (cudaSetDevice(dev.ordinal) == cudaSuccess) {
      cudaStreamSynchronize(dev.stream);
      cudaFree(data);
    }
  }
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

std::unique_ptr<CudaDevice> open_device(int ordinal) {
  auto dev = std::make_unique<CudaDevice>();
  dev->ordinal = ordinal;
  dev->label = "CUDA device " + std::to_string(ordinal);
  dev->activate();
  cudaDeviceProp props{};
  cuda_check(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties", dev->label);
  dev->name = props.name;
  dev->label = dev->name + " (" + dev->label + ")";
  dev->memory_bytes = props.totalGlobalMem;
  dev->compute_units = static_cast<uint32_t>(props.multiProcessorCount);
  const int cc = props.major * 10 + props.minor;
  // Ops are only enqueued, so they are asynchronous; half arithmetic is native from sm_53,
  // bfloat16 from sm_80 (our ADD computes both in f32 either way).
  dev->capabilities = WICK_DEVICE_CAP_BUFFER_COPY | WICK_DEVICE_CAP_ASYNC | WICK_DEVICE_CAP_F64 |
                      (cc >= 53 ? WICK_DEVICE_CAP_F16 : 0) | (cc >= 80 ? WICK_DEVICE_CAP_BF16 : 0);
  // Non-blocking: our stream must not serialise with the legacy default stream of other code.
  cuda_check(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags", dev->label);
  return dev;
}

// ----- the kernel table
// -----------------------------------------------------------------------------

// The operands' device pointers, output first; each buffer must belong to this device.
std::array<void*, kMaxOperands> operand_data(const CudaDevice& dev, const wick_op_desc& op) {
  std::array<void*, kMaxOperands> data{};
  for (size_t k = 0; k <= op.num_inputs; ++k) {
    const wick_buffer* b = k == 0 ? op.outputs[0].buffer : op.inputs[k - 1].buffer;
    if (b->device != &dev)
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "an operand's buffer belongs to another device than " + dev.label);
    data[k] = as_buffer(b).data;
  }
  return data;
}

// Launches one of cuda_kernels.cu's kernels over the op's elements (nothing for an empty output).
template <class Launch>
void run_kernel(const CudaDevice& dev, const wick_op_desc& op, const char* what, Launch&& launch) {
  const StridedArgs geometry = sdk::make_strided_args(op);
  if (geometry.numel == 0) return;
  const auto data = operand_data(dev, op);
  dev.activate();
  cuda_check(launch(data, geometry), what, dev.label);
}

void run_copy(CudaDevice& dev, const wick_op_desc& op) {
  run_kernel(dev, op, "copy kernel launch", [&](const auto& data, const StridedArgs& g) {
    return launch_copy(sdk::dtype_size(op.outputs[0].dtype), data[0], data[1], g, dev.stream);
  });
}

void run_fill(CudaDevice& dev, const wick_op_desc& op) {
  const wick_dtype t = op.outputs[0].dtype;
  const auto pattern = sdk::fill_pattern(t, *static_cast<const wick_fill_params*>(op.params));
  run_kernel(dev, op, "fill kernel launch", [&](const auto& data, const StridedArgs& g) {
    return launch_fill(sdk::dtype_size(t), data[0], pattern.data(), g, dev.stream);
  });
}

void run_add(CudaDevice& dev, const wick_op_desc& op) {
  run_kernel(dev, op, "add kernel launch", [&](const auto& data, const StridedArgs& g) {
    return launch_add(op.outputs[0].dtype, data[0], data[1], data[2], g, dev.stream);
  });
}

template <size_t Inputs>
wick_support check_geometry(const wick_op_desc& op) {
  return sdk::check_elementwise_geometry(op, Inputs).support;
}

// Every kernel of the plugin, one row per op (cuda_kernels.cu has them).
const sdk::KernelTable<CudaDevice>& kernel_table() {
  static const sdk::KernelTable<CudaDevice> table = [] {
    using sdk::dtype_bit;
    sdk::KernelTable<CudaDevice> t;
    const sdk::DTypeSet all = sdk::dtypes_of(sdk::DTypeClass::ANY);
    const sdk::DTypeSet add =
        sdk::kFloatDTypes | dtype_bit(WICK_DTYPE_I32) | dtype_bit(WICK_DTYPE_I64);
    t.add({WICK_OP_COPY, all, &run_copy, &check_geometry<1>});
    t.add({WICK_OP_FILL, all, &run_fill, &check_geometry<0>});
    t.add({WICK_OP_ADD, add, &run_add, &check_geometry<2>});
    return t;
  }();
  return table;
}

class CudaPlugin final : public sdk::Plugin {
 public:
  sdk::InitResult initialize(sdk::Options& /*options: none; unknown keys are rejected*/) override {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) return {{}, unavailable_reason(status)};
    if (count == 0) return {{}, "no CUDA device: cudaGetDeviceCount found 0 devices"};

    // A device that fails to open is skipped and named in the message; the others still serve.
    std::string notes;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      try {
        devices_.push_back(open_device(ordinal));
      } catch (const sdk::Error& e) {
        notes += std::string("; skipped a device: ") + e.what();
      }
    }
    sdk::InitResult result;
    for (const auto& dev : devices_) result.devices.push_back(dev.get());
    int driver = 0;
    result.message =
        "CUDA runtime " + runtime_version() +
        (cudaDriverGetVersion(&driver) == cudaSuccess ? ", driver " + cuda_version_text(driver)
                                                      : "") +
        notes;
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
    // An empty buffer still gets a real (unreachable) byte so that every buffer has an address.
    cuda_check(cudaMalloc(&buffer->data, std::max<uint64_t>(size_bytes, 1)), "cudaMalloc",
               dev.label);
    return buffer.release();
  }

  void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) override {
    if (size == 0) return;
    const CudaBuffer& buffer = as_buffer(dst);
    const CudaDevice& dev = as_device(buffer.device);
    dev.activate();
    // On our stream, so the write lands after queued kernels; then wait, as src may be reused.
    cuda_check(cudaMemcpyAsync(buffer.bytes(offset), src, size, cudaMemcpyHostToDevice, dev.stream),
               "cudaMemcpyAsync (host to device)", dev.label);
    dev.sync();
  }

  void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) override {
    if (size == 0) return;
    const CudaBuffer& buffer = as_buffer(src);
    const CudaDevice& dev = as_device(buffer.device);
    dev.activate();
    cuda_check(cudaMemcpyAsync(dst, buffer.bytes(offset), size, cudaMemcpyDeviceToHost, dev.stream),
               "cudaMemcpyAsync (device to host)", dev.label);
    dev.sync();
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
    // cudaMemcpy does not allow overlapping regions: bounce through a scratch buffer (freed, once
    // the stream has drained, when it goes out of scope).
    std::unique_ptr<wick_buffer> scratch(allocate(const_cast<CudaDevice*>(&dev), size));
    char* bounce = static_cast<const CudaBuffer&>(*scratch).bytes(0);
    enqueue_copy(dev, bounce, from.bytes(src_offset), size);
    enqueue_copy(dev, to.bytes(dst_offset), bounce, size);
  }

  wick_support supports(const wick_device* /*device*/, const wick_op_desc& op) override {
    return kernel_table().supports(op);
  }

  void execute(wick_device* device, const wick_op_desc& op) override {
    CudaDevice& dev = as_device(device);
    if (const wick_support s = kernel_table().supports(op); s != WICK_SUPPORT_YES) {
      const bool unsupported = s == WICK_SUPPORT_NO_OP || s == WICK_SUPPORT_NO_DTYPE;
      throw sdk::Error(unsupported ? WICK_STATUS_UNSUPPORTED : WICK_STATUS_INVALID_ARGUMENT,
                       std::string(sdk::op_name(op.op)) +
                           " with these dtypes, shapes or params is not supported on " + dev.label +
                           " (supports() says so)");
    }
    kernel_table().execute(dev, op);
  }

 private:
  static void enqueue_copy(const CudaDevice& dev, void* to, const void* from, uint64_t size) {
    cuda_check(cudaMemcpyAsync(to, from, size, cudaMemcpyDeviceToDevice, dev.stream),
               "cudaMemcpyAsync (device to device)", dev.label);
  }

  std::vector<std::unique_ptr<CudaDevice>> devices_;
};

}  // namespace
}  // namespace wick::cuda

WICK_DEFINE_PLUGIN_EX(wick::cuda::CudaPlugin, "cuda", "0.1.0", true)
