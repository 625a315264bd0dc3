// commands.hpp — the subcommands of the `wick` CLI.
#pragma once

#include <wick/config.hpp>

#include <string>

namespace wick::cli {

// `wick devices [--json]`: every plugin with its state and reason, and the selected device.
int run_devices(const ConfigOverrides& overrides, bool json);
// `wick config check FILE`: validates FILE (and the device names against the plugins found),
// then prints the effective configuration.
int run_config_check(const ConfigOverrides& overrides, const std::string& file);
// `wick config default`: prints the embedded default configuration.
int run_config_default();
// `wick demo`: a small computation on the selected device, checked against hand-worked values.
int run_demo(const ConfigOverrides& overrides);

}  // namespace wick::cli
