// device_kinds.hpp — the device kinds a priority entry may name instead of a plugin, shared by the
// registry and device selection (core internal).
#pragma once

#include <string>
#include <vector>

namespace wick::detail {

extern const std::vector<std::string> kDeviceKinds;  // "cpu", "gpu", "accelerator", "other"

bool contains(const std::vector<std::string>& names, const std::string& name);

}  // namespace wick::detail
