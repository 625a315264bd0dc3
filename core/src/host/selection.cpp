// selection.cpp — choosing the device a config's priority list names, and checking the config's
// [plugins.<name>] tables against the plugins the registry found (see wick/registry.hpp).
#include <wick/registry.hpp>

#include "host/device_kinds.hpp"
#include "host/plugin_checks.hpp"
#include "host/text.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace wick {

using namespace detail;

namespace {

// The names a priority entry may use, in three groups for the message that lists them.
struct KnownDevices {
  std::vector<std::string> found;      // plugins found in the search path, in any state
  std::vector<std::string> defaulted;  // named by the embedded default, but not found
  std::vector<std::string> all;        // found, defaulted and the device kinds
  std::string search_path;             // the directories searched, with where each came from

  // Names in the embedded default are never typos: the default list stays valid on a machine
  // where one of its plugins was not built or installed (that entry then shows as "not found").
  explicit KnownDevices(const PluginRegistry& registry) {
    found = registry.plugin_names();  // without initializing them
    for (const auto& [dir, from] : registry.search_directories())
      search_path += (search_path.empty() ? "" : ", ") + dir + " (" + from + ")";
    for (const DeviceEntry& entry : default_config().priority) {
      const std::string name = entry.name.substr(0, entry.name.find(':'));
      if (!contains(found, name) && !contains(kDeviceKinds, name)) defaulted.push_back(name);
    }
    all = found;
    all.insert(all.end(), defaulted.begin(), defaulted.end());
    all.insert(all.end(), kDeviceKinds.begin(), kDeviceKinds.end());
  }

  // "unknown device 'cdua'; did you mean 'cuda'? (known: ...)"
  std::string unknown(const DeviceEntry& entry, const std::string& name) const {
    std::string msg = entry.where.to_string() + ": unknown device '" + entry.name + "'";
    if (auto close = closest_match(name, all)) msg += "; did you mean '" + *close + "'?";
    msg += " (known: plugins found in the search path [" +
           (search_path.empty() ? std::string("no directories") : search_path) +
           "]: " + (found.empty() ? std::string("none") : text::join(found, ", "));
    if (!defaulted.empty())
      msg += "; named by the built-in default: " + text::join(defaulted, ", ");
    return msg + "; or a kind: " + text::join(kDeviceKinds, ", ") + ")";
  }
};

}  // namespace

std::vector<OptionProblem> check_plugin_options(const PluginRegistry& registry,
                                                const Config& config) {
  std::vector<OptionProblem> problems;
  // A set, not a search per table: a 1 MiB config holds tens of thousands of each.
  const std::unordered_set<std::string> disabled(config.disabled_plugins.begin(),
                                                 config.disabled_plugins.end());
  for (const auto& [plugin, options] : config.plugin_options) {
    if (disabled.count(plugin) != 0) continue;
    const std::string table = "[plugins." + plugin + "]";
    const std::unique_ptr<PluginInfo> info = registry.find(plugin);
    if (info == nullptr || info->state == PluginState::NotFound) {
      std::string dirs;
      const std::string found = text::join(registry.plugin_names(), ", ");
      for (const auto& [dir, from] : registry.search_directories())
        dirs += (dirs.empty() ? "" : ", ") + dir + " (" + from + ")";
      problems.push_back({options.where, table + ": no plugin named '" + plugin +
                                             "' in the search path [" + dirs + "]; found: " +
                                             (found.empty() ? "none" : found)});
      continue;
    }
    if (info->state != PluginState::Failed && info->state != PluginState::LoadFailed &&
        info->state != PluginState::Incompatible)
      continue;  // initialised with these options (usable, or no device here)
    // Point at the option the plugin's message names, if it names one.
    SourceLocation where = options.where;
    std::string key;
    for (size_t i = 0; i < options.values.size() && key.empty(); ++i)
      if (info->reason.find("'" + options.values[i].first + "'") != std::string::npos) {
        key = options.values[i].first;
        where = options.where_of(i);
      }
    // Say what happened: an initialize that overran its deadline never answered for the options.
    const bool timed_out = info->reason.rfind(kInitializeTimedOut, 0) == 0;
    const std::string verb = info->state != PluginState::Failed
                                 ? "could not be loaded, so its options cannot be checked"
                             : timed_out ? "timed out in initialize, so these options were not checked"
                                         : "refused these options";
    problems.push_back({where, table + (key.empty() ? "" : " " + key) + ": plugin '" + plugin +
                                   "' " + verb + ": " + info->reason});
  }
  return problems;
}

Selection select_device(const PluginRegistry& registry, const Config& config) {
  Selection sel;
  const KnownDevices known(registry);
  int position = 0;
  for (const DeviceEntry& entry : config.priority) {
    ++position;
    const std::string name = entry.name.substr(0, entry.name.find(':'));
    if (!contains(known.all, name)) throw ConfigError(known.unknown(entry, name));
    Device d = registry.find_device(entry.name);
    if (d.valid()) {
      sel.device = d;
      sel.reason =
          d.name() + " selected: '" + entry.name + "' is priority " + std::to_string(position) +
          " of " + std::to_string(config.priority.size()) +
          (sel.skipped.empty() ? ""
                               : ", after " + std::to_string(sel.skipped.size()) + " unusable");
      return sel;
    }
    std::string why;
    if (auto info = registry.find(name); info && info->state == PluginState::Usable) {
      // The plugin is usable, but none of its devices is the index or kind the entry names.
      std::vector<std::string> have;
      for (const DeviceInfo& d : info->devices)
        have.push_back(d.name + " (" + to_string(d.kind) + ")");
      why = "usable, but has no device '" + entry.name.substr(name.size() + 1) +
            "' (its devices: " + text::join(have, ", ") + ")";
    } else if (info) {
      why = std::string(to_string(info->state)) + ": " + info->reason;
    } else {
      why = "no usable plugin provides it";
    }
    if (config.strict) {
      throw Error("strict mode: device '" + entry.name + "' (priority " + std::to_string(position) +
                  ", from " + entry.where.to_string() + ") is not usable: " + why +
                  "; set strict = false to fall back to the next device");
    }
    sel.skipped.push_back(entry.name + ": " + why);
  }
  // The last resort is always the CPU.
  sel.device = registry.cpu_device();
  sel.reason =
      sel.device.name() + " selected as the last resort: no entry of the priority list is usable";
  return sel;
}

}  // namespace wick
