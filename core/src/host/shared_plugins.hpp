// shared_plugins.hpp — one initialized instance per plugin library and process (core internal).
//
// A plugin library is initialized once per process: the SDK keeps one plugin object per library,
// and most plugins hold process-wide state (a driver context, a thread pool). So a second
// registry (a second wick::Runtime) that finds a library another live registry has initialized
// shares that LoadedPlugin, its devices and its buffers, instead of calling initialize again
// (which the SDK refuses: "initialize called twice", and the second runtime silently fell back to
// another device). Options must match: a plugin cannot be two things at once.
#pragma once

#include "host/loaded_plugin.hpp"

#include <wick/wick_plugin.h>

#include <memory>
#include <string>
#include <vector>

namespace wick {

// The options as text, for comparing two runtimes' [plugins.<name>] tables: "threads=1, x=\"a\"".
std::string describe_options(const std::vector<wick_option>& options);

// The live, initialized in-process plugin of `library` (an absolute path), or nullptr.
std::shared_ptr<LoadedPlugin> shared_plugin(const std::string& library);

// Records `plugin` (of `library`) as initialized with `options` and init message `message`, for
// later registries of this process.
void share_plugin(const std::string& library, const std::shared_ptr<LoadedPlugin>& plugin,
                  std::string options, std::string message);

// What `plugin` was initialized with: its options' text and its init message (empty when it is
// not a shared one).
struct SharedInit {
  std::string options;
  std::string message;
};
SharedInit shared_init(const LoadedPlugin& plugin);

}  // namespace wick
