// isolation_server.cpp — the call server in the child (wick-plugin-host): loads the plugin's
// library, sends the host its table (the hello), then answers each call on the socket by calling
// the real table. The wire format is in isolation_wire.hpp.
#include "host/isolated_plugin.hpp"

#include "host/isolation_wire.hpp"
#include "host/loaded_plugin.hpp"

#include <wick/error.hpp>
#include <wick/sdk/op_table.hpp>

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

namespace wick::isolation {

namespace {

using wire::Call;
using wire::In;
using wire::kChunk;
using wire::kHasBufferCopy;
using wire::kHasFreeMemory;
using wire::Out;
using wire::RecvResult;
using wire::recv_message;
using wire::send_message;

struct Server {
  const wick_plugin_api* api = nullptr;
  std::unordered_set<uint64_t> devices, buffers;
  uint64_t seq = 0;  // the request being served; its reply repeats it

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
    o.put<uint64_t>(seq);
    if (err == nullptr) {
      o.put<uint32_t>(WICK_STATUS_OK);
      return o;
    }
    o.put<uint32_t>(api->error_code(err));
    o.cstr(api->error_message(err));
    api->error_destroy(err);
    return o;
  }

  // A failed hello (no sequence number: no request came yet), or a failed call.
  static Out failure(const std::string& message) {
    Out o;
    o.put<uint32_t>(WICK_STATUS_INTERNAL);
    o.str(message);
    return o;
  }
  Out failed_call(const std::string& message) const {
    Out o;
    o.put<uint64_t>(seq).put<uint32_t>(WICK_STATUS_INTERNAL);
    o.str(message);
    return o;
  }


  // Serves one request; false after shutdown.
  bool handle(In& in, Out& o) {
    const auto call = static_cast<Call>(in.get<uint32_t>());
    seq = in.get<uint64_t>();
    switch (call) {
      case Call::Initialize: return initialize(in, o);
      case Call::Shutdown: return shutdown(o);
      case Call::DeviceGet: return device_get(in, o);
      case Call::DeviceProps: return device_get_props(in, o);
      case Call::Synchronize: return device_synchronize(in, o);
      case Call::Allocate: return buffer_allocate(in, o);
      case Call::Free: return buffer_free(in, o);
      case Call::Write: return buffer_write(in, o);
      case Call::Read: return buffer_read(in, o);
      case Call::Copy: return buffer_copy(in, o);
      case Call::Supports: return op_supports(in, o);
      case Call::Execute: return op_execute(in, o);
      case Call::FreeMemory: return device_get_free_memory(in, o);
    }
    throw Error("unknown call " + std::to_string(static_cast<uint32_t>(call)));
  }

  // One call each: decodes the request's arguments from `in`, calls the plugin's slot of that name
  // and puts the reply in `o`. True, but false after shutdown.
  bool initialize(In& in, Out& o) {
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
    const wick_initialize_args args = initialize_args(options);
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

  bool shutdown(Out& o) {
    api->shutdown();
    o = reply(nullptr);
    return false;
  }

  bool device_get(In& in, Out& o) {
    wick_device* d = nullptr;
    wick_error* err = api->device_get(static_cast<size_t>(in.get<uint64_t>()), &d);
    o = reply(err);
    if (err == nullptr) {
      devices.insert(id(d));
      o.put<uint64_t>(id(d));
    }
    return true;
  }

  bool device_get_props(In& in, Out& o) {
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

  bool device_synchronize(In& in, Out& o) {
    o = reply(api->device_synchronize(device(in.get<uint64_t>())));
    return true;
  }

  bool buffer_allocate(In& in, Out& o) {
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

  bool buffer_free(In& in, Out& o) {
    wick_buffer* b = buffer(in.get<uint64_t>());
    buffers.erase(id(b));
    api->buffer_free(b);
    o = reply(nullptr);
    return true;
  }

  bool buffer_write(In& in, Out& o) {
    wick_buffer* b = buffer(in.get<uint64_t>());
    const auto offset = in.get<uint64_t>();
    const auto size = in.get<uint64_t>();
    o = reply(api->buffer_write(b, offset, in.take(size), size));
    return true;
  }

  bool buffer_read(In& in, Out& o) {
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

  bool buffer_copy(In& in, Out& o) {
    const wick_buffer* src = buffer(in.get<uint64_t>());
    const auto src_offset = in.get<uint64_t>();
    wick_buffer* dst = buffer(in.get<uint64_t>());
    const auto dst_offset = in.get<uint64_t>();
    const auto size = in.get<uint64_t>();
    if (api->buffer_copy == nullptr) throw Error("buffer_copy is not in the plugin's table");
    o = reply(api->buffer_copy(src, src_offset, dst, dst_offset, size));
    return true;
  }

  bool op_supports(In& in, Out& o) {
    const wick_device* d = device(in.get<uint64_t>());
    Op op;
    get_op(in, op, false);
    o = reply(nullptr);
    o.put<int32_t>(api->op_supports(d, &op.desc));
    return true;
  }

  bool op_execute(In& in, Out& o) {
    wick_device* d = device(in.get<uint64_t>());
    Op op;
    get_op(in, op, true);
    o = reply(api->op_execute(d, &op.desc));
    return true;
  }

  bool device_get_free_memory(In& in, Out& o) {
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
};

}  // namespace

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
  hello.put<uint32_t>(WICK_STATUS_OK).put<uint32_t>(wire::kWireVersion);
  hello.put<uint32_t>(api.abi_major).put<uint32_t>(api.abi_minor);
  hello.put<uint64_t>(api.struct_size).put<uint64_t>(api.flags).put<uint32_t>(has);
  hello.cstr(api.name).cstr(api.version);
  // A NULL required slot is named, so that the host judges the table as it would in process.
  const char* missing = api.struct_size >= WICK_PLUGIN_API_SIZE_1_0 ? missing_required_slot(api) : nullptr;
  hello.cstr(missing);
  if (!send_message(fd, hello)) return 1;
  std::vector<uint8_t> message;
  for (;;) {
    if (recv_message(fd, message, -1, wire::kMaxRequest) != RecvResult::Ok) {
      // The host went away without shutting the plugin down (it was killed, or it ended with
      // _exit): end at once, running neither the plugin's shutdown nor its static destructors, so
      // that shutdown runs exactly when the host asks for it, never by a race with the host's end.
      std::fflush(nullptr);
      ::_exit(0);
    }
    In in(message.data(), message.size());
    Out reply;
    bool more = true;
    try {
      more = server.handle(in, reply);
    } catch (const std::exception& e) {
      reply = server.failed_call(std::string("wick-plugin-host: ") + e.what());
    }
    if (!send_message(fd, reply)) return 0;
    if (!more) return 0;
  }
}

}  // namespace wick::isolation
