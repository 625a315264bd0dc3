// wick/safe_file.hpp — reading the files Wick trusts least (configs, plugin manifests, plugin
// libraries, data sets) without letting one hang, crash or exhaust the process. Public so that
// every layer that reads a path checks it the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace wick::safe_file {

// Limits on text documents before they reach the TOML parser (whose recursion a 50,000-deep
// dotted key would overflow): size, dotted-key depth, bracket depth.
inline constexpr uint64_t kMaxTextBytes = uint64_t{1} << 20;
inline constexpr int kMaxNesting = 64;

// Why `path` may not be opened as a document: not a regular file (a FIFO, a device, a directory),
// larger than max_bytes, unreadable; nullopt when it is fine. Never blocks on the file.
std::optional<std::string> refuse(const std::string& path, uint64_t max_bytes);

// Reads a regular text file of at most kMaxTextBytes; throws std::runtime_error "<path>: why".
std::string read_text(const std::string& path);
// Reads a regular file of at most max_bytes whole (read_text's rules with another bound): refused
// first as refuse() says, opened without blocking, checked again once open (a file swapped for a
// FIFO or a device since); throws std::runtime_error "<path>: why".
std::string read_file(const std::string& path, uint64_t max_bytes);

// Where and why `text` is too deeply nested for the TOML parser ("key nested deeper than 64
// levels"); nullopt when it is not.
struct Nesting {
  int line = 0, column = 0;
  std::string what;
};
std::optional<Nesting> too_deep(const std::string& text);

// Why `path` is not a whole ELF shared library of this machine's class (checked before dlopen,
// which maps it: a truncated file would fault when touched); nullopt when it looks whole.
std::optional<std::string> not_whole_elf(const std::string& path);

// "directory /x is writable by every user (mode 0777)" when `path` (a file or directory) may be
// written by anyone; nullopt otherwise (or when it cannot be stat'ed).
std::optional<std::string> world_writable(const std::string& path);

}  // namespace wick::safe_file
