// isolated_child.cpp — one isolated plugin's child process: spawning it, one call at a time over
// its socket with every reply bounded and checked, how a process ended, and restarts (see
// isolated_child.hpp).
#include "host/isolated_child.hpp"

#include <wick/config.hpp>
#include <wick/error.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace wick::isolation {

using wire::Call;
using wire::call_name;
using wire::In;
using wire::Out;
using wire::RecvResult;

namespace {

ProxyError g_out_of_memory{WICK_STATUS_OUT_OF_MEMORY,
                           "out of host memory while reporting an isolated plugin's error"};

// The longest a shutdown at exit may take (isolate_timeout_ms when that is shorter).
constexpr int64_t kExitShutdownMs = 10000;

// How long the hello of a new process may take (loading the library, before any plugin code runs).
constexpr int64_t kHelloTimeoutMs = 30000;

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return std::to_string(sig) + " (" + (abbrev != nullptr ? std::string("SIG") + abbrev : "?") +
         ", " + strsignal(sig) + ")";
}

// " (its process was stopped: ...)" when `pid` is stopped (SIGSTOP, SIGTSTP) or traced: the
// reason a late call is most often late by hand; else "".
std::string stopped_note(pid_t pid) {
  if (pid <= 0) return "";
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (f == nullptr) return "";
  char text[512] = {};
  const size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(text, ')');  // the name, in parentheses, may hold anything
  if (close == nullptr || close + 2 >= text + n) return "";
  if (close[2] == 'T') return " (its process was stopped: SIGSTOP or SIGTSTP)";
  if (close[2] == 't') return " (its process was stopped by a debugger)";
  return "";
}

// Waits up to a second for `pid` to end by itself, then kills it; its wait status, or -1.
int reap(pid_t pid, bool kill_first) {
  if (pid <= 0) return -1;
  if (kill_first) ::kill(pid, SIGKILL);
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 200 && (got = ::waitpid(pid, &status, WNOHANG)) == 0; ++i) ::usleep(5000);
  if (got == 0) {
    ::kill(pid, SIGKILL);
    got = ::waitpid(pid, &status, 0);
  }
  return got == pid ? status : -1;
}

}  // namespace

wick_error* make_error(wick_status code, std::string message) noexcept {
  try {
    return reinterpret_cast<wick_error*>(new ProxyError{code, std::move(message)});
  } catch (...) {
    return reinterpret_cast<wick_error*>(&g_out_of_memory);
  }
}
wick_status error_code(const wick_error* e) noexcept {
  return reinterpret_cast<const ProxyError*>(e)->code;
}
const char* error_message(const wick_error* e) noexcept {
  return reinterpret_cast<const ProxyError*>(e)->message.c_str();
}
void error_destroy(wick_error* e) noexcept {
  if (e != reinterpret_cast<wick_error*>(&g_out_of_memory)) delete reinterpret_cast<ProxyError*>(e);
}

Child::Child(ChildSettings settings) : s_(std::move(settings)) {}

Child::~Child() {
  if (::getpid() != owner_pid_) {  // a forked copy: the process is not ours to end
    if (fd_ >= 0) ::close(fd_);
    return;
  }
  // The core skips shutdown when it lets go of a plugin at exit (its statics may be gone); this
  // plugin's code runs in the child, so it is shut down all the same: every time, never by a race.
  try {
    shutdown(exit_timeout_ms());
  } catch (...) {
    close_process();
  }
}

int64_t Child::exit_timeout_ms() const {
  return s_.call_timeout_ms > 0 ? std::min(s_.call_timeout_ms, kExitShutdownMs) : kExitShutdownMs;
}

void Child::close_process() {
  if (fd_ >= 0) ::close(fd_);  // the child sees end of input and ends
  fd_ = -1;
  (void)reap(pid_, false);
  pid_ = -1;
}

// Starts the program with one end of a socket pair as its fd 3; the other end becomes fd_.
void Child::spawn() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error("isolating plugin '" + s_.plugin + "': socketpair failed: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 3);  // dup2 clears close-on-exec on fd 3
  const std::string parent = std::to_string(::getpid());
  std::vector<char*> argv = {const_cast<char*>(s_.program.c_str()),
                             const_cast<char*>("--fd"),
                             const_cast<char*>("3"),
                             const_cast<char*>("--parent"),
                             const_cast<char*>(parent.c_str()),
                             const_cast<char*>(s_.library.c_str()),
                             nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, s_.program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error("isolating plugin '" + s_.plugin + "': could not start " + s_.program + ": " +
                std::strerror(rc));
  }
  pid_ = pid;
  fd_ = fds[0];
  owner_pid_ = ::getpid();
  ++generation_;
  dead_.clear();
}

Hello Child::start() {
  spawn();
  hello_ = read_hello(kHelloTimeoutMs);
  return hello_;
}

// The hello: the child's table, or why it could not load the library.
Hello Child::read_hello(int64_t timeout_ms) {
  uint64_t announced = 0;
  const RecvResult got = wire::recv_message(fd_, reply_, timeout_ms, wire::kMaxReply, &announced);
  if (got == RecvResult::TooLong) {
    lost("its start",
         "sent a hello of " + std::to_string(announced) + " bytes (at most " +
             std::to_string(wire::kMaxReply) + "); its process was killed",
         true);
    throw Error("isolating plugin '" + s_.plugin + "': " + dead_);
  }
  if (got != RecvResult::Ok) {
    lost("its start",
         got == RecvResult::TimedOut ? "did not start within 30 s; its process was killed" : "",
         got == RecvResult::TimedOut);
    throw Error("isolating plugin '" + s_.plugin + "': " + s_.program + " did not start: " + dead_);
  }
  Hello h;
  try {
    In in(reply_.data(), reply_.size());
    if (in.get<uint32_t>() != WICK_STATUS_OK) {
      const std::string why = in.str();
      close_process();
      throw Error(why);
    }
    const auto version = in.get<uint32_t>();
    if (version != wire::kWireVersion)
      throw wire::Malformed("it speaks wire version " + std::to_string(version) +
                            ", this libwick " + std::to_string(wire::kWireVersion) +
                            ": they come from different builds");
    h.abi_major = in.get<uint32_t>();
    h.abi_minor = in.get<uint32_t>();
    h.struct_size = in.get<uint64_t>();
    h.flags = in.get<uint64_t>();
    h.has = in.get<uint32_t>();
    h.name = in.str();
    h.version = in.str();
    h.missing = in.str();
  } catch (const wire::Malformed& e) {
    lost("its start",
         std::string("sent a malformed hello (") + e.what() + "); its process was killed", true);
    throw Error("isolating plugin '" + s_.plugin + "': " + dead_);
  }
  return h;
}

void Child::lost(const char* during, const std::string& how_known, bool kill) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  const int status = reap(pid_, kill);
  pid_ = -1;
  std::string how = how_known;
  if (!how.empty()) {
  } else if (status >= 0 && WIFSIGNALED(status)) {
    how = "crashed: its process was killed by signal " + signal_text(WTERMSIG(status));
  } else if (status >= 0 && WIFEXITED(status)) {
    how = "its process exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    how = "its process closed the connection";
  }
  dead_ = "isolated plugin '" + s_.plugin + "' " + how + " in " + during;
  died_at_ = std::chrono::steady_clock::now();
  if (generation_ > 0) {
    ends_.resize(static_cast<size_t>(generation_));
    ends_.back() = dead_;
  }
}

void Child::lost(Call c, const std::string& how_known, bool kill) {
  lost(call_name(c), how_known, kill);
}

// What becomes of the plugin after its process ended: restarted on the next call, or not.
std::string Child::ended() const {
  if (!init_done_ || shut_) return dead_ + "; the program goes on";
  if (restarts_used_ < s_.restarts)
    return dead_ + "; its buffers are lost, and the next call restarts it (restart " +
           std::to_string(restarts_used_ + 1) + " of " + std::to_string(s_.restarts) +
           ", [plugins." + s_.plugin + "] isolate_restarts); the program goes on";
  return dead_ + "; no restart is left ([plugins." + s_.plugin +
         "] isolate_restarts = " + std::to_string(s_.restarts) +
         "), so the plugin is unusable from now on; the program goes on";
}

wick_error* Child::broken(Call c, const std::string& what) {
  lost(c, std::string("broke the wire protocol (") + what + "); its process was killed", true);
  return make_error(WICK_STATUS_DEVICE_ERROR, ended());
}

wick_error* Child::ready(Call c) {
  if (owner_pid_ != ::getpid())
    return make_error(WICK_STATUS_UNAVAILABLE, "isolated plugin '" + s_.plugin +
                                                   "' cannot be called from a forked copy of the "
                                                   "process that started it");
  if (shut_)
    return make_error(WICK_STATUS_UNAVAILABLE, "isolated plugin '" + s_.plugin + "' was shut down");
  if (fd_ >= 0) return nullptr;
  if (!init_done_ && c != Call::Initialize)
    return make_error(WICK_STATUS_UNAVAILABLE, "its isolated process is gone (" + dead_ + ")");
  if (restarts_used_ >= s_.restarts)
    return make_error(WICK_STATUS_UNAVAILABLE,
                      "isolated plugin '" + s_.plugin + "' cannot run " + call_name(c) +
                          ": its process ended and all " + std::to_string(s_.restarts) +
                          " restarts ([plugins." + s_.plugin +
                          "] isolate_restarts) are used up; the last end: " + dead_);
  restart();
  if (fd_ < 0)
    return make_error(WICK_STATUS_DEVICE_ERROR,
                      "isolated plugin '" + s_.plugin + "' could not be restarted for " +
                          call_name(c) + " (restart " + std::to_string(restarts_used_) + " of " +
                          std::to_string(s_.restarts) + "): " + dead_);
  return nullptr;
}

// Replaces the dead process after the back-off: a new one, the same table, initialize with the
// same options, the devices again. On failure fd_ < 0 and dead_ says why.
void Child::restart() {
  // The back-off doubles with each restart, up to the largest one a config may set.
  const int shift = std::min(restarts_used_, 20);
  ++restarts_used_;
  const int64_t backoff_ms = std::min(s_.restart_backoff_ms << shift, kMaxIsolateBackoffMs);
  std::this_thread::sleep_until(died_at_ + std::chrono::milliseconds(backoff_ms));
  dead_.clear();
  try {
    spawn();
    const Hello h = read_hello(kHelloTimeoutMs);
    if (h.name != hello_.name || h.version != hello_.version || h.abi_major != hello_.abi_major ||
        h.abi_minor != hello_.abi_minor || h.has != hello_.has) {
      lost("its restart",
           "came back as another plugin (" + h.name + " " + h.version + ", was " + hello_.name +
               " " + hello_.version + "); its process was killed",
           true);
      return;
    }
    if (init_done_) reinitialize();
  } catch (const std::exception& e) {
    // read_hello has recorded why, when the process got that far; a failed spawn has not.
    if (fd_ >= 0) {
      lost("its restart", std::string(e.what()) + "; its process was killed", true);
    } else if (dead_.empty()) {
      dead_ = e.what();
      died_at_ = std::chrono::steady_clock::now();
    }
  }
}

// Runs initialize with the first one's arguments in the new process, then asks for the devices the
// core holds by their indices.
void Child::reinitialize() {
  Out o;
  o.put<uint32_t>(static_cast<uint32_t>(Call::Initialize)).put<uint64_t>(++seq_);
  o.bytes(init_args_.data(), init_args_.size());
  Reply r = exchange(Call::Initialize, o, 0, timeout_for(Call::Initialize));
  auto fail = [&](const std::string& why) {
    if (fd_ >= 0) lost("its restart", why + "; its process was killed", true);
  };
  if (r.error != nullptr) {
    const std::string m = error_message(r.error);
    error_destroy(r.error);
    return fail("initialize failed again: " + m);
  }
  const auto n = r.in.get<uint64_t>();
  if (n > wire::kMaxDevices) return fail("reported " + std::to_string(n) + " devices");
  for (const auto& d : devices_) {
    d->lost = d->index >= n;
    if (d->lost) continue;
    Out g;
    g.put<uint32_t>(static_cast<uint32_t>(Call::DeviceGet)).put<uint64_t>(++seq_);
    g.put<uint64_t>(d->index);
    Reply got = exchange(Call::DeviceGet, g, 0, timeout_for(Call::DeviceGet));
    if (got.error != nullptr) {
      const std::string m = error_message(got.error);
      error_destroy(got.error);
      return fail("device_get(" + std::to_string(d->index) + ") failed: " + m);
    }
    d->id = got.in.get<uint64_t>();
  }
}

bool Child::ended_between_calls(Call c) {
  char byte;
  if (!wire::readable_now(fd_) || ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) return false;
  lost((std::string("between calls (noticed before ") + call_name(c) + ")").c_str(), "", false);
  return true;
}

int64_t Child::timeout_for(Call c) const {
  return c == Call::Initialize ? s_.init_timeout_ms : s_.call_timeout_ms;
}

Child::Reply Child::exchange(Call c, const Out& request, uint64_t read_bytes, int64_t timeout) {
  Reply r;
  auto failed = [&](const std::string& how, bool kill) {
    lost(c, how, kill);
    r.error = make_error(WICK_STATUS_DEVICE_ERROR, ended());
    return r;
  };
  if (wire::readable_now(fd_)) {  // the end of a dying process, or bytes nobody asked for
    char byte;
    if (::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) return failed("", false);
    return failed(std::string("broke the wire protocol (it sent bytes nobody asked for, after its "
                              "reply to ") +
                      last_call_ + "); its process was killed",
                  true);
  }
  last_call_ = call_name(c);
  if (!wire::send_message(fd_, request)) return failed("", false);
  const uint64_t bound = wire::reply_bound(c, read_bytes);
  uint64_t announced = 0;
  const RecvResult got = wire::recv_message(fd_, reply_, timeout, bound, &announced);
  if (got == RecvResult::TimedOut)
    return failed("did not answer within " + std::to_string(timeout) + " ms ([plugins." +
                      s_.plugin +
                      (c == Call::Initialize ? "] probe_timeout_ms" : "] isolate_timeout_ms") +
                      ")" + stopped_note(pid_.load()) + "; its process was killed",
                  true);
  if (got == RecvResult::TooLong)
    return failed("broke the wire protocol (a reply of " + std::to_string(announced) +
                      " bytes, at most " + std::to_string(bound) +
                      " expected); its process was killed",
                  true);
  if (got != RecvResult::Ok) return failed("", false);
  r.in = In(reply_.data(), reply_.size());
  try {
    const auto seq = r.in.get<uint64_t>();
    if (seq != seq_)
      throw wire::Malformed("the reply to request " + std::to_string(seq) + " where " +
                            std::to_string(seq_) + " was expected");
    const auto status = r.in.get<uint32_t>();
    if (status > WICK_STATUS_INTERNAL) throw wire::Malformed("status " + std::to_string(status));
    if (status != WICK_STATUS_OK)
      r.error = make_error(static_cast<wick_status>(status), r.in.str());
  } catch (const wire::Malformed& e) {
    r.error = broken(c, e.what());
  }
  return r;
}

void Child::check_device(const ProxyDevice& d) const {
  if (d.lost)
    throw CallFailed(WICK_STATUS_UNAVAILABLE,
                     "device " + std::to_string(d.index) + " ('" + d.name +
                         "') of isolated plugin '" + s_.plugin +
                         "' is lost: the plugin's restarted process has fewer devices");
}

void Child::check_buffer(const ProxyBuffer& b) const {
  check_device(*b.device);
  if (b.generation != generation_)
    throw CallFailed(WICK_STATUS_UNAVAILABLE,
                     "a buffer of " + std::to_string(b.size) + " bytes on device " +
                         std::to_string(b.device->index) + " ('" + b.device->name +
                         "') of isolated plugin '" + s_.plugin +
                         "' is lost: it lived in a process of the plugin that ended (" +
                         ends_.at(static_cast<size_t>(b.generation - 1)) +
                         "); the plugin was restarted, and the buffer's contents are gone "
                         "(allocate it again)");
}

ProxyDevice* Child::device_at(size_t index, uint64_t id) {
  for (const auto& d : devices_)
    if (d->index == index) {
      d->id = id;
      return d.get();
    }
  devices_.push_back(std::make_unique<ProxyDevice>(ProxyDevice{this, index, id, false, {}, {}}));
  return devices_.back().get();
}

void Child::initialized(std::vector<uint8_t> args) {
  init_args_ = std::move(args);
  init_done_ = true;
}

void Child::shutdown(int64_t timeout_ms) {
  if (shut_ || owner_pid_ != ::getpid()) return;
  if (fd_ >= 0 && init_done_) {
    Out o;
    o.put<uint32_t>(static_cast<uint32_t>(Call::Shutdown)).put<uint64_t>(++seq_);
    Reply r = exchange(Call::Shutdown, o, 0, timeout_ms);
    if (r.error != nullptr) error_destroy(r.error);
  }
  shut_ = true;
  close_process();
}

void Child::kill_now() {
  const pid_t pid = pid_;
  if (pid > 0 && owner_pid_ == ::getpid()) ::kill(pid, SIGKILL);
}

}  // namespace wick::isolation
