// crash_hint.hpp — the command the crash reporter (loaded_plugin.cpp) prints to rerun a plugin
// that killed the process: `wick plugin check` with the options that chose and configured it, so
// that the check reproduces the run (core internal).
#pragma once

#include <string>

namespace wick::detail {

// Sets the command that reruns `plugin` as this process runs it ("wick --config /abs/wick.toml
// plugin check /abs/x.wick-plugin.toml"), replacing an earlier one; kept for the process's life.
// Thread-safe.
void set_crash_hint(const std::string& plugin, const std::string& command);

// The command set for `plugin`, or nullptr. Async-signal-safe: no lock, no allocation.
const char* crash_hint(const char* plugin) noexcept;

}  // namespace wick::detail
