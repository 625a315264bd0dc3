// isolated_plugin.cpp — the proxy table on the host's side and the call server in the child
// (wick-plugin-host), with the one wire format both ends share.
//
// Wire format: each message is a 64-bit little-endian length, then that many bytes. A request
// starts with a Call (u32); a reply with a status (u32, WICK_STATUS_OK or the plugin's error code),
// then on error the message, else the call's results. Integers are host-endian: both ends are the
// same machine.
#include "host/isolated_plugin.hpp"

#include "host/loaded_plugin.hpp"

#include <wick/config.hpp>
#include <wick/error.hpp>
#include <wick/sdk/op_table.hpp>

#include <boost/dll/runtime_symbol_info.hpp>

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

extern char** environ;

namespace wick::isolation {

namespace {

enum class Call : uint32_t {
  Initialize = 1,
  Shutdown,
  DeviceGet,
  DeviceProps,
  Synchronize,
  Allocate,
  Free,
  Write,
  Read,
  Copy,
  Supports,
  Execute,
  FreeMemory,
};

const char* call_name(Call c) {
  switch (c) {
    case Call::Initialize: return "initialize";
    case Call::Shutdown: return "shutdown";
    case Call::DeviceGet: return "device_get";
    case Call::DeviceProps: return "device_get_props";
    case Call::Synchronize: return "device_synchronize";
    case Call::Allocate: return "buffer_allocate";
    case Call::Free: return "buffer_free";
    case Call::Write: return "buffer_write";
    case Call::Read: return "buffer_read";
    case Call::Copy: return "buffer_copy";
    case Call::Supports: return "op_supports";
    case Call::Execute: return "op_execute";
    case Call::FreeMemory: return "device_get_free_memory";
  }
  return "unknown call";
}

// Bits of the hello message: which optional slots the child's table has.
constexpr uint32_t kHasBufferCopy = 1u << 0;
constexpr uint32_t kHasFreeMemory = 1u << 1;

// Largest message either side accepts (a buffer_write of 4 GiB is split by the host).
constexpr uint64_t kMaxMessage = uint64_t(1) << 32;
constexpr uint64_t kChunk = uint64_t(1) << 30;  // buffer reads and writes go in pieces this big

// ---- encoding --------------------------------------------------------------------------------

class Out {
 public:
  template <class T>
  Out& put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
    return *this;
  }
  Out& bytes(const void* p, size_t n) {
    if (n == 0) return *this;
    const size_t at = data_.size();
    data_.resize(at + n);
    std::memcpy(data_.data() + at, p, n);
    return *this;
  }
  Out& str(const std::string& s) {
    put<uint64_t>(s.size());
    return bytes(s.data(), s.size());
  }
  Out& cstr(const char* s) { return str(s != nullptr ? std::string(s) : std::string()); }
  const std::vector<uint8_t>& data() const { return data_; }

 private:
  std::vector<uint8_t> data_;
};

// Reads a message; any read past its end is a malformed message (the other side is broken).
class In {
 public:
  In(const uint8_t* p, size_t n) : p_(p), left_(n) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > left_) throw Error("malformed message between the host and wick-plugin-host");
    const uint8_t* at = p_;
    p_ += n;
    left_ -= n;
    return at;
  }
  std::string str() {
    const auto n = get<uint64_t>();
    const uint8_t* at = take(n);
    return std::string(reinterpret_cast<const char*>(at), n);
  }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

// Sends the whole message; false when the peer is gone (no SIGPIPE: MSG_NOSIGNAL).
bool send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool send_message(int fd, const Out& m) {
  const uint64_t n = m.data().size();
  return send_all(fd, &n, sizeof n) && send_all(fd, m.data().data(), m.data().size());
}

enum class RecvResult { Ok, Closed, TimedOut };

// Receives exactly n bytes, waiting at most until `deadline_ms` of monotonic time (< 0: forever).
RecvResult recv_all(int fd, void* p, size_t n, int64_t timeout_ms) {
  auto* b = static_cast<uint8_t*>(p);
  const auto start = std::chrono::steady_clock::now();
  while (n > 0) {
    if (timeout_ms > 0) {
      const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      if (spent >= timeout_ms) return RecvResult::TimedOut;
      pollfd pfd{fd, POLLIN, 0};
      const int r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(timeout_ms - spent, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return RecvResult::TimedOut;
    }
    const ssize_t k = ::recv(fd, b, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return RecvResult::Closed;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return RecvResult::Ok;
}

RecvResult recv_message(int fd, std::vector<uint8_t>& into, int64_t timeout_ms) {
  uint64_t n = 0;
  if (RecvResult r = recv_all(fd, &n, sizeof n, timeout_ms); r != RecvResult::Ok) return r;
  if (n > kMaxMessage + 4096) return RecvResult::Closed;
  into.resize(n);
  return recv_all(fd, into.data(), n, timeout_ms);
}

// Op descriptors: the params struct's bytes, then the arrays its pointers point to, then the
// tensors. Buffers travel as the child's handles (0 for none, as in supports()).
template <class T>
void put_array(Out& o, const T* p, int64_t n) {
  if (p == nullptr) {
    o.put<int64_t>(-1);
    return;
  }
  o.put<int64_t>(n);
  o.bytes(p, sizeof(T) * static_cast<size_t>(n));
}

void put_op(Out& o, const wick_op_desc& op, uint64_t (*buffer_id)(const wick_buffer*)) {
  o.put<int32_t>(op.op);
  const sdk::OpInfo* info = sdk::op_info(op.op);
  const bool has_params = op.params != nullptr && info != nullptr && info->params_size > 0;
  o.put<uint8_t>(has_params ? 1 : 0);
  if (has_params) {
    const size_t size = std::min(*static_cast<const size_t*>(op.params), info->params_size);
    o.put<uint64_t>(size);
    o.bytes(op.params, size);
    if (info->params == sdk::ParamsKind::reduce) {
      const auto* p = static_cast<const wick_reduce_params*>(op.params);
      put_array(o, p->axes, p->num_axes);
    } else if (info->params == sdk::ParamsKind::conv) {
      const auto* p = static_cast<const wick_conv_params*>(op.params);
      for (const int64_t* a : {p->strides, p->padding_lo, p->padding_hi, p->dilations, p->input_dilations})
        put_array(o, a, p->spatial_rank);
    } else if (info->params == sdk::ParamsKind::window) {
      const auto* p = static_cast<const wick_window_params*>(op.params);
      for (const int64_t* a : {p->window, p->strides, p->padding_lo, p->padding_hi, p->dilations})
        put_array(o, a, p->rank);
    }
  }
  auto put_tensors = [&](const wick_tensor_desc* t, size_t n) {
    o.put<uint64_t>(n);
    for (size_t i = 0; i < n; ++i) {
      o.put<uint64_t>(t[i].buffer != nullptr ? buffer_id(t[i].buffer) : 0);
      o.put<uint64_t>(t[i].byte_offset);
      o.put<int32_t>(t[i].dtype);
      o.put<int32_t>(t[i].rank);
      put_array(o, t[i].shape, t[i].rank);
      put_array(o, t[i].strides, t[i].rank);
    }
  };
  put_tensors(op.inputs, op.num_inputs);
  put_tensors(op.outputs, op.num_outputs);
}

// ---- the host's side -------------------------------------------------------------------------

struct ProxyError {
  wick_status code;
  std::string message;
};

wick_error* make_error(wick_status code, std::string message) {
  return reinterpret_cast<wick_error*>(new ProxyError{code, std::move(message)});
}

struct Child;

struct ProxyDevice {
  Child* child;
  uint64_t id;
  std::string name, vendor;  // the props' strings, owned here
};

struct ProxyBuffer {
  Child* child;
  uint64_t id;
};

// One child process and its socket. Calls are serialised by `mutex` (the core also holds the
// plugin's call lock).
struct Child {
  std::string plugin;
  pid_t pid = -1;
  int fd = -1;
  int64_t timeout_ms = 0;
  std::string dead;  // why the child is gone; empty while it serves
  std::string name, version, init_message;
  std::vector<std::unique_ptr<ProxyDevice>> devices;
  std::mutex mutex;
  std::vector<uint8_t> reply;

  // Sends a request and waits for its reply; the reply's results, or an error for a failed call
  // (the plugin's own, or the child's death).
  struct Result {
    wick_error* error = nullptr;
    In in{nullptr, 0};
  };
  Result call(Call c, const Out& request) {
    Result r;
    if (!dead.empty()) {
      r.error = make_error(WICK_STATUS_UNAVAILABLE, "its isolated process is gone (" + dead + ")");
      return r;
    }
    if (!send_message(fd, request)) {
      lost(c, RecvResult::Closed);
      r.error = make_error(WICK_STATUS_DEVICE_ERROR, dead);
      return r;
    }
    const RecvResult got = recv_message(fd, reply, c == Call::Initialize ? -1 : timeout_ms);
    if (got != RecvResult::Ok) {
      lost(c, got);
      r.error = make_error(WICK_STATUS_DEVICE_ERROR, dead);
      return r;
    }
    r.in = In(reply.data(), reply.size());
    try {
      const auto status = static_cast<wick_status>(r.in.get<uint32_t>());
      if (status != WICK_STATUS_OK) r.error = make_error(status, r.in.str());
    } catch (const std::exception& e) {
      r.error = make_error(WICK_STATUS_INTERNAL, e.what());
    }
    return r;
  }

  // Records how the child ended (reaping it; killing it first when it is late).
  void lost(Call c, RecvResult why) {
    if (why == RecvResult::TimedOut) ::kill(pid, SIGKILL);
    int status = 0;
    pid_t got = 0;
    // A child whose socket closed is exiting: give it a moment to be reaped, then kill it.
    for (int i = 0; i < 200 && (got = ::waitpid(pid, &status, WNOHANG)) == 0; ++i) ::usleep(5000);
    if (got == 0) {
      ::kill(pid, SIGKILL);
      got = ::waitpid(pid, &status, 0);
    }
    pid = -1;
    std::string how;
    if (why == RecvResult::TimedOut) {
      how = "did not answer within " + std::to_string(timeout_ms) +
            " ms ([plugins." + plugin + "] isolate_timeout_ms); its process was killed";
    } else if (got > 0 && WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      how = "crashed: its process was killed by signal " + std::to_string(sig) + " (" +
            (sigabbrev_np(sig) != nullptr ? std::string("SIG") + sigabbrev_np(sig) : "?") + ", " +
            strsignal(sig) + ")";
    } else if (got > 0 && WIFEXITED(status)) {
      how = "its process exited with status " + std::to_string(WEXITSTATUS(status));
    } else {
      how = "its process closed the connection";
    }
    dead = "isolated plugin '" + plugin + "' " + how + " in " + call_name(c) +
           "; the plugin is unusable from now on, the program goes on";
  }

  ~Child() {
    if (fd >= 0) ::close(fd);  // the child sees end of input and exits
    if (pid > 0) {
      int status = 0;
      for (int i = 0; i < 200 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(5000);
      if (::waitpid(pid, &status, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
      }
    }
  }
};

Child* child_of(const wick_device* d) { return reinterpret_cast<const ProxyDevice*>(d)->child; }
uint64_t id_of(const wick_device* d) { return reinterpret_cast<const ProxyDevice*>(d)->id; }
uint64_t id_of_buffer(const wick_buffer* b) { return reinterpret_cast<const ProxyBuffer*>(b)->id; }

Out request(Call c) {
  Out o;
  o.put<uint32_t>(static_cast<uint32_t>(c));
  return o;
}

// Runs body(child) under the child's lock, turning any exception into an error object.
template <class F>
wick_error* locked(Child* child, F&& body) {
  try {
    std::lock_guard lock(child->mutex);
    return body(*child);
  } catch (const std::exception& e) {
    return make_error(WICK_STATUS_INTERNAL, e.what());
  }
}

wick_status proxy_error_code(const wick_error* e) {
  return reinterpret_cast<const ProxyError*>(e)->code;
}
const char* proxy_error_message(const wick_error* e) {
  return reinterpret_cast<const ProxyError*>(e)->message.c_str();
}
void proxy_error_destroy(wick_error* e) { delete reinterpret_cast<ProxyError*>(e); }

wick_error* proxy_initialize(Child* child, const wick_initialize_args* args,
                             wick_initialize_result* result) {
  return locked(child, [&](Child& c) -> wick_error* {
    Out o = request(Call::Initialize);
    o.put<uint64_t>(args->num_options);
    for (size_t i = 0; i < args->num_options; ++i) {
      const wick_option& opt = args->options[i];
      o.cstr(opt.key).put<int32_t>(opt.type).put<int32_t>(opt.bool_value);
      o.put<int64_t>(opt.int_value).put<double>(opt.float_value).cstr(opt.string_value);
    }
    Child::Result r = c.call(Call::Initialize, o);
    if (r.error != nullptr) return r.error;
    result->num_devices = r.in.get<uint64_t>();
    const bool has_message = r.in.get<uint8_t>() != 0;
    c.init_message = r.in.str();
    result->message = has_message ? c.init_message.c_str() : nullptr;
    return nullptr;
  });
}

void proxy_shutdown(Child* child) {
  (void)locked(child, [&](Child& c) -> wick_error* {
    if (c.dead.empty()) {
      Child::Result r = c.call(Call::Shutdown, request(Call::Shutdown));
      if (r.error != nullptr) proxy_error_destroy(r.error);
    }
    return nullptr;
  });
}

wick_error* proxy_device_get(Child* child, size_t index, wick_device** out) {
  return locked(child, [&](Child& c) -> wick_error* {
    Out o = request(Call::DeviceGet);
    o.put<uint64_t>(index);
    Child::Result r = c.call(Call::DeviceGet, o);
    if (r.error != nullptr) return r.error;
    const auto id = r.in.get<uint64_t>();
    for (const auto& d : c.devices)
      if (d->id == id) {
        *out = reinterpret_cast<wick_device*>(d.get());
        return nullptr;
      }
    c.devices.push_back(std::make_unique<ProxyDevice>(ProxyDevice{&c, id, {}, {}}));
    *out = reinterpret_cast<wick_device*>(c.devices.back().get());
    return nullptr;
  });
}

wick_error* proxy_device_get_props(const wick_device* device, wick_device_props* props) {
  auto* d = const_cast<ProxyDevice*>(reinterpret_cast<const ProxyDevice*>(device));
  return locked(d->child, [&](Child& c) -> wick_error* {
    Out o = request(Call::DeviceProps);
    o.put<uint64_t>(d->id);
    Child::Result r = c.call(Call::DeviceProps, o);
    if (r.error != nullptr) return r.error;
    const bool has_name = r.in.get<uint8_t>() != 0;
    d->name = r.in.str();
    const bool has_vendor = r.in.get<uint8_t>() != 0;
    d->vendor = r.in.str();
    props->name = has_name ? d->name.c_str() : nullptr;
    props->vendor = has_vendor ? d->vendor.c_str() : nullptr;
    props->kind = static_cast<wick_device_kind>(r.in.get<int32_t>());
    props->memory_bytes = r.in.get<uint64_t>();
    props->capabilities = r.in.get<uint64_t>();
    props->compute_units = r.in.get<uint32_t>();
    return nullptr;
  });
}

// Calls that send a request and expect no results.
wick_error* simple_call(Child* child, const Out& o, Call c) {
  return locked(child, [&](Child& ch) { return ch.call(c, o).error; });
}

wick_error* proxy_device_synchronize(wick_device* device) {
  Out o = request(Call::Synchronize);
  o.put<uint64_t>(id_of(device));
  return simple_call(child_of(device), o, Call::Synchronize);
}

wick_error* proxy_buffer_allocate(wick_device* device, uint64_t size, wick_buffer** out) {
  return locked(child_of(device), [&](Child& c) -> wick_error* {
    Out o = request(Call::Allocate);
    o.put<uint64_t>(id_of(device)).put<uint64_t>(size);
    Child::Result r = c.call(Call::Allocate, o);
    if (r.error != nullptr) return r.error;
    *out = reinterpret_cast<wick_buffer*>(new ProxyBuffer{&c, r.in.get<uint64_t>()});
    return nullptr;
  });
}

void proxy_buffer_free(wick_buffer* buffer) {
  if (buffer == nullptr) return;
  auto* b = reinterpret_cast<ProxyBuffer*>(buffer);
  (void)locked(b->child, [&](Child& c) -> wick_error* {
    if (c.dead.empty()) {
      Out o = request(Call::Free);
      o.put<uint64_t>(b->id);
      if (wick_error* e = c.call(Call::Free, o).error) proxy_error_destroy(e);
    }
    return nullptr;
  });
  delete b;
}

wick_error* proxy_buffer_write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) {
  auto* b = reinterpret_cast<ProxyBuffer*>(dst);
  for (uint64_t done = 0; done < size || (size == 0 && done == 0);) {
    const uint64_t n = std::min(size - done, kChunk);
    Out o = request(Call::Write);
    o.put<uint64_t>(b->id).put<uint64_t>(offset + done).put<uint64_t>(n);
    o.bytes(static_cast<const uint8_t*>(src) + done, n);
    if (wick_error* e = simple_call(b->child, o, Call::Write)) return e;
    done += n;
    if (size == 0) break;
  }
  return nullptr;
}

wick_error* proxy_buffer_read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) {
  const auto* b = reinterpret_cast<const ProxyBuffer*>(src);
  return locked(b->child, [&](Child& c) -> wick_error* {
    for (uint64_t done = 0; done < size || (size == 0 && done == 0);) {
      const uint64_t n = std::min(size - done, kChunk);
      Out o = request(Call::Read);
      o.put<uint64_t>(b->id).put<uint64_t>(offset + done).put<uint64_t>(n);
      Child::Result r = c.call(Call::Read, o);
      if (r.error != nullptr) return r.error;
      if (r.in.left() != n)
        return make_error(WICK_STATUS_INTERNAL, "buffer_read: the isolated process sent " +
                                                    std::to_string(r.in.left()) + " bytes, not " +
                                                    std::to_string(n));
      std::memcpy(static_cast<uint8_t*>(dst) + done, r.in.take(n), n);
      done += n;
      if (size == 0) break;
    }
    return nullptr;
  });
}

wick_error* proxy_buffer_copy(const wick_buffer* src, uint64_t src_offset, wick_buffer* dst,
                              uint64_t dst_offset, uint64_t size) {
  Out o = request(Call::Copy);
  o.put<uint64_t>(id_of_buffer(src)).put<uint64_t>(src_offset);
  o.put<uint64_t>(id_of_buffer(dst)).put<uint64_t>(dst_offset).put<uint64_t>(size);
  return simple_call(reinterpret_cast<const ProxyBuffer*>(src)->child, o, Call::Copy);
}

wick_support proxy_op_supports(const wick_device* device, const wick_op_desc* op) {
  Child* child = child_of(device);
  try {
    std::lock_guard lock(child->mutex);
    Out o = request(Call::Supports);
    o.put<uint64_t>(id_of(device));
    put_op(o, *op, &id_of_buffer);
    Child::Result r = child->call(Call::Supports, o);
    if (r.error != nullptr) {  // a dead child declines everything; execute would say why
      proxy_error_destroy(r.error);
      return WICK_SUPPORT_NO_OP;
    }
    return static_cast<wick_support>(r.in.get<int32_t>());
  } catch (const std::exception&) {
    return WICK_SUPPORT_NO_OP;
  }
}

wick_error* proxy_op_execute(wick_device* device, const wick_op_desc* op) {
  Out o = request(Call::Execute);
  o.put<uint64_t>(id_of(device));
  put_op(o, *op, &id_of_buffer);
  return simple_call(child_of(device), o, Call::Execute);
}

wick_error* proxy_device_get_free_memory(const wick_device* device, uint64_t* free_bytes) {
  return locked(child_of(device), [&](Child& c) -> wick_error* {
    Out o = request(Call::FreeMemory);
    o.put<uint64_t>(id_of(device));
    Child::Result r = c.call(Call::FreeMemory, o);
    if (r.error != nullptr) return r.error;
    *free_bytes = r.in.get<uint64_t>();
    return nullptr;
  });
}

// The table slots without a device or buffer argument need to know their child: one static table
// per slot, kMaxIsolated of them.
struct Slot {
  Child* child = nullptr;
  wick_plugin_api table{};
};
std::array<Slot, kMaxIsolated> g_slots;
std::mutex g_slots_mutex;

template <size_t N>
struct SlotCalls {
  static wick_error* initialize(const wick_initialize_args* a, wick_initialize_result* r) {
    return proxy_initialize(g_slots[N].child, a, r);
  }
  static void shutdown() { proxy_shutdown(g_slots[N].child); }
  static wick_error* device_get(size_t index, wick_device** out) {
    return proxy_device_get(g_slots[N].child, index, out);
  }
};

struct SlotFns {
  decltype(wick_plugin_api::initialize) initialize;
  decltype(wick_plugin_api::shutdown) shutdown;
  decltype(wick_plugin_api::device_get) device_get;
};
template <size_t... N>
constexpr std::array<SlotFns, sizeof...(N)> make_slot_fns(std::index_sequence<N...>) {
  return {SlotFns{&SlotCalls<N>::initialize, &SlotCalls<N>::shutdown, &SlotCalls<N>::device_get}...};
}
constexpr auto kSlotFns = make_slot_fns(std::make_index_sequence<kMaxIsolated>());

// Sets the named slot of a proxy table to NULL: the child's table has it NULL.
void clear_slot(wick_plugin_api& t, const std::string& name) {
#define WICK_CLEAR_SLOT(slot) \
  if (name == #slot) t.slot = nullptr;
  WICK_CLEAR_SLOT(error_code) WICK_CLEAR_SLOT(error_message) WICK_CLEAR_SLOT(error_destroy)
  WICK_CLEAR_SLOT(initialize) WICK_CLEAR_SLOT(shutdown) WICK_CLEAR_SLOT(device_get)
  WICK_CLEAR_SLOT(device_get_props) WICK_CLEAR_SLOT(device_synchronize)
  WICK_CLEAR_SLOT(buffer_allocate) WICK_CLEAR_SLOT(buffer_free) WICK_CLEAR_SLOT(buffer_write)
  WICK_CLEAR_SLOT(buffer_read) WICK_CLEAR_SLOT(op_supports) WICK_CLEAR_SLOT(op_execute)
#undef WICK_CLEAR_SLOT
}

// Owns the child and its slot; destroyed after the core's LoadedPlugin called shutdown.
struct Owner {
  std::unique_ptr<Child> child;
  size_t slot;
  ~Owner() {
    child.reset();
    std::lock_guard lock(g_slots_mutex);
    g_slots[slot].child = nullptr;
  }
};

// ---- the child's side ------------------------------------------------------------------------

struct Server {
  const wick_plugin_api* api = nullptr;
  std::unordered_set<uint64_t> devices, buffers;

  static uint64_t id(const void* p) { return reinterpret_cast<uint64_t>(p); }
  wick_device* device(uint64_t id) {
    if (devices.count(id) == 0) throw Error("unknown device handle");
    return reinterpret_cast<wick_device*>(id);
  }
  wick_buffer* buffer(uint64_t id) {
    if (buffers.count(id) == 0) throw Error("unknown buffer handle");
    return reinterpret_cast<wick_buffer*>(id);
  }

  // A decoded op descriptor and the storage its pointers point into.
  struct Op {
    wick_op_desc desc{};
    std::vector<uint64_t> params;  // 8-byte aligned storage for the params struct
    std::vector<std::vector<int64_t>> arrays;
    std::vector<int32_t> axes;
    std::vector<wick_tensor_desc> tensors;
  };

  template <class T>
  static const T* get_array(In& in, std::vector<T>& into) {
    const auto n = in.get<int64_t>();
    if (n < 0) return nullptr;
    if (n > 64) throw Error("op descriptor array too long");
    into.resize(static_cast<size_t>(n));
    std::memcpy(into.data(), in.take(sizeof(T) * static_cast<size_t>(n)), sizeof(T) * static_cast<size_t>(n));
    return into.data();
  }

  void get_op(In& in, Op& op, bool with_buffers) {
    op.desc.struct_size = sizeof(op.desc);
    op.desc.op = static_cast<wick_op_code>(in.get<int32_t>());
    const sdk::OpInfo* info = sdk::op_info(op.desc.op);
    op.arrays.reserve(16);
    if (in.get<uint8_t>() != 0) {
      const auto size = in.get<uint64_t>();
      if (info == nullptr || size > info->params_size || size < sizeof(size_t))
        throw Error("bad params size");
      op.params.assign((size + 7) / 8, 0);
      std::memcpy(op.params.data(), in.take(size), size);
      void* p = op.params.data();
      auto array = [&]() -> const int64_t* { return get_array(in, op.arrays.emplace_back()); };
      if (info->params == sdk::ParamsKind::reduce) {
        static_cast<wick_reduce_params*>(p)->axes = get_array(in, op.axes);
      } else if (info->params == sdk::ParamsKind::conv) {
        auto* c = static_cast<wick_conv_params*>(p);
        c->strides = array();
        c->padding_lo = array();
        c->padding_hi = array();
        c->dilations = array();
        c->input_dilations = array();
      } else if (info->params == sdk::ParamsKind::window) {
        auto* w = static_cast<wick_window_params*>(p);
        w->window = array();
        w->strides = array();
        w->padding_lo = array();
        w->padding_hi = array();
        w->dilations = array();
      }
      op.desc.params = p;
    }
    const auto inputs = in.get<uint64_t>();
    if (inputs > 64) throw Error("too many inputs");
    op.tensors.reserve(static_cast<size_t>(inputs) + 64);
    auto get_tensors = [&](uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) {
        wick_tensor_desc t{};
        t.struct_size = sizeof(t);
        const auto b = in.get<uint64_t>();
        t.buffer = (with_buffers && b != 0) ? buffer(b) : nullptr;
        t.byte_offset = in.get<uint64_t>();
        t.dtype = static_cast<wick_dtype>(in.get<int32_t>());
        t.rank = in.get<int32_t>();
        t.shape = get_array(in, op.arrays.emplace_back());
        t.strides = get_array(in, op.arrays.emplace_back());
        op.tensors.push_back(t);
      }
    };
    get_tensors(inputs);
    const auto outputs = in.get<uint64_t>();
    if (outputs > 64) throw Error("too many outputs");
    get_tensors(outputs);
    op.desc.inputs = op.tensors.data();
    op.desc.num_inputs = static_cast<size_t>(inputs);
    op.desc.outputs = op.tensors.data() + inputs;
    op.desc.num_outputs = static_cast<size_t>(outputs);
  }

  // The reply to a call that returned `err`: its status and message (freeing it), or OK.
  Out reply(wick_error* err) {
    Out o;
    if (err == nullptr) {
      o.put<uint32_t>(WICK_STATUS_OK);
      return o;
    }
    o.put<uint32_t>(api->error_code(err));
    o.cstr(api->error_message(err));
    api->error_destroy(err);
    return o;
  }

  static Out failure(const std::string& message) {
    Out o;
    o.put<uint32_t>(WICK_STATUS_INTERNAL);
    o.str(message);
    return o;
  }

  // Serves one request; false after shutdown.
  bool handle(In& in, Out& o) {
    const auto call = static_cast<Call>(in.get<uint32_t>());
    switch (call) {
      case Call::Initialize: {
        const auto n = in.get<uint64_t>();
        if (n > 4096) throw Error("too many options");
        std::vector<std::string> strings;
        strings.reserve(2 * n);
        std::vector<wick_option> options(n);
        for (wick_option& opt : options) {
          opt.struct_size = sizeof(opt);
          strings.push_back(in.str());
          opt.key = strings.back().c_str();
          opt.type = static_cast<wick_option_type>(in.get<int32_t>());
          opt.bool_value = in.get<int32_t>();
          opt.int_value = in.get<int64_t>();
          opt.float_value = in.get<double>();
          strings.push_back(in.str());
          opt.string_value = strings.back().c_str();
        }
        wick_initialize_args args{};
        args.struct_size = sizeof(args);
        args.host_abi_major = WICK_ABI_MAJOR;
        args.host_abi_minor = WICK_ABI_MINOR;
        args.options = options.empty() ? nullptr : options.data();
        args.num_options = options.size();
        wick_initialize_result result{};
        result.struct_size = sizeof(result);
        wick_error* err = api->initialize(&args, &result);
        o = reply(err);
        if (err == nullptr) {
          o.put<uint64_t>(result.num_devices);
          o.put<uint8_t>(result.message != nullptr ? 1 : 0).cstr(result.message);
        }
        return true;
      }
      case Call::Shutdown:
        api->shutdown();
        o = reply(nullptr);
        return false;
      case Call::DeviceGet: {
        wick_device* d = nullptr;
        wick_error* err = api->device_get(static_cast<size_t>(in.get<uint64_t>()), &d);
        o = reply(err);
        if (err == nullptr) {
          devices.insert(id(d));
          o.put<uint64_t>(id(d));
        }
        return true;
      }
      case Call::DeviceProps: {
        wick_device_props p{};
        p.struct_size = sizeof(p);
        wick_error* err = api->device_get_props(device(in.get<uint64_t>()), &p);
        o = reply(err);
        if (err == nullptr) {
          o.put<uint8_t>(p.name != nullptr ? 1 : 0).cstr(p.name);
          o.put<uint8_t>(p.vendor != nullptr ? 1 : 0).cstr(p.vendor);
          o.put<int32_t>(p.kind).put<uint64_t>(p.memory_bytes).put<uint64_t>(p.capabilities);
          o.put<uint32_t>(p.compute_units);
        }
        return true;
      }
      case Call::Synchronize:
        o = reply(api->device_synchronize(device(in.get<uint64_t>())));
        return true;
      case Call::Allocate: {
        wick_device* d = device(in.get<uint64_t>());
        wick_buffer* b = nullptr;
        wick_error* err = api->buffer_allocate(d, in.get<uint64_t>(), &b);
        o = reply(err);
        if (err == nullptr) {
          buffers.insert(id(b));
          o.put<uint64_t>(id(b));
        }
        return true;
      }
      case Call::Free: {
        wick_buffer* b = buffer(in.get<uint64_t>());
        buffers.erase(id(b));
        api->buffer_free(b);
        o = reply(nullptr);
        return true;
      }
      case Call::Write: {
        wick_buffer* b = buffer(in.get<uint64_t>());
        const auto offset = in.get<uint64_t>();
        const auto size = in.get<uint64_t>();
        o = reply(api->buffer_write(b, offset, in.take(size), size));
        return true;
      }
      case Call::Read: {
        const wick_buffer* b = buffer(in.get<uint64_t>());
        const auto offset = in.get<uint64_t>();
        const auto size = in.get<uint64_t>();
        if (size > kChunk) throw Error("read too large");
        std::vector<uint8_t> data(static_cast<size_t>(size));
        wick_error* err = api->buffer_read(b, offset, data.data(), size);
        o = reply(err);
        if (err == nullptr) o.bytes(data.data(), data.size());
        return true;
      }
      case Call::Copy: {
        const wick_buffer* src = buffer(in.get<uint64_t>());
        const auto src_offset = in.get<uint64_t>();
        wick_buffer* dst = buffer(in.get<uint64_t>());
        const auto dst_offset = in.get<uint64_t>();
        const auto size = in.get<uint64_t>();
        if (api->buffer_copy == nullptr) throw Error("buffer_copy is not in the plugin's table");
        o = reply(api->buffer_copy(src, src_offset, dst, dst_offset, size));
        return true;
      }
      case Call::Supports: {
        const wick_device* d = device(in.get<uint64_t>());
        Op op;
        get_op(in, op, false);
        o = reply(nullptr);
        o.put<int32_t>(api->op_supports(d, &op.desc));
        return true;
      }
      case Call::Execute: {
        wick_device* d = device(in.get<uint64_t>());
        Op op;
        get_op(in, op, true);
        o = reply(api->op_execute(d, &op.desc));
        return true;
      }
      case Call::FreeMemory: {
        uint64_t free_bytes = 0;
        const wick_device* d = device(in.get<uint64_t>());
        if (api->abi_minor < 1 || api->struct_size < WICK_PLUGIN_API_SIZE_1_1 ||
            api->device_get_free_memory == nullptr)
          throw Error("device_get_free_memory is not in the plugin's table");
        wick_error* err = api->device_get_free_memory(d, &free_bytes);
        o = reply(err);
        if (err == nullptr) o.put<uint64_t>(free_bytes);
        return true;
      }
    }
    throw Error("unknown call " + std::to_string(static_cast<uint32_t>(call)));
  }
};

}  // namespace

std::string host_program() {
  if (auto env = secure_env("WICK_PLUGIN_HOST")) return *env;
  boost::system::error_code ec;
  const boost::dll::fs::path self = boost::dll::this_line_location(ec);
  if (ec) return "wick-plugin-host";
  return (std::filesystem::path(self.parent_path().string()) / "wick" / "wick-plugin-host").string();
}

Isolated start(const std::string& name, const std::string& library, int64_t call_timeout_ms) {
  const std::string program = host_program();
  if (::access(program.c_str(), X_OK) != 0) {
    throw Error("isolation ([plugins." + name + "] isolate = true) needs the plugin host " +
                program + ", which is not there or not executable (set WICK_PLUGIN_HOST to its path)");
  }
  auto child = std::make_unique<Child>();
  child->plugin = name;
  child->timeout_ms = call_timeout_ms;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error("isolating plugin '" + name + "': socketpair failed: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 3);  // dup2 clears close-on-exec on fd 3
  const std::string parent = std::to_string(::getpid());
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>("--fd"),
                             const_cast<char*>("3"), const_cast<char*>("--parent"),
                             const_cast<char*>(parent.c_str()), const_cast<char*>(library.c_str()),
                             nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error("isolating plugin '" + name + "': could not start " + program + ": " +
                std::strerror(rc));
  }
  child->pid = pid;
  child->fd = fds[0];

  // The hello: the child's table, or why it could not load the library.
  std::vector<uint8_t> hello;
  const RecvResult got = recv_message(child->fd, hello, 30000);
  if (got != RecvResult::Ok) {
    child->lost(Call::Initialize, got);
    throw Error("isolating plugin '" + name + "': " + program + " did not start: " + child->dead);
  }
  In in(hello.data(), hello.size());
  if (in.get<uint32_t>() != WICK_STATUS_OK) throw Error(in.str());

  std::unique_lock lock(g_slots_mutex);
  size_t slot = 0;
  while (slot < g_slots.size() && g_slots[slot].child != nullptr) ++slot;
  if (slot == g_slots.size())
    throw Error("isolating plugin '" + name + "': at most " + std::to_string(kMaxIsolated) +
                " plugins can be isolated in one process");
  auto owner = std::make_shared<Owner>();  // from here on, frees the slot whatever happens
  owner->slot = slot;
  Slot& s = g_slots[slot];
  s.child = child.get();
  owner->child = std::move(child);
  Child* c = owner->child.get();
  lock.unlock();
  wick_plugin_api& t = s.table;
  t = wick_plugin_api{};
  t.initialize = kSlotFns[slot].initialize;
  t.shutdown = kSlotFns[slot].shutdown;
  t.device_get = kSlotFns[slot].device_get;
  t.abi_major = in.get<uint32_t>();
  t.abi_minor = in.get<uint32_t>();
  const auto struct_size = in.get<uint64_t>();
  t.struct_size = struct_size < WICK_PLUGIN_API_SIZE_1_0 ? static_cast<size_t>(struct_size)
                                                          : sizeof(wick_plugin_api);
  t.flags = in.get<uint64_t>();
  const auto has = in.get<uint32_t>();
  c->name = in.str();
  c->version = in.str();
  t.name = c->name.c_str();
  t.version = c->version.c_str();
  t.error_code = &proxy_error_code;
  t.error_message = &proxy_error_message;
  t.error_destroy = &proxy_error_destroy;
  t.device_get_props = &proxy_device_get_props;
  t.device_synchronize = &proxy_device_synchronize;
  t.buffer_allocate = &proxy_buffer_allocate;
  t.buffer_free = &proxy_buffer_free;
  t.buffer_write = &proxy_buffer_write;
  t.buffer_read = &proxy_buffer_read;
  t.buffer_copy = (has & kHasBufferCopy) != 0 ? &proxy_buffer_copy : nullptr;
  t.op_supports = &proxy_op_supports;
  t.op_execute = &proxy_op_execute;
  t.device_get_free_memory = (has & kHasFreeMemory) != 0 ? &proxy_device_get_free_memory : nullptr;
  clear_slot(t, in.str());
  return Isolated{&t, std::move(owner)};
}

int serve(int fd, const std::string& library) {
  ::signal(SIGPIPE, SIG_IGN);
  Server server;
  // The hello: the table's versions, size, flags, optional slots and names.
  Out hello;
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    send_message(fd, Server::failure(std::string("wick-plugin-host could not load ") + library +
                                     ": " + (why != nullptr ? why : "dlopen failed")));
    return 1;
  }
  auto entry = reinterpret_cast<wick_plugin_get_api_fn>(::dlsym(handle, WICK_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr || (server.api = entry()) == nullptr) {
    send_message(fd, Server::failure(library + " is not a Wick plugin: no " WICK_PLUGIN_ENTRY_SYMBOL
                                               " or it returned NULL"));
    return 1;
  }
  const wick_plugin_api& api = *server.api;
  uint32_t has = 0;
  if (api.struct_size >= WICK_PLUGIN_API_SIZE_1_0 && api.buffer_copy != nullptr) has |= kHasBufferCopy;
  if (api.abi_minor >= 1 && api.struct_size >= WICK_PLUGIN_API_SIZE_1_1 &&
      api.device_get_free_memory != nullptr)
    has |= kHasFreeMemory;
  hello.put<uint32_t>(WICK_STATUS_OK).put<uint32_t>(api.abi_major).put<uint32_t>(api.abi_minor);
  hello.put<uint64_t>(api.struct_size).put<uint64_t>(api.flags).put<uint32_t>(has);
  hello.cstr(api.name).cstr(api.version);
  // A NULL required slot is named, so that the host judges the table as it would in process.
  const char* missing = api.struct_size >= WICK_PLUGIN_API_SIZE_1_0 ? missing_required_slot(api) : nullptr;
  hello.cstr(missing);
  if (!send_message(fd, hello)) return 1;
  std::vector<uint8_t> message;
  for (;;) {
    if (recv_message(fd, message, -1) != RecvResult::Ok) return 0;  // the host went away
    In in(message.data(), message.size());
    Out reply;
    bool more = true;
    try {
      more = server.handle(in, reply);
    } catch (const std::exception& e) {
      reply = Server::failure(std::string("wick-plugin-host: ") + e.what());
    }
    if (!send_message(fd, reply)) return 0;
    if (!more) return 0;
  }
}

}  // namespace wick::isolation
