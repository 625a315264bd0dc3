// isolated_plugin.hpp — a plugin run in a child process ([plugins.NAME] isolate = true), core
// internal.
//
// The host keeps speaking the plugin ABI: start() returns a proxy wick_plugin_api table whose slots
// send each call over a socket to `wick-plugin-host`, a small program that loaded the plugin's
// library and calls the real table. Devices, buffers and errors on the host side are proxies that
// carry the child's handles. When the child dies (a crash, an abort, exit()) or does not answer a
// call within the deadline (then it is killed), the call in flight and every later one fail with
// an error naming the plugin, the call and how the process ended; the host process goes on.
//
// Costs: one round trip per call (tens of microseconds), and buffer contents cross the socket.
// Isolation is for plugins one does not trust yet, not for speed.
//
// The host's side is isolated_plugin.cpp, the child's (serve) isolation_server.cpp, and the wire
// format both share isolation_wire.hpp.
#pragma once

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

// Starts `wick-plugin-host` for the plugin `name` in `library` and reads its table. call_timeout_ms
// <= 0 waits for every call as long as it takes. Throws wick::Error naming the plugin and what
// failed (no host program, no free slot, the library does not load in the child).
Isolated start(const std::string& name, const std::string& library, int64_t call_timeout_ms);

// Where the host program is: $WICK_PLUGIN_HOST (ignored in setuid processes), else
// <directory of libwick>/wick/wick-plugin-host.
std::string host_program();

// The child's side: loads `library`, then serves calls on `fd` until shutdown or end of input.
// Returns the process's exit status.
int serve(int fd, const std::string& library);

}  // namespace wick::isolation
