// wick-conformance-worker — runs conformance cases on one backend, in a process of its own.
//
// The supervisor (`wick conformance`) starts it with posix_spawn, so no device runtime crosses a
// fork(). Protocol: the worker loads the backend (and the differential reference), writes
// "READY <json>" to fd 3, then for every line "RUN <case id>" on stdin writes one JSON result line
// to fd 3. stdout and stderr are free for the plugins' own chatter. A crash or hang costs only the
// case in flight: the supervisor notices, records CRASH or TIMEOUT and starts a fresh worker.
//
//   --list-backends   print the usable plugins as a JSON array on stdout and exit
#include "case.hpp"
#include "compare.hpp"
#include "execute.hpp"
#include "onnx_import.hpp"

#include <wick/config.hpp>
#include <wick/registry.hpp>

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <sys/prctl.h>
#include <unistd.h>
#include <csignal>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace wick;
using namespace wick::conformance;

struct Args {
  std::string backend, reference = "cpu-onednn", data, onnx_dir, tolerances, overrides, mode = "test";
  std::string config_file;
  std::vector<std::string> plugin_paths;
  uint64_t seed = kDefaultBaseSeed;
  bool list_backends = false, want_reference = false;
};

bool is_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.find(".so") != std::string::npos ||
         s.find(".toml") != std::string::npos;
}

// The manifest names in every directory the registry searches (wick/registry.hpp), so that the
// plugins this worker does not need can be disabled before they are initialized.
std::set<std::string> manifest_names(const Config& config) {
  std::vector<std::string> dirs = config.plugin_paths;
  if (auto env = secure_env("WICK_PLUGIN_PATH")) {
    size_t start = 0;
    while (start <= env->size()) {
      const size_t colon = env->find(':', start);
      dirs.push_back(env->substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_config_text), &info) != 0 && info.dli_fname != nullptr)
    dirs.push_back((fs::path(info.dli_fname).parent_path() / "wick" / "plugins").string());
  std::set<std::string> names;
  const std::string suffix = ".wick-plugin.toml";
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string f = it->path().filename().string();
      if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
        names.insert(f.substr(0, f.size() - suffix.size()));
    }
  }
  return names;
}

void emit(FILE* out, const std::string& line) {
  std::fputs(line.c_str(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

// The plugin name of --backend: a name as it is; a path loaded (even though its name was disabled
// with every other manifest: a path means that file), with the registry's note when another
// manifest of that name is in the search path. Throws when the path's plugin is not usable.
std::string backend_name(PluginRegistry& registry, const std::string& backend, std::string& note) {
  if (!is_path(backend)) return backend;
  const PluginInfo info = registry.load(backend);
  if (info.state != PluginState::Usable)
    throw Error("plugin " + backend + " is " + to_string(info.state) + ": " + info.reason);
  if (const size_t at = info.reason.find("note: "); at != std::string::npos) note = info.reason.substr(at);
  return info.name;
}

int run(const Args& args) {
  ConfigOverrides cli;
  if (!args.config_file.empty()) cli.config_file = args.config_file;
  cli.plugin_paths = args.plugin_paths;
  Config config = resolve_config(cli);

  if (args.list_backends) {
    PluginRegistry registry(config);
    nlohmann::json list = nlohmann::json::array();
    for (const PluginInfo& p : registry.plugins()) {
      if (p.state == PluginState::Usable) list.push_back(p.name);
    }
    std::cout << Result::dump(list) << "\n";
    return 0;
  }

  FILE* out = fdopen(3, "w");
  if (out == nullptr) {
    std::cerr << "wick-conformance-worker: fd 3 is not open; this program is started by `wick conformance`\n";
    return 2;
  }
  nlohmann::json ready{{"ok", false}};
  try {
    // Only the backend under test (and the reference) are initialized.
    std::set<std::string> keep;
    if (!is_path(args.backend)) keep.insert(args.backend.substr(0, args.backend.find(':')));
    if (args.want_reference) keep.insert(args.reference);
    for (const std::string& n : manifest_names(config)) {
      if (keep.count(n) == 0) config.disabled_plugins.push_back(n);
    }
    PluginRegistry registry(config);
    std::string note;
    const std::string name = backend_name(registry, args.backend, note);
    ExecContext ctx;
    ctx.device = registry.find_device(name);
    if (!ctx.device.valid()) {
      auto info = registry.find(name.substr(0, name.find(':')));
      throw Error("backend '" + name + "' is not usable: " +
                  (info ? std::string(to_string(info->state)) + ": " + info->reason : "no such plugin"));
    }
    ctx.backend = ctx.device.plugin_name();
    ctx.reference_name = args.reference;
    if (args.want_reference && ctx.backend != args.reference) {
      Device ref = registry.find_device(args.reference);
      if (ref.valid()) ctx.reference = ref;
    }
    GoldenStore golden(args.data);
    OnnxStore onnx(args.onnx_dir);
    const ToleranceTable tolerances = ToleranceTable::load(args.tolerances, args.overrides);
    ctx.golden = &golden;
    ctx.onnx = &onnx;
    ctx.tolerances = &tolerances;
    ctx.mode = args.mode;
    ctx.seed = args.seed;
    auto info = registry.find(ctx.backend);
    ready = {{"ok", true},
             {"backend", ctx.backend},
             {"device", ctx.device.name()},
             {"description", ctx.device.description()},
             {"version", info ? info->version : ""},
             {"reference", ctx.reference ? ctx.reference->name() : ""}};
    if (!note.empty()) ready["note"] = note;
    emit(out, "READY " + Result::dump(ready));

    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.rfind("RUN ", 0) != 0) continue;
      const Result r = execute_case(ctx, line.substr(4));
      emit(out, Result::dump(r.to_json()));
    }
    return 0;
  } catch (const std::exception& e) {
    ready["error"] = e.what();
    emit(out, "READY " + Result::dump(ready));
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "wick-conformance-worker: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend") args.backend = value();
    else if (a == "--reference") { args.reference = value(); args.want_reference = true; }
    else if (a == "--data") args.data = value();
    else if (a == "--onnx-dir") args.onnx_dir = value();
    else if (a == "--tolerances") args.tolerances = value();
    else if (a == "--overrides") args.overrides = value();
    else if (a == "--mode") args.mode = value();
    else if (a == "--seed") args.seed = std::stoull(value());
    else if (a == "--config") args.config_file = value();
    else if (a == "--plugin-path") args.plugin_paths.push_back(value());
    else if (a == "--list-backends") args.list_backends = true;
    else if (a == "--parent") {
      // Killed with the supervisor (even by SIGKILL), never orphaned; if it is already gone, end.
      const long parent = std::stol(value());
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) return 3;
    }
    else {
      std::cerr << "wick-conformance-worker: unknown argument " << a << "\n";
      return 2;
    }
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "wick-conformance-worker: " << e.what() << "\n";
    return 1;
  }
}
