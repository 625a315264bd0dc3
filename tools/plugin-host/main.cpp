// wick-plugin-host — runs one plugin library in a process of its own for a host that isolates it
// ([plugins.NAME] isolate = true). Started by libwick, never by hand:
//   wick-plugin-host --fd N --parent PID LIBRARY
// It serves the plugin ABI on file descriptor N (core/src/host/isolation_server.cpp) and dies with its
// parent process (a watchdog thread; PR_SET_PDEATHSIG would follow the parent's spawning thread).
#include "host/isolated_plugin.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  int fd = -1;
  long parent = -1;
  std::string library;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fd" && i + 1 < argc) {
      fd = std::atoi(argv[++i]);
    } else if (a == "--parent" && i + 1 < argc) {
      parent = std::atol(argv[++i]);
    } else if (library.empty() && !a.empty() && a[0] != '-') {
      library = a;
    } else {
      std::fprintf(stderr, "wick-plugin-host: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (fd < 0 || library.empty()) {
    std::fprintf(stderr,
                 "wick-plugin-host: started by libwick to isolate a plugin; usage: "
                 "wick-plugin-host --fd N [--parent PID] LIBRARY\n");
    return 2;
  }
  // Dies with the host: a host killed mid-call, even mid-call of a plugin that never returns, leaves
  // no plugin process behind. PR_SET_PDEATHSIG cannot say that: its "parent" is the thread that
  // spawned the child, so a host thread that restarted a plugin and then ended would kill it. A
  // thread of our own watches the parent process instead (the host ends: we are reparented).
  if (parent > 0) {
    if (::getppid() != static_cast<pid_t>(parent)) return 1;  // already orphaned
    std::thread([parent] {
      while (::getppid() == static_cast<pid_t>(parent))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ::_exit(1);
    }).detach();
  }
  return wick::isolation::serve(fd, library);
}
