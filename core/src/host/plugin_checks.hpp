// plugin_checks.hpp — what the registry checks of one plugin as it loads it, before any of its
// code runs and right after its entry point has returned: the manifest's ABI, the library file,
// the library itself and its table; and the options of its [plugins.<name>] table in the form the
// plugin's initialize takes (core internal).
#pragma once

#include <wick/config.hpp>
#include <wick/registry.hpp>
#include <wick/wick_plugin.h>

#include "host/manifest.hpp"

#include <boost/dll/shared_library.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wick::detail {

// What a manifest says of its plugin, before the library is read.
PluginInfo manifest_info(const Manifest& m, PluginState state, std::string reason);

// Versions are checked before any plugin code runs: the manifest's major first.
bool check_manifest_abi(const Manifest& m, PluginInfo& info);

// The manifest's library exists and is a whole ELF file; false, with the reason in info, when not.
// Checked before anything maps it (here or in an isolated plugin's child): a truncated library
// would fault when the loader touches it.
bool library_file_ok(const Manifest& m, PluginInfo& info);

// Loads the manifest's library into `library`; false, with the reason in info, when it will not.
bool load_library(const Manifest& m, boost::dll::shared_library& library, PluginInfo& info);

// Calls the library's entry point; nullptr, with the reason in info, when it fails.
const wick_plugin_api* read_table(const Manifest& m, const boost::dll::shared_library& library,
                                  PluginInfo& info);

// Records the table's versions in info, then checks its ABI, size, required slots and name
// against this host and the manifest; false, with the state and reason in info, when one fails.
bool check_table(const wick_plugin_api& api, const Manifest& m, PluginInfo& info);

// How a plugin's reason starts when its initialize overran [plugins] probe_timeout_ms (the
// registry writes it; `wick config check` words such a plugin as timed out, not as refusing).
inline constexpr const char* kInitializeTimedOut = "initialize did not return within ";

// Every capability bit wick_plugin.h defines, in one place: the header's mask for its newest
// minor. Any other bit a plugin sets is malformed, unless the plugin speaks a newer minor.
static_assert(WICK_ABI_MINOR == 8, "a new ABI minor: use its WICK_DEVICE_CAP_KNOWN_1_<minor> here");
inline constexpr uint64_t kKnownDeviceCaps = WICK_DEVICE_CAP_KNOWN_1_8;

// What one device's properties get wrong against the ABI and the plugin's manifest, one line per
// field ("kind = 42 is not a wick_device_kind ..."): a kind outside the enum, capability bits the
// header does not define, a BUFFER_COPY capability without the buffer_copy slot, free memory above
// the total, a kind the manifest's device_kinds leave out. Empty when the device is well formed.
// `free_bytes` is device_get_free_memory's answer, when the plugin gave one.
std::vector<std::string> device_props_problems(const wick_plugin_api& api, const wick_device_props& props,
                                               std::optional<uint64_t> free_bytes,
                                               const std::vector<std::string>& manifest_kinds);

// The typed options of a [plugins.<name>] table, pointing into `table` (which must outlive them).
std::vector<wick_option> plugin_options(const PluginOptions& table);

}  // namespace wick::detail
