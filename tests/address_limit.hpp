// address_limit.hpp — running a test's body in a child process whose address space may grow by
// only so much (RLIMIT_AS), for the out-of-memory tests.
#pragma once

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <fstream>
#include <new>
#include <string>
#include <utility>

namespace wick::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // their shadow memory cannot live under RLIMIT_AS
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The address space this process maps now, in bytes (VmSize of /proc/self/status).
inline uint64_t mapped_bytes() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

// Lets this process's address space grow by only `headroom` bytes beyond what it maps now.
inline bool limit_address_space(uint64_t headroom) {
  const rlimit limit{mapped_bytes() + headroom, RLIM_INFINITY};
  return ::setrlimit(RLIMIT_AS, &limit) == 0;
}

constexpr uint64_t kNoAddressLimit = UINT64_MAX;

// body() (returning a std::string) in a child process whose address space may grow by only
// `headroom` bytes beyond what it maps at the fork (kNoAddressLimit: no limit): what body returns,
// "error: <what>" for a wick::Error, "bad_alloc" for a bare std::bad_alloc, and " [killed by
// signal N]" after what it wrote when the child dies (an abort is a result, not a lost test).
// Threads do not survive fork: a body that uses OpenCL (PoCL's worker threads) or OpenMP must run
// in a process that has not started them, so such tests start every runtime in the child.
template <class Body>
std::string in_child_with_headroom(uint64_t headroom, Body&& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    if (headroom != kNoAddressLimit && !limit_address_space(headroom)) out = "setrlimit failed";
    try {
      if (out.empty()) out = body();
    } catch (const Error& e) {
      out = std::string("error: ") + e.what();
    } catch (const std::bad_alloc&) {
      out = "bad_alloc";
    } catch (...) {
      out = "another exception";
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  REQUIRE(pid > 0);
  ::close(fds[1]);
  int status = 0;
  std::string got = drain_child(fds[0], pid, status);
  if (WIFSIGNALED(status)) got += " [killed by signal " + std::to_string(WTERMSIG(status)) + "]";
  return got;
}

// body() in a child process, with no limit of its own (one it sets itself, a runtime it starts).
template <class Body>
std::string in_child(Body&& body) {
  return in_child_with_headroom(kNoAddressLimit, std::forward<Body>(body));
}

}  // namespace wick::test
