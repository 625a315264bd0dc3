// opencl_plugin.cpp — libwick-opencl.so: every OpenCL device the ICD loader offers.
//
// One context and one in-order queue per device. All kernels live in one program per device,
// built on the first op that needs it and kept for the process lifetime (PoCL takes seconds to
// compile). The ops and dtypes it runs are those of the shared kernel description (gpu-common),
// answered by a kernel table per device (f64 only where cl_khr_fp64 is present); anything else is
// answered "unsupported" so the host falls back.
#include "address_space.hpp"
#include "buffer_pool.hpp"
#include "cl_error.hpp"
#include "cl_handle.hpp"

#include <wick/gpu/driver.hpp>
#include <wick/gpu/kernels.hpp>
#include <wick/gpu/program_cache.hpp>
#include <wick/sdk/dtype.hpp>
#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/kernel_table.hpp>
#include <wick/sdk/ops.hpp>
#include <wick/sdk/plugin.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace wick::opencl {

using sdk::kMaxOperands;

namespace {

// A kernel of the device's program and the work-group size we launch it with.
struct Kernel {
  ClKernel handle;
  size_t local_size = 1;
};

struct OpenClDevice final : wick_device {
  cl_device_id id = nullptr;
  std::string name;
  std::string vendor;
  wick_device_kind kind = WICK_DEVICE_KIND_OTHER;
  uint64_t memory_bytes = 0;
  uint64_t max_allocation = 0;
  uint32_t compute_units = 0;
  uint64_t capabilities = 0;
  bool has_fp64 = false;
  std::string build_options;
  // Platform, device, driver and OpenCL versions: part of the program cache's key.
  std::string identity;
  bool pocl = false;  // the platform is PoCL (which keeps its own kernel cache)

  // Declaration order is release order reversed: kernels, program, queue, then context.
  ClContext context;
  ClQueue queue;

  // Program units and kernels, built on first use under build_mutex; a failed build is remembered.
  std::mutex build_mutex;
  gpu::UnitCache<ClProgram> units;  // by unit (gpu::program_units)
  std::unordered_map<std::string, Kernel> kernels;
  // What supports() answers from (filled when the device opens, from gpu-common's ops).
  sdk::KernelTable<OpenClDevice> table;
  // Two i64 that index-checking kernels report an out-of-range index through (created on use).
  ClMem error_buffer;  // two i64: an index kernel's error flag and the bad index
  size_t error_size = 0;
  ClMem scratch;  // partials of multi-pass kernels, grown on demand
  size_t scratch_size = 0;
  BufferPool pool;  // freed buffers kept for reuse
  // Bytes of the buffers tensors hold (capacities). Kept within memory_bytes: PoCL creates buffers
  // lazily and aborts in an assertion when the host then has no memory for them, so the device's
  // own limit is enforced here, as an out-of-memory error.
  std::atomic<uint64_t> live_bytes{0};
  // A tensor's buffer was released (not kept) since the last address-space shortfall.
  std::atomic<bool> released{false};
};

struct OpenClBuffer final : wick_buffer {
  ClMem mem;
  uint64_t capacity = 0;  // the cl_mem's own size (BufferPool::capacity_for(size))
};

constexpr size_t kPreferredLocalSize = 64;

OpenClDevice& as_device(const wick_device* device) {
  if (device == nullptr) throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, "NULL device");
  return *static_cast<OpenClDevice*>(const_cast<wick_device*>(device));
}

const OpenClBuffer& as_buffer(const wick_buffer* buffer) {
  if (buffer == nullptr) throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, "NULL buffer");
  return *static_cast<const OpenClBuffer*>(buffer);
}

// ----- clGet*Info helpers ----------------------------------------------------------------------

template <class T>
T device_info(cl_device_id id, cl_device_info param, const char* what, const std::string& where) {
  T value{};
  cl_check(clGetDeviceInfo(id, param, sizeof(value), &value, nullptr), what, where);
  return value;
}

// Strings come back NUL-terminated; size includes the NUL.
template <class Getter>
std::string info_string(Getter get, const char* what, const std::string& where) {
  size_t size = 0;
  cl_check(get(0, nullptr, &size), what, where);
  std::string text(size, '\0');
  cl_check(get(size, text.data(), nullptr), what, where);
  text.resize(std::strlen(text.c_str()));
  return text;
}

std::string device_string(cl_device_id id, cl_device_info param, const std::string& where) {
  return info_string(
      [&](size_t n, void* v, size_t* r) { return clGetDeviceInfo(id, param, n, v, r); },
      "clGetDeviceInfo", where);
}

std::string platform_string(cl_platform_id id, cl_platform_info param) {
  return info_string(
      [&](size_t n, void* v, size_t* r) { return clGetPlatformInfo(id, param, n, v, r); },
      "clGetPlatformInfo", "an OpenCL platform");
}

bool has_extension(const std::string& extensions, const std::string& name) {
  // Space-separated list: match whole words only (cl_khr_fp16 must not match cl_khr_fp16_foo).
  const std::string padded = " " + extensions + " ";
  return padded.find(" " + name + " ") != std::string::npos;
}

wick_device_kind kind_of(cl_device_type type) {
  if ((type & CL_DEVICE_TYPE_GPU) != 0) return WICK_DEVICE_KIND_GPU;
  if ((type & CL_DEVICE_TYPE_CPU) != 0) return WICK_DEVICE_KIND_CPU;
  if ((type & CL_DEVICE_TYPE_ACCELERATOR) != 0) return WICK_DEVICE_KIND_ACCELERATOR;
  return WICK_DEVICE_KIND_OTHER;
}

cl_device_type parse_device_type(const std::string& text) {
  if (text == "all") return CL_DEVICE_TYPE_ALL;
  if (text == "gpu") return CL_DEVICE_TYPE_GPU;
  if (text == "cpu") return CL_DEVICE_TYPE_CPU;
  if (text == "accelerator") return CL_DEVICE_TYPE_ACCELERATOR;
  throw sdk::Error(
      WICK_STATUS_INVALID_ARGUMENT,
      "option 'device_type' must be one of \"all\", \"gpu\", \"cpu\", \"accelerator\" (got \"" +
          text + "\")");
}

sdk::KernelTable<OpenClDevice> make_kernel_table(bool has_fp64);  // below, with the kernels

// What initialize() reads from [plugins.opencl] for every device it opens.
struct DeviceOptions {
  std::string build_options;
  std::optional<uint64_t> pool_bytes;  // the pool's bound; default: memory/4, at most 1 GiB
};

std::unique_ptr<OpenClDevice> open_device(cl_platform_id platform, cl_device_id id,
                                          const std::string& platform_name,
                                          const DeviceOptions& options) {
  auto dev = std::make_unique<OpenClDevice>();
  dev->id = id;
  dev->build_options = options.build_options;
  dev->name = device_string(id, CL_DEVICE_NAME, "an OpenCL device of " + platform_name);
  const std::string& where = dev->name;
  dev->vendor = device_string(id, CL_DEVICE_VENDOR, where);
  dev->pocl = platform_name.find("Portable Computing Language") != std::string::npos;
  dev->identity = platform_name + "\n" + dev->name + "\n" + dev->vendor + "\n" +
                  device_string(id, CL_DRIVER_VERSION, where) + "\n" +
                  device_string(id, CL_DEVICE_VERSION, where);
  dev->kind = kind_of(device_info<cl_device_type>(id, CL_DEVICE_TYPE, "clGetDeviceInfo", where));
  dev->memory_bytes =
      device_info<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE, "clGetDeviceInfo", where);
  dev->max_allocation =
      device_info<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "clGetDeviceInfo", where);
  dev->compute_units =
      device_info<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS, "clGetDeviceInfo", where);
  // Freed buffers kept for reuse: by default up to a quarter of the device's memory, at most 1 GiB.
  dev->pool.set_limit(
      options.pool_bytes.value_or(std::min<uint64_t>(dev->memory_bytes / 4, uint64_t{1} << 30)));
  const std::string extensions = device_string(id, CL_DEVICE_EXTENSIONS, where);
  dev->has_fp64 = has_extension(extensions, "cl_khr_fp64");
  // Execute only enqueues, so ops are asynchronous; fp16 is reported, though ADD does not use it.
  dev->capabilities = WICK_DEVICE_CAP_BUFFER_COPY | WICK_DEVICE_CAP_ASYNC |
                      (dev->has_fp64 ? WICK_DEVICE_CAP_F64 : 0) |
                      (has_extension(extensions, "cl_khr_fp16") ? WICK_DEVICE_CAP_F16 : 0);

  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                              reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int status = CL_SUCCESS;
  dev->context = ClContext(clCreateContext(properties, 1, &id, nullptr, nullptr, &status));
  cl_check(status, "clCreateContext", where);
  dev->queue = ClQueue(clCreateCommandQueue(dev->context.get(), id, 0, &status));
  cl_check(status, "clCreateCommandQueue", where);
  dev->table = make_kernel_table(dev->has_fp64);
  return dev;
}

// ----- the program
// ---------------------------------------------------------------------------------

std::string build_log(const OpenClDevice& dev, cl_program program) {
  try {
    return info_string(
        [&](size_t n, void* v, size_t* r) {
          return clGetProgramBuildInfo(program, dev.id, CL_PROGRAM_BUILD_LOG, n, v, r);
        },
        "clGetProgramBuildInfo", dev.name);
  } catch (const sdk::Error& e) {
    return std::string("(no build log: ") + e.what() + ")";
  }
}

// The device's binary of a built program (empty when the driver offers none).
std::vector<unsigned char> program_binary(cl_program program) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
          CL_SUCCESS ||
      size == 0)
    return {};
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) != CL_SUCCESS)
    return {};
  return binary;
}

// The program from a cached binary; an empty handle when there is none or the driver refuses it,
// so the caller compiles the source.
ClProgram build_from_cache(OpenClDevice& dev, const gpu::ProgramCache& cache,
                           const std::string& options) {
  const auto binary = cache.load();
  if (!binary) return ClProgram();
  const unsigned char* data = binary->data();
  const size_t size = binary->size();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  ClProgram program(clCreateProgramWithBinary(dev.context.get(), 1, &dev.id, &size, &data,
                                              &binary_status, &status));
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) return ClProgram();
  if (clBuildProgram(program.get(), 1, &dev.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    return ClProgram();
  return program;
}

// One unit of the kernel program (gpu-common renders it from the description the GPU plugins
// share), from Wick's cache or compiled.
ClProgram build_program(OpenClDevice& dev, const std::string& unit) {
  const std::string source = gpu::render_unit(gpu::Dialect::OpenCL, unit);
  // -w: the generated source's warnings (comparisons made constant by a type, e.g. an unsigned
  // value < 0) are expected, and some drivers (PoCL) print a count of them to stderr.
  const std::string options = "-w" + (dev.build_options.empty() ? "" : " " + dev.build_options);
  // PoCL caches each kernel's machine code itself, lazily; asking it for a program's binary would
  // compile every kernel of the unit: there, Wick's cache stays out of the way.
  const gpu::ProgramCache cache("opencl", dev.identity + "\noptions: " + options,
                                dev.pocl ? "" : source);
  if (ClProgram cached = build_from_cache(dev, cache, options)) return cached;
  const char* text = source.c_str();
  cl_int status = CL_SUCCESS;
  ClProgram program(clCreateProgramWithSource(dev.context.get(), 1, &text, nullptr, &status));
  cl_check(status, "clCreateProgramWithSource", dev.name);
  status = clBuildProgram(program.get(), 1, &dev.id, options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    cl_check(status, "clBuildProgram", dev.name,
             "kernel unit " + unit + ", build options: \"" + options + "\"\nbuild log:\n" +
                 build_log(dev, program.get()));
  }
  if (!cache.path().empty()) cache.store(program_binary(program.get()));
  return program;
}

// A kernel, created on its first use: some drivers (PoCL) generate a kernel's machine code when it
// is first queried or launched, so creating all of them up front would compile every kernel for a
// process that runs a few.
const Kernel& create_kernel(OpenClDevice& dev, cl_program program, const std::string& name) {
  cl_int status = CL_SUCCESS;
  Kernel k{ClKernel(clCreateKernel(program, name.c_str(), &status))};
  if (status == CL_INVALID_KERNEL_NAME)
    throw sdk::Error(WICK_STATUS_INTERNAL,
                     "kernel " + name + " is missing from the program on " + dev.name);
  cl_check(status, ("clCreateKernel(" + name + ")").c_str(), dev.name);
  size_t max_local = 1;
  cl_check(clGetKernelWorkGroupInfo(k.handle.get(), dev.id, CL_KERNEL_WORK_GROUP_SIZE,
                                    sizeof(max_local), &max_local, nullptr),
           "clGetKernelWorkGroupInfo", dev.name);
  k.local_size = std::max<size_t>(1, std::min(kPreferredLocalSize, max_local));
  return dev.kernels.emplace(name, std::move(k)).first->second;
}

// A kernel by name, building its unit first when this process has not yet.
const Kernel& find_kernel(OpenClDevice& dev, const std::string& name) {
  std::lock_guard<std::mutex> lock(dev.build_mutex);
  if (auto it = dev.kernels.find(name); it != dev.kernels.end()) return it->second;
  ClProgram& program =
      dev.units.program_of(name, [&](const std::string& unit) { return build_program(dev, unit); });
  return create_kernel(dev, program.get(), name);
}

// ----- launching
// ------------------------------------------------------------------------------------

// Sets the call's arguments and enqueues it: in the plan's own shape, or one work-item per element.
void launch(OpenClDevice& dev, const gpu::KernelCall& call) {
  const Kernel& kernel = find_kernel(dev, call.kernel);
  // Arguments are state of the shared cl_kernel; the host serialises calls per device, and each
  // device has its own kernels, so setting them here does not race.
  for (size_t i = 0; i < call.count(); ++i) {
    cl_check(
        clSetKernelArg(kernel.handle.get(), static_cast<cl_uint>(i), call.size(i), call.value(i)),
        ("clSetKernelArg(" + call.kernel + ")").c_str(), dev.name);
  }
  size_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  cl_uint dims = 1;
  if (call.dims > 0) {  // the plan's own shape
    dims = static_cast<cl_uint>(call.dims);
    for (cl_uint d = 0; d < dims; ++d) {
      global[d] = static_cast<size_t>(call.global[d]);
      local[d] = static_cast<size_t>(call.local[d]);
    }
  } else {
    // One work-item per element (the _flat kernels need it; the others walk fewer elements each).
    local[0] = kernel.local_size;
    global[0] = (static_cast<size_t>(call.numel) + local[0] - 1) / local[0] * local[0];
  }
  cl_check(clEnqueueNDRangeKernel(dev.queue.get(), kernel.handle.get(), dims, nullptr, global,
                                  local, 0, nullptr, nullptr),
           ("clEnqueueNDRangeKernel(" + call.kernel + ")").c_str(), dev.name);
}

// On PoCL, whose device memory is this process's: refuses a buffer of `bytes` (for a request of
// `requested`) that would not fit the address-space limit, after releasing the kept buffers and
// draining the queue. Returns whether a limit is set: then the caller has PoCL map the buffer at
// once, which the next check counts.
bool check_address_space(OpenClDevice& dev, uint64_t bytes, uint64_t requested, const char* what) {
  if (!dev.pocl) return false;
  const AddressLimits limits = address_limits();
  if (!limits.any()) return false;
  const uint64_t mapping = pocl_mapping_bytes(bytes);
  std::string why = address_space_shortfall(limits, mapping);
  if (why.empty()) return true;
  const bool released = dev.released.exchange(false);
  const bool kept = dev.pool.bytes() > 0;
  dev.pool.clear();
  cl_check(clFinish(dev.queue.get()), "clFinish", dev.name);
  // PoCL unmaps a released buffer when its worker drops the last command's reference to it, on a
  // loaded machine some ms after clFinish returns (seen: 0 to 15): where buffers were released,
  // more looks, 50 ms at most (on this failing path only).
  why = address_space_shortfall(limits, mapping);
  for (int look = 0; look < (released || kept ? 50 : 0) && !why.empty(); ++look) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    why = address_space_shortfall(limits, mapping);
  }
  if (!why.empty())
    throw sdk::Error(WICK_STATUS_OUT_OF_MEMORY,
                     std::string(what) + " of " + std::to_string(requested) + " bytes on " +
                         dev.name + " does not fit the process's address-space limit: " + why +
                         ", and PoCL maps " + std::to_string(mapping) +
                         " bytes for it in this process (opencl on PoCL: device memory is host "
                         "memory); free tensors or raise the limit");
  return true;
}

// A new buffer of `bytes` (for a request of `requested`). Where the driver refuses, the kept
// buffers go first and it is asked once more.
ClMem create_buffer(OpenClDevice& dev, uint64_t bytes, uint64_t requested, const char* what) {
  const bool limited = check_address_space(dev, bytes, requested, what);
  const std::string call = std::string("clCreateBuffer (") + what + ")";
  for (int attempt = 0;; ++attempt) {
    cl_int status = CL_SUCCESS;
    ClMem mem(clCreateBuffer(dev.context.get(), CL_MEM_READ_WRITE, bytes, nullptr, &status));
    if (status == CL_SUCCESS) {
      // Mapped now: a migration whose content is undefined maps the buffer without touching it.
      const cl_mem m = mem.get();
      if (limited)
        cl_check(clEnqueueMigrateMemObjects(dev.queue.get(), 1, &m,
                                            CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, nullptr,
                                            nullptr),
                 "clEnqueueMigrateMemObjects", dev.name);
      return mem;
    }
    if (attempt > 0 || dev.pool.bytes() == 0) cl_check(status, call.c_str(), dev.name);
    dev.pool.clear();
  }
}

// A device buffer of at least `bytes` that lives with the device (the error report, scratch for
// multi-pass kernels), grown when a launch needs more.
cl_mem device_buffer(OpenClDevice& dev, ClMem& buffer, size_t& size, size_t bytes,
                     const char* what) {
  if (!buffer || size < bytes) {
    if (buffer) dev.released = true;
    buffer = ClMem();
    buffer = create_buffer(dev, bytes, bytes, what);
    size = bytes;
  }
  return buffer.get();
}

// ----- the kernel table
// -----------------------------------------------------------------------------

// Any generated kernel (gpu-common): the buffers' cl_mem handles, output first, and the arguments
// the kernel description plans for the op.
void run_generated(OpenClDevice& dev, const wick_op_desc& op) {
  gpu::OperandHandles<cl_mem, cl_mem (*)(const wick_buffer*)> handles(
      op, &dev, dev.name, [](const wick_buffer* b) { return as_buffer(b).mem.get(); });
  gpu::Target target;
  target.wide_is_double = dev.has_fp64;
  target.flat_chunk = dev.kind == WICK_DEVICE_KIND_CPU ? 16 : 1;
  gpu::Launch plan = gpu::plan_launch(op, handles.pointers, sizeof(cl_mem), target);
  cl_mem scratch = nullptr, flag = nullptr;
  gpu::Runner runner;
  runner.handle_size = sizeof(cl_mem);
  runner.scratch = [&](size_t bytes) {
    scratch = device_buffer(dev, dev.scratch, dev.scratch_size, bytes, "scratch");
    return static_cast<const void*>(&scratch);
  };
  runner.launch = [&](const gpu::KernelCall& call) { launch(dev, call); };
  runner.launch_checked = [&](gpu::KernelCall& call, int64_t report[2]) {
    flag = device_buffer(dev, dev.error_buffer, dev.error_size, 2 * sizeof(int64_t), "error buffer");
    cl_check(clEnqueueWriteBuffer(dev.queue.get(), flag, CL_FALSE, 0, 2 * sizeof(int64_t), report,
                                  0, nullptr, nullptr),
             "clEnqueueWriteBuffer (error buffer)", dev.name);
    call.replace(static_cast<size_t>(call.error_slot), &flag, sizeof flag);
    launch(dev, call);
    cl_check(clEnqueueReadBuffer(dev.queue.get(), flag, CL_TRUE, 0, 2 * sizeof(int64_t), report, 0,
                                 nullptr, nullptr),
             "clEnqueueReadBuffer (error buffer)", dev.name);
  };
  gpu::run_plan(plan, runner);
}

// The device's kernel table: every op the kernel description covers, on its dtypes (without f64
// where the device lacks cl_khr_fp64).
sdk::KernelTable<OpenClDevice> make_kernel_table(bool has_fp64) {
  sdk::KernelTable<OpenClDevice> table;
  for (const sdk::OpInfo& o : sdk::kOps) {
    sdk::DTypeSet dtypes = gpu::generated_dtypes(o.code);
    if (!has_fp64) dtypes &= ~sdk::dtype_bit(WICK_DTYPE_F64);
    if (dtypes != 0) table.add({o.code, dtypes, &run_generated, &gpu::check_call});
  }
  return table;
}

// The devices of type `wanted` on the platforms whose name contains `filter`, in discovery order.
// A broken platform is skipped and named in `notes`; the others still serve.
struct Candidate {
  cl_platform_id platform;
  cl_device_id id;
  std::string platform_name;
};
struct Discovery {
  std::vector<Candidate> candidates;
  std::string notes, platform_names, all_platforms;
};

Discovery discover(const std::vector<cl_platform_id>& platforms, cl_device_type wanted,
                   const std::string& filter) {
  Discovery d;
  for (cl_platform_id platform : platforms) {
    std::string platform_name = "an OpenCL platform";
    try {
      platform_name = platform_string(platform, CL_PLATFORM_NAME);
      d.all_platforms += (d.all_platforms.empty() ? "\"" : ", \"") + platform_name + "\"";
      if (platform_name.find(filter) == std::string::npos) continue;
      d.platform_names += (d.platform_names.empty() ? "" : ", ") + platform_name;
      cl_uint count = 0;
      const cl_int found = clGetDeviceIDs(platform, wanted, 0, nullptr, &count);
      if (found == CL_DEVICE_NOT_FOUND || count == 0) continue;
      cl_check(found, "clGetDeviceIDs", platform_name);
      std::vector<cl_device_id> ids(count);
      cl_check(clGetDeviceIDs(platform, wanted, count, ids.data(), nullptr), "clGetDeviceIDs",
               platform_name);
      for (cl_device_id id : ids) d.candidates.push_back({platform, id, platform_name});
    } catch (const sdk::Error& e) {
      d.notes += "; skipped platform " + platform_name + ": " + e.what();
    }
  }
  return d;
}

// [plugins.opencl] pool_mb: the bound of each device's buffer pool in MiB (0: no reuse).
std::optional<uint64_t> pool_bytes(sdk::Options& options) {
  const std::optional<int64_t> mb = options.get_int("pool_mb");
  if (!mb) return std::nullopt;
  constexpr int64_t kMaxMb = int64_t{1} << 40;  // 1 EiB: beyond any device, and no overflow
  if (*mb < 0 || *mb > kMaxMb)
    throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                     "option 'pool_mb' must be a size in MiB >= 0" +
                         std::string(*mb < 0 ? "" : " and <= " + std::to_string(kMaxMb)) +
                         ", got " + std::to_string(*mb));
  return static_cast<uint64_t>(*mb) << 20;
}

class OpenClPlugin final : public sdk::Plugin {
 public:
  sdk::InitResult initialize(sdk::Options& options) override {
    const std::string device_type = options.get_string("device_type").value_or("all");
    const cl_device_type wanted = parse_device_type(device_type);
    DeviceOptions device_options;
    device_options.build_options = options.get_string("build_options").value_or("");
    device_options.pool_bytes = pool_bytes(options);
    // Which platform (its name contains this text) and which of the matching devices (by index).
    const std::string platform_filter = options.get_string("platform").value_or("");
    const std::optional<int64_t> device_index = options.get_int("device");
    if (device_index && *device_index < 0)
      throw sdk::Error(
          WICK_STATUS_INVALID_ARGUMENT,
          "option 'device' must be a device index >= 0, got " + std::to_string(*device_index));

    cl_uint platform_count = 0;
    const cl_int status = clGetPlatformIDs(0, nullptr, &platform_count);
    // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no vendor driver is installed.
    constexpr cl_int kPlatformNotFound = -1001;
    if (status == kPlatformNotFound || (status == CL_SUCCESS && platform_count == 0)) {
      const std::string cause = status == CL_SUCCESS
                                    ? "clGetPlatformIDs found 0 platforms"
                                    : "clGetPlatformIDs returned CL_PLATFORM_NOT_FOUND_KHR (-1001)";
      return {{},
              "no OpenCL platform (ICD loader found no vendor: " + cause +
                  "; install a vendor driver such as pocl-opencl-icd, see /etc/OpenCL/vendors)"};
    }
    if (status != CL_SUCCESS) {
      return {{},
              std::string("no OpenCL platform: clGetPlatformIDs failed: ") + cl_error_name(status) +
                  " (" + std::to_string(status) + ")"};
    }
    std::vector<cl_platform_id> platforms(platform_count);
    cl_check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs",
             "the ICD loader");

    Discovery found = discover(platforms, wanted, platform_filter);
    std::string& notes = found.notes;
    const std::string& platform_names = found.platform_names;
    const std::string& all_platforms = found.all_platforms;
    std::vector<Candidate>& candidates = found.candidates;
    if (!platform_filter.empty() && platform_names.empty())
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "option 'platform' = \"" + platform_filter +
                           "\" matches none of the OpenCL platforms (" + all_platforms + ")");
    if (device_index) {
      if (*device_index >= static_cast<int64_t>(candidates.size()))
        throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                         "option 'device' = " + std::to_string(*device_index) + " but there are " +
                             std::to_string(candidates.size()) +
                             " matching OpenCL device(s) (indices from 0)");
      candidates = {candidates[static_cast<size_t>(*device_index)]};
    }
    for (const Candidate& c : candidates) {
      try {
        devices_.push_back(open_device(c.platform, c.id, c.platform_name, device_options));
      } catch (const sdk::Error& e) {
        notes += std::string("; skipped a device: ") + e.what();
      }
    }

    sdk::InitResult result;
    for (const auto& dev : devices_) result.devices.push_back(dev.get());
    if (devices_.empty()) {
      result.message = "no OpenCL device of type \"" + device_type + "\" on " +
                       std::to_string(platform_count) + " platform(s) (" + platform_names + ")" +
                       notes;
    } else {
      result.message = "OpenCL platform(s): " + platform_names + notes;
    }
    return result;
  }

  wick_device_props properties(const wick_device* device) override {
    const OpenClDevice& dev = as_device(device);
    wick_device_props props{};
    props.name = dev.name.c_str();
    props.vendor = dev.vendor.c_str();
    props.kind = dev.kind;
    props.memory_bytes = dev.memory_bytes;
    props.capabilities = dev.capabilities;
    props.compute_units = dev.compute_units;
    return props;
  }

  void synchronize(wick_device* device) override {
    OpenClDevice& dev = as_device(device);
    cl_check(clFinish(dev.queue.get()), "clFinish", dev.name);
  }

  wick_buffer* allocate(wick_device* device, uint64_t size_bytes) override {
    OpenClDevice& dev = as_device(device);
    if (size_bytes > dev.max_allocation)
      throw sdk::Error(WICK_STATUS_OUT_OF_MEMORY,
                       "buffer of " + std::to_string(size_bytes) +
                           " bytes exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE (" +
                           std::to_string(dev.max_allocation) + " bytes) on " + dev.name);
    auto buffer = std::make_unique<OpenClBuffer>();
    buffer->device = &dev;
    buffer->size = size_bytes;
    // A freed buffer of the same capacity, else a new one (OpenCL refuses empty buffers: an empty
    // tensor's holds bytes nobody can reach). Where the driver refuses, the kept ones go first.
    buffer->capacity = BufferPool::capacity_for(size_bytes);
    buffer->mem = dev.pool.take(buffer->capacity);
    if (!buffer->mem && dev.live_bytes + dev.pool.bytes() + buffer->capacity > dev.memory_bytes)
      dev.pool.clear();
    if (!buffer->mem && dev.live_bytes + buffer->capacity > dev.memory_bytes)
      throw sdk::Error(WICK_STATUS_OUT_OF_MEMORY,
                       "buffer of " + std::to_string(size_bytes) + " bytes with " +
                           std::to_string(dev.live_bytes.load()) +
                           " bytes in use exceeds CL_DEVICE_GLOBAL_MEM_SIZE (" +
                           std::to_string(dev.memory_bytes) + " bytes) on " + dev.name);
    if (!buffer->mem) buffer->mem = create_buffer(dev, buffer->capacity, size_bytes, "buffer");
    dev.live_bytes += buffer->capacity;
    return buffer.release();
  }

  void free(wick_buffer* buffer) noexcept override {
    auto* b = static_cast<OpenClBuffer*>(buffer);
    try {
      if (b != nullptr && b->mem) {
        OpenClDevice& dev = as_device(b->device);
        dev.live_bytes -= b->capacity;
        if (!dev.pool.give(std::move(b->mem), b->capacity)) dev.released = true;
      }
    } catch (...) {
      // Out of memory for the pool's bookkeeping: the buffer is released below instead.
      if (b != nullptr && b->device != nullptr)
        static_cast<OpenClDevice*>(b->device)->released = true;
    }
    delete b;
  }

  void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) override {
    transfer(
        dst,
        [&](const OpenClBuffer& b, cl_command_queue q) {
          return std::pair{
              clEnqueueWriteBuffer(q, b.mem.get(), CL_TRUE, offset, size, src, 0, nullptr, nullptr),
              "clEnqueueWriteBuffer"};
        },
        size);
  }

  void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) override {
    transfer(
        src,
        [&](const OpenClBuffer& b, cl_command_queue q) {
          return std::pair{
              clEnqueueReadBuffer(q, b.mem.get(), CL_TRUE, offset, size, dst, 0, nullptr, nullptr),
              "clEnqueueReadBuffer"};
        },
        size);
  }

  void copy(const wick_buffer* src, uint64_t src_offset, wick_buffer* dst, uint64_t dst_offset,
            uint64_t size) override {
    if (size == 0) return;
    const OpenClBuffer& from = as_buffer(src);
    const OpenClBuffer& to = as_buffer(dst);
    OpenClDevice& dev = as_device(from.device);
    if (from.device != to.device) {
      // Different contexts cannot share a copy command: stage through the host.
      std::vector<unsigned char> staging(size);
      read(src, src_offset, staging.data(), size);
      write(dst, dst_offset, staging.data(), size);
      return;
    }
    const bool overlap =
        &from == &to && src_offset < dst_offset + size && dst_offset < src_offset + size;
    if (!overlap) {
      enqueue_copy(dev, from.mem.get(), src_offset, to.mem.get(), dst_offset, size);
      return;
    }
    // clEnqueueCopyBuffer refuses overlapping regions (CL_MEM_COPY_OVERLAP): bounce through a
    // scratch buffer, which OpenCL frees once the queued copies are done.
    std::unique_ptr<wick_buffer> scratch(allocate(&dev, size));
    const cl_mem bounce = static_cast<const OpenClBuffer&>(*scratch).mem.get();
    enqueue_copy(dev, from.mem.get(), src_offset, bounce, 0, size);
    enqueue_copy(dev, bounce, 0, to.mem.get(), dst_offset, size);
  }

  wick_support supports(const wick_device* device, const wick_op_desc& op) override {
    return as_device(device).table.supports(op);
  }

  void execute(wick_device* device, const wick_op_desc& op) override {
    OpenClDevice& dev = as_device(device);
    if (const wick_support s = dev.table.supports(op); s != WICK_SUPPORT_YES) {
      const bool unsupported = s == WICK_SUPPORT_NO_OP || s == WICK_SUPPORT_NO_DTYPE;
      throw sdk::Error(unsupported ? WICK_STATUS_UNSUPPORTED : WICK_STATUS_INVALID_ARGUMENT,
                       std::string(sdk::op_name(op.op)) +
                           " with these dtypes, shapes or params is not supported on " + dev.name +
                           " (supports() says so)");
    }
    dev.table.execute(dev, op);
  }

 private:
  // A blocking host transfer on the buffer's device queue: enqueue(buffer, queue) -> (status,
  // what).
  template <class Enqueue>
  static void transfer(const wick_buffer* buffer, Enqueue&& enqueue, uint64_t size) {
    if (size == 0) return;
    const OpenClBuffer& b = as_buffer(buffer);
    OpenClDevice& dev = as_device(b.device);
    const auto [status, what] = enqueue(b, dev.queue.get());
    cl_check(status, what, dev.name);
  }

  static void enqueue_copy(OpenClDevice& dev, cl_mem from, uint64_t from_offset, cl_mem to,
                           uint64_t to_offset, uint64_t size) {
    cl_check(clEnqueueCopyBuffer(dev.queue.get(), from, to, from_offset, to_offset, size, 0,
                                 nullptr, nullptr),
             "clEnqueueCopyBuffer", dev.name);
  }

  std::vector<std::unique_ptr<OpenClDevice>> devices_;
};

}  // namespace
}  // namespace wick::opencl

WICK_DEFINE_PLUGIN_EX(wick::opencl::OpenClPlugin, "opencl", "0.1.0", true)
