// wick/config.hpp — Wick's configuration: schema, layering and validation (toml++).
//
// Precedence, highest first: API call > command-line flag > environment (WICK_*) > config file
// (--config, WICK_CONFIG, then $XDG_CONFIG_HOME/wick/config.toml or ~/.config/wick/config.toml) >
// the embedded default. The schema is documented in docs/config.md.
#pragma once

#include <wick/error.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace wick {

// Where a value came from: a file position, or a layer ("default", "env WICK_DEVICE", "--device").
struct SourceLocation {
  std::string file;  // path, or the layer's name
  int line = 0;      // 1-based; 0 when not from a file
  int column = 0;
  // "file:line:column" when line > 0, else just file.
  std::string to_string() const;
};

using OptionValue = std::variant<bool, int64_t, double, std::string>;

// The typed key/values of one [plugins.<name>] table, passed to that plugin's initialize().
struct PluginOptions {
  std::vector<std::pair<std::string, OptionValue>> values;  // in file order
  SourceLocation where;                                      // the table's header
  std::vector<SourceLocation> value_where;  // each value's position (parallel, where known)

  // Where values[i] was set: its own position when known, else the table's.
  const SourceLocation& where_of(size_t i) const {
    return i < value_where.size() ? value_where[i] : where;
  }
};

// One entry of the device priority list: a plugin name ("cuda", "cpu-onednn"), optionally with a
// device index ("cuda:1"), or a device kind ("cpu", "gpu", "accelerator").
struct DeviceEntry {
  std::string name;
  SourceLocation where;
};

struct Config {
  // [devices] priority: tried in order; a CPU device is always the last resort.
  std::vector<DeviceEntry> priority;
  // [devices] strict: any fallback (start-up or per op) is an error.
  bool strict = false;
  SourceLocation strict_where;
  // [devices] fallback: the CPU device fallbacks run on ("cpu-onednn", "plugin:index"); empty:
  // chosen automatically (PluginRegistry::cpu_device).
  std::string fallback;
  SourceLocation fallback_where;
  // [plugins] paths: extra directories searched for plugin manifests, before WICK_PLUGIN_PATH and
  // the install directory. Relative paths are resolved against the config file's directory.
  std::vector<std::string> plugin_paths;
  std::vector<SourceLocation> plugin_paths_where;  // parallel to plugin_paths
  // [plugins] probe_timeout_ms: how long a plugin's initialize may take before it counts as
  // failed ("initialize did not return within N ms"); the host waits no longer.
  int64_t probe_timeout_ms = 5000;
  SourceLocation probe_timeout_where;
  // [plugins] allow_world_writable: load plugins from directories or files every user may write
  // (refused by default: anyone could put code there).
  bool allow_world_writable = false;
  // [plugins] disable: plugin names never loaded.
  std::vector<std::string> disabled_plugins;
  SourceLocation disabled_where;
  // [plugins.<name>] tables.
  std::map<std::string, PluginOptions> plugin_options;
  // [log] level: "off", "error", "warn", "info", "debug".
  std::string log_level = "warn";
  SourceLocation log_level_where;
  // [debug] check_nan (env WICK_CHECK_NAN overrides): after every op, an error naming the op, its
  // shapes, its device and the wick::ModuleScope path when it made a NaN or Inf from finite inputs.
  bool check_nan = false;
  SourceLocation check_nan_where;
  // The layers that contributed, lowest precedence first, e.g. {"default", "/etc/x.toml", "env"}.
  std::vector<std::string> layers;

  // The effective configuration as TOML, with a comment naming where each value came from.
  std::string to_toml() const;
};

// The embedded default: priority ["cuda", "opencl", "cpu"], strict false, log level "warn".
Config default_config();

// The text of the embedded default config (what `wick config default` prints).
const std::string& default_config_text();

// Parses one TOML document onto `base` (values present in the document replace base's; a
// [plugins.<name>] table replaces base's table for that plugin as a whole) and appends `origin` to
// layers. Unknown keys, wrong types and bad values throw ConfigError "origin:line:column: ..."
// with a close-match suggestion where one exists. `origin` names the document in messages, and
// relative [plugins] paths are resolved against its directory (the current directory when it has
// none, e.g. "<embedded default>").
Config apply_config_text(Config base, const std::string& text, const std::string& origin);

// Reads a file and applies it with the path as origin; a missing or unreadable file is a
// ConfigError naming the path.
Config apply_config_file(Config base, const std::string& path);

// Values set from the command line or by an API call; unset fields leave lower layers alone.
struct ConfigOverrides {
  std::optional<std::string> config_file;           // --config
  std::optional<std::vector<std::string>> devices;  // --device cuda,cpu (items may be lists)
  std::optional<bool> strict;                       // --strict
  std::vector<std::string> plugin_paths;            // --plugin-path (prepended)
  std::optional<std::string> log_level;             // --log-level
};

// Keys of a [plugins.<name>] table that the host reads itself and never passes to the plugin:
// isolate (run the plugin in a child process), isolate_timeout_ms, isolate_restarts and
// isolate_restart_backoff_ms.
bool is_host_plugin_option(const std::string& key);

// isolate_timeout_ms when a table does not set it: a minute per call. A child that stops answering
// (stopped with SIGSTOP, deadlocked, spinning) fails its call after it and is killed and restarted;
// no call of a working plugin on a realistic input takes that long, and 0 asks for no deadline.
inline constexpr int64_t kDefaultIsolateTimeoutMs = 60000;

// What those keys say for one plugin (the defaults when its table does not set them).
struct IsolationOptions {
  bool isolate = false;
  int64_t timeout_ms = kDefaultIsolateTimeoutMs;  // each call's deadline; 0: none
  int restarts = 3;                  // how often a dead or late child is replaced, at most
  int64_t restart_backoff_ms = 100;  // the first restart waits this long after the death, then x2
};
inline constexpr int kMaxIsolateRestarts = 1000;
inline constexpr int64_t kMaxIsolateBackoffMs = 600000;

// The isolation options of `plugin` in `config`. Throws ConfigError naming the key's place
// (file:line:column) and the values allowed when one has the wrong type or range.
IsolationOptions isolation_options(const Config& config, const std::string& plugin);

// Environment lookup, injectable for tests. The default reads with secure_getenv, so that
// variables which lead to loading code are ignored in setuid/setgid processes. A null EnvLookup
// means no environment at all. Variables set to the empty string count as unset.
using EnvLookup = std::optional<std::string> (*)(const char* name);
std::optional<std::string> secure_env(const char* name);

// Builds the effective config: default < file < environment < cli < api.
// Environment: WICK_CONFIG (file), WICK_DEVICE (comma list), WICK_STRICT (1/0/true/false/yes/no),
// WICK_LOG_LEVEL; XDG_CONFIG_HOME and HOME locate the optional user config file.
// Throws ConfigError for any bad value, naming the layer (file:line:column, variable or flag).
Config resolve_config(const ConfigOverrides& cli = {}, const ConfigOverrides& api = {},
                      EnvLookup env = &secure_env);

// The closest candidate to `word` by edit distance (Damerau-Levenshtein, ASCII case ignored), if
// it is close enough to suggest: distance <= max(1, word.size() / 3). Ties go to the earlier
// candidate.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);

}  // namespace wick
