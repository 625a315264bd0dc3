// config.cpp — Wick's configuration: the TOML schema, its validation, and the layering of
// default < file < environment < command line < API. The schema is documented in docs/config.md.
#include <wick/config.hpp>

#include <wick/safe_file.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "host/text.hpp"

namespace wick {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSections = {"devices", "plugins", "log", "debug"};
const std::vector<std::string> kDevicesKeys = {"priority", "strict", "fallback"};
const std::vector<std::string> kPluginsKeys = {"paths", "disable", "probe_timeout_ms",
                                               "allow_world_writable"};
const std::vector<std::string> kLogKeys = {"level"};
const std::vector<std::string> kDebugKeys = {"check_nan"};
const std::vector<std::pair<std::string, const std::vector<std::string>*>> kSectionKeys = {
    {"devices", &kDevicesKeys},
    {"plugins", &kPluginsKeys},
    {"log", &kLogKeys},
    {"debug", &kDebugKeys}};
const std::vector<std::string> kLogLevels = {"off", "error", "warn", "info", "debug"};

[[noreturn]] void fail(const SourceLocation& where, const std::string& what) {
  throw ConfigError(where.to_string() + ": " + what);
}

// "'a', 'b' or 'c'"
std::string one_of(const std::vector<std::string>& choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += "'" + choices[i] + "'";
  }
  return out;
}

// The tail of every "unknown name" message: a close match if there is one, else the choices.
std::string suggest(const std::string& word, const std::vector<std::string>& choices) {
  if (auto close = closest_match(word, choices)) return "; did you mean '" + *close + "'?";
  return "; expected " + one_of(choices);
}

// TOML basic string, always on one line.
std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          static constexpr char kHex[] = "0123456789ABCDEF";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A bare key where TOML allows one ("cpu-onednn"), else a quoted key ("my.plugin").
std::string toml_key(std::string_view key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  return bare ? std::string(key) : toml_string(key);
}

// The shortest text that reads back as the same double, always recognisably a TOML float.
std::string toml_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string out(buffer.data(), result.ptr);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string toml_value(const OptionValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return toml_float(v);
        } else {
          return toml_string(v);
        }
      },
      value);
}

std::string from_comment(const SourceLocation& where) {
  return where.file.empty() ? "" : "  # from " + where.to_string();
}

// `key = [...]` with where each element came from: one line when they share a layer (commented
// with the first element's place, or `list_where` when there is none), else one element per line
// with its own comment.
void write_string_array(std::ostream& out, const std::string& key,
                        const std::vector<std::string>& values,
                        const std::vector<SourceLocation>& wheres,
                        const SourceLocation& list_where = {}) {
  const auto where = [&](std::size_t i) {
    return i < wheres.size() ? wheres[i] : SourceLocation{};
  };
  bool one_layer = true;
  for (std::size_t i = 1; i < values.size(); ++i) one_layer &= where(i).file == where(0).file;
  if (one_layer) {
    std::vector<std::string> quoted;
    for (const auto& v : values) quoted.push_back(toml_string(v));
    out << key << " = [" << text::join(quoted, ", ") << "]"
        << from_comment(values.empty() || where(0).file.empty() ? list_where : where(0)) << "\n";
    return;
  }
  out << key << " = [\n";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out << "  " << toml_string(values[i]) << "," << from_comment(where(i)) << "\n";
  }
  out << "]\n";
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// "'cuda' is listed twice" — shared by the file, the environment, the command line and the API.
// One hash lookup per entry: a list may have 100,000 entries (1 MiB of config).
void check_no_duplicates(const std::vector<DeviceEntry>& entries, const std::string& list) {
  std::unordered_map<std::string_view, std::size_t> first_of;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto [it, added] = first_of.emplace(entries[i].name, i);
    if (added) continue;
    const SourceLocation& first = entries[it->second].where;
    fail(entries[i].where,
         "device '" + entries[i].name + "' is listed twice in " + list +
             (first.line > 0 ? " (first at line " + std::to_string(first.line) + ", column " +
                                   std::to_string(first.column) + ")"
                             : "") +
             "; remove one");
  }
}

void check_log_level(const std::string& level, const SourceLocation& where) {
  if (std::find(kLogLevels.begin(), kLogLevels.end(), level) == kLogLevels.end()) {
    fail(where, "unknown log level '" + level + "'" + suggest(level, kLogLevels));
  }
}

// A device list given as strings (environment, command line, API); entries may be comma lists.
std::vector<DeviceEntry> device_list(const std::vector<std::string>& items,
                                     const SourceLocation& where) {
  std::vector<DeviceEntry> entries;
  for (const std::string& item : items) {
    for (std::string& name : text::split(item, ',')) {
      if (name.empty()) {
        fail(where, "empty device name in '" + text::join(items, ",") +
                        "'; give a comma-separated list such as cuda,cpu");
      }
      entries.push_back({std::move(name), where});
    }
  }
  if (entries.empty()) {
    fail(where, "no devices given; give a comma-separated list such as cuda,cpu");
  }
  check_no_duplicates(entries, "the device list");
  return entries;
}

// Whether `path` exists; a failure to find out (e.g. permission denied) is an error, not "no".
bool file_exists(const fs::path& path, const SourceLocation& where) {
  std::error_code error;
  const bool exists = fs::exists(path, error);
  if (error && error != std::errc::no_such_file_or_directory &&
      error != std::errc::not_a_directory) {
    fail(where, "cannot access '" + path.string() + "': " + error.message());
  }
  return exists;
}

std::string absolute_path(const fs::path& path, const SourceLocation& where) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  if (error) fail(where, "cannot make '" + path.string() + "' absolute: " + error.message());
  return absolute.lexically_normal().string();
}

// Applies one parsed TOML document onto a Config, checking the schema as it goes.
class DocumentReader {
 public:
  DocumentReader(const std::string& origin, Config& config) : origin_(origin), config_(config) {}

  void read(const toml::table& root) {
    for (const auto& [key, node] : in_file_order(root)) {
      const std::string name(key->str());
      if (std::find(kSections.begin(), kSections.end(), name) == kSections.end()) {
        unknown_top_level(*key, *node);
      }
      const toml::table* table = node->as_table();
      if (table == nullptr) {
        fail(at(*node), "'" + name + "' must be a table ([" + name + "]), not " + type_name(*node));
      }
      if (name == "devices") read_devices(*table);
      if (name == "plugins") read_plugins(*table);
      if (name == "log") read_log(*table);
      if (name == "debug") read_debug(*table);
    }
  }

 private:
  using Entry = std::pair<const toml::key*, const toml::node*>;

  // toml::table is ordered by key; messages and plugin options follow the file instead.
  static std::vector<Entry> in_file_order(const toml::table& table) {
    std::vector<Entry> entries;
    for (const auto& [key, node] : table) entries.emplace_back(&key, &node);
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      const auto& pa = a.first->source().begin;
      const auto& pb = b.first->source().begin;
      return std::pair(pa.line, pa.column) < std::pair(pb.line, pb.column);
    });
    return entries;
  }

  SourceLocation at(const toml::source_region& region) const {
    return {origin_, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
  }
  SourceLocation at(const toml::node& node) const { return at(node.source()); }
  // A key's own position points at the misspelled word; fall back to its value's.
  SourceLocation at(const toml::key& key, const toml::node& node) const {
    return key.source().begin.line > 0 ? at(key.source()) : at(node);
  }

  [[noreturn]] void unknown_top_level(const toml::key& key, const toml::node& node) const {
    const std::string name(key.str());
    std::string hint;
    if (!closest_match(name, kSections)) {
      // A key written above its table, like `priority = [...]` before [devices].
      for (const auto& [section, keys] : kSectionKeys) {
        if (auto close = closest_match(name, *keys)) {
          hint = "; did you mean '" + section + "." + *close + "'?";
          break;
        }
      }
    }
    if (hint.empty()) hint = suggest(name, kSections);
    fail(at(key, node),
         std::string(node.is_table() ? "unknown table '" : "unknown key '") + name + "'" + hint);
  }

  [[noreturn]] void unknown_key(const toml::key& key, const toml::node& node,
                                const std::string& section, const std::vector<std::string>& keys,
                                const std::string& otherwise = "") const {
    const std::string name(key.str());
    std::string hint = suggest(name, keys);
    if (!closest_match(name, keys)) hint += otherwise;
    fail(at(key, node), "unknown key '" + name + "' in [" + section + "]" + hint);
  }

  // An array of non-empty strings, each with where it is (a DeviceEntry is just that pair).
  std::vector<DeviceEntry> string_array(const toml::node& node, const std::string& what,
                                        const std::string& example) const {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      fail(at(node), "'" + what + "' must be an array of strings, e.g. " + example + ", not " +
                         type_name(node));
    }
    std::vector<DeviceEntry> items;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = *array->get(i);
      const std::string element_name = what + "[" + std::to_string(i) + "]";
      const auto* value = element.as_string();
      if (value == nullptr) {
        fail(at(element), "'" + element_name + "' must be a string, not " + type_name(element));
      }
      if (value->get().empty()) fail(at(element), "'" + element_name + "' is an empty string");
      items.push_back({value->get(), at(element)});
    }
    return items;
  }

  void read_devices(const toml::table& table) {
    for (const auto& [key, node] : in_file_order(table)) {
      if (key->str() == "priority") {
        auto entries = string_array(*node, "devices.priority", R"(["cuda", "cpu"])");
        if (entries.empty()) {
          fail(at(*node), "'devices.priority' is empty; list at least one device, e.g. [\"cpu\"]");
        }
        check_no_duplicates(entries, "devices.priority");
        config_.priority = std::move(entries);
      } else if (key->str() == "strict") {
        const auto* strict = node->as_boolean();
        if (strict == nullptr) {
          fail(at(*node),
               "'devices.strict' must be a boolean (true or false), not " + type_name(*node));
        }
        config_.strict = strict->get();
        config_.strict_where = at(*node);
      } else if (key->str() == "fallback") {
        const auto* fallback = node->as_string();
        if (fallback == nullptr || fallback->get().empty()) {
          fail(at(*node), "'devices.fallback' must name a CPU plugin or device, e.g. "
                          "\"cpu-onednn\" or \"cpu-onednn:0\", not " +
                              (fallback == nullptr ? type_name(*node) : std::string("\"\"")));
        }
        config_.fallback = fallback->get();
        config_.fallback_where = at(*node);
      } else {
        unknown_key(*key, *node, "devices", kDevicesKeys,
                    node->is_table()
                        ? " (options for a plugin go in [plugins." + toml_key(key->str()) + "])"
                        : "");
      }
    }
  }

  void read_plugins(const toml::table& table) {
    for (const auto& [key, node] : in_file_order(table)) {
      if (key->str() == "paths") {
        config_.plugin_paths.clear();
        config_.plugin_paths_where.clear();
        for (const auto& item : string_array(*node, "plugins.paths", R"(["plugins"])")) {
          config_.plugin_paths.push_back(resolve(item.name, item.where));
          config_.plugin_paths_where.push_back(item.where);
        }
      } else if (key->str() == "disable") {
        config_.disabled_plugins.clear();
        for (const auto& item : string_array(*node, "plugins.disable", R"(["cuda"])")) {
          config_.disabled_plugins.push_back(item.name);
        }
        config_.disabled_where = at(*node);
      } else if (key->str() == "allow_world_writable") {
        const auto* allow = node->as_boolean();
        if (allow == nullptr)
          fail(at(*node), "'plugins.allow_world_writable' must be a boolean, not " + type_name(*node));
        config_.allow_world_writable = allow->get();
      } else if (key->str() == "probe_timeout_ms") {
        const auto* ms = node->as_integer();
        if (ms == nullptr || ms->get() < 1 || ms->get() > 3600000) {
          fail(at(*node), "'plugins.probe_timeout_ms' must be an integer from 1 to 3600000 "
                          "(milliseconds), not " +
                              (ms == nullptr ? type_name(*node) : std::to_string(ms->get())));
        }
        config_.probe_timeout_ms = ms->get();
        config_.probe_timeout_where = at(*node);
      } else if (const toml::table* options = node->as_table()) {
        read_plugin_options(std::string(key->str()), *options);
      } else {
        unknown_key(*key, *node, "plugins", kPluginsKeys,
                    ", or a table [plugins." + toml_key(key->str()) + "] of options for plugin '" +
                        std::string(key->str()) + "'");
      }
    }
  }

  void read_plugin_options(const std::string& plugin, const toml::table& table) {
    PluginOptions options;
    options.where = at(table);
    for (const auto& [key, node] : in_file_order(table)) {
      const std::string name(key->str());
      if (const auto* v = node->as_boolean()) {
        options.values.emplace_back(name, v->get());
      } else if (const auto* i = node->as_integer()) {
        options.values.emplace_back(name, i->get());
      } else if (const auto* f = node->as_floating_point()) {
        options.values.emplace_back(name, f->get());
      } else if (const auto* s = node->as_string()) {
        options.values.emplace_back(name, s->get());
      } else {
        fail(at(*node), "option '" + toml_key(name) + "' of [plugins." + toml_key(plugin) +
                            "] must be a boolean, integer, float or string, not " +
                            type_name(*node));
      }
      options.value_where.push_back(at(*node));
    }
    config_.plugin_options[plugin] = std::move(options);
  }

  void read_log(const toml::table& table) {
    for (const auto& [key, node] : in_file_order(table)) {
      if (key->str() != "level") unknown_key(*key, *node, "log", kLogKeys);
      const auto* level = node->as_string();
      if (level == nullptr) {
        fail(at(*node), "'log.level' must be a string, one of " + one_of(kLogLevels) + ", not " +
                            type_name(*node));
      }
      check_log_level(level->get(), at(*node));
      config_.log_level = level->get();
      config_.log_level_where = at(*node);
    }
  }

  void read_debug(const toml::table& table) {
    for (const auto& [key, node] : in_file_order(table)) {
      if (key->str() != "check_nan") unknown_key(*key, *node, "debug", kDebugKeys);
      const auto* on = node->as_boolean();
      if (on == nullptr)
        fail(at(*node),
             "'debug.check_nan' must be a boolean (true or false), not " + type_name(*node));
      config_.check_nan = on->get();
      config_.check_nan_where = at(*node);
    }
  }

  // Relative to the document's directory, so a config file works from any current directory.
  std::string resolve(const std::string& path, const SourceLocation& where) const {
    const fs::path p(path);
    if (p.is_absolute()) return p.lexically_normal().string();
    return absolute_path(fs::path(origin_).parent_path() / p, where);
  }

  const std::string& origin_;
  Config& config_;
};

std::optional<std::string> read_env(EnvLookup env, const char* name) {
  if (env == nullptr) return std::nullopt;
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

bool parse_bool(const std::string& value, const SourceLocation& where) {
  const std::string v = text::ascii_lower(text::trim(value));
  if (v == "1" || v == "true" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "no") return false;
  fail(where, "'" + value + "' is not a boolean; use 1, 0, true, false, yes or no");
}

void add_layer(Config& config, const std::string& name) {
  if (config.layers.empty() || config.layers.back() != name) config.layers.push_back(name);
}

// How each override field names itself in messages, layers and SourceLocations.
struct OverrideNames {
  const char* config_file;
  const char* devices;
  const char* strict;
  const char* plugin_path;
  const char* log_level;
};
constexpr OverrideNames kCliNames{"--config", "--device", "--strict", "--plugin-path",
                                  "--log-level"};
constexpr OverrideNames kApiNames{"api", "api", "api", "api", "api"};

void apply_overrides(Config& config, const ConfigOverrides& overrides, const OverrideNames& names) {
  if (overrides.devices) {
    const SourceLocation where{names.devices};
    config.priority = device_list(*overrides.devices, where);
    add_layer(config, where.file);
  }
  if (overrides.strict) {
    config.strict = *overrides.strict;
    config.strict_where = {names.strict};
    add_layer(config, names.strict);
  }
  if (!overrides.plugin_paths.empty()) {
    const SourceLocation where{names.plugin_path};
    std::vector<std::string> paths;
    for (const std::string& path : overrides.plugin_paths) {
      if (path.empty()) fail(where, "empty plugin directory");
      paths.push_back(absolute_path(path, where));
    }
    // Searched first: the highest layer's directories come first.
    config.plugin_paths.insert(config.plugin_paths.begin(), paths.begin(), paths.end());
    config.plugin_paths_where.insert(config.plugin_paths_where.begin(), paths.size(), where);
    add_layer(config, where.file);
  }
  if (overrides.log_level) {
    const SourceLocation where{names.log_level};
    check_log_level(*overrides.log_level, where);
    config.log_level = *overrides.log_level;
    config.log_level_where = where;
    add_layer(config, where.file);
  }
}

// $XDG_CONFIG_HOME/wick/config.toml, else ~/.config/wick/config.toml (XDG: a relative
// XDG_CONFIG_HOME is ignored).
std::optional<fs::path> user_config_file(EnvLookup env) {
  if (auto xdg = read_env(env, "XDG_CONFIG_HOME"); xdg && fs::path(*xdg).is_absolute()) {
    return fs::path(*xdg) / "wick" / "config.toml";
  }
  if (auto home = read_env(env, "HOME"))
    return fs::path(*home) / ".config" / "wick" / "config.toml";
  return std::nullopt;
}

const char kDefaultConfigText[] = R"(# Wick's built-in default configuration.
#
# `wick config default` prints this text, and configs/default.toml holds the same. To change a
# setting, copy this file to ~/.config/wick/config.toml (or $XDG_CONFIG_HOME/wick/config.toml), or
# pass it with --config or WICK_CONFIG, and edit it. The environment (WICK_DEVICE, WICK_STRICT,
# WICK_LOG_LEVEL), the command line and the API override the file; see docs/config.md.

[devices]
# Devices to try, in order: a plugin ("cuda"), one device of a plugin ("cuda:1"), a plugin's
# devices of one kind ("opencl:gpu"), or a device kind ("cpu", "gpu", "accelerator"). The first
# usable one is chosen; a CPU device is always the last resort. Unknown names are errors. OpenCL
# devices of kind cpu (PoCL) are left to an explicit "opencl" or "opencl:cpu": the CPU plugin is
# faster on the same cores.
priority = ["cuda", "opencl:gpu", "opencl:accelerator", "cpu"]
# true: every fallback is an error instead of a logged warning, both at start-up (an entry above
# is not usable) and per op (the device does not support an op, so the CPU would run it).
strict = false

[plugins]
# Extra directories searched for plugin manifests (<name>.wick-plugin.toml) before
# WICK_PLUGIN_PATH and the install directory. Relative paths are relative to this file's directory.
paths = []
# Plugins never loaded, by name.
disable = []

# Options for one plugin go in a table named after it. Values are booleans, integers, floats or
# strings; the plugin rejects keys it does not know. For example:
# [plugins.cpu-onednn]
# threads = 4
# Four keys of such a table are the host's own: isolate = true runs the plugin in a child process,
# where a crash or hang fails a call instead of the program; isolate_timeout_ms bounds each call
# (default 60000; 0: no deadline); a dead child is replaced on the next call isolate_restarts times at most
# (default 3; 0: never), the first time isolate_restart_backoff_ms after its death (default 100,
# doubled for each restart).

[log]
# One of off, error, warn, info, debug.
level = "warn"
)";

}  // namespace

std::string SourceLocation::to_string() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = text::edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

const std::string& default_config_text() {
  static const std::string text = kDefaultConfigText;
  return text;
}

Config default_config() {
  static const Config embedded = [] {
    Config config = apply_config_text(Config{}, default_config_text(), "<embedded default>");
    config.layers = {"default"};
    return config;
  }();
  return embedded;
}

Config apply_config_text(Config base, const std::string& text, const std::string& origin) {
  if (text.size() > safe_file::kMaxTextBytes)
    fail({origin}, "more than " + std::to_string(safe_file::kMaxTextBytes) + " bytes of config");
  if (auto deep = safe_file::too_deep(text)) fail({origin, deep->line, deep->column}, deep->what);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(origin));
  } catch (const toml::parse_error& error) {
    const auto& begin = error.source().begin;
    fail({origin, static_cast<int>(begin.line), static_cast<int>(begin.column)},
         std::string(error.description()));
  }
  DocumentReader(origin, base).read(root);
  base.layers.push_back(origin);
  return base;
}

Config apply_config_file(Config base, const std::string& path) {
  const SourceLocation where{path};
  if (!file_exists(path, where)) fail(where, "config file does not exist");
  std::error_code error;
  if (fs::is_directory(path, error)) fail(where, "is a directory, not a config file");
  std::string text;
  try {
    text = safe_file::read_text(path);
  } catch (const std::exception& e) {
    fail(where, std::string(e.what()).substr(path.size() + 2));
  }
  return apply_config_text(std::move(base), text, path);
}

bool is_host_plugin_option(const std::string& key) {
  return key == "isolate" || key == "isolate_timeout_ms" || key == "isolate_restarts" ||
         key == "isolate_restart_backoff_ms";
}

IsolationOptions isolation_options(const Config& config, const std::string& plugin) {
  IsolationOptions out;
  auto found = config.plugin_options.find(plugin);
  if (found == config.plugin_options.end()) return out;
  const PluginOptions& table = found->second;
  for (size_t i = 0; i < table.values.size(); ++i) {
    // Named references, not a structured binding: clang 14 (the sanitizer builds) cannot capture
    // a binding in a lambda.
    const std::string& key = table.values[i].first;
    const OptionValue& value = table.values[i].second;
    auto bad = [&](const std::string& allowed) {
      throw ConfigError("[plugins." + toml_key(plugin) + "] " + key + " at " +
                        table.where_of(i).to_string() + " must be " + allowed);
    };
    // A whole number in [lo, hi], else the error saying so.
    auto whole = [&](int64_t lo, int64_t hi, const std::string& allowed) {
      const int64_t* n = std::get_if<int64_t>(&value);
      if (n == nullptr || *n < lo || *n > hi) bad(allowed);
      return *n;
    };
    if (key == "isolate") {
      const bool* b = std::get_if<bool>(&value);
      if (b == nullptr) bad("true or false");
      out.isolate = *b;
    } else if (key == "isolate_timeout_ms") {
      out.timeout_ms = whole(0, std::numeric_limits<int64_t>::max(),
                             "a whole number of milliseconds >= 0 (0: no deadline)");
    } else if (key == "isolate_restarts") {
      out.restarts = static_cast<int>(whole(0, kMaxIsolateRestarts,
                                            "a whole number from 0 (never restart) to " +
                                                std::to_string(kMaxIsolateRestarts)));
    } else if (key == "isolate_restart_backoff_ms") {
      out.restart_backoff_ms = whole(0, kMaxIsolateBackoffMs,
                                     "a whole number of milliseconds from 0 to " +
                                         std::to_string(kMaxIsolateBackoffMs));
    }
  }
  return out;
}

std::optional<std::string> secure_env(const char* name) {
  const char* value = ::secure_getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Config resolve_config(const ConfigOverrides& cli, const ConfigOverrides& api, EnvLookup env) {
  Config config = default_config();

  // The file: the highest layer that names one wins. Only the user's own file may be absent.
  std::optional<std::string> file;
  const char* named_by = nullptr;
  if (api.config_file) {
    file = api.config_file;
    named_by = kApiNames.config_file;
  } else if (cli.config_file) {
    file = cli.config_file;
    named_by = kCliNames.config_file;
  } else if ((file = read_env(env, "WICK_CONFIG"))) {
    named_by = "env WICK_CONFIG";
  }
  if (file) {
    const SourceLocation where{named_by};
    if (file->empty()) fail(where, "empty config file path");
    if (!file_exists(*file, where)) fail(where, "config file '" + *file + "' does not exist");
    config = apply_config_file(std::move(config), *file);
  } else if (auto user = user_config_file(env); user && file_exists(*user, {user->string()})) {
    config = apply_config_file(std::move(config), user->string());
  }

  if (auto devices = read_env(env, "WICK_DEVICE")) {
    const SourceLocation where{"env WICK_DEVICE"};
    config.priority = device_list({*devices}, where);
    add_layer(config, where.file);
  }
  if (auto strict = read_env(env, "WICK_STRICT")) {
    const SourceLocation where{"env WICK_STRICT"};
    config.strict = parse_bool(*strict, where);
    config.strict_where = where;
    add_layer(config, where.file);
  }
  if (auto check = read_env(env, "WICK_CHECK_NAN")) {
    const SourceLocation where{"env WICK_CHECK_NAN"};
    config.check_nan = parse_bool(*check, where);
    config.check_nan_where = where;
    add_layer(config, where.file);
  }
  if (auto level = read_env(env, "WICK_LOG_LEVEL")) {
    const SourceLocation where{"env WICK_LOG_LEVEL"};
    check_log_level(*level, where);
    config.log_level = *level;
    config.log_level_where = where;
    add_layer(config, where.file);
  }

  apply_overrides(config, cli, kCliNames);
  apply_overrides(config, api, kApiNames);
  return config;
}

std::string Config::to_toml() const {
  std::ostringstream out;
  out << "# Wick's effective configuration.\n"
      << "# Layers, lowest precedence first: "
      << (layers.empty() ? std::string("(none)") : text::join(layers, ", ")) << "\n"
      << "# Each comment names where its value came from.\n\n";

  out << "[devices]\n";
  if (priority.empty()) {
    out << "# priority is not set\n";
  } else {
    std::vector<std::string> names;
    std::vector<SourceLocation> wheres;
    for (const DeviceEntry& entry : priority) {
      names.push_back(entry.name);
      wheres.push_back(entry.where);
    }
    write_string_array(out, "priority", names, wheres);
  }
  out << "strict = " << (strict ? "true" : "false") << from_comment(strict_where) << "\n";
  if (!fallback.empty())
    out << "fallback = " << toml_string(fallback) << from_comment(fallback_where) << "\n";
  out << "\n";

  out << "[plugins]\n";
  write_string_array(out, "paths", plugin_paths, plugin_paths_where);
  write_string_array(out, "disable", disabled_plugins,
                     std::vector<SourceLocation>(disabled_plugins.size(), disabled_where),
                     disabled_where);
  out << "probe_timeout_ms = " << probe_timeout_ms << from_comment(probe_timeout_where) << "\n";
  if (allow_world_writable) out << "allow_world_writable = true\n";
  for (const auto& [plugin, options] : plugin_options) {
    out << "\n[plugins." << toml_key(plugin) << "]" << from_comment(options.where) << "\n";
    for (const auto& [key, value] : options.values) {
      out << toml_key(key) << " = " << toml_value(value) << "\n";
    }
  }

  out << "\n[log]\n"
      << "level = " << toml_string(log_level) << from_comment(log_level_where) << "\n";
  if (check_nan) out << "\n[debug]\ncheck_nan = true" << from_comment(check_nan_where) << "\n";
  return out.str();
}

}  // namespace wick
