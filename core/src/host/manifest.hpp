// manifest.hpp — a plugin's manifest (<name>.wick-plugin.toml): what the registry reads before any
// plugin code runs. Its own file so that the manifest fuzz target builds from it alone.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wick {

struct Manifest {
  std::string path;
  std::string name;
  std::string library;  // absolute
  int64_t abi_major = 0;
  std::vector<std::string> device_kinds;
  bool first_party = false;
};

inline constexpr const char* kManifestSuffix = ".wick-plugin.toml";

// True for file names ending in kManifestSuffix.
bool is_manifest_name(const std::string& file);

// Reads a manifest file (a regular file of bounded size, see safe_file.hpp); throws
// std::runtime_error with "manifest <path>[:line:col]: problem".
Manifest read_manifest(const std::filesystem::path& path);

// The same from the file's text; a relative library is resolved against path's directory.
Manifest parse_manifest(const std::string& text, const std::filesystem::path& path);

}  // namespace wick
