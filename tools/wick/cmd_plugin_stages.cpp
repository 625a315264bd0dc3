// The stages of `wick plugin check` that load the plugin into this process, each one a command
// of its own so that the check runs it in a child (a crash or a hang ends only that child) and a
// vendor can rerun it alone: `wick plugin probe`, `wick plugin buffers`, `wick plugin leaks`.
// Each prints one JSON line on stdout.
#include "commands.hpp"

#include "buffer_checks.hpp"
#include "case.hpp"
#include "compare.hpp"
#include "execute.hpp"
#include "result.hpp"

#include <wick/registry.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

namespace wick::cli {

namespace fs = std::filesystem;
using conformance::Result;

namespace {

// The plugin a target names: a path always means that file; else a plugin of that name in the
// search path. Initialized either way.
PluginInfo load_target(PluginRegistry& registry, const std::string& target) {
  std::error_code ec;
  if (fs::exists(target, ec)) return registry.load(target);
  if (auto found = registry.find(target)) return *found;
  PluginInfo info;
  info.name = target;
  info.state = PluginState::NotFound;
  std::string dirs;
  for (const auto& [dir, from] : registry.search_directories())
    dirs += (dirs.empty() ? "" : ", ") + dir + " (" + from + ")";
  info.reason = "no file and no plugin of that name in the search path [" + dirs + "]";
  return info;
}

void print_json(const nlohmann::json& j) {
  std::cout << Result::dump(j) << "\n";
}

// The plugin's devices, in order.
std::vector<Device> devices_of(const PluginRegistry& registry, const PluginInfo& info) {
  std::vector<Device> out;
  for (size_t i = 0; i < info.devices.size(); ++i) {
    const Device d = registry.find_device(info.name + ":" + std::to_string(i));
    if (d.valid()) out.push_back(d);
  }
  return out;
}

nlohmann::json optional_bytes(const std::optional<uint64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The golden cases of the smoke set's ops, in file order.
std::vector<std::string> smoke_case_ids(const conformance::GoldenStore& golden) {
  std::vector<std::string> ops;
  std::stringstream list(kSmokeOps);
  for (std::string op; std::getline(list, op, ',');) ops.push_back(op);
  std::vector<std::string> ids;
  for (const conformance::CaseInfo& c : golden.list(true, false))
    if (std::find(ops.begin(), ops.end(), c.op) != ops.end()) ids.push_back(c.id);
  return ids;
}

}  // namespace

int run_plugin_probe(const ConfigOverrides& overrides, const std::string& target) {
  const Config config = resolve_config(overrides);
  PluginRegistry registry(config);
  const PluginInfo info = load_target(registry, target);
  nlohmann::json j{{"name", info.name},       {"state", to_string(info.state)},
                   {"reason", info.reason},   {"version", info.version},
                   {"abi", std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor)},
                   {"manifest", info.manifest_path}, {"library", info.library_path},
                   {"device_kinds", info.device_kinds}};
  j["devices"] = nlohmann::json::array();
  for (const DeviceInfo& d : info.devices)
    j["devices"].push_back({{"name", d.name}, {"description", d.description},
                            {"kind", to_string(d.kind)}, {"memory_bytes", d.memory_bytes},
                            {"free_memory_bytes", optional_bytes(d.free_memory_bytes)},
                            {"capabilities", d.capabilities}, {"problems", d.problems}});
  print_json(j);
  return 0;
}

int run_plugin_buffers(const ConfigOverrides& overrides, const std::string& target) {
  const Config config = resolve_config(overrides);
  PluginRegistry registry(config);
  const PluginInfo info = load_target(registry, target);
  nlohmann::json j{{"name", info.name}, {"devices", nlohmann::json::array()}, {"problem", ""}};
  if (info.state != PluginState::Usable) {
    j["problem"] = "plugin '" + info.name + "' is " + to_string(info.state) + ": " + info.reason;
  } else {
    for (const Device& d : devices_of(registry, info)) {
      j["devices"].push_back(d.name());
      const std::string problem = conformance::round_trip_problem(d);
      if (!problem.empty()) {
        j["problem"] = problem;
        break;
      }
    }
  }
  print_json(j);
  return 0;
}

int run_plugin_leaks(const ConfigOverrides& overrides, const std::string& target) {
  const Config config = resolve_config(overrides);
  PluginRegistry registry(config);
  const PluginInfo info = load_target(registry, target);
  nlohmann::json j{{"name", info.name}, {"problem", ""}};
  if (info.state != PluginState::Usable) {
    j["problem"] = "plugin '" + info.name + "' is " + to_string(info.state) + ": " + info.reason;
    print_json(j);
    return 0;
  }
  // The smoke set as the conformance workers run it: the plugin's first device, test mode.
  const std::string dir = conformance_data_dir();
  const conformance::GoldenStore golden(dir + "/golden/data");
  const std::string overrides_file = dir + "/tolerance-overrides.toml";
  const conformance::ToleranceTable tolerances = conformance::ToleranceTable::load(
      dir + "/tolerances.toml", fs::exists(overrides_file) ? overrides_file : "");
  conformance::ExecContext ctx;
  ctx.device = registry.find_device(info.name);
  ctx.backend = info.name;
  ctx.golden = &golden;
  ctx.tolerances = &tolerances;
  const conformance::LeakCheck leak = conformance::check_leaks(ctx, smoke_case_ids(golden));
  j["device"] = ctx.device.name();
  j["passes"] = leak.passes;
  j["buffers"] = leak.buffers;
  j["bytes"] = leak.bytes;
  j["heap_before"] = leak.before.heap_in_use;
  j["heap_after"] = leak.after.heap_in_use;
  j["device_free_before"] = optional_bytes(leak.before.device_free);
  j["device_free_after"] = optional_bytes(leak.after.device_free);
  j["problem"] = leak.problem;
  print_json(j);
  return 0;
}

}  // namespace wick::cli
