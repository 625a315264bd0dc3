// isolated_plugin.hpp — a plugin run in a child process ([plugins.NAME] isolate = true), core
// internal.
//
// The host keeps speaking the plugin ABI: start() returns a proxy wick_plugin_api table whose slots
// send each call over a socket to `wick-plugin-host`, a small program that loaded the plugin's
// library and calls the real table. Devices, buffers and errors on the host side are proxies that
// carry the child's handles. When the child dies (a crash, an abort, exit()), does not answer a
// call within the deadline, or breaks the wire protocol (then it is killed), the call in flight
// fails with an error naming the plugin, the call and how the process ended; the host process goes
// on. The next call starts a new child (isolate_restarts times at most, after a back-off that
// doubles each time), initializes it with the same options and asks it for the same devices; the
// buffers of the dead child are lost, and each later use of one is an error saying so. Nothing the
// child sends is trusted: every length and count is bounded by what its call can need before
// anything is allocated. At exit, every isolated plugin still initialized is shut down.
//
// Costs: one round trip per call (tens of microseconds), and buffer contents cross the socket.
// Isolation is for plugins one does not trust yet, not for speed.
//
// The host's side is isolated_plugin.cpp (the proxy table) and isolated_child.cpp (the process and
// its restarts), the child's (serve) isolation_server.cpp, and the wire format both share
// isolation_wire.hpp.
#pragma once

#include <wick/config.hpp>
#include <wick/wick_plugin.h>

#include <cstdint>
#include <memory>
#include <string>

namespace wick::isolation {

// How many plugins one process can isolate at once (each uses a slot of static proxy tables).
inline constexpr int kMaxIsolated = 16;

struct Isolated {
  const wick_plugin_api* api = nullptr;  // the proxy table; valid while `owner` lives
  std::shared_ptr<void> owner;           // the child process and the table's slot
};

// Starts `wick-plugin-host` for the plugin `name` in `library` and reads its table. The options'
// timeout_ms <= 0 waits for every call as long as it takes; initialize (the first and a restarted
// process's) waits at most init_timeout_ms. Throws wick::Error naming the plugin and what failed
// (no host program, no free slot, the library does not load in the child).
Isolated start(const std::string& name, const std::string& library, const IsolationOptions& options,
               int64_t init_timeout_ms);

// Where the host program is: $WICK_PLUGIN_HOST (ignored in setuid processes), else
// <directory of libwick>/wick/wick-plugin-host.
std::string host_program();

// The child's side: loads `library`, then serves calls on `fd` until shutdown, returning the
// process's exit status. At the end of input (the host went away without a shutdown) it ends the
// process with _exit(0), running neither the plugin's shutdown nor any static destructor.
int serve(int fd, const std::string& library);

}  // namespace wick::isolation
