// isolation_test_support.hpp — what the isolation tests (test_isolation*.cpp) share: runtimes over
// the fixtures with a config text, this process's wick-plugin-host children, scoped environment
// variables and scratch files.
#pragma once

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace wick::test {

// A runtime over the conformance fixtures (conf-fixture-crashy: add works, neg crashes its process,
// sub hangs), the marker fixture (fixture-shutdown-marker) and the built plugins, with `toml`
// applied to the default config.
inline std::unique_ptr<Runtime> isolated_runtime(const std::string& toml) {
  Config c = apply_config_text(default_config(), toml, "isolation.toml");
  c.plugin_paths = {WICK_CONF_FIXTURE_DIR, WICK_MARKER_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  return std::make_unique<Runtime>(c, RegistryOptions{false, false});
}

inline PluginInfo plugin_info(const Runtime& rt, const std::string& name) {
  for (const PluginInfo& p : rt.registry().plugins())
    if (p.name == name) return p;
  FAIL("no plugin " << name);
  return {};
}

// The live (not zombie) child processes of this process whose command line names `library`: the
// wick-plugin-host of an isolated plugin, read from /proc.
inline std::vector<pid_t> plugin_host_pids(const std::string& library) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 1));
    char state = 0;
    long ppid = 0;
    fields >> state >> ppid;
    if (ppid != ::getpid() || state == 'Z') continue;
    std::ifstream cmdline("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find(library) != std::string::npos) found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

// The one wick-plugin-host running `library`.
inline pid_t plugin_host_pid(const std::string& library) {
  const std::vector<pid_t> pids = plugin_host_pids(library);
  REQUIRE(pids.size() == 1);
  return pids[0];
}

// Kills our child `pid` with SIGKILL and waits until it has ended, leaving it to be reaped (by the
// host, which notices the end before its next request).
inline void kill_and_wait(pid_t pid) {
  REQUIRE(::kill(pid, SIGKILL) == 0);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
}

// A scratch path of this test process, removed when the scope ends.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name)
      : path_("/tmp/wick-isolation-" + std::to_string(::getpid()) + "-" + name) {
    std::remove(path_.c_str());
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }
  std::string text() const {
    std::ifstream in(path_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

 private:
  std::string path_;
};

// The most memory this process has held, in bytes.
inline uint64_t peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

}  // namespace wick::test
