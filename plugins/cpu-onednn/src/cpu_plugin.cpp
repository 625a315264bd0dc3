// The cpu-onednn plugin: one CPU device, host-memory buffers, a table of kernels.
#include "denormals.hpp"
#include "host_allocator.hpp"
#include "kernels.hpp"
#include "onednn.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

namespace wick::cpu {

namespace {

struct CpuDevice : wick_device {};

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

}  // namespace

// Gives every output buffer of an op a new write generation when it goes (HostBuffer::generation).
struct OutputsWritten {
  const wick_op_desc& op;
  ~OutputsWritten() {
    for (size_t i = 0; i < op.num_outputs; ++i) mark_written(op.outputs[i].buffer);
  }
};

class CpuPlugin final : public sdk::Plugin {
 public:
  // [plugins.cpu-onednn] plan_cache_mb: the bound on the bytes of prepared oneDNN plans, all
  // threads together (docs/config.md). 256 MiB holds about 5000 plans of mid-sized matmuls.
  static constexpr int64_t kDefaultPlanCacheMb = 256;
  static constexpr int64_t kMaxPlanCacheMb = int64_t{1} << 20;

  sdk::InitResult initialize(sdk::Options& options) override {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int64_t threads = options.get_int("threads").value_or(cores);
    if (threads < 1 || threads > 4096) {
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "option 'threads' must be between 1 and 4096, got " + std::to_string(threads));
    }
    const int64_t plan_cache_mb = options.get_int("plan_cache_mb").value_or(kDefaultPlanCacheMb);
    if (plan_cache_mb < 1 || plan_cache_mb > kMaxPlanCacheMb) {
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "option 'plan_cache_mb' must be between 1 and " +
                           std::to_string(kMaxPlanCacheMb) + " (MiB), got " +
                           std::to_string(plan_cache_mb));
    }
    flush_denormals_ = options.get_bool("flush_denormals").value_or(false);
    if (flush_denormals_ && !kCanFlushDenormals) {
      throw sdk::Error(WICK_STATUS_UNSUPPORTED,
                       "option 'flush_denormals' needs an x86-64 CPU (MXCSR's FTZ and DAZ); this "
                       "build is for another architecture");
    }
    ctx_.threads = static_cast<int>(threads);
    // oneDNN (OpenMP build) and our own loops share this one OpenMP pool.
    omp_set_num_threads(ctx_.threads);
    if (flush_denormals_) {
#pragma omp parallel num_threads(ctx_.threads)
      flush_denormals_on_this_thread();
    }
    // The plugin's plan cache, bounded in bytes, is the only cache: oneDNN's own (1024 primitives
    // by default, counted in primitives) would keep the primitives of evicted plans alive. Measured
    // over 1000 distinct matmuls whose primitives were dropped: 40 MB of heap stayed in use with
    // oneDNN's default capacity, 3 MB with 0. What it costs: threads that make the same plan each
    // compile it, once per thread. The setting is process-wide and overrides
    // ONEDNN_PRIMITIVE_CACHE_CAPACITY (docs/config.md says so).
    dnnl_set_primitive_cache_capacity(0);
    ctx_.onednn = create_onednn(ctx_.threads, static_cast<uint64_t>(plan_cache_mb) << 20);
    kernels_ = make_kernel_table();
    name_ = cpu_model_name();
    const dnnl_version_t* v = dnnl_version();
    note_ = std::to_string(ctx_.threads) + " threads, oneDNN " + std::to_string(v->major) + "." +
            std::to_string(v->minor) + "." + std::to_string(v->patch) + ", " +
            ctx_.onednn->isa_note();
    return {{&device_}, note_};
  }

  ~CpuPlugin() override { destroy_onednn(ctx_.onednn); }

  wick_device_props properties(const wick_device* /*device*/) override {
    wick_device_props p{};
    p.struct_size = sizeof(p);
    p.name = name_.c_str();
    p.vendor = nullptr;
    p.kind = WICK_DEVICE_KIND_CPU;
    p.memory_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    // Concurrent: the kernels share nothing mutable but the allocator (locked) and keep oneDNN's
    // streams and primitives per calling thread (onednn.hpp), so host threads run ops at once.
    p.capabilities = WICK_DEVICE_CAP_HOST_MEMORY | WICK_DEVICE_CAP_BUFFER_COPY |
                     WICK_DEVICE_CAP_F64 | WICK_DEVICE_CAP_CONCURRENT;
    p.compute_units = static_cast<uint32_t>(ctx_.threads);
    return p;
  }

  std::optional<uint64_t> free_memory(const wick_device* /*device*/) override {
    return static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  }

  wick_buffer* allocate(wick_device* device, uint64_t size) override {
    auto* b = new HostBuffer();
    b->device = device;
    b->size = size;
    b->data = allocator_.allocate(static_cast<size_t>(size));
    mark_written(b);
    if (b->data == nullptr) {
      delete b;
      throw sdk::Error(WICK_STATUS_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) + " bytes of host memory");
    }
    return b;
  }

  // Element-aligned memory is enough (ABI 1.7), for reading and writing: the typed loops access
  // T* (T's alignment), the vector math and the quantized dot products load and store unaligned
  // (memcpy, loadu), and oneDNN takes any pointer (only slower below 64 bytes).
  wick_buffer* wrap_host(wick_device* device, const void* host, uint64_t size) override {
    auto* b = new HostBuffer();
    b->device = device;
    b->size = size;
    b->data = static_cast<unsigned char*>(const_cast<void*>(host));
    b->wrapped = true;
    mark_written(b);
    return b;
  }

  // Every buffer is host memory; the prepacked weights derived from it stop at this call
  // (HostBuffer::host_visible).
  void* host_address(wick_device* /*device*/, wick_buffer* buffer) override {
    auto* b = static_cast<HostBuffer*>(buffer);
    b->host_visible.store(true, std::memory_order_release);
    return b->data;
  }

  void free(wick_buffer* buffer) noexcept override {
    auto* b = static_cast<HostBuffer*>(buffer);
    if (b->derived_alive) b->derived_alive->store(false, std::memory_order_release);
    if (!b->wrapped) allocator_.free(b->data, static_cast<size_t>(b->size));
    delete b;
  }

  void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) override {
    if (size > 0) std::memcpy(static_cast<HostBuffer*>(dst)->data + offset, src, size);
    mark_written(dst);
  }
  void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) override {
    if (size > 0) std::memcpy(dst, static_cast<const HostBuffer*>(src)->data + offset, size);
  }
  void copy(const wick_buffer* src, uint64_t src_offset, wick_buffer* dst, uint64_t dst_offset,
            uint64_t size) override {
    if (size > 0)
      std::memmove(static_cast<HostBuffer*>(dst)->data + dst_offset,
                   static_cast<const HostBuffer*>(src)->data + src_offset, size);
    mark_written(dst);
  }

  wick_support supports(const wick_device* /*device*/, const wick_op_desc& op) override {
    return kernels_.supports(op);
  }

  void execute(wick_device* /*device*/, const wick_op_desc& op) override {
    const FlushScope flush(flush_denormals_);
    // On the way out, thrown or not: a kernel that fails part-way has still written some of them.
    const OutputsWritten written{op};
    kernels_.execute(ctx_, op);
  }

 private:
  // Freed blocks kept for reuse: at most an eighth of the memory, and 1 GiB.
  HostAllocator allocator_{
      std::min<size_t>(size_t(1) << 30, static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) *
                                            static_cast<size_t>(sysconf(_SC_PAGESIZE)) / 8)};
  CpuDevice device_;
  Context ctx_;
  KernelTable kernels_;
  std::string name_;
  std::string note_;
  bool flush_denormals_ = false;  // [plugins.cpu-onednn] flush_denormals (denormals.hpp)
};

}  // namespace wick::cpu

WICK_DEFINE_PLUGIN_EX(wick::cpu::CpuPlugin, "cpu-onednn", "0.1.0", true)
