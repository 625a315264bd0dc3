// nccl.cpp — collectives of CUDA tensors on NCCL (nccl.hpp). The module is loaded once per
// process; each process group makes its communicator at its first NCCL collective (rank 0's unique
// id broadcast over the transport, then NCCL's non-blocking init, polled like any transfer), on
// the CUDA device of that collective's tensor. A collective exchanges its header on the transport
// first (with path Nccl, so that ranks staging the same call get the mismatch error, not a hang),
// then queues NCCL's call on the tensor's own stream and polls an event recorded after it.
#include "nccl.hpp"

#include "nccl_abi.h"
#include "reduce.hpp"
#include "transport.hpp"

#include <wick/autograd.hpp>
#include <wick/error.hpp>

#include <dlfcn.h>

#include <map>

namespace wick::distributed {
namespace {

struct Module {
  const wick_dist_nccl* t = nullptr;
  std::string about;  // "NCCL 2.28.9 (libnccl.so.2)"
};

// The module and NCCL, loaded at the first call; nullptr with the reason in *why when they cannot
// be (remembered: the same answer after).
const Module* load_module(std::string* why) {
  static std::string failure;
  static const Module* module = [&]() -> const Module* {
    const std::string path =
        module_path("WICK_DISTRIBUTED_NCCL_MODULE", "libwick-distributed-nccl.so");
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      failure = "the NCCL module could not be loaded from " + path + " (" + (e ? e : "?") +
                "): build Wick with the CUDA toolkit and nccl.h, or set "
                "WICK_DISTRIBUTED_NCCL_MODULE";
      return nullptr;
    }
    auto entry = reinterpret_cast<wick_dist_nccl_entry>(dlsym(handle, WICK_DIST_NCCL_ENTRY));
    const wick_dist_nccl* t = entry ? entry() : nullptr;
    if (!t || t->struct_size < sizeof(wick_dist_nccl) || t->version != WICK_DIST_NCCL_VERSION) {
      failure = path + " is not a Wick NCCL module of version " +
                std::to_string(WICK_DIST_NCCL_VERSION) + ": rebuild it with this Wick";
      return nullptr;
    }
    char about[256] = "", err[512] = "";
    if (t->open(about, sizeof about, err, sizeof err) != 0) {
      failure = err;
      return nullptr;
    }
    return new Module{t, about};
  }();
  if (!module && why) *why = failure;
  return module;
}

// A group's communicator: made by its first NCCL collective, on that tensor's CUDA device.
struct Communicator {
  void* comm = nullptr;
  int device = -1;
  std::string failure;  // a collective on it failed (it was aborted): later ones refuse
};
std::map<const ProcessGroup*, Communicator>& communicators() {
  static auto* m = new std::map<const ProcessGroup*, Communicator>;
  return *m;
}

[[noreturn]] void fail(const ProcessGroup& g, const std::string& what, const std::string& why) {
  throw Error("wick::distributed: rank " + std::to_string(g.rank()) + ": " + what + ": " + why);
}

// Whether NCCL computes `op` on `dtype` as reduce_ranks defines it.
bool nccl_reduces(DType dtype, ReduceOp op) {
  if (!reduce_refusal(dtype, op).empty()) return false;  // staged, which refuses it alike
  if (is_float(dtype)) return op == ReduceOp::Sum || op == ReduceOp::Mean;
  return true;
}

// The plan of an NCCL collective on `t`: its CUDA memory, the module and the group's communicator;
// nullopt to stage it.
struct Plan {
  NativeMemory memory;
  const Module* module;
  Communicator* comm;
};
// `op` and `extra` name the collective in an error (what_of: built only then, since every
// collective of every tensor asks here first).
std::optional<Plan> plan(ProcessGroup& g, const Tensor& t, bool takes, const char* op,
                         const std::string& extra) {
  const NcclMode mode = g.info().nccl;
  if (mode == NcclMode::Off || !takes || t.numel() == 0 || t.dtype() == DType::I16)
    return std::nullopt;
  const std::optional<NativeMemory> memory = t.native_memory();
  if (!memory || memory->kind != NativeMemory::kCuda) return std::nullopt;
  const std::string what = what_of(op, t.dtype(), t.shape(), extra);
  std::string why;
  const Module* module = load_module(&why);
  if (!module) {
    if (mode == NcclMode::On) fail(g, what, why + " (WICK_DISTRIBUTED_NCCL=on)");
    return std::nullopt;
  }
  Communicator& c = communicators()[&g];
  if (!c.failure.empty()) fail(g, what, "NCCL failed earlier in this job: " + c.failure);
  if (c.device >= 0 && c.device != memory->device_ordinal) {
    if (mode == NcclMode::On)
      fail(g, what,
           "the tensor is on CUDA device " + std::to_string(memory->device_ordinal) +
               ", this group's NCCL communicator on CUDA device " + std::to_string(c.device));
    return std::nullopt;
  }
  return Plan{*memory, module, &c};
}

std::string module_error(const char* call, const char* err) {
  return std::string(call) + ": " + err;
}

// The steps that make the group's communicator, when this collective is its first (true then).
bool add_init_steps(Work::State& s, const Plan& p) {
  if (p.comm->device >= 0) return false;  // made, or being made by an earlier collective
  p.comm->device = p.memory.device_ordinal;
  ProcessGroup& g = *s.group;
  auto id = staging_bytes(WICK_DIST_NCCL_ID_BYTES);
  Work::State* raw = &s;
  s.steps.push_back([raw, &g, p, id] {
    char err[512] = "";
    if (g.rank() == 0 && p.module->t->unique_id(id->data(), err, sizeof err) != 0)
      fail(g, raw->what, module_error("making NCCL's unique id", err));
    return std::vector<Pending>{{g.transport().ibcast(id->data(), id->size(), 0), -1}};
  });
  s.steps.push_back([raw, &g, p, id] {
    char err[512] = "";
    if (p.module->t->comm_init(id->data(), g.size(), g.rank(), p.memory.device_ordinal,
                               &p.comm->comm, err, sizeof err) != 0)
      fail(g, raw->what, module_error("making the NCCL communicator", err));
    return std::vector<Pending>{device_pending(*raw, [raw, &g, p] {
      int ready = 0;
      char e[512] = "";
      if (p.module->t->ready(p.comm->comm, &ready, e, sizeof e) != 0)
        fail(g, raw->what, module_error("making the NCCL communicator", e));
      return ready != 0;
    })};
  });
  return true;
}

// One NCCL call: its buffers (on the tensor's device), the element count and the parameters.
struct Call {
  int kind;
  const void* send;
  void* recv;
  size_t count;
  DType dtype;
  int op = 0, root = 0;
};

// The Work of one NCCL collective: the header exchange (path Nccl), the communicator's making if
// needed, then the call queued on the tensor's stream and its event polled; `keep` stays alive
// until then, `then` runs at the end.
Work launch_nccl(ProcessGroup& g, const Plan& p, CallHeader h, std::string what, Call call,
                 std::vector<Tensor> keep, std::function<void(Work::State&)> then) {
  h.path = CallHeader::Nccl;
  auto s = begin_call(g, h, std::move(what));
  const bool makes_communicator = add_init_steps(*s, p);
  Work::State* raw = s.get();
  s->steps.push_back([raw, &g, p, call, keep] {
    if (!p.comm->failure.empty() || !p.comm->comm)
      fail(g, raw->what, "the NCCL communicator failed: " + p.comm->failure);
    auto event = std::shared_ptr<void*>(new void*(nullptr), [t = p.module->t](void** e) {
      if (*e) t->release(*e);
      delete e;
    });
    char err[512] = "";
    if (p.module->t->collective(p.comm->comm, call.kind, call.send, call.recv, call.count,
                                static_cast<int>(call.dtype), call.op, call.root, p.memory.queue,
                                g.timeout_seconds(), event.get(), err, sizeof err) != 0)
      fail(g, raw->what, module_error("NCCL", err));
    return std::vector<Pending>{device_pending(*raw, [raw, &g, p, event, keep] {
      int done = 0;
      char e[512] = "";
      if (p.module->t->test(p.comm->comm, *event, &done, e, sizeof e) != 0)
        fail(g, raw->what, module_error("NCCL", e));
      if (done) *event = nullptr;  // freed by test()
      return done != 0;
    })};
  });
  // A failed or timed-out collective leaves NCCL's kernels waiting for the others: abort the
  // communicator (every later NCCL collective of the group then refuses).
  s->on_failure = [raw, p, makes_communicator] {
    if (raw->next_step <= 2) {  // the header exchange or its check: nothing queued on the device
      if (makes_communicator) p.comm->device = -1;
      return;
    }
    if (p.comm->failure.empty()) p.comm->failure = raw->what + " failed";
    if (p.comm->comm) p.module->t->abort(p.comm->comm);
    p.comm->comm = nullptr;
  };
  s->finish = [raw, then] {
    if (then) then(*raw);
  };
  return launch(std::move(s));
}

// An in-place collective (all_reduce, broadcast) on `t`: in t's own memory where NCCL may write
// there (may_write_in_place), else on a copy whose result then goes into t with copy_ (which
// refuses what the staged path refuses).
Work in_place(ProcessGroup& g, Plan p, Tensor& t, CallHeader h, std::string what, Call call) {
  const bool direct = may_write_in_place(t);
  Tensor work = t;
  if (!direct) {
    autograd::NoGradGuard no_grad;
    work = t.detach().clone();
    p.memory = *work.native_memory();
  }
  call.send = call.recv = p.memory.data;
  call.count = static_cast<size_t>(t.numel());
  call.dtype = t.dtype();
  Tensor target = t;
  return launch_nccl(g, p, h, std::move(what), call, {work},
                     [target, work, direct](Work::State&) mutable {
                       if (!direct) target.copy_(work);
                     });
}

}  // namespace

std::optional<Work> nccl_all_reduce(Tensor& t, ReduceOp op) {
  ProcessGroup& g = group();
  const std::optional<Plan> p =
      plan(g, t, nccl_reduces(t.dtype(), op), "all_reduce", reduce_op_name(op));
  if (!p) return std::nullopt;
  std::string what = what_of("all_reduce", t.dtype(), t.shape(), reduce_op_name(op));
  CallHeader h = header_of(CallHeader::AllReduce, t.dtype(), t.shape());
  h.reduce_op = static_cast<int64_t>(op);
  Call call{WICK_NCCL_ALL_REDUCE, nullptr, nullptr, 0, t.dtype()};
  call.op = static_cast<int>(op);
  return in_place(g, *p, t, h, std::move(what), call);
}

std::optional<Work> nccl_broadcast(Tensor& t, int root) {
  ProcessGroup& g = group();
  const std::string extra = "root " + std::to_string(root);
  const std::optional<Plan> p = plan(g, t, true, "broadcast", extra);
  if (!p) return std::nullopt;
  std::string what = what_of("broadcast", t.dtype(), t.shape(), extra);
  CallHeader h = header_of(CallHeader::Broadcast, t.dtype(), t.shape());
  h.root = root;
  Call call{WICK_NCCL_BROADCAST, nullptr, nullptr, 0, t.dtype()};
  call.root = root;
  return in_place(g, *p, t, h, std::move(what), call);
}

std::optional<Work> nccl_all_gather(const Tensor& t) {
  ProcessGroup& g = group();
  const std::optional<Plan> p = plan(g, t, true, "all_gather", "");
  if (!p) return std::nullopt;
  std::string what = what_of("all_gather", t.dtype(), t.shape(), "");
  const Tensor src = t.contiguous();
  Shape shape = t.shape();
  shape.insert(shape.begin(), g.size());
  const Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  const Call call{WICK_NCCL_ALL_GATHER, src.native_memory()->data, out.native_memory()->data,
                  static_cast<size_t>(t.numel()), t.dtype()};
  return launch_nccl(g, *p, header_of(CallHeader::AllGather, t.dtype(), t.shape()), std::move(what),
                     call, {src, out},
                     [out](Work::State& s) { s.result = out; });
}

std::optional<Work> nccl_reduce_scatter(const Tensor& t, ReduceOp op) {
  ProcessGroup& g = group();
  // The first axis's check is collectives.cpp's, before this is asked.
  const std::optional<Plan> p =
      plan(g, t, nccl_reduces(t.dtype(), op), "reduce_scatter", reduce_op_name(op));
  if (!p) return std::nullopt;
  std::string what = what_of("reduce_scatter", t.dtype(), t.shape(), reduce_op_name(op));
  const Tensor src = t.contiguous();
  Shape part = t.shape();
  part[0] /= g.size();
  const Tensor out = Tensor::empty(part, t.dtype(), t.device());
  CallHeader h = header_of(CallHeader::ReduceScatter, t.dtype(), t.shape());
  h.reduce_op = static_cast<int64_t>(op);
  const Call call{WICK_NCCL_REDUCE_SCATTER, src.native_memory()->data, out.native_memory()->data,
                  static_cast<size_t>(out.numel()), t.dtype(), static_cast<int>(op)};
  return launch_nccl(g, *p, h, std::move(what), call, {src, out},
                     [out](Work::State& s) { s.result = out; });
}

void release_nccl(ProcessGroup& g) {
  auto& all = communicators();
  const auto it = all.find(&g);
  if (it == all.end()) return;
  if (it->second.comm) {
    if (const Module* m = load_module(nullptr)) m->t->destroy(it->second.comm);
  }
  all.erase(it);
}

std::string nccl_status() {
  if (is_initialized() && group().info().nccl == NcclMode::Off) return "off";
  std::string why;
  const Module* m = load_module(&why);
  return m ? m->about : why;
}

}  // namespace wick::distributed
