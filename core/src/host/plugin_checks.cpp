// plugin_checks.cpp — what the registry checks of one plugin as it loads it (see plugin_checks.hpp).
#include "host/plugin_checks.hpp"

#include "host/loaded_plugin.hpp"
#include <wick/safe_file.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <variant>

namespace fs = std::filesystem;

namespace wick {
namespace {

// The loader's message with the next step spelled out; names the missing dependency if dlerror did.
std::string explain_load_failure(const std::string& library, std::string loader_message) {
  // Boost appends the errno text of its own failed call ("): Bad file descriptor"), which says
  // nothing about the cause: keep only the loader's message.
  const size_t tail = loader_message.rfind("): ");
  if (tail != std::string::npos &&
      loader_message.find("dlerror system message") != std::string::npos)
    loader_message = loader_message.substr(0, tail + 1);
  std::string text = "could not load " + library + ": " + loader_message;
  const std::string marker = ": cannot open shared object file";
  size_t at = loader_message.find(marker);
  if (at != std::string::npos) {
    size_t start = loader_message.rfind("message: ", at);
    start = start == std::string::npos ? 0 : start + 9;
    std::string dep = loader_message.substr(start, at - start);
    if (fs::path(dep).filename() != fs::path(library).filename()) {
      text += ". Missing dependency: " + dep +
              " — install the package that provides it or add its directory to LD_LIBRARY_PATH";
      return text;
    }
  }
  text += ". Check the file with `ldd " + library + "`";
  return text;
}

}  // namespace

namespace detail {

PluginInfo manifest_info(const Manifest& m, PluginState state, std::string reason) {
  PluginInfo info;
  info.name = m.name;
  info.manifest_path = m.path;
  info.library_path = m.library;
  info.device_kinds = m.device_kinds;
  info.first_party = m.first_party;
  info.state = state;
  info.reason = std::move(reason);
  return info;
}

bool check_manifest_abi(const Manifest& m, PluginInfo& info) {
  if (m.abi_major == WICK_ABI_MAJOR) return true;
  info.state = PluginState::Incompatible;
  info.abi_major = static_cast<uint32_t>(m.abi_major);
  info.reason = "manifest " + m.path + " declares ABI major " + std::to_string(m.abi_major) +
                ", this host speaks ABI " + std::to_string(WICK_ABI_MAJOR) + "." +
                std::to_string(WICK_ABI_MINOR) + "; rebuild the plugin against Wick SDK " +
                std::to_string(WICK_ABI_MAJOR) + ".x";
  return false;
}

bool library_file_ok(const Manifest& m, PluginInfo& info) {
  std::error_code ec;
  if (!fs::exists(m.library, ec)) {
    info.reason = "library " + m.library + " does not exist (named by manifest " + m.path + ")";
    return false;
  }
  if (auto why = safe_file::not_whole_elf(m.library)) {
    info.reason = "library " + m.library + " " + *why + " (named by manifest " + m.path + ")";
    return false;
  }
  return true;
}

bool load_library(const Manifest& m, boost::dll::shared_library& library, PluginInfo& info) {
  if (!library_file_ok(m, info)) return false;
  try {
    library.load(boost::dll::fs::path(m.library),
                 boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    info.reason = explain_load_failure(m.library, e.what());
    return false;
  }
  if (!library.has(WICK_PLUGIN_ENTRY_SYMBOL)) {
    info.reason = m.library + " is not a Wick plugin: it does not export " +
                  std::string(WICK_PLUGIN_ENTRY_SYMBOL) + " (manifest " + m.path + ")";
    return false;
  }
  return true;
}

const wick_plugin_api* read_table(const Manifest& m, const boost::dll::shared_library& library,
                                  PluginInfo& info) {
  const wick_plugin_api* api = nullptr;
  try {
    api = library.get<const wick_plugin_api*()>(WICK_PLUGIN_ENTRY_SYMBOL)();
  } catch (const std::exception& e) {
    info.reason = "the entry point of " + m.library + " failed: " + e.what();
    return nullptr;
  } catch (...) {
    info.reason = "the entry point of " + m.library + " threw an exception across the C ABI";
    return nullptr;
  }
  if (api == nullptr) info.reason = "the entry point of " + m.library + " returned NULL";
  return api;
}

bool check_table(const wick_plugin_api& api, const Manifest& m, PluginInfo& info) {
  info.abi_major = api.abi_major;
  info.abi_minor = api.abi_minor;
  info.version = api.version != nullptr ? api.version : "";
  const std::string versions =
      "plugin ABI " + std::to_string(api.abi_major) + "." + std::to_string(api.abi_minor) +
      ", host ABI " + std::to_string(WICK_ABI_MAJOR) + "." + std::to_string(WICK_ABI_MINOR);
  info.state = PluginState::Incompatible;
  if (api.abi_major != WICK_ABI_MAJOR) {
    info.reason = versions + ": majors differ; rebuild " + m.library + " against Wick SDK " +
                  std::to_string(WICK_ABI_MAJOR) + ".x";
    return false;
  }
  if (api.struct_size < WICK_PLUGIN_API_SIZE_1_0) {
    info.reason = versions + ": the plugin table is " + std::to_string(api.struct_size) +
                  " bytes, smaller than ABI 1.0's " + std::to_string(WICK_PLUGIN_API_SIZE_1_0) +
                  " (malformed plugin)";
    return false;
  }
  if (const char* slot = missing_required_slot(api)) {
    info.reason = versions + ": required slot '" + slot + "' is NULL (malformed plugin)";
    return false;
  }
  info.state = PluginState::LoadFailed;
  const std::string table_name = api.name != nullptr ? api.name : "";
  if (table_name != m.name) {
    info.reason = "manifest " + m.path + " names the plugin '" + m.name + "' but " + m.library +
                  " calls itself '" + table_name + "'";
    return false;
  }
  return true;
}

namespace {

const char* kind_name(int kind) {
  switch (kind) {
    case WICK_DEVICE_KIND_CPU: return "cpu";
    case WICK_DEVICE_KIND_GPU: return "gpu";
    case WICK_DEVICE_KIND_ACCELERATOR: return "accelerator";
    case WICK_DEVICE_KIND_OTHER: return "other";
  }
  return nullptr;
}

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

std::vector<std::string> device_props_problems(const wick_plugin_api& api, const wick_device_props& props,
                                               std::optional<uint64_t> free_bytes,
                                               const std::vector<std::string>& manifest_kinds) {
  std::vector<std::string> problems;
  const int kind = static_cast<int>(props.kind);
  const char* kind_text = kind_name(kind);
  if (kind_text == nullptr)
    problems.push_back("kind = " + std::to_string(kind) +
                       " is not a wick_device_kind (1 cpu, 2 gpu, 3 accelerator, 4 other; the host takes it as other)");
  // A newer plugin may set bits this host's header does not know yet.
  const uint64_t unknown = props.capabilities & ~kKnownDeviceCaps;
  if (unknown != 0 && api.abi_minor <= WICK_ABI_MINOR)
    problems.push_back("capabilities = " + hex(props.capabilities) + " sets bits " + hex(unknown) +
                       " that wick_plugin.h (ABI " + std::to_string(WICK_ABI_MAJOR) + "." +
                       std::to_string(WICK_ABI_MINOR) + ") does not define (known: " +
                       hex(kKnownDeviceCaps) + ")");
  if ((props.capabilities & WICK_DEVICE_CAP_BUFFER_COPY) != 0 && api.buffer_copy == nullptr)
    problems.push_back("capabilities has WICK_DEVICE_CAP_BUFFER_COPY but the table's buffer_copy is NULL");
  if (free_bytes && props.memory_bytes != 0 && *free_bytes > props.memory_bytes)
    problems.push_back("free memory (device_get_free_memory) = " + std::to_string(*free_bytes) +
                       " bytes is more than memory_bytes = " + std::to_string(props.memory_bytes));
  if (kind_text != nullptr && !manifest_kinds.empty() &&
      std::find(manifest_kinds.begin(), manifest_kinds.end(), kind_text) == manifest_kinds.end()) {
    std::string listed;
    for (const std::string& k : manifest_kinds) listed += (listed.empty() ? "" : ", ") + k;
    problems.push_back(std::string("kind = ") + kind_text + ", but the manifest's device_kinds are [" +
                       listed + "]: the host looks for a " + kind_text +
                       " device only in plugins whose manifest lists that kind");
  }
  return problems;
}

std::vector<wick_option> plugin_options(const PluginOptions& table) {
  std::vector<wick_option> options;
  for (const auto& [key, value] : table.values) {
    if (is_host_plugin_option(key)) continue;  // the host's own keys, not the plugin's
    wick_option o{};
    o.struct_size = sizeof(o);
    o.key = key.c_str();
    if (const bool* b = std::get_if<bool>(&value)) {
      o.type = WICK_OPTION_BOOL;
      o.bool_value = *b ? 1 : 0;
    } else if (const int64_t* i = std::get_if<int64_t>(&value)) {
      o.type = WICK_OPTION_INT;
      o.int_value = *i;
    } else if (const double* d = std::get_if<double>(&value)) {
      o.type = WICK_OPTION_FLOAT;
      o.float_value = *d;
    } else {
      o.type = WICK_OPTION_STRING;
      o.string_value = std::get<std::string>(value).c_str();
    }
    options.push_back(o);
  }
  return options;
}

}  // namespace detail
}  // namespace wick
