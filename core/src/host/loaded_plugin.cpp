#include "host/loaded_plugin.hpp"

#include "host/crash_hint.hpp"
#include "host/signal_chain.hpp"

#include <wick/mapped_file.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace wick {

namespace {

// One thread-local for both (a shared library's thread-local is a __tls_get_addr call each; every
// plugin call sets and restores these).
struct InPluginState {
  const char* plugin = nullptr;
  const char* call = nullptr;
};
thread_local InPluginState t_in_plugin;

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_previous[sizeof kCrashSignals / sizeof kCrashSignals[0]];

void write_str(const char* s) {
  if (s != nullptr) (void)!::write(2, s, std::strlen(s));
}

// Async-signal-safe: write(2) only, then the previous disposition for the signal.
void on_crash(int sig, siginfo_t* info, void* context) {
  // A read of a mapped file that shrank meanwhile (a plugin copying a weight file's bytes): the
  // mapping takes it, and the loader reports the file (wick/mapped_file.hpp).
  if (detail::absorb_mapped_fault(sig, info != nullptr ? info->si_addr : nullptr)) return;
  size_t i = 0;
  while (i < sizeof kCrashSignals / sizeof kCrashSignals[0] && kCrashSignals[i] != sig) ++i;
  if (t_in_plugin.plugin != nullptr) {
    char number[8];
    int n = sig, len = 0;
    char rev[8];
    do {
      rev[len++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n > 0 && len < 7);
    for (int k = 0; k < len; ++k) number[k] = rev[len - 1 - k];
    number[len] = '\0';
    write_str("\nwick: plugin '");
    write_str(t_in_plugin.plugin);
    write_str("' crashed with signal ");
    write_str(number);
    write_str(" (");
    write_str(sigabbrev_np(sig));
    write_str(") in ");
    write_str(t_in_plugin.call);
    write_str("; the process ends. ");
    // The command that reruns the plugin with this process's config and plugin paths, when the
    // registry set one (registry.cpp); else the plugin's name.
    if (const char* hint = detail::crash_hint(t_in_plugin.plugin)) {
      write_str(hint);
    } else {
      write_str("wick plugin check ");
      write_str(t_in_plugin.plugin);
    }
    write_str(" runs it in a child process and says where; [plugins.");
    write_str(t_in_plugin.plugin);
    write_str("] isolate = true in the config runs it in one always.\n");
  }
  detail::pass_to_previous(g_previous[i], sig, info, context);
}

void install_crash_reporter() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < sizeof kCrashSignals / sizeof kCrashSignals[0]; ++i) {
      struct sigaction action {};
      action.sa_sigaction = &on_crash;
      action.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&action.sa_mask);
      sigaction(kCrashSignals[i], &action, &g_previous[i]);
    }
  });
}

// Set by an atexit handler that every plugin load registers after its library (and the libraries
// it pulled in) constructed their statics: once it has run, static destruction has reached state
// the plugin may need, so the host calls into no plugin any more.
std::atomic<bool> g_exiting{false};

void note_exit() { g_exiting.store(true); }

}  // namespace

bool process_exiting() { return g_exiting.load(std::memory_order_relaxed); }

const char* missing_required_slot(const wick_plugin_api& api) {
#define WICK_REQUIRED_SLOT(slot) std::make_pair(#slot, reinterpret_cast<const void*>(api.slot))
  const std::pair<const char*, const void*> required[] = {
      WICK_REQUIRED_SLOT(error_code),       WICK_REQUIRED_SLOT(error_message),
      WICK_REQUIRED_SLOT(error_destroy),    WICK_REQUIRED_SLOT(initialize),
      WICK_REQUIRED_SLOT(shutdown),         WICK_REQUIRED_SLOT(device_get),
      WICK_REQUIRED_SLOT(device_get_props), WICK_REQUIRED_SLOT(device_synchronize),
      WICK_REQUIRED_SLOT(buffer_allocate),  WICK_REQUIRED_SLOT(buffer_free),
      WICK_REQUIRED_SLOT(buffer_write),     WICK_REQUIRED_SLOT(buffer_read),
      WICK_REQUIRED_SLOT(op_supports),      WICK_REQUIRED_SLOT(op_execute)};
#undef WICK_REQUIRED_SLOT
  for (const auto& [name, slot] : required) {
    if (slot == nullptr) return name;
  }
  return nullptr;
}

InPlugin::InPlugin(const char* plugin, const char* call)
    : previous_plugin_(nullptr), previous_call_(nullptr) {
  InPluginState& state = t_in_plugin;
  previous_plugin_ = state.plugin;
  previous_call_ = state.call;
  state.plugin = plugin;
  state.call = call;
}

InPlugin::~InPlugin() {
  InPluginState& state = t_in_plugin;
  state.plugin = previous_plugin_;
  state.call = previous_call_;
}

LoadedPlugin::LoadedPlugin(boost::dll::shared_library library, const wick_plugin_api* api,
                           std::string name, std::string library_path, std::shared_ptr<void> owner)
    : library_(std::move(library)), api_(api), owner_(std::move(owner)), name_(std::move(name)),
      library_path_(std::move(library_path)) {
  install_crash_reporter();
  std::atexit(&note_exit);
}

LoadedPlugin::~LoadedPlugin() {
  // At exit, after the plugin's statics may be gone: no shutdown (the process ends, the system
  // takes its memory and devices back), and the library stays mapped.
  if (process_exiting()) {
    if (owner_) owner_.reset();  // an isolated plugin's child process still goes
    return;
  }
  if (initialized_ && api_->shutdown != nullptr) {
    try {
      api_->shutdown();
    } catch (...) {
      // A plugin that throws from shutdown cannot be helped; the process goes on.
    }
  }
  // Unloading code that may still own threads or static destructors is how runtimes crash at
  // exit: only plugins that declare themselves unloadable are closed, the rest stay mapped.
  if (owner_) {  // isolated: the child process goes, nothing was mapped here
    owner_.reset();
    return;
  }
  if ((api_->flags & WICK_PLUGIN_FLAG_UNLOADABLE) == 0) {
    static auto* retained = new std::vector<boost::dll::shared_library>();
    retained->push_back(std::move(library_));
  }
}

std::string LoadedPlugin::take_message(wick_error* err) const {
  if (err == nullptr) return {};
  const char* text = api_->error_message != nullptr ? api_->error_message(err) : nullptr;
  std::string message = text != nullptr ? text : "(no message)";
  if (api_->error_destroy != nullptr) api_->error_destroy(err);
  return message;
}

void LoadedPlugin::check(wick_error* err, const std::string& what) const {
  if (err == nullptr) return;
  throw Error("plugin '" + name_ + "' " + what + ": " + take_message(err));
}

void LoadedPlugin::set_initialized(std::vector<wick_device*> devices,
                                   std::vector<wick_device_props> props) {
  initialized_ = true;
  devices_ = std::move(devices);
  props_ = std::move(props);
  device_mutexes_.clear();
  concurrent_.clear();
  for (const wick_device_props& p : props_) {
    device_mutexes_.push_back(std::make_unique<std::recursive_mutex>());
    concurrent_.push_back(api_->abi_minor >= 2 && (p.capabilities & WICK_DEVICE_CAP_CONCURRENT) != 0);
  }
}

}  // namespace wick
