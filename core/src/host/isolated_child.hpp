// isolated_child.hpp — the child process of one isolated plugin as the host's proxy table sees it
// (core internal): spawning wick-plugin-host, one call at a time over its socket, how a process
// ended, and restarting a dead one ([plugins.NAME] isolate_restarts).
//
// A Child outlives its processes: the proxy devices and buffers the core holds point to it. Each
// process is a generation; a restart starts the next one, runs initialize again with the options
// of the first, and asks it for the devices again by index, so the core's device handles stay
// valid. Buffers of an earlier generation are lost: every use of one is an error naming it.
#pragma once

#include "host/isolation_wire.hpp"

#include <wick/wick_plugin.h>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace wick::isolation {

// The error objects of the proxy table (wick_error*): a code and a message.
struct ProxyError {
  wick_status code;
  std::string message;
};
// Never throws: when even the error cannot be allocated, a static out-of-memory error.
wick_error* make_error(wick_status code, std::string message) noexcept;
wick_status error_code(const wick_error* e) noexcept;
const char* error_message(const wick_error* e) noexcept;
void error_destroy(wick_error* e) noexcept;

// A call that fails before it reaches the child (a lost buffer, restarts used up), thrown inside
// a proxy slot and turned into its error there.
class CallFailed : public Error {
 public:
  CallFailed(wick_status code, const std::string& what) : Error(what), code(code) {}
  wick_status code;
};

struct ChildSettings {
  std::string plugin;   // its name, for messages
  std::string program;  // wick-plugin-host
  std::string library;
  int64_t call_timeout_ms = 0;     // each call's deadline; <= 0: none
  int64_t init_timeout_ms = 0;     // initialize after a restart; <= 0: none
  int restarts = 0;                // how many times a dead process is replaced
  int64_t restart_backoff_ms = 0;  // the first restart waits this long after the death, then x2
};

// The child's table, as its hello describes it.
struct Hello {
  uint32_t abi_major = 0, abi_minor = 0;
  uint64_t struct_size = 0, flags = 0;
  uint32_t has = 0;  // wire::kHasBufferCopy, kHasFreeMemory
  std::string name, version, missing;
};

class Child;

struct ProxyDevice {
  Child* child;
  size_t index;              // device_get's index: what a restarted process is asked again
  uint64_t id;               // the current process's handle
  bool lost = false;         // the restarted process has no device at this index
  std::string name, vendor;  // the props' strings, owned here
};

struct ProxyBuffer {
  Child* child;
  const ProxyDevice* device;
  uint64_t id;
  uint64_t size;
  uint64_t generation;  // the process it lives in
};

class Child {
 public:
  explicit Child(ChildSettings settings);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Spawns the first process and reads its hello. Throws Error naming the plugin.
  Hello start();

  // Held around every use of the members below: the core may call one plugin from several
  // threads (a lock per device, none for op_supports), and one call at a time crosses the socket.
  std::mutex mutex;

  struct Reply {
    wick_error* error = nullptr;  // the plugin's error, or why the call could not be made
    wire::In in{nullptr, 0};      // the results, valid until the next call
  };

  // One call: restarts a dead process first (when restarts are left), then sends the request
  // build(Out&) completes (the header is there already) and waits for the reply, which may be at
  // most wire::reply_bound(c, read_bytes). A reply that is too long, out of order or unasked for
  // kills the process: the child is broken. `build` may throw CallFailed (a lost buffer).
  template <class Build>
  Reply call(wire::Call c, Build&& build, uint64_t read_bytes = 0) {
    for (bool again = true;; again = false) {
      if (wick_error* e = ready(c)) return Reply{e, wire::In(nullptr, 0)};
      wire::Out o;
      o.put<uint32_t>(static_cast<uint32_t>(c)).put<uint64_t>(++seq_);
      build(o);
      // A process that ended between calls is noticed before the request goes: the request is
      // built again for its replacement (a lost buffer then says so).
      if (again && ended_between_calls(c)) continue;
      return exchange(c, o, read_bytes, timeout_for(c));
    }
  }
  // The reply to `c` broke the format (`what`): kills the process and returns the call's error.
  wick_error* broken(wire::Call c, const std::string& what);

  // Throws CallFailed when `b` lived in an earlier process, or its device is lost.
  void check_buffer(const ProxyBuffer& b) const;
  void check_device(const ProxyDevice& d) const;
  // The proxy of device `index`, made on first use.
  ProxyDevice* device_at(size_t index, uint64_t id);
  uint64_t generation() const { return generation_; }
  // A process serves calls (it may have died since its last reply; the next call finds out).
  bool serving() const { return fd_ >= 0 && !shut_; }

  // After a successful initialize: the request's arguments, sent again after a restart.
  void initialized(std::vector<uint8_t> args);
  // Shuts the plugin down when it was initialized and its process serves, waiting at most
  // `timeout_ms` (<= 0: forever), and ends the process; later calls fail. Idempotent. The
  // destructor does it too, waiting at most exit_timeout_ms().
  void shutdown(int64_t timeout_ms);
  // isolate_timeout_ms, at most 10 s (10 s when that is 0).
  int64_t exit_timeout_ms() const;
  // At exit, when `mutex` cannot be had: kills the process without a word.
  void kill_now();

  const std::string& plugin() const { return s_.plugin; }
  const Hello& hello() const { return hello_; }  // the first process's; its strings stay put
  int64_t call_timeout_ms() const { return s_.call_timeout_ms; }
  std::string init_message;  // initialize's message, owned here for the core

 private:
  // nullptr when a process serves (restarting one if need be), else why the call fails.
  wick_error* ready(wire::Call c);
  // True (and the process reaped) when it ended since its last reply.
  bool ended_between_calls(wire::Call c);
  Reply exchange(wire::Call c, const wire::Out& request, uint64_t read_bytes, int64_t timeout_ms);
  int64_t timeout_for(wire::Call c) const;
  // Kills (when `kill`) and reaps the process; records in `dead_` how it ended (`how_known`, else
  // its wait status) during what.
  void lost(const char* during, const std::string& how_known, bool kill);
  void lost(wire::Call c, const std::string& how_known, bool kill);
  void spawn();
  Hello read_hello(int64_t timeout_ms);
  void restart();
  void reinitialize();
  void close_process();
  std::string ended() const;

  ChildSettings s_;
  std::atomic<pid_t> pid_{-1};
  int fd_ = -1;
  pid_t owner_pid_ = -1;  // the host process; a forked copy of it never talks to the child
  uint64_t seq_ = 0;
  const char* last_call_ = "its hello";
  uint64_t generation_ = 0;
  std::vector<uint8_t> reply_;
  std::string dead_;               // why the current process is gone; empty while it serves
  std::vector<std::string> ends_;  // how each generation ended, [generation - 1]
  std::chrono::steady_clock::time_point died_at_;
  int restarts_used_ = 0;
  bool shut_ = false;  // shut down (by the core, or at exit)
  bool init_done_ = false;
  std::vector<uint8_t> init_args_;  // initialize's arguments, for a restart
  Hello hello_;
  std::vector<std::unique_ptr<ProxyDevice>> devices_;
};

}  // namespace wick::isolation
