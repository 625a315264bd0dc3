// isolated_plugin.cpp — the host's side of an isolated plugin: the proxy table whose slots send
// each call to the child (wick-plugin-host, whose call server is isolation_server.cpp) through a
// Child (isolated_child.hpp) in the wire format of isolation_wire.hpp, start(), which spawns the
// child and reads its table, and the shutdown of every isolated plugin at exit.
#include "host/isolated_plugin.hpp"

#include "host/isolated_child.hpp"
#include "host/isolation_wire.hpp"

#include <wick/config.hpp>
#include <wick/error.hpp>

#include <boost/dll/runtime_symbol_info.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace wick::isolation {

namespace {

using wire::Call;
using wire::In;
using wire::kChunk;
using wire::kHasBufferCopy;
using wire::kHasFreeMemory;
using wire::Out;
using wire::put_op;

// An error object for `what`, never throwing.
wick_error* error_of(wick_status code, const char* what) noexcept {
  try {
    return make_error(code, what);
  } catch (...) {
    return make_error(WICK_STATUS_OUT_OF_MEMORY, std::string());
  }
}

// Runs body(child) under the child's lock. No exception leaves: the slots are C ABI functions. A
// reply that does not parse kills the child (it is broken); a call refused before it was sent
// (a lost buffer) is that error.
template <class F>
wick_error* locked(Child* child, Call c, F&& body) noexcept {
  if (child == nullptr)
    return error_of(WICK_STATUS_UNAVAILABLE, "an isolated plugin was called after its release");
  try {
    std::lock_guard lock(child->mutex);
    try {
      return body(*child);
    } catch (const wire::Malformed& e) {
      return child->broken(c, e.what());
    }
  } catch (const CallFailed& e) {
    return error_of(e.code, e.what());
  } catch (const std::exception& e) {
    return error_of(WICK_STATUS_INTERNAL, e.what());
  } catch (...) {
    return error_of(WICK_STATUS_INTERNAL, "an isolated plugin's proxy caught an unknown exception");
  }
}

ProxyDevice* device_of(const wick_device* d) {
  return const_cast<ProxyDevice*>(reinterpret_cast<const ProxyDevice*>(d));
}
ProxyBuffer* buffer_of(const wick_buffer* b) {
  return const_cast<ProxyBuffer*>(reinterpret_cast<const ProxyBuffer*>(b));
}
Child* child_of(const wick_device* d) {
  return d != nullptr ? device_of(d)->child : nullptr;
}
uint64_t id_of_buffer(const wick_buffer* b) {
  return buffer_of(b)->id;
}

// Throws CallFailed unless `b` is a live buffer of `c`.
void check_buffer(const Child& c, const wick_buffer* b) {
  if (b == nullptr) throw CallFailed(WICK_STATUS_INVALID_ARGUMENT, "a NULL buffer");
  if (buffer_of(b)->child != &c)
    throw CallFailed(WICK_STATUS_INVALID_ARGUMENT,
                     "a buffer of another plugin passed to isolated plugin '" + c.plugin() + "'");
  c.check_buffer(*buffer_of(b));
}

void check_op_buffers(const Child& c, const wick_op_desc& op) {
  for (size_t i = 0; i < op.num_inputs; ++i)
    if (op.inputs[i].buffer != nullptr) check_buffer(c, op.inputs[i].buffer);
  for (size_t i = 0; i < op.num_outputs; ++i)
    if (op.outputs[i].buffer != nullptr) check_buffer(c, op.outputs[i].buffer);
}

wick_status proxy_error_code(const wick_error* e) {
  return error_code(e);
}
const char* proxy_error_message(const wick_error* e) {
  return error_message(e);
}
void proxy_error_destroy(wick_error* e) {
  error_destroy(e);
}

wick_error* proxy_initialize(Child* child, const wick_initialize_args* args,
                             wick_initialize_result* result) {
  return locked(child, Call::Initialize, [&](Child& c) -> wick_error* {
    if (args == nullptr || result == nullptr)
      return make_error(WICK_STATUS_INVALID_ARGUMENT, "initialize: NULL arguments");
    Out a;  // the arguments, kept to initialize a restarted process the same way
    a.put<uint64_t>(args->num_options);
    for (size_t i = 0; i < args->num_options; ++i) {
      const wick_option& opt = args->options[i];
      a.cstr(opt.key).put<int32_t>(opt.type).put<int32_t>(opt.bool_value);
      a.put<int64_t>(opt.int_value).put<double>(opt.float_value).cstr(opt.string_value);
    }
    Child::Reply r =
        c.call(Call::Initialize, [&](Out& o) { o.bytes(a.data().data(), a.data().size()); });
    if (r.error != nullptr) return r.error;
    const auto n = r.in.get<uint64_t>();
    if (n > wire::kMaxDevices)
      throw wire::Malformed(std::to_string(n) + " devices, at most " +
                            std::to_string(wire::kMaxDevices));
    const bool has_message = r.in.get<uint8_t>() != 0;
    c.init_message = r.in.str();
    result->num_devices = static_cast<size_t>(n);
    result->message = has_message ? c.init_message.c_str() : nullptr;
    c.initialized(a.data());
    return nullptr;
  });
}

void proxy_shutdown(Child* child) {
  if (child == nullptr) return;
  try {
    std::lock_guard lock(child->mutex);
    child->shutdown(child->call_timeout_ms());
  } catch (...) {
    // A void slot cannot report; the child is gone either way.
  }
}

wick_error* proxy_device_get(Child* child, size_t index, wick_device** out) {
  return locked(child, Call::DeviceGet, [&](Child& c) -> wick_error* {
    if (out == nullptr || index >= wire::kMaxDevices)
      return make_error(WICK_STATUS_INVALID_ARGUMENT, "device_get: bad index or NULL out");
    Child::Reply r = c.call(Call::DeviceGet, [&](Out& o) { o.put<uint64_t>(index); });
    if (r.error != nullptr) return r.error;
    *out = reinterpret_cast<wick_device*>(c.device_at(index, r.in.get<uint64_t>()));
    return nullptr;
  });
}

wick_error* proxy_device_get_props(const wick_device* device, wick_device_props* props) {
  ProxyDevice* d = device_of(device);
  return locked(child_of(device), Call::DeviceProps, [&](Child& c) -> wick_error* {
    Child::Reply r = c.call(Call::DeviceProps, [&](Out& o) {
      c.check_device(*d);
      o.put<uint64_t>(d->id);
    });
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

wick_error* proxy_device_synchronize(wick_device* device) {
  return locked(child_of(device), Call::Synchronize, [&](Child& c) {
    return c
        .call(Call::Synchronize,
              [&](Out& o) {
                c.check_device(*device_of(device));
                o.put<uint64_t>(device_of(device)->id);
              })
        .error;
  });
}

wick_error* proxy_buffer_allocate(wick_device* device, uint64_t size, wick_buffer** out) {
  ProxyDevice* d = device_of(device);
  return locked(child_of(device), Call::Allocate, [&](Child& c) -> wick_error* {
    Child::Reply r = c.call(Call::Allocate, [&](Out& o) {
      c.check_device(*d);
      o.put<uint64_t>(d->id).put<uint64_t>(size);
    });
    if (r.error != nullptr) return r.error;
    const auto id = r.in.get<uint64_t>();
    *out = reinterpret_cast<wick_buffer*>(new ProxyBuffer{&c, d, id, size, c.generation()});
    return nullptr;
  });
}

void proxy_buffer_free(wick_buffer* buffer) {
  if (buffer == nullptr) return;
  ProxyBuffer* b = buffer_of(buffer);
  try {
    std::lock_guard lock(b->child->mutex);
    // A buffer of an ended process went with it; a dead process is not restarted to free one.
    if (b->child->serving() && b->generation == b->child->generation()) {
      Child::Reply r = b->child->call(Call::Free, [&](Out& o) { o.put<uint64_t>(b->id); });
      if (r.error != nullptr) error_destroy(r.error);
    }
  } catch (...) {
    // A void slot cannot report; the child's buffer is at worst left to its process.
  }
  delete b;
}

wick_error* proxy_buffer_write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) {
  ProxyBuffer* b = buffer_of(dst);
  if (b == nullptr) return error_of(WICK_STATUS_INVALID_ARGUMENT, "buffer_write: a NULL buffer");
  for (uint64_t done = 0; done < size || (size == 0 && done == 0);) {
    const uint64_t n = std::min(size - done, kChunk);
    wick_error* e = locked(b->child, Call::Write, [&](Child& c) {
      return c
          .call(Call::Write,
                [&](Out& o) {
                  check_buffer(c, dst);
                  o.put<uint64_t>(b->id).put<uint64_t>(offset + done).put<uint64_t>(n);
                  o.bytes(static_cast<const uint8_t*>(src) + done, n);
                })
          .error;
    });
    if (e != nullptr) return e;
    done += n;
    if (size == 0) break;
  }
  return nullptr;
}

wick_error* proxy_buffer_read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) {
  const ProxyBuffer* b = buffer_of(src);
  if (b == nullptr) return error_of(WICK_STATUS_INVALID_ARGUMENT, "buffer_read: a NULL buffer");
  return locked(b->child, Call::Read, [&](Child& c) -> wick_error* {
    for (uint64_t done = 0; done < size || (size == 0 && done == 0);) {
      const uint64_t n = std::min(size - done, kChunk);
      Child::Reply r = c.call(
          Call::Read,
          [&](Out& o) {
            check_buffer(c, src);
            o.put<uint64_t>(b->id).put<uint64_t>(offset + done).put<uint64_t>(n);
          },
          n);
      if (r.error != nullptr) return r.error;
      if (r.in.left() != n)
        throw wire::Malformed("a read of " + std::to_string(n) + " bytes answered with " +
                              std::to_string(r.in.left()));
      if (n > 0) std::memcpy(static_cast<uint8_t*>(dst) + done, r.in.take(n), n);
      done += n;
      if (size == 0) break;
    }
    return nullptr;
  });
}

wick_error* proxy_buffer_copy(const wick_buffer* src, uint64_t src_offset, wick_buffer* dst,
                              uint64_t dst_offset, uint64_t size) {
  if (src == nullptr || dst == nullptr)
    return error_of(WICK_STATUS_INVALID_ARGUMENT, "buffer_copy: a NULL buffer");
  return locked(buffer_of(src)->child, Call::Copy, [&](Child& c) {
    return c
        .call(Call::Copy,
              [&](Out& o) {
                check_buffer(c, src);
                check_buffer(c, dst);
                o.put<uint64_t>(id_of_buffer(src)).put<uint64_t>(src_offset);
                o.put<uint64_t>(id_of_buffer(dst)).put<uint64_t>(dst_offset).put<uint64_t>(size);
              })
        .error;
  });
}

wick_support proxy_op_supports(const wick_device* device, const wick_op_desc* op) {
  if (op == nullptr) return WICK_SUPPORT_NO_OP;
  ProxyDevice* d = device_of(device);
  wick_support answer = WICK_SUPPORT_NO_OP;
  wick_error* e = locked(child_of(device), Call::Supports, [&](Child& c) -> wick_error* {
    Child::Reply r = c.call(Call::Supports, [&](Out& o) {
      c.check_device(*d);
      o.put<uint64_t>(d->id);
      put_op(o, *op, &id_of_buffer);
    });
    if (r.error != nullptr) return r.error;
    const auto v = r.in.get<int32_t>();
    if (v < WICK_SUPPORT_YES || v > WICK_SUPPORT_ERROR)
      throw wire::Malformed("op_supports answered " + std::to_string(v));
    answer = static_cast<wick_support>(v);
    return nullptr;
  });
  if (e != nullptr) {  // a dead or broken child declines everything; execute would say why
    error_destroy(e);
    return WICK_SUPPORT_NO_OP;
  }
  return answer;
}

wick_error* proxy_op_execute(wick_device* device, const wick_op_desc* op) {
  if (op == nullptr) return error_of(WICK_STATUS_INVALID_ARGUMENT, "op_execute: a NULL op");
  ProxyDevice* d = device_of(device);
  return locked(child_of(device), Call::Execute, [&](Child& c) {
    return c
        .call(Call::Execute,
              [&](Out& o) {
                c.check_device(*d);
                check_op_buffers(c, *op);
                o.put<uint64_t>(d->id);
                put_op(o, *op, &id_of_buffer);
              })
        .error;
  });
}

wick_error* proxy_device_get_free_memory(const wick_device* device, uint64_t* free_bytes) {
  ProxyDevice* d = device_of(device);
  return locked(child_of(device), Call::FreeMemory, [&](Child& c) -> wick_error* {
    Child::Reply r = c.call(Call::FreeMemory, [&](Out& o) {
      c.check_device(*d);
      o.put<uint64_t>(d->id);
    });
    if (r.error != nullptr) return r.error;
    *free_bytes = r.in.get<uint64_t>();
    return nullptr;
  });
}

// The table slots without a device or buffer argument need to know their child: one static table
// per slot, kMaxIsolated of them.
struct Slot {
  std::atomic<Child*> child{nullptr};
  wick_plugin_api table{};
};
std::array<Slot, kMaxIsolated> g_slots;
std::mutex g_slots_mutex;

template <size_t N>
struct SlotCalls {
  static wick_error* initialize(const wick_initialize_args* a, wick_initialize_result* r) {
    return proxy_initialize(g_slots[N].child.load(), a, r);
  }
  static void shutdown() { proxy_shutdown(g_slots[N].child.load()); }
  static wick_error* device_get(size_t index, wick_device** out) {
    return proxy_device_get(g_slots[N].child.load(), index, out);
  }
};

struct SlotFns {
  decltype(wick_plugin_api::initialize) initialize;
  decltype(wick_plugin_api::shutdown) shutdown;
  decltype(wick_plugin_api::device_get) device_get;
};
template <size_t... N>
constexpr std::array<SlotFns, sizeof...(N)> make_slot_fns(std::index_sequence<N...>) {
  return {
      SlotFns{&SlotCalls<N>::initialize, &SlotCalls<N>::shutdown, &SlotCalls<N>::device_get}...};
}
constexpr auto kSlotFns = make_slot_fns(std::make_index_sequence<kMaxIsolated>());

// Sets the named slot of a proxy table to NULL: the child's table has it NULL.
void clear_slot(wick_plugin_api& t, const std::string& name) {
#define WICK_CLEAR_SLOT(slot) \
  if (name == #slot) t.slot = nullptr;
  WICK_CLEAR_SLOT(error_code)
  WICK_CLEAR_SLOT(error_message) WICK_CLEAR_SLOT(error_destroy) WICK_CLEAR_SLOT(initialize)
      WICK_CLEAR_SLOT(shutdown) WICK_CLEAR_SLOT(device_get) WICK_CLEAR_SLOT(device_get_props)
          WICK_CLEAR_SLOT(device_synchronize) WICK_CLEAR_SLOT(buffer_allocate)
              WICK_CLEAR_SLOT(buffer_free) WICK_CLEAR_SLOT(buffer_write)
                  WICK_CLEAR_SLOT(buffer_read) WICK_CLEAR_SLOT(op_supports)
                      WICK_CLEAR_SLOT(op_execute)
#undef WICK_CLEAR_SLOT
}

// Owns the child and its slot; destroyed after the core's LoadedPlugin called shutdown. The slot
// is freed first, so that the exit handler never meets a child being destroyed.
struct Owner {
  std::unique_ptr<Child> child;
  size_t slot;
  ~Owner() {
    {
      std::lock_guard lock(g_slots_mutex);
      g_slots[slot].child = nullptr;
    }
    child.reset();
  }
};

// Takes a free slot for `child` and moves the child into the slot's owner.
std::shared_ptr<Owner> take_slot(std::unique_ptr<Child>& child, const std::string& name) {
  std::unique_lock lock(g_slots_mutex);
  size_t slot = 0;
  while (slot < g_slots.size() && g_slots[slot].child.load() != nullptr) ++slot;
  if (slot == g_slots.size())
    throw Error("isolating plugin '" + name + "': at most " + std::to_string(kMaxIsolated) +
                " plugins can be isolated in one process");
  auto owner = std::make_shared<Owner>();  // from here on, frees the slot whatever happens
  owner->slot = slot;
  g_slots[slot].child = child.get();
  owner->child = std::move(child);
  return owner;
}

// Fills the proxy table of slot `slot` from the hello of its child `c`: the child table's versions,
// size, flags, optional slots, names and the required slot it lacks.
void fill_table(wick_plugin_api& t, size_t slot, const Child& c) {
  const Hello& h = c.hello();
  t = wick_plugin_api{};
  t.initialize = kSlotFns[slot].initialize;
  t.shutdown = kSlotFns[slot].shutdown;
  t.device_get = kSlotFns[slot].device_get;
  t.abi_major = h.abi_major;
  t.abi_minor = h.abi_minor;
  t.struct_size = h.struct_size < WICK_PLUGIN_API_SIZE_1_0 ? static_cast<size_t>(h.struct_size)
                                                           : sizeof(wick_plugin_api);
  t.flags = h.flags;
  t.name = h.name.c_str();
  t.version = h.version.c_str();
  t.error_code = &proxy_error_code;
  t.error_message = &proxy_error_message;
  t.error_destroy = &proxy_error_destroy;
  t.device_get_props = &proxy_device_get_props;
  t.device_synchronize = &proxy_device_synchronize;
  t.buffer_allocate = &proxy_buffer_allocate;
  t.buffer_free = &proxy_buffer_free;
  t.buffer_write = &proxy_buffer_write;
  t.buffer_read = &proxy_buffer_read;
  t.buffer_copy = (h.has & kHasBufferCopy) != 0 ? &proxy_buffer_copy : nullptr;
  t.op_supports = &proxy_op_supports;
  t.op_execute = &proxy_op_execute;
  t.device_get_free_memory =
      (h.has & kHasFreeMemory) != 0 ? &proxy_device_get_free_memory : nullptr;
  // buffer_wrap_host (1.5), buffer_host_address (1.7) and buffer_native_memory (1.8) stay NULL: the child's buffers are
  // another process's memory, so the host copies and has no address for them.
  clear_slot(t, h.missing);
}

// At exit the plugins still isolated are shut down, every time: the global runtime is never
// destroyed, so without this a plugin's shutdown ran or not by a race between the child seeing the
// end of its socket and being killed with its host. A shutdown waits for isolate_timeout_ms, or
// 10 s when that is 0; a child whose lock another thread keeps for a second is killed.
void shut_down_at_exit() {
  std::lock_guard lock(g_slots_mutex);
  for (Slot& s : g_slots) {
    Child* c = s.child.load();
    if (c == nullptr) continue;
    std::unique_lock child_lock(c->mutex, std::defer_lock);
    for (int i = 0; i < 100 && !child_lock.try_lock(); ++i) ::usleep(10000);
    if (!child_lock.owns_lock()) {
      c->kill_now();
      continue;
    }
    try {
      c->shutdown(c->exit_timeout_ms());
    } catch (...) {
      c->kill_now();
    }
  }
}

}  // namespace

std::string host_program() {
  if (auto env = secure_env("WICK_PLUGIN_HOST")) return *env;
  boost::system::error_code ec;
  const boost::dll::fs::path self = boost::dll::this_line_location(ec);
  if (ec) return "wick-plugin-host";
  return (std::filesystem::path(self.parent_path().string()) / "wick" / "wick-plugin-host")
      .string();
}

Isolated start(const std::string& name, const std::string& library, const IsolationOptions& options,
               int64_t init_timeout_ms) {
  const std::string program = host_program();
  if (::access(program.c_str(), X_OK) != 0) {
    throw Error("isolation ([plugins." + name + "] isolate = true) needs the plugin host " +
                program +
                ", which is not there or not executable (set WICK_PLUGIN_HOST to its path)");
  }
  static std::once_flag exit_handler;
  std::call_once(exit_handler, [] { std::atexit(&shut_down_at_exit); });
  ChildSettings settings;
  settings.plugin = name;
  settings.program = program;
  settings.library = library;
  settings.call_timeout_ms = options.timeout_ms;
  settings.init_timeout_ms = init_timeout_ms;
  settings.restarts = options.restarts;
  settings.restart_backoff_ms = options.restart_backoff_ms;
  auto child = std::make_unique<Child>(std::move(settings));
  (void)child->start();
  auto owner = take_slot(child, name);
  wick_plugin_api& t = g_slots[owner->slot].table;
  fill_table(t, owner->slot, *owner->child);
  return Isolated{&t, std::move(owner)};
}

}  // namespace wick::isolation
