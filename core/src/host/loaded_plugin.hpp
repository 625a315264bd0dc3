// loaded_plugin.hpp — one plugin library, its table and its lifetime (core internal).
#pragma once

#include <wick/wick_plugin.h>
#include <wick/device.hpp>
#include <wick/error.hpp>

#include <boost/dll/shared_library.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace wick {

// Whether the process is exiting and static destruction may have reached a plugin's state (after
// the atexit handler each plugin load registers): from then on the host makes no plugin call
// (no buffer_free, no shutdown). A registry or tensor destroyed before it still frees normally.
bool process_exiting();

// The first required slot of a plugin table that is NULL, or nullptr when all are set.
const char* missing_required_slot(const wick_plugin_api& api);

// Owns the library handle and the initialized plugin. Destruction calls shutdown() (when
// initialize succeeded) and only then lets the library go; a plugin that does not declare
// WICK_PLUGIN_FLAG_UNLOADABLE stays mapped until process exit.
// While a thread is inside a plugin call, the plugin's name and the call are known to the crash
// reporter: a plugin that kills the process (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) leaves
// "wick: plugin 'X' crashed with signal N in op_execute" on stderr, then the signal takes its
// previous course (another handler, or the default: a core dump).
class InPlugin {
 public:
  InPlugin(const char* plugin, const char* call);
  ~InPlugin();
  InPlugin(const InPlugin&) = delete;
  InPlugin& operator=(const InPlugin&) = delete;

 private:
  const char* previous_plugin_;
  const char* previous_call_;
};

class LoadedPlugin {
 public:
  // `owner` keeps alive what `api` needs beyond the library (an isolated plugin's child process);
  // it is released after shutdown.
  LoadedPlugin(boost::dll::shared_library library, const wick_plugin_api* api, std::string name,
               std::string library_path, std::shared_ptr<void> owner = {});
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const std::string& name() const { return name_; }
  const std::string& library_path() const { return library_path_; }
  const wick_plugin_api& api() const { return *api_; }

  // A table slot, or nullptr when the plugin's minor or struct_size does not include it or it is
  // NULL. Every optional slot is read through here.
  template <class Fn>
  Fn slot(Fn wick_plugin_api::*member, uint32_t since_minor) const {
    const wick_plugin_api probe{};
    const size_t end = static_cast<size_t>(reinterpret_cast<const char*>(&(probe.*member)) -
                                           reinterpret_cast<const char*>(&probe)) +
                       sizeof(Fn);
    if (api_->abi_minor < since_minor || api_->struct_size < end) return nullptr;
    return api_->*member;
  }

  // The plugin's message for err, freeing err: "(no message)" for a NULL one (never a std::string
  // built from NULL), empty when err is NULL.
  std::string take_message(wick_error* err) const;
  // Throws wick::Error "<plugin> <what>: <message>" when err is non-NULL, freeing err.
  void check(wick_error* err, const std::string& what) const;

  // Runs f(), turning a C++ exception that escaped the plugin across the C ABI into wick::Error.
  // The plugin-wide calls (initialize, device_get, device_get_props) take the plugin's lock.
  template <class F>
  decltype(auto) guard(const char* what, F&& f) const {
    std::lock_guard<std::recursive_mutex> lock(plugin_mutex_);
    return translated(what, f);
  }
  // A call on device `index` (an op, a buffer of that device, a synchronize). Calls on one device
  // are serialised, one lock per device (the ABI's "one in-order stream per device"), unless the
  // device declared WICK_DEVICE_CAP_CONCURRENT (ABI 1.2); calls on different devices never wait
  // for each other.
  template <class F>
  decltype(auto) guard(int index, const char* what, F&& f) const {
    const size_t i = static_cast<size_t>(index);
    if (i < concurrent_.size() && concurrent_[i]) return translated(what, f);
    std::lock_guard<std::recursive_mutex> lock(device_mutex(i));
    return translated(what, f);
  }
  // op_supports: pure and thread-safe by the ABI (1.0), so it never waits for an op to finish.
  template <class F>
  decltype(auto) unlocked(const char* what, F&& f) const {
    return translated(what, f);
  }
  // Whether device `index` takes calls from several threads at once (WICK_DEVICE_CAP_CONCURRENT
  // from a plugin of ABI 1.2 or later; the bit means nothing to an older one).
  bool concurrent(int index) const {
    const size_t i = static_cast<size_t>(index);
    return i < concurrent_.size() && concurrent_[i];
  }

  // Called by the registry after a successful initialize.
  void set_initialized(std::vector<wick_device*> devices, std::vector<wick_device_props> props);
  const std::vector<wick_device*>& devices() const { return devices_; }
  bool initialized() const { return initialized_; }
  const wick_device_props& props(int index) const { return props_.at(static_cast<size_t>(index)); }

 private:
  template <class F>
  decltype(auto) translated(const char* what, F& f) const {
    const InPlugin in_plugin(name_.c_str(), what);  // names the plugin should it crash the process
    try {
      return f();
    } catch (const std::exception& e) {
      throw Error("plugin '" + name_ + "' threw an exception across the C ABI in " + what + ": " +
                  e.what());
    } catch (...) {
      throw Error("plugin '" + name_ + "' threw an exception across the C ABI in " + what);
    }
  }
  // The lock of device i (one past the last device: calls before the devices are known).
  std::recursive_mutex& device_mutex(size_t i) const {
    return i < device_mutexes_.size() ? *device_mutexes_[i] : plugin_mutex_;
  }

  boost::dll::shared_library library_;
  const wick_plugin_api* api_;
  std::shared_ptr<void> owner_;
  std::string name_;
  std::string library_path_;
  bool initialized_ = false;
  mutable std::recursive_mutex plugin_mutex_;
  std::vector<std::unique_ptr<std::recursive_mutex>> device_mutexes_;
  std::vector<bool> concurrent_;
  std::vector<wick_device*> devices_;
  std::vector<wick_device_props> props_;
};

// The arguments of a plugin's initialize call from this host: its ABI version and `options`, which
// must outlive the call (shared by the in-process loader and the isolated plugin's child).
inline wick_initialize_args initialize_args(const std::vector<wick_option>& options) {
  wick_initialize_args args{};
  args.struct_size = sizeof(args);
  args.host_abi_major = WICK_ABI_MAJOR;
  args.host_abi_minor = WICK_ABI_MINOR;
  args.options = options.empty() ? nullptr : options.data();
  args.num_options = options.size();
  return args;
}

}  // namespace wick
