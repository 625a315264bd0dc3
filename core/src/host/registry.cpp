#include <wick/registry.hpp>

#include "host/crash_hint.hpp"
#include "host/device_kinds.hpp"
#include "host/isolated_plugin.hpp"
#include "host/loaded_plugin.hpp"
#include "host/shared_plugins.hpp"
#include "host/manifest.hpp"
#include "host/plugin_checks.hpp"
#include <wick/safe_file.hpp>
#include "host/log.hpp"
#include "host/text.hpp"

#include <toml++/toml.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace wick {

const char* to_string(PluginState state) {
  switch (state) {
    case PluginState::NotFound: return "not found";
    case PluginState::LoadFailed: return "load failed";
    case PluginState::Incompatible: return "incompatible";
    case PluginState::Failed: return "failed";
    case PluginState::Unavailable: return "unavailable";
    case PluginState::Usable: return "usable";
  }
  return "unknown";
}

namespace detail {

const std::vector<std::string> kDeviceKinds = {"cpu", "gpu", "accelerator", "other"};

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace detail

using namespace detail;

namespace {

// Each of the plugin's devices and its properties; throws wick::Error naming the call that failed.
void read_devices(LoadedPlugin& plugin, size_t count, std::vector<wick_device*>& devices,
                  std::vector<wick_device_props>& props) {
  const wick_plugin_api& api = plugin.api();
  for (size_t i = 0; i < count; ++i) {
    wick_device* d = nullptr;
    plugin.check(plugin.guard("device_get", [&] { return api.device_get(i, &d); }),
                 "device_get(" + std::to_string(i) + ") failed");
    wick_device_props p{};
    p.struct_size = sizeof(p);
    plugin.check(plugin.guard("device_get_props", [&] { return api.device_get_props(d, &p); }),
                 "device_get_props(" + std::to_string(i) + ") failed");
    if (p.name == nullptr)  // every device has a name (Device::description, the CLI, the logs)
      throw Error("plugin '" + plugin.name() + "' device_get_props(" + std::to_string(i) +
                  ") gave a NULL name");
    devices.push_back(d);
    props.push_back(p);
  }
}

// Initializes the plugin, then reads each of its devices and their properties; throws wick::Error
// naming the call that failed.
void initialize_plugin(LoadedPlugin& plugin, const std::vector<wick_option>& options,
                       wick_initialize_result& result) {
  const wick_plugin_api& api = plugin.api();
  const wick_initialize_args args = initialize_args(options);
  wick_error* err = plugin.guard("initialize", [&] { return api.initialize(&args, &result); });
  plugin.check(err, "initialize failed");
  std::vector<wick_device*> devices;
  std::vector<wick_device_props> props;
  try {
    read_devices(plugin, result.num_devices, devices, props);
  } catch (...) {
    plugin.set_initialized({}, {});  // initialize succeeded: the plugin's destructor shuts it down
    throw;
  }
  plugin.set_initialized(devices, props);
}

}  // namespace

struct PluginRegistry::Impl {
  Config config;
  RegistryOptions options;
  mutable std::mutex mutex;
  std::vector<std::pair<std::string, std::string>> dirs;  // (dir, where it came from)
  struct Entry {
    PluginInfo info;
    std::shared_ptr<LoadedPlugin> plugin;
    std::vector<Device> devices;
    bool probed = false;  // initialize has run (or the plugin never got that far)
  };
  std::vector<Entry> entries;
  // The fallback CPU device (see update_cpu_device); invalid when there is none, and why.
  Device cpu;
  std::string cpu_reason;

  void compute_dirs();
  void discover();
  Entry load_manifest(const Manifest& manifest);
  Entry load_isolated(const Manifest& manifest, const IsolationOptions& options);
  void initialize(Entry& entry);
  // A plugin another registry initialized: usable here when this config gives it the same options.
  void adopt_shared(Entry& entry, const std::string& options, const std::string& options_where);
  // The entry's devices and state once its plugin is initialized.
  void become_usable(Entry& entry, const std::string& message);
  // Initializes the entry if nobody has yet: plugins are probed when something needs them.
  void probe(Entry& entry) {
    if (entry.probed) return;
    entry.probed = true;
    if (entry.plugin) initialize(entry);
  }
  void probe_all() {
    for (Entry& e : entries) probe(e);
  }
  // Entries named `name` (probed), or nullptr.
  Entry* probed(const std::string& name) {
    for (Entry& e : entries)
      if (e.info.name == name) {
        probe(e);
        return &e;
      }
    return nullptr;
  }
  bool cpu_known = false;  // update_cpu_device has run since the entries last changed
  void ensure_cpu_device() {
    if (!cpu_known) update_cpu_device();
    cpu_known = true;
  }
  void update_cpu_device();
  bool has_plugin(const std::string& name) const {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const Entry& e) { return e.info.name == name; });
  }
};

void PluginRegistry::Impl::compute_dirs() {
  // Each directory labelled by where it was given: "wick.toml:3:9" ([plugins] paths in a file),
  // "--plugin-path", or "config [plugins] paths" when set through the API without a position.
  for (size_t i = 0; i < config.plugin_paths.size(); ++i) {
    const bool known = i < config.plugin_paths_where.size() && !config.plugin_paths_where[i].file.empty();
    dirs.emplace_back(config.plugin_paths[i],
                      known ? config.plugin_paths_where[i].to_string() : "config [plugins] paths");
  }
  if (options.use_environment) {
    if (auto env = secure_env("WICK_PLUGIN_PATH")) {
      std::stringstream ss(*env);
      std::string item;
      while (std::getline(ss, item, ':')) {
        if (!item.empty()) dirs.emplace_back(item, "WICK_PLUGIN_PATH");
      }
    }
  }
  if (options.use_install_dir) {
    boost::system::error_code ec;
    boost::dll::fs::path self = boost::dll::this_line_location(ec);
    if (!ec) {
      dirs.emplace_back((fs::path(self.parent_path().string()) / "wick" / "plugins").string(),
                        "install directory");
    }
  }
}

void PluginRegistry::Impl::discover() {
  for (const auto& [dir, origin] : dirs) {
    std::error_code ec;
    fs::path d(dir);
    // Relative directories would depend on the current directory, which is never searched.
    if (!d.is_absolute()) {
      log(LogLevel::Warn,
          "plugin directory '" + dir + "' (from " + origin +
              ") is relative; ignored, since the current directory is never searched");
      continue;
    }
    if (!fs::is_directory(d, ec)) {
      log(LogLevel::Debug, "plugin directory " + dir + " (from " + origin + ") does not exist");
      continue;
    }
    std::vector<fs::path> manifests;
    for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
      if (is_manifest_name(e.path().filename().string())) manifests.push_back(e.path());
    }
    std::sort(manifests.begin(), manifests.end());
    for (const fs::path& path : manifests) {
      Manifest m;
      try {
        m = read_manifest(path);
      } catch (const std::exception& e) {
        Entry bad;
        std::string stem = path.filename().string();
        bad.info.name = stem.substr(0, stem.size() - std::strlen(kManifestSuffix));
        bad.info.manifest_path = path.string();
        bad.info.state = PluginState::LoadFailed;
        bad.info.reason = e.what();
        if (!has_plugin(bad.info.name)) entries.push_back(std::move(bad));
        continue;
      }
      if (has_plugin(m.name)) {
        log(LogLevel::Info, "plugin '" + m.name + "' in " + path.string() +
                                " is shadowed by one found earlier in the search order");
        continue;
      }
      if (std::find(config.disabled_plugins.begin(), config.disabled_plugins.end(), m.name) !=
          config.disabled_plugins.end()) {
        Entry off;
        off.info = manifest_info(m, PluginState::Unavailable,
                                 "disabled by [plugins] disable in the config");
        entries.push_back(std::move(off));
        continue;
      }
      // Code anyone could have planted is not loaded unless the config allows it.
      std::optional<std::string> unsafe;
      for (const std::string& p : {dir, m.path, m.library})
        if (!unsafe && !config.allow_world_writable) unsafe = safe_file::world_writable(p);
      if (unsafe) {
        Entry refused;
        refused.info = manifest_info(m, PluginState::LoadFailed,
                                     "refused: " + *unsafe + "; anyone could replace the plugin "
                                     "there. Fix the permissions, or set [plugins] "
                                     "allow_world_writable = true to load it anyway");
        entries.push_back(std::move(refused));
        continue;
      }
      entries.push_back(load_manifest(m));
    }
  }
}

namespace {

// A layer of Config::layers that is a config file (not "default", "env ...", "--flag" or "api").
bool is_file_layer(const std::string& layer) {
  return !layer.empty() && layer != "default" && layer != "api" && layer.rfind("env ", 0) != 0 &&
         layer.rfind("--", 0) != 0;
}

// `wick plugin check` of this manifest with the options of this run: the config file (which holds
// the plugin's options), the plugin directories given on the command line or through the API, and
// a word on options that no file holds.
std::string rerun_command(const Config& config, const Manifest& m) {
  auto abs = [](const std::string& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return text::shell_quote(ec ? p : a.lexically_normal().string());
  };
  std::string command = "wick";
  for (const std::string& layer : config.layers)
    if (is_file_layer(layer)) command += " --config " + abs(layer);
  for (size_t i = 0; i < config.plugin_paths.size(); ++i) {
    const bool from_file = i < config.plugin_paths_where.size() && config.plugin_paths_where[i].line > 0;
    if (!from_file) command += " --plugin-path " + abs(config.plugin_paths[i]);
  }
  command += " plugin check " + abs(m.path);
  auto options = config.plugin_options.find(m.name);
  if (options != config.plugin_options.end() && !is_file_layer(options->second.where.file)) {
    const SourceLocation& where = options->second.where;
    command += " (its [plugins." + m.name + "] options came from " +
               (where.file.empty() ? std::string("the API") : where.to_string()) +
               ", not a file: write them into one for --config)";
  }
  return command;
}

}  // namespace

PluginRegistry::Impl::Entry PluginRegistry::Impl::load_manifest(const Manifest& m) {
  Entry entry;
  entry.info = manifest_info(m, PluginState::LoadFailed, "");
  IsolationOptions isolation;
  try {
    isolation = isolation_options(config, m.name);
  } catch (const std::exception& e) {
    entry.info.reason = e.what();
    return entry;
  }
  if (isolation.isolate) return load_isolated(m, isolation);
  if (!check_manifest_abi(m, entry.info)) return entry;
  // Initialized by another live registry of this process: share it (initialize runs once).
  if (std::shared_ptr<LoadedPlugin> live = shared_plugin(m.library); live && live->name() == m.name) {
    entry.plugin = std::move(live);
    entry.info.reason = "loaded; initialized by another runtime of this process";
    return entry;
  }
  boost::dll::shared_library library;
  if (!load_library(m, library, entry.info)) return entry;
  const wick_plugin_api* api = read_table(m, library, entry.info);
  if (api == nullptr || !check_table(*api, m, entry.info)) return entry;
  entry.plugin = std::make_shared<LoadedPlugin>(std::move(library), api, m.name, m.library);
  entry.info.reason = "loaded; not initialized yet (nothing has needed it)";
  // Should it kill the process, the crash reporter names the command that reruns it.
  set_crash_hint(m.name, rerun_command(config, m));
  return entry;
}

PluginRegistry::Impl::Entry PluginRegistry::Impl::load_isolated(const Manifest& m,
                                                                const IsolationOptions& options) {
  Entry entry;
  entry.info = manifest_info(m, PluginState::LoadFailed, "");
  entry.info.isolated = true;
  if (!check_manifest_abi(m, entry.info) || !library_file_ok(m, entry.info)) return entry;
  isolation::Isolated child;
  try {
    child = isolation::start(m.name, m.library, options, config.probe_timeout_ms);
  } catch (const std::exception& e) {
    entry.info.reason = e.what();
    return entry;
  }
  if (!check_table(*child.api, m, entry.info)) return entry;
  entry.plugin = std::make_shared<LoadedPlugin>(boost::dll::shared_library(), child.api, m.name,
                                                m.library, std::move(child.owner));
  entry.info.reason = "loaded in a child process (isolate = true); not initialized yet";
  return entry;
}

namespace {

// What a device of an initialized plugin shows (`wick devices`, `wick plugin probe`), with what
// its properties get wrong against the ABI and the manifest, each logged as a warning.
DeviceInfo describe_device(const LoadedPlugin& plugin, const Device& d,
                           const std::vector<std::string>& manifest_kinds) {
  DeviceInfo shown{d.name(), d.description(), d.kind(), d.memory_bytes(), d.capabilities(),
                   d.free_memory(), {}};
  shown.problems = device_props_problems(plugin.api(), plugin.props(d.index()),
                                         shown.free_memory_bytes, manifest_kinds);
  for (const std::string& p : shown.problems)
    log(LogLevel::Warn, "plugin '" + plugin.name() + "' device " + d.name() + ": " + p);
  return shown;
}

}  // namespace

void PluginRegistry::Impl::initialize(Entry& entry) {
  PluginInfo& info = entry.info;
  // Options from [plugins.<name>], typed.
  std::string options_where;
  auto found = config.plugin_options.find(info.name);
  if (found != config.plugin_options.end()) options_where = found->second.where.to_string();
  // On a thread of its own, waited for up to the deadline: a plugin that hangs in initialize
  // costs the host the deadline, not forever. A late one is abandoned (its thread keeps its own
  // references, so nothing it touches goes away) and stays Failed.
  struct Probe {
    std::shared_ptr<LoadedPlugin> plugin;
    PluginOptions table;  // owns the strings `options` point into
    std::vector<wick_option> options;
    wick_initialize_result result{};
    std::exception_ptr error;
  };
  auto state = std::make_shared<Probe>();
  state->plugin = entry.plugin;
  if (found != config.plugin_options.end()) state->table = found->second;
  state->options = plugin_options(state->table);
  if (entry.plugin->initialized()) {  // shared with another runtime (load_manifest)
    adopt_shared(entry, describe_options(state->options), options_where);
    return;
  }
  state->result.struct_size = sizeof(state->result);
  std::packaged_task<void()> task([state] {
    try {
      initialize_plugin(*state->plugin, state->options, state->result);
    } catch (...) {
      state->error = std::current_exception();
    }
  });
  std::future<void> done = task.get_future();
  std::thread worker(std::move(task));
  const int64_t deadline = config.probe_timeout_ms;
  const bool in_time = done.wait_for(std::chrono::milliseconds(deadline)) == std::future_status::ready;
  // In time: join, so that the thread's references (the plugin's among them) are gone before we go
  // on; late: abandon it.
  if (in_time)
    worker.join();
  else
    worker.detach();
  if (!in_time) {
    info.state = PluginState::Failed;
    info.reason = std::string(kInitializeTimedOut) + std::to_string(deadline) +
                  " ms ([plugins] probe_timeout_ms); the plugin is not used";
    entry.plugin.reset();
    return;
  }
  const wick_initialize_result& result = state->result;
  if (state->error) {
    info.state = PluginState::Failed;
    try {
      std::rethrow_exception(state->error);
    } catch (const std::exception& e) {
      info.reason = e.what();
    }
    if (!options_where.empty()) info.reason += " (options from " + options_where + ")";
    entry.plugin.reset();
    return;
  }
  const std::string message = result.message != nullptr ? result.message : "";
  if (!info.isolated)
    share_plugin(entry.plugin->library_path(), entry.plugin, describe_options(state->options), message);
  become_usable(entry, message);
}

void PluginRegistry::Impl::adopt_shared(Entry& entry, const std::string& options,
                                        const std::string& options_where) {
  const SharedInit first = shared_init(*entry.plugin);
  if (first.options != options) {
    entry.info.state = PluginState::Failed;
    entry.info.reason = "already initialized in this process by another runtime with options {" +
                        first.options + "}, and this runtime asks for {" + options + "}" +
                        (options_where.empty() ? "" : " (options from " + options_where + ")") +
                        ": a plugin library is initialized once per process, so every runtime "
                        "must give it the same options";
    entry.plugin.reset();
    return;
  }
  become_usable(entry, first.message);
  entry.info.reason += "; shared with another runtime of this process";
}

void PluginRegistry::Impl::become_usable(Entry& entry, const std::string& message) {
  PluginInfo& info = entry.info;
  const LoadedPlugin& plugin = *entry.plugin;
  const size_t n = plugin.devices().size();
  if (n == 0) {
    info.state = PluginState::Unavailable;
    info.reason = message.empty() ? "the plugin found no device" : message;
    return;
  }
  info.state = PluginState::Usable;
  info.reason = std::to_string(n) + (n == 1 ? " device" : " devices") +
                (message.empty() ? "" : " (" + message + ")") +
                (info.isolated ? "; isolated in a child process" : "");
  for (size_t i = 0; i < n; ++i) {
    Device d(entry.plugin, plugin.devices()[i], static_cast<int>(i));
    entry.devices.push_back(d);
    info.devices.push_back(describe_device(plugin, d, info.device_kinds));
  }
}

void PluginRegistry::Impl::update_cpu_device() {
  cpu = Device();
  const std::string& wanted = config.fallback;
  if (!wanted.empty()) {  // configured: that plugin's device (or the one of that index), of kind CPU
    const size_t colon = wanted.find(':');
    const std::string name = wanted.substr(0, colon);
    std::string why = "no plugin named '" + name + "' was found";
    for (Entry& e : entries) {
      if (e.info.name != name) continue;
      probe(e);
      why = "plugin '" + name + "' is " + to_string(e.info.state) + ": " + e.info.reason;
      for (const Device& d : e.devices) {
        if (colon != std::string::npos && std::to_string(d.index()) != wanted.substr(colon + 1))
          continue;
        if (d.kind() != DeviceKind::CPU) {
          why = d.name() + " is of kind " + to_string(d.kind()) + ", not cpu";
          continue;
        }
        cpu = d;
        cpu_reason = d.name() + " (configured: [devices] fallback at " +
                     config.fallback_where.to_string() + ")";
        return;
      }
    }
    cpu_reason = "[devices] fallback = \"" + wanted + "\" at " + config.fallback_where.to_string() +
                 " is not usable: " + why;
    return;
  }
  // Chosen by what the plugins and devices say of themselves, never by a plugin's name: a
  // first-party plugin's host-memory CPU device, else any host-memory CPU device (an OpenCL CPU
  // device's buffers are not host memory), else any CPU device, in search order.
  const char* const how[] = {"first-party CPU plugin", "first host-memory CPU device",
                             "first CPU device"};
  for (int pass = 0; pass < 3; ++pass) {
    for (Entry& e : entries) {
      if (pass == 0 && !e.info.first_party) continue;
      // Plugins whose manifest lists device kinds without cpu are not probed for one.
      if (!e.info.device_kinds.empty() && !contains(e.info.device_kinds, std::string("cpu")))
        continue;
      probe(e);
      for (const Device& d : e.devices) {
        const bool host = (d.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) != 0;
        if (d.kind() == DeviceKind::CPU && (host || pass == 2)) {
          cpu = d;
          cpu_reason = d.name() + " (" + how[pass] + ")";
          return;
        }
      }
    }
  }
  cpu_reason = "none: no usable plugin offers a device of kind cpu";
}

PluginRegistry::PluginRegistry(const Config& config, RegistryOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  impl_->options = options;
  set_log_level(parse_log_level(config.log_level));
  impl_->compute_dirs();
  impl_->discover();
  // Plugins are initialized when something needs them (a selection, the fallback CPU, a listing).
}

PluginRegistry::~PluginRegistry() = default;

std::vector<std::pair<std::string, std::string>> PluginRegistry::search_directories() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->dirs;
}

std::vector<PluginInfo> PluginRegistry::plugins() const {
  std::lock_guard lock(impl_->mutex);
  impl_->probe_all();  // listing every plugin's state means knowing it
  std::vector<PluginInfo> out;
  for (const auto& e : impl_->entries) out.push_back(e.info);
  // Priority entries that name a plugin nobody found.
  for (const DeviceEntry& entry : impl_->config.priority) {
    std::string name = entry.name.substr(0, entry.name.find(':'));
    if (contains(kDeviceKinds, name)) continue;
    if (impl_->has_plugin(name)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const PluginInfo& p) { return p.name == name; }))
      continue;
    PluginInfo missing;
    missing.name = name;
    missing.state = PluginState::NotFound;
    missing.reason = "no manifest " + name + kManifestSuffix + " in the search path" +
                     (impl_->dirs.empty() ? std::string(" (no directories to search)") : "");
    out.push_back(missing);
  }
  std::sort(out.begin(), out.end(),
            [](const PluginInfo& a, const PluginInfo& b) { return a.name < b.name; });
  return out;
}

std::unique_ptr<PluginInfo> PluginRegistry::find(const std::string& name) const {
  {
    std::lock_guard lock(impl_->mutex);
    if (const Impl::Entry* e = impl_->probed(name)) return std::make_unique<PluginInfo>(e->info);
  }
  for (PluginInfo& p : plugins()) {  // a priority entry's plugin that was not found
    if (p.name == name) return std::make_unique<PluginInfo>(std::move(p));
  }
  return nullptr;
}

std::vector<Device> PluginRegistry::devices() const {
  std::lock_guard lock(impl_->mutex);
  impl_->probe_all();
  std::vector<Device> out;
  for (const auto& e : impl_->entries) out.insert(out.end(), e.devices.begin(), e.devices.end());
  return out;
}

std::vector<std::string> PluginRegistry::plugin_names() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> names;
  for (const auto& e : impl_->entries) names.push_back(e.info.name);
  return names;
}

bool PluginRegistry::owns(const Device& device) const {
  std::lock_guard lock(impl_->mutex);
  for (const auto& e : impl_->entries)
    for (const Device& d : e.devices)
      if (d.plugin_ptr() == device.plugin_ptr()) return true;
  return false;
}

Device PluginRegistry::find_device(const std::string& entry) const {
  std::lock_guard lock(impl_->mutex);
  // "cpu" means the CPU that fallbacks run on.
  if (entry == "cpu") {
    impl_->ensure_cpu_device();
    if (impl_->cpu.valid()) return impl_->cpu;
  }
  // "plugin:index" picks one device of the plugin, "plugin:kind" its first device of that kind.
  const size_t colon = entry.find(':');
  const std::string name = entry.substr(0, colon);
  const std::string qualifier = colon == std::string::npos ? "" : entry.substr(colon + 1);
  const bool by_kind = !qualifier.empty() && contains(kDeviceKinds, qualifier);
  int index = -1;
  if (!qualifier.empty() && !by_kind) {
    try {
      index = std::stoi(qualifier);
    } catch (const std::exception&) {
      return Device();
    }
  }
  // Only the plugins that can answer are probed: the one named, or for a kind those whose
  // manifest lists it (or lists no kinds).
  const bool is_kind = contains(kDeviceKinds, name);
  for (Impl::Entry& e : impl_->entries) {
    const auto& kinds = e.info.device_kinds;
    if (is_kind ? !(kinds.empty() || contains(kinds, name)) : e.info.name != name) continue;
    impl_->probe(e);
    for (const Device& d : e.devices) {
      const bool name_match = d.plugin_name() == name || to_string(d.kind()) == name;
      if (!name_match) continue;
      if (by_kind ? to_string(d.kind()) == qualifier : (index < 0 || d.index() == index)) return d;
    }
  }
  return Device();
}

Device PluginRegistry::cpu_device() const {
  std::lock_guard lock(impl_->mutex);
  impl_->ensure_cpu_device();
  if (!impl_->cpu.valid()) {
    throw Error("no usable CPU device to fall back on (" + impl_->cpu_reason +
                "), and every fallback and the last resort of the priority list run on one; run "
                "`wick devices` to see why");
  }
  return impl_->cpu;
}

std::string PluginRegistry::cpu_device_reason() const {
  std::lock_guard lock(impl_->mutex);
  impl_->ensure_cpu_device();
  return impl_->cpu_reason;
}

namespace {

// The manifest an explicit path names: a manifest file, or a bare library whose name comes from its
// table. A manifest that cannot be read is a LoadFailed `failed`, with the reason.
Manifest explicit_manifest(const fs::path& p, std::optional<PluginInfo>& failed) {
  Manifest m;
  const std::string f = p.filename().string();
  if (is_manifest_name(f)) {
    try {
      m = read_manifest(p);
    } catch (const std::exception& e) {
      PluginInfo info;
      info.name = f;
      info.manifest_path = p.string();
      info.state = PluginState::LoadFailed;
      info.reason = e.what();
      failed = info;
    }
    return m;
  }
  // A bare library: its name comes from the table, so read it before building the entry.
  m.path = "(none: library given directly)";
  m.library = p.string();
  m.abi_major = WICK_ABI_MAJOR;
  try {
    boost::dll::shared_library lib(
        boost::dll::fs::path(m.library),
        boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (lib.has(WICK_PLUGIN_ENTRY_SYMBOL)) {
      const wick_plugin_api* api = lib.get<const wick_plugin_api*()>(WICK_PLUGIN_ENTRY_SYMBOL)();
      if (api != nullptr && api->name != nullptr) m.name = api->name;
    }
  } catch (...) {
    // load_manifest reports the failure with the loader's message.
  }
  if (m.name.empty()) m.name = p.stem().string();
  return m;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && fs::equivalent(a, b, ec);
}

}  // namespace

PluginInfo PluginRegistry::load(const std::string& path) {
  std::lock_guard lock(impl_->mutex);
  const fs::path p = fs::absolute(path).lexically_normal();
  std::optional<PluginInfo> failed;
  const Manifest m = explicit_manifest(p, failed);
  if (failed) return *failed;
  auto& entries = impl_->entries;
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const Impl::Entry& e) { return e.info.name == m.name; });
  std::string note;
  if (it != entries.end()) {
    const PluginInfo& known = it->info;
    const bool same = same_file(known.manifest_path, m.path) ||
                      (!is_manifest_name(p.filename().string()) && same_file(known.library_path, m.library));
    // The search path's entry for this very file, loaded and not set aside: that is the plugin.
    if (same && (it->plugin || it->probed)) {
      impl_->probe(*it);
      impl_->cpu_known = false;
      return it->info;
    }
    const std::string other = known.manifest_path.empty() ? known.library_path : known.manifest_path;
    if (!same && it->probed && it->plugin) {
      // Already initialized and perhaps in use: one process holds one plugin of a name.
      PluginInfo clash = manifest_info(m, PluginState::LoadFailed, "");
      clash.reason = "plugin '" + m.name + "' of " + p.string() + " has the name of the plugin " +
                     other + " already loaded from the search path; one process holds one " +
                     "plugin of a name: take " + other + " out of the search path to load this one";
      return clash;
    }
    // A path means that file: the search path's entry of the same name (not initialized, set
    // aside by [plugins] disable, or another file) gives way, and the run says so.
    if (!same)
      note = "note: " + other + " in the search path has the same name ('" + m.name +
             "'); this run uses " + p.string() + ", not that one";
    entries.erase(it);
  }
  entries.push_back(impl_->load_manifest(m));
  impl_->probe(entries.back());
  impl_->cpu_known = false;
  if (!note.empty()) {
    log(LogLevel::Warn, note);
    entries.back().info.reason += "; " + note;
  }
  return entries.back().info;
}

}  // namespace wick
