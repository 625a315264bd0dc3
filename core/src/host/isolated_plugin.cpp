// isolated_plugin.cpp — the host's side of an isolated plugin: the proxy table whose slots send
// each call to the child (wick-plugin-host, whose call server is isolation_server.cpp) in the wire
// format of isolation_wire.hpp, and start(), which spawns the child and reads its table.
#include "host/isolated_plugin.hpp"

#include "host/isolation_wire.hpp"

#include <wick/config.hpp>
#include <wick/error.hpp>

#include <boost/dll/runtime_symbol_info.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace wick::isolation {

namespace {

using wire::Call;
using wire::call_name;
using wire::In;
using wire::kChunk;
using wire::kHasBufferCopy;
using wire::kHasFreeMemory;
using wire::Out;
using wire::put_op;
using wire::RecvResult;
using wire::recv_message;
using wire::send_message;

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

// Starts `program` serving `library` with one end of a socket pair as its fd 3; the other end
// becomes child.fd.
void spawn_host(const std::string& name, const std::string& program, const std::string& library,
                Child& child) {
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
  child.pid = pid;
  child.fd = fds[0];
}

// Takes a free slot for `child` and moves the child into the slot's owner.
std::shared_ptr<Owner> take_slot(std::unique_ptr<Child>& child, const std::string& name) {
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
  return owner;
}

// Fills the proxy table of slot `slot`, whose child is `c`, from the rest of the hello: the child
// table's versions, size, flags, optional slots, names and the required slot it lacks.
void fill_table(wick_plugin_api& t, size_t slot, Child* c, In& in) {
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
}

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
  spawn_host(name, program, library, *child);

  // The hello: the child's table, or why it could not load the library.
  std::vector<uint8_t> hello;
  const RecvResult got = recv_message(child->fd, hello, 30000);
  if (got != RecvResult::Ok) {
    child->lost(Call::Initialize, got);
    throw Error("isolating plugin '" + name + "': " + program + " did not start: " + child->dead);
  }
  In in(hello.data(), hello.size());
  if (in.get<uint32_t>() != WICK_STATUS_OK) throw Error(in.str());

  auto owner = take_slot(child, name);
  wick_plugin_api& t = g_slots[owner->slot].table;
  fill_table(t, owner->slot, owner->child.get(), in);
  return Isolated{&t, std::move(owner)};
}

}  // namespace wick::isolation
