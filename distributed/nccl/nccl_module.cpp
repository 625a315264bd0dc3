// nccl_module.cpp — libwick-distributed-nccl.so: the collectives of CUDA tensors on NCCL, behind
// the C table of nccl_abi.h. Links the CUDA runtime statically (as the cuda plugin does) and opens
// libnccl.so.2 with dlopen, so that the module loads on any machine and names what it lacks.
// nccl.h is read for its types and numbers only.
#include "nccl_abi.h"

#include <wick/wick_plugin.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// The NCCL functions the module calls, from the library it opened.
struct Nccl {
  void* handle = nullptr;
  std::string path, about, failure;
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*init_rank_config)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*async_error)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*abort)(ncclComm_t) = nullptr;
  ncclResult_t (*finalize)(ncclComm_t) = nullptr;
  ncclResult_t (*destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                 ncclComm_t, cudaStream_t) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  const char* (*last_error)(ncclComm_t) = nullptr;
  int version = 0;
};

Nccl g_nccl;

struct Comm {
  ncclComm_t comm = nullptr;
  int device = 0;
};

int fail(char* err, size_t size, const std::string& message) {
  if (size > 0) std::snprintf(err, size, "%s", message.c_str());
  return 1;
}

std::string nccl_message(ncclResult_t r, ncclComm_t comm) {
  std::string m = g_nccl.error_string ? g_nccl.error_string(r) : "NCCL error " + std::to_string(r);
  if (g_nccl.last_error) {
    const char* last = g_nccl.last_error(comm);
    if (last && *last) m += std::string(": ") + last;
  }
  return m;
}

std::string cuda_message(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

template <class F>
bool bind(void* handle, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return f != nullptr;
}

// The library's candidates: WICK_NCCL_LIBRARY, the loader's path, the CUDA toolkit's lib dirs.
std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char* p = std::getenv("WICK_NCCL_LIBRARY"); p && *p) return {p};
  c.push_back("libnccl.so.2");
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var); root && *root) {
      c.push_back(std::string(root) + "/lib64/libnccl.so.2");
      c.push_back(std::string(root) + "/lib/libnccl.so.2");
    }
  c.push_back("/usr/local/cuda/lib64/libnccl.so.2");
  c.push_back("/usr/local/cuda/lib/libnccl.so.2");
  return c;
}

std::string open_library() {
  std::string tried;
  for (const std::string& name : candidates()) {
    g_nccl.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (g_nccl.handle) {
      g_nccl.path = name;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
  }
  if (!g_nccl.handle)
    return "no NCCL library could be opened (" + tried +
           "); install NCCL or set WICK_NCCL_LIBRARY to libnccl.so.2";
  std::string missing;
  Nccl& n = g_nccl;
  bind(n.handle, "ncclGetVersion", n.get_version, missing);
  bind(n.handle, "ncclGetUniqueId", n.get_unique_id, missing);
  bind(n.handle, "ncclCommInitRankConfig", n.init_rank_config, missing);
  bind(n.handle, "ncclCommGetAsyncError", n.async_error, missing);
  bind(n.handle, "ncclCommAbort", n.abort, missing);
  bind(n.handle, "ncclCommFinalize", n.finalize, missing);
  bind(n.handle, "ncclCommDestroy", n.destroy, missing);
  bind(n.handle, "ncclAllReduce", n.all_reduce, missing);
  bind(n.handle, "ncclBroadcast", n.broadcast, missing);
  bind(n.handle, "ncclAllGather", n.all_gather, missing);
  bind(n.handle, "ncclReduceScatter", n.reduce_scatter, missing);
  bind(n.handle, "ncclGetErrorString", n.error_string, missing);
  bind(n.handle, "ncclGetLastError", n.last_error, missing);
  if (!missing.empty())
    return g_nccl.path + " lacks " + missing + " (Wick needs NCCL 2.14 or newer)";
  if (n.get_version(&n.version) != ncclSuccess || n.version < NCCL_VERSION(2, 14, 0))
    return g_nccl.path + " is NCCL " + std::to_string(n.version) + ", older than 2.14";
  n.about = "NCCL " + std::to_string(n.version / 10000) + "." + std::to_string(n.version / 100 % 100) +
            "." + std::to_string(n.version % 100) + " (" + n.path + ")";
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess)
    return "the CUDA runtime sees no device: " + cuda_message(e);
  if (devices == 0) return "the CUDA runtime sees no device";
  return "";
}

int open(char* about, size_t about_size, char* err, size_t err_size) {
  static const bool opened = [] {
    g_nccl.failure = open_library();
    return true;
  }();
  (void)opened;
  if (!g_nccl.failure.empty()) return fail(err, err_size, g_nccl.failure);
  if (about_size > 0) std::snprintf(about, about_size, "%s", g_nccl.about.c_str());
  return 0;
}

int unique_id(void* id, char* err, size_t err_size) {
  ncclUniqueId u{};
  if (const ncclResult_t r = g_nccl.get_unique_id(&u); r != ncclSuccess)
    return fail(err, err_size, "ncclGetUniqueId: " + nccl_message(r, nullptr));
  static_assert(sizeof u == WICK_DIST_NCCL_ID_BYTES);
  std::memcpy(id, &u, sizeof u);
  return 0;
}

int comm_init(const void* id, int nranks, int rank, int device, void** out, char* err,
              size_t err_size) {
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
    return fail(err, err_size, "cudaSetDevice(" + std::to_string(device) + "): " + cuda_message(e));
  ncclUniqueId u{};
  std::memcpy(&u, id, sizeof u);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // a rank that never joins must not hang this one: ready() polls
  config.version = std::min<unsigned>(config.version, static_cast<unsigned>(g_nccl.version));
  auto* c = new Comm;
  c->device = device;
  const ncclResult_t r = g_nccl.init_rank_config(&c->comm, nranks, u, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    const std::string m = nccl_message(r, c->comm);
    if (c->comm) g_nccl.abort(c->comm);
    delete c;
    return fail(err, err_size, "ncclCommInitRankConfig (rank " + std::to_string(rank) + " of " +
                                   std::to_string(nranks) + ", CUDA device " +
                                   std::to_string(device) + "): " + m);
  }
  *out = c;
  return 0;
}

int ready(void* comm, int* is_ready, char* err, size_t err_size) {
  auto* c = static_cast<Comm*>(comm);
  ncclResult_t state = ncclSuccess;
  if (const ncclResult_t r = g_nccl.async_error(c->comm, &state); r != ncclSuccess)
    return fail(err, err_size, "ncclCommGetAsyncError: " + nccl_message(r, c->comm));
  if (state != ncclSuccess && state != ncclInProgress)
    return fail(err, err_size, "NCCL: " + nccl_message(state, c->comm));
  *is_ready = state == ncclSuccess;
  return 0;
}

void abort_comm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (!c) return;
  cudaSetDevice(c->device);
  if (c->comm) g_nccl.abort(c->comm);
  delete c;
}

void destroy_comm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (!c) return;
  cudaSetDevice(c->device);
  // Finalize (non-blocking: flushes the work in flight), then destroy; abort when that fails.
  ncclResult_t r = g_nccl.finalize(c->comm);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ncclResult_t state = ncclInProgress;
  while (r == ncclSuccess || r == ncclInProgress) {
    if (g_nccl.async_error(c->comm, &state) != ncclSuccess || state != ncclInProgress) break;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::yield();
  }
  if ((r == ncclSuccess || r == ncclInProgress) && state == ncclSuccess)
    g_nccl.destroy(c->comm);
  else
    g_nccl.abort(c->comm);
  delete c;
}

// NCCL's type for a wick_dtype; bool travels as u8 (its or and and are u8's max and min).
bool nccl_type(int dtype, ncclDataType_t* t) {
  switch (dtype) {
    case WICK_DTYPE_F32: *t = ncclFloat32; return true;
    case WICK_DTYPE_F64: *t = ncclFloat64; return true;
    case WICK_DTYPE_F16: *t = ncclFloat16; return true;
    case WICK_DTYPE_BF16: *t = ncclBfloat16; return true;
    case WICK_DTYPE_I8: *t = ncclInt8; return true;
    case WICK_DTYPE_U8: case WICK_DTYPE_BOOL: *t = ncclUint8; return true;
    case WICK_DTYPE_I32: *t = ncclInt32; return true;
    case WICK_DTYPE_I64: *t = ncclInt64; return true;
    case WICK_DTYPE_U32: *t = ncclUint32; return true;
    case WICK_DTYPE_U64: *t = ncclUint64; return true;
    default: return false;
  }
}

bool nccl_op(int op, int dtype, ncclRedOp_t* o) {
  if (dtype == WICK_DTYPE_BOOL) {  // sum and max are or, min is and
    if (op == WICK_NCCL_MEAN) return false;
    *o = op == WICK_NCCL_MIN ? ncclMin : ncclMax;
    return true;
  }
  switch (op) {
    case WICK_NCCL_SUM: *o = ncclSum; return true;
    case WICK_NCCL_MEAN: *o = ncclAvg; return true;
    case WICK_NCCL_MAX: *o = ncclMax; return true;
    case WICK_NCCL_MIN: *o = ncclMin; return true;
    default: return false;
  }
}

ncclResult_t queue(Comm& c, int kind, const void* send, void* recv, size_t count,
                   ncclDataType_t type, ncclRedOp_t op, int root, cudaStream_t stream) {
  switch (kind) {
    case WICK_NCCL_ALL_REDUCE: return g_nccl.all_reduce(send, recv, count, type, op, c.comm, stream);
    case WICK_NCCL_BROADCAST: return g_nccl.broadcast(send, recv, count, type, root, c.comm, stream);
    case WICK_NCCL_ALL_GATHER: return g_nccl.all_gather(send, recv, count, type, c.comm, stream);
    case WICK_NCCL_REDUCE_SCATTER:
      return g_nccl.reduce_scatter(send, recv, count, type, op, c.comm, stream);
    default: return ncclInvalidArgument;
  }
}

// Waits (at most `timeout_seconds`) until a non-blocking communicator took its last call.
std::string wait_taken(Comm& c, ncclResult_t r, double timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (r == ncclInProgress) {
    if (g_nccl.async_error(c.comm, &r) != ncclSuccess) return "ncclCommGetAsyncError failed";
    if (r != ncclInProgress) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        timeout_seconds)
      return "NCCL did not take the call within " + std::to_string(timeout_seconds) + " s";
    std::this_thread::yield();
  }
  return r == ncclSuccess ? "" : nccl_message(r, c.comm);
}

int collective(void* comm, int kind, const void* send, void* recv, size_t count, int dtype, int op,
               int root, void* stream, double timeout_seconds, void** event, char* err,
               size_t err_size) {
  auto& c = *static_cast<Comm*>(comm);
  ncclDataType_t type{};
  ncclRedOp_t red = ncclSum;
  if (!nccl_type(dtype, &type))
    return fail(err, err_size, "NCCL has no type for wick dtype " + std::to_string(dtype));
  const bool reduces = kind == WICK_NCCL_ALL_REDUCE || kind == WICK_NCCL_REDUCE_SCATTER;
  if (reduces && !nccl_op(op, dtype, &red))
    return fail(err, err_size, "NCCL has no reduction " + std::to_string(op) + " for wick dtype " +
                                   std::to_string(dtype));
  if (const cudaError_t e = cudaSetDevice(c.device); e != cudaSuccess)
    return fail(err, err_size, "cudaSetDevice: " + cuda_message(e));
  auto s = static_cast<cudaStream_t>(stream);
  const std::string taken =
      wait_taken(c, queue(c, kind, send, recv, count, type, red, root, s), timeout_seconds);
  if (!taken.empty()) return fail(err, err_size, taken);
  cudaEvent_t e = nullptr;
  cudaError_t ce = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  if (ce == cudaSuccess) ce = cudaEventRecord(e, s);
  if (ce != cudaSuccess) {
    if (e) cudaEventDestroy(e);
    return fail(err, err_size, "cudaEventRecord after the collective: " + cuda_message(ce));
  }
  *event = e;
  return 0;
}

int test(void* comm, void* event, int* done, char* err, size_t err_size) {
  auto* c = static_cast<Comm*>(comm);
  cudaSetDevice(c->device);
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (e == cudaSuccess) {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
    *done = 1;
    return 0;
  }
  if (e != cudaErrorNotReady)
    return fail(err, err_size, "cudaEventQuery after the collective: " + cuda_message(e));
  int ok = 0;
  if (ready(comm, &ok, err, err_size) != 0) return 1;
  *done = 0;
  return 0;
}

void release(void* event) {
  if (event) cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const wick_dist_nccl* wick_distributed_nccl_module() {
  static const wick_dist_nccl table = {sizeof(wick_dist_nccl),
                                       WICK_DIST_NCCL_VERSION,
                                       &open,
                                       &unique_id,
                                       &comm_init,
                                       &ready,
                                       &abort_comm,
                                       &destroy_comm,
                                       &collective,
                                       &test,
                                       &release};
  return &table;
}
