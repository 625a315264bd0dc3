// wick/registry.hpp — plugin discovery, loading, probing and device selection.
//
// Discovery reads manifests (`<name>.wick-plugin.toml`) from, in order: the config's
// [plugins] paths, then WICK_PLUGIN_PATH (':'-separated; ignored in setuid/setgid processes), then
// the install directory relative to libwick (<libdir>/wick/plugins). Never the current directory.
// The first manifest found for a name wins; later ones are reported as shadowed.
#pragma once

#include <wick/config.hpp>
#include <wick/device.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace wick {

enum class PluginState {
  NotFound,      // named (in the priority list) but no manifest found
  LoadFailed,    // manifest bad, library would not load, or no entry symbol
  Incompatible,  // ABI major differs, or the table is malformed
  Failed,        // initialize returned an error (or a device query failed)
  Unavailable,   // initialized, zero devices
  Usable         // initialized, one or more devices
};
const char* to_string(PluginState state);

struct DeviceInfo {
  std::string name;         // "opencl:0"
  std::string description;  // the plugin's name for it
  DeviceKind kind = DeviceKind::Other;
  uint64_t memory_bytes = 0;
  uint64_t capabilities = 0;
  std::optional<uint64_t> free_memory_bytes;  // at probe time, when the plugin can tell
  // What its properties get wrong against the ABI (wick_plugin.h) and the manifest, one line per
  // field: a kind outside the enum (taken as other), unknown capability bits, free memory above
  // the total, a kind the manifest's device_kinds leave out. Logged as warnings; `wick plugin
  // check` fails on them. Empty for a well-formed device.
  std::vector<std::string> problems;
};

struct PluginInfo {
  std::string name;
  std::string manifest_path;  // empty when NotFound
  std::string library_path;
  std::string version;     // the plugin's own version, when the table was read
  uint32_t abi_major = 0;  // as the plugin declares; 0 when the table was not read
  uint32_t abi_minor = 0;
  std::vector<std::string> device_kinds;  // from the manifest
  bool first_party = false;               // the manifest says first_party = true (ships with Wick)
  bool isolated = false;  // [plugins.<name>] isolate = true: it runs in a child process
  PluginState state = PluginState::NotFound;
  std::string reason;  // why this state, in words ("usable: 1 device", the loader's message, ...)
  std::vector<DeviceInfo> devices;
};

struct RegistryOptions {
  bool use_environment = true;  // WICK_PLUGIN_PATH
  bool use_install_dir = true;  // <libdir>/wick/plugins
};

// Thread-safe: all members may be called concurrently.
class PluginRegistry {
 public:
  // Discovers and probes every plugin found. Never throws for a bad plugin: it ends in a state.
  explicit PluginRegistry(const Config& config, RegistryOptions options = {});
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // The directories searched, in order, with where each came from.
  std::vector<std::pair<std::string, std::string>> search_directories() const;

  // Every plugin found plus every priority entry naming a plugin that was not, sorted by name.
  std::vector<PluginInfo> plugins() const;
  // nullptr when no such plugin was found.
  std::unique_ptr<PluginInfo> find(const std::string& name) const;

  // All devices of usable plugins, in discovery order (every plugin is initialized for it).
  std::vector<Device> devices() const;
  // The names of the plugins found, without initializing any (for messages and checks).
  std::vector<std::string> plugin_names() const;
  // Whether `device` is one of this registry's (a device exists only once its plugin ran).
  bool owns(const Device& device) const;
  // A device by "plugin", "plugin:index" or kind ("cpu", "gpu", "accelerator"); invalid Device
  // when nothing usable matches.
  Device find_device(const std::string& entry) const;
  // The fallback CPU device, which every fallback and the last resort of select_device run on:
  // config [devices] fallback when set (a plugin, or plugin:index, whose device is of kind CPU),
  // else the first host-memory CPU device of a first-party plugin (manifest first_party = true),
  // else the first host-memory CPU device, else the first of kind CPU. A vendor's CPU-kind plugin
  // found first in the search path therefore does not become its own fallback. Throws wick::Error
  // when there is none (or the configured one is not usable), saying why.
  Device cpu_device() const;
  // How the fallback CPU device was chosen, for `wick devices`: "cpu-onednn:0 (first-party CPU
  // plugin)", or why there is none.
  std::string cpu_device_reason() const;

  // Loads one more plugin from an explicit manifest or library path (for `wick conformance
  // --backend PATH`, `wick plugin check PATH` and tests), initialized. Returns its info; the
  // plugin joins plugins() and devices(). A path always means that file: when the search path
  // holds that same file, its entry is the plugin; when it holds another manifest of the same
  // name (not yet initialized, or set aside by [plugins] disable), that one gives way and the
  // reason ends with a note naming both files; when that other one is already initialized, the
  // result is LoadFailed naming both.
  PluginInfo load(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The outcome of walking the priority list.
struct Selection {
  Device device;
  std::string reason;  // "cuda: unavailable (no NVIDIA driver) -> opencl:0 selected (priority 2)"
  std::vector<std::string> skipped;  // one line per entry passed over, with its reason
};

// A [plugins.<name>] table the plugins refuse: options for a plugin that is not there, or options
// its initialize rejected (an unknown key, a bad value). `where` is the key's position when the
// plugin's message names one ('key'), else the table's.
struct OptionProblem {
  SourceLocation where;
  std::string message;  // "[plugins.opencl] device: plugin 'opencl' refused it: ..."
};
// What `wick config check` reports beyond the file's own syntax: every configured plugin table
// checked against the plugins found (and initialised with those options) by `registry`.
std::vector<OptionProblem> check_plugin_options(const PluginRegistry& registry,
                                                const Config& config);

// Walks config.priority; unknown entries are ConfigErrors with file:line:column and a suggestion.
// In strict mode, passing over an entry is an error. Falls back to the CPU device at the end.
Selection select_device(const PluginRegistry& registry, const Config& config);

}  // namespace wick
