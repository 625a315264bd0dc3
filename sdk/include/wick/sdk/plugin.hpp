// wick/sdk/plugin.hpp — a header-only C++ helper for writing a Wick plugin.
//
// Write one class derived from wick::sdk::Plugin and add one macro:
//
//   class MyPlugin final : public wick::sdk::Plugin { ... };
//   WICK_DEFINE_PLUGIN(MyPlugin, "my-device", "0.1.0")
//
// The macro exports the entry symbol and a static wick_plugin_api table whose slots call the
// class. Every slot catches exceptions and turns them into wick_error objects, so nothing C++
// crosses the ABI. Throw wick::sdk::Error to choose the status code; any other exception becomes
// WICK_STATUS_INTERNAL with its what().
//
// The plugin object is constructed in initialize and destroyed in shutdown, so loading the
// library and reading the table has no side effects.
#pragma once

#include <wick/wick_plugin.h>

#if defined(__GNUC__) || defined(__clang__)
#include <cxxabi.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <typeinfo>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// The opaque ABI types, given bodies here: each plugin library has its own copy (plugins are built
// with hidden visibility and loaded RTLD_LOCAL), and the host never looks inside.
struct wick_error {
  wick_status code;
  std::string message;
};
struct wick_device {
  virtual ~wick_device() = default;
};
struct wick_buffer {
  virtual ~wick_buffer() = default;
  wick_device* device = nullptr;
  uint64_t size = 0;
};

namespace wick::sdk {

// An exception carrying a status code; thrown by plugin code, turned into a wick_error at the ABI.
class Error : public std::runtime_error {
 public:
  Error(wick_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  wick_status code() const noexcept { return code_; }

 private:
  wick_status code_;
};

// The typed key/values of the config's [plugins.<name>] table. Reading a key marks it known;
// reject_unknown() then throws for every key the plugin never asked for.
class Options {
 public:
  Options(const wick_option* options, size_t count) {
    for (size_t i = 0; i < count; ++i) entries_.push_back(Entry{&options[i], false});
  }

  std::optional<int64_t> get_int(const std::string& key) {
    const wick_option* o = find(key, "an integer");
    if (o == nullptr) return std::nullopt;
    if (o->type != WICK_OPTION_INT) throw type_error(key, "an integer");
    return o->int_value;
  }
  std::optional<double> get_float(const std::string& key) {
    const wick_option* o = find(key, "a number");
    if (o == nullptr) return std::nullopt;
    if (o->type == WICK_OPTION_INT) return static_cast<double>(o->int_value);
    if (o->type != WICK_OPTION_FLOAT) throw type_error(key, "a number");
    return o->float_value;
  }
  std::optional<bool> get_bool(const std::string& key) {
    const wick_option* o = find(key, "a boolean");
    if (o == nullptr) return std::nullopt;
    if (o->type != WICK_OPTION_BOOL) throw type_error(key, "a boolean");
    return o->bool_value != 0;
  }
  std::optional<std::string> get_string(const std::string& key) {
    const wick_option* o = find(key, "a string");
    if (o == nullptr) return std::nullopt;
    if (o->type != WICK_OPTION_STRING) throw type_error(key, "a string");
    return std::string(o->string_value != nullptr ? o->string_value : "");
  }

  // Throws WICK_STATUS_INVALID_ARGUMENT naming the first key nobody asked for, and the known ones.
  void reject_unknown() const {
    for (const Entry& e : entries_) {
      if (e.used) continue;
      std::string known;
      for (const std::string& k : known_) known += (known.empty() ? "" : ", ") + k;
      throw Error(WICK_STATUS_INVALID_ARGUMENT,
                  "unknown option '" + std::string(e.option->key) + "'" +
                      (known.empty() ? " (this plugin takes no options)"
                                     : " (known options: " + known + ")"));
    }
  }

 private:
  struct Entry {
    const wick_option* option;
    bool used;
  };

  const wick_option* find(const std::string& key, const char* /*expected*/) {
    known_.push_back(key);
    for (Entry& e : entries_) {
      if (e.option->key != nullptr && key == e.option->key) {
        e.used = true;
        return e.option;
      }
    }
    return nullptr;
  }
  static Error type_error(const std::string& key, const char* expected) {
    return Error(WICK_STATUS_INVALID_ARGUMENT, "option '" + key + "' must be " + expected);
  }

  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

// What initialize() found: the devices (owned by the plugin object) and, when there are none, why.
struct InitResult {
  std::vector<wick_device*> devices;
  std::string message;
};

// Base class of a plugin. Only the pure virtual members are required.
class Plugin {
 public:
  virtual ~Plugin() = default;

  virtual InitResult initialize(Options& options) = 0;
  virtual wick_device_props properties(const wick_device* device) = 0;
  virtual void synchronize(wick_device* /*device*/) {}

  virtual wick_buffer* allocate(wick_device* device, uint64_t size_bytes) = 0;
  virtual void free(wick_buffer* buffer) noexcept { delete buffer; }
  virtual void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) = 0;
  virtual void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) = 0;
  // Override to offer device-to-device copies, and export with WICK_DEFINE_PLUGIN_EX(..., true).
  virtual void copy(const wick_buffer* /*src*/, uint64_t /*src_offset*/, wick_buffer* /*dst*/,
                    uint64_t /*dst_offset*/, uint64_t /*size*/) {
    throw Error(WICK_STATUS_UNSUPPORTED, "buffer_copy is not implemented");
  }

  virtual wick_support supports(const wick_device* device, const wick_op_desc& op) = 0;
  virtual void execute(wick_device* device, const wick_op_desc& op) = 0;

  virtual std::optional<uint64_t> free_memory(const wick_device* /*device*/) { return std::nullopt; }

  // buffer_wrap_host (1.5): a read-only buffer over host memory the host keeps alive until free().
  // Override for a device whose buffers live in host memory; the default declines and the host
  // copies.
  // From a 1.7 host, `host` may be aligned to the element size only and the buffer written like
  // any other (wick_plugin.h); decline (throw WICK_STATUS_UNSUPPORTED) what the kernels cannot take.
  virtual wick_buffer* wrap_host(wick_device* /*device*/, const void* /*host*/, uint64_t /*size*/) {
    throw Error(WICK_STATUS_UNSUPPORTED, "buffer_wrap_host is not implemented");
  }

  // buffer_host_address (1.7): the address of the buffer's first byte, the same on every call and
  // valid until free(). Once given, the contents may change between calls without write(): keep
  // no data derived from them across calls. Override for a device whose buffers live in host
  // memory; the default declines and the host has no address.
  virtual void* host_address(wick_device* /*device*/, wick_buffer* /*buffer*/) {
    throw Error(WICK_STATUS_UNSUPPORTED, "buffer_host_address is not implemented");
  }

  // buffer_native_memory (1.8): the buffer as the device's own API names it (a CUDA device pointer
  // and the stream its work runs on), the same on every call and valid until free(). Once given,
  // foreign work queued on `queue` may change the contents between calls: keep no data derived
  // from them across calls. The default declines (the host then stages through host memory).
  virtual wick_native_memory native_memory(wick_device* /*device*/, wick_buffer* /*buffer*/) {
    throw Error(WICK_STATUS_UNSUPPORTED, "buffer_native_memory is not implemented");
  }
};

// Checks that [offset, offset + size) lies inside a buffer; every plugin needs it for write/read.
inline void check_range(const wick_buffer* buffer, uint64_t offset, uint64_t size, const char* what) {
  if (buffer == nullptr) throw Error(WICK_STATUS_INVALID_ARGUMENT, std::string(what) + ": NULL buffer");
  if (offset > buffer->size || size > buffer->size - offset) {
    throw Error(WICK_STATUS_INVALID_ARGUMENT,
                std::string(what) + ": range [" + std::to_string(offset) + ", " +
                    std::to_string(offset + size) + ") is outside the buffer of " +
                    std::to_string(buffer->size) + " bytes");
  }
}

// wick_quant_params.flags (1.6), or 0 when the host's struct (1.4's) ends before the field.
inline uint32_t quant_flags(const wick_quant_params& p) noexcept {
  return p.struct_size >= offsetof(wick_quant_params, flags) + sizeof(p.flags) ? p.flags : 0u;
}

namespace detail {

// Out of memory while reporting an error: a static object that error_destroy knows not to free.
inline wick_error* static_out_of_memory_error() noexcept {
  static wick_error oom{WICK_STATUS_OUT_OF_MEMORY, "out of memory"};
  return &oom;
}

inline wick_error* make_error(wick_status code, const std::string& message) noexcept {
  try {
    return new wick_error{code, message};
  } catch (...) {
    return static_out_of_memory_error();
  }
}

// What the exception being handled is, when it is not a std::exception: its type, demangled
// where the compiler can ("an exception of type 'int' (not derived from std::exception)").
inline std::string non_standard_exception() {
  std::string type = "unknown type";
#if defined(__GNUC__) || defined(__clang__)
  if (const std::type_info* t = abi::__cxa_current_exception_type()) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
    type = status == 0 && demangled != nullptr ? demangled : t->name();
    std::free(demangled);
  }
#endif
  return "an exception of type '" + type + "' (not derived from std::exception)";
}

// Runs f, converting any exception to an owned error.
template <class F>
wick_error* guarded(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Error& e) {
    return make_error(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_error(WICK_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return make_error(WICK_STATUS_INTERNAL, e.what());
  } catch (...) {
    try {
      return make_error(WICK_STATUS_INTERNAL, non_standard_exception());
    } catch (...) {
      return make_error(WICK_STATUS_INTERNAL, "an exception not derived from std::exception");
    }
  }
}

// The bridge from the C table to one plugin class P. Statics are per P, so per library. The
// plugin's state is never destroyed by static destruction, only by shutdown: a host that keeps
// its registry (or a tensor) in a static made before the plugin was initialized would otherwise
// reach a destroyed plugin at exit, since statics die in reverse order of construction.
template <class P>
struct Bridge {
  static std::unique_ptr<P>& instance() {
    static auto* p = new std::unique_ptr<P>();
    return *p;
  }
  static std::string& init_message() {
    static auto* m = new std::string();
    return *m;
  }
  static std::vector<wick_device*>& devices() {
    static auto* d = new std::vector<wick_device*>();
    return *d;
  }
  static P& self() {
    if (!instance()) throw Error(WICK_STATUS_INVALID_ARGUMENT, "plugin used before initialize");
    return *instance();
  }

  static wick_status error_code(const wick_error* e) { return e != nullptr ? e->code : WICK_STATUS_OK; }
  static const char* error_message(const wick_error* e) { return e != nullptr ? e->message.c_str() : ""; }
  static void error_destroy(wick_error* e) {
    if (e != static_out_of_memory_error()) delete e;
  }

  static wick_error* initialize(const wick_initialize_args* args, wick_initialize_result* result) {
    return guarded([&] {
      if (args == nullptr || result == nullptr)
        throw Error(WICK_STATUS_INVALID_ARGUMENT, "initialize: NULL arguments");
      if (instance()) throw Error(WICK_STATUS_INVALID_ARGUMENT, "initialize called twice");
      Options options(args->options, args->num_options);
      auto plugin = std::make_unique<P>();
      InitResult r = plugin->initialize(options);
      options.reject_unknown();
      instance() = std::move(plugin);
      devices() = std::move(r.devices);
      init_message() = std::move(r.message);
      result->num_devices = devices().size();
      result->message = init_message().empty() ? nullptr : init_message().c_str();
    });
  }
  static void shutdown() {
    try {
      instance().reset();
    } catch (...) {
      // A destructor that throws cannot be reported through a void slot; the process goes on.
    }
    devices().clear();
    init_message().clear();
  }
  static wick_error* device_get(size_t index, wick_device** out) {
    return guarded([&] {
      self();
      if (out == nullptr || index >= devices().size())
        throw Error(WICK_STATUS_INVALID_ARGUMENT, "device_get: index " + std::to_string(index) +
                                                      " out of range (" +
                                                      std::to_string(devices().size()) + " devices)");
      *out = devices()[index];
    });
  }
  static wick_error* device_get_props(const wick_device* device, wick_device_props* props) {
    return guarded([&] {
      if (props == nullptr) throw Error(WICK_STATUS_INVALID_ARGUMENT, "device_get_props: NULL props");
      wick_device_props full = self().properties(device);
      size_t n = props->struct_size < sizeof(full) ? props->struct_size : sizeof(full);
      full.struct_size = props->struct_size;
      std::memcpy(static_cast<void*>(props), &full, n);
    });
  }
  static wick_error* device_synchronize(wick_device* device) {
    return guarded([&] { self().synchronize(device); });
  }
  static wick_error* buffer_allocate(wick_device* device, uint64_t size, wick_buffer** out) {
    return guarded([&] {
      if (out == nullptr) throw Error(WICK_STATUS_INVALID_ARGUMENT, "buffer_allocate: NULL out");
      *out = self().allocate(device, size);
    });
  }
  static void buffer_free(wick_buffer* buffer) {
    if (buffer != nullptr && instance()) instance()->free(buffer);
  }
  static wick_error* buffer_write(wick_buffer* dst, uint64_t off, const void* src, uint64_t size) {
    return guarded([&] {
      check_range(dst, off, size, "buffer_write");
      self().write(dst, off, src, size);
    });
  }
  static wick_error* buffer_read(const wick_buffer* src, uint64_t off, void* dst, uint64_t size) {
    return guarded([&] {
      check_range(src, off, size, "buffer_read");
      self().read(src, off, dst, size);
    });
  }
  static wick_error* buffer_copy(const wick_buffer* src, uint64_t src_off, wick_buffer* dst,
                                 uint64_t dst_off, uint64_t size) {
    return guarded([&] {
      check_range(src, src_off, size, "buffer_copy source");
      check_range(dst, dst_off, size, "buffer_copy destination");
      self().copy(src, src_off, dst, dst_off, size);
    });
  }
  static wick_support op_supports(const wick_device* device, const wick_op_desc* op) {
    try {
      if (op == nullptr || !instance()) return WICK_SUPPORT_NO_OP;
      return instance()->supports(device, *op);
    } catch (...) {
      report_supports_failure(op->op);
      return WICK_SUPPORT_ERROR;  // a bug, not a decline: the host reports it as a fault
    }
  }
  // The answer WICK_SUPPORT_ERROR has no room for the exception's text, so it goes to stderr, once
  // per op code (supports runs before every op), where the host's logs and `wick plugin check`
  // (the workers' log) find it. Called while the exception is being handled.
  static void report_supports_failure(wick_op_code code) noexcept {
    try {
      std::string what;
      try {
        throw;
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
        what = non_standard_exception();
      }
      static std::mutex mutex;
      static std::set<int> reported;
      const std::lock_guard<std::mutex> lock(mutex);
      if (!reported.insert(static_cast<int>(code)).second) return;
      std::fprintf(stderr, "wick-sdk: plugin '%s': supports() threw for op code %d (answered WICK_SUPPORT_ERROR): %s\n",
                   plugin_name(), static_cast<int>(code), what.c_str());
    } catch (...) {
      // Nothing more can be said; the answer already says that supports failed.
    }
  }
  static const char*& plugin_name() {
    static const char* name = "?";
    return name;
  }
  static wick_error* op_execute(wick_device* device, const wick_op_desc* op) {
    return guarded([&] {
      if (op == nullptr) throw Error(WICK_STATUS_INVALID_ARGUMENT, "op_execute: NULL op");
      self().execute(device, *op);
    });
  }
  static wick_error* device_get_free_memory(const wick_device* device, uint64_t* free_bytes) {
    return guarded([&] {
      std::optional<uint64_t> f = self().free_memory(device);
      if (!f) throw Error(WICK_STATUS_UNSUPPORTED, "free memory is not known for this device");
      *free_bytes = *f;
    });
  }

  static wick_error* buffer_wrap_host(wick_device* device, const void* host, uint64_t size,
                                      wick_buffer** out) {
    return guarded([&] {
      if (out == nullptr || (host == nullptr && size > 0))
        throw Error(WICK_STATUS_INVALID_ARGUMENT, "buffer_wrap_host: NULL argument");
      *out = self().wrap_host(device, host, size);
    });
  }

  static wick_error* buffer_host_address(wick_device* device, wick_buffer* buffer, void** out) {
    return guarded([&] {
      if (out == nullptr || buffer == nullptr)
        throw Error(WICK_STATUS_INVALID_ARGUMENT, "buffer_host_address: NULL argument");
      *out = self().host_address(device, buffer);
    });
  }

  static wick_error* buffer_native_memory(wick_device* device, wick_buffer* buffer,
                                          wick_native_memory* out) {
    return guarded([&] {
      if (out == nullptr || buffer == nullptr)
        throw Error(WICK_STATUS_INVALID_ARGUMENT, "buffer_native_memory: NULL argument");
      if (out->struct_size < sizeof(wick_native_memory))
        throw Error(WICK_STATUS_INVALID_ARGUMENT,
                    "buffer_native_memory: struct_size " + std::to_string(out->struct_size) +
                        " is smaller than 1.8's wick_native_memory");
      const size_t size = out->struct_size;
      *out = self().native_memory(device, buffer);
      out->struct_size = size;
    });
  }

  static const wick_plugin_api* api(const char* name, const char* version, bool with_copy) {
    static const wick_plugin_api table = [&] {
      plugin_name() = name;
      wick_plugin_api t{};
      t.struct_size = sizeof(wick_plugin_api);
      t.abi_major = WICK_ABI_MAJOR;
      t.abi_minor = WICK_ABI_MINOR;
      t.name = name;
      t.version = version;
      t.flags = 0;
      t.error_code = &error_code;
      t.error_message = &error_message;
      t.error_destroy = &error_destroy;
      t.initialize = &initialize;
      t.shutdown = &shutdown;
      t.device_get = &device_get;
      t.device_get_props = &device_get_props;
      t.device_synchronize = &device_synchronize;
      t.buffer_allocate = &buffer_allocate;
      t.buffer_free = &buffer_free;
      t.buffer_write = &buffer_write;
      t.buffer_read = &buffer_read;
      t.buffer_copy = with_copy ? &buffer_copy : nullptr;
      t.op_supports = &op_supports;
      t.op_execute = &op_execute;
      t.device_get_free_memory = &device_get_free_memory;
      t.buffer_wrap_host = &buffer_wrap_host;
      t.buffer_host_address = &buffer_host_address;
      t.buffer_native_memory = &buffer_native_memory;
      return t;
    }();
    return &table;
  }
};

}  // namespace detail
}  // namespace wick::sdk

// Exports the entry symbol for plugin class CLASS. HAS_COPY: whether CLASS implements copy().
#define WICK_DEFINE_PLUGIN_EX(CLASS, NAME, VERSION, HAS_COPY)                                \
  extern "C" WICK_PLUGIN_EXPORT const wick_plugin_api* wick_plugin_get_api(void) {          \
    return ::wick::sdk::detail::Bridge<CLASS>::api(NAME, VERSION, HAS_COPY);                \
  }

#define WICK_DEFINE_PLUGIN(CLASS, NAME, VERSION) WICK_DEFINE_PLUGIN_EX(CLASS, NAME, VERSION, false)
