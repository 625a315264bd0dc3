#include "commands.hpp"

#include <wick/registry.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

namespace wick::cli {

namespace {

std::string human_bytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string abi_of(const PluginInfo& p) {
  if (p.abi_major == 0 && p.abi_minor == 0) return "-";
  return std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor);
}

std::string layers_of(const Config& config) {
  std::string s;
  for (const std::string& l : config.layers) s += (s.empty() ? "" : " < ") + l;
  return s;
}

}  // namespace

int run_devices(const ConfigOverrides& overrides, bool json) {
  const Config config = resolve_config(overrides);
  PluginRegistry registry(config);
  std::optional<Selection> selection;
  std::string selection_error;
  try {
    selection = select_device(registry, config);
  } catch (const std::exception& e) {
    selection_error = e.what();
  }

  if (json) {
    nlohmann::json out;
    out["abi"] = std::to_string(WICK_ABI_MAJOR) + "." + std::to_string(WICK_ABI_MINOR);
    out["config_layers"] = config.layers;
    out["fallback_cpu"] = registry.cpu_device_reason();
    out["search_path"] = nlohmann::json::array();
    for (const auto& [dir, origin] : registry.search_directories())
      out["search_path"].push_back({{"directory", dir}, {"from", origin}});
    out["plugins"] = nlohmann::json::array();
    for (const PluginInfo& p : registry.plugins()) {
      nlohmann::json j{{"name", p.name},           {"version", p.version},
                       {"abi", abi_of(p)},         {"state", to_string(p.state)},
                       {"reason", p.reason},       {"manifest", p.manifest_path},
                       {"library", p.library_path}, {"device_kinds", p.device_kinds}};
      j["devices"] = nlohmann::json::array();
      for (const DeviceInfo& d : p.devices) {
        j["devices"].push_back({{"name", d.name}, {"description", d.description},
                                {"kind", to_string(d.kind)}, {"memory_bytes", d.memory_bytes},
                                {"capabilities", d.capabilities},
                                {"free_memory_bytes", d.free_memory_bytes ? nlohmann::json(*d.free_memory_bytes) : nlohmann::json()}});
      }
      out["plugins"].push_back(j);
    }
    if (selection) {
      out["selected"] = {{"device", selection->device.name()}, {"reason", selection->reason},
                         {"skipped", selection->skipped}};
    } else {
      out["selected"] = nullptr;
      out["selection_error"] = selection_error;
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return selection ? 0 : 1;
  }

  std::cout << "Wick plugin ABI " << WICK_ABI_MAJOR << "." << WICK_ABI_MINOR
            << "; config: " << layers_of(config) << "\n";
  std::cout << "Plugin search path (in order; the current directory is never searched):\n";
  int i = 0;
  for (const auto& [dir, origin] : registry.search_directories())
    std::cout << "  " << ++i << ". " << dir << "  (" << origin << ")\n";
  std::cout << "\n";
  std::printf("%-14s %-8s %-5s %-13s %s\n", "PLUGIN", "VERSION", "ABI", "STATE", "DEVICES / REASON");
  for (const PluginInfo& p : registry.plugins()) {
    std::printf("%-14s %-8s %-5s %-13s %s\n", p.name.c_str(), p.version.empty() ? "-" : p.version.c_str(),
                abi_of(p).c_str(), to_string(p.state), p.reason.c_str());
    for (const DeviceInfo& d : p.devices) {
      const std::string free = d.free_memory_bytes ? ", " + human_bytes(*d.free_memory_bytes) + " free" : "";
      std::printf("%-42s %s: %s (%s, %s%s)\n", "", d.name.c_str(), d.description.c_str(),
                  to_string(d.kind), human_bytes(d.memory_bytes).c_str(), free.c_str());
    }
  }
  std::cout << "\n";
  if (!selection) {
    std::cout << "No device selected: " << selection_error << "\n";
    std::cout << "Fallback CPU device: " << registry.cpu_device_reason() << "\n";
    return 1;
  }
  std::cout << "Selected device: " << selection->reason << "\n";
  for (const std::string& s : selection->skipped) std::cout << "  passed over " << s << "\n";
  std::cout << "Fallback CPU device: " << registry.cpu_device_reason() << "\n";
  return 0;
}

}  // namespace wick::cli
