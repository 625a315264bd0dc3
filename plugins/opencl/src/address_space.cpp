#include "address_space.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdio>

namespace wick::opencl {

namespace {

uint64_t page_size() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t limit_of(int resource) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(limit.rlim_cur);
}

// What the process maps now, in bytes: the whole address space (statm's first field, VmSize) and
// its data (the sixth, data + stack: what RLIMIT_DATA counts, plus the stack, so a little high).
// Zeros when /proc cannot be read (the check then lets the request through, as before it).
struct Mapped {
  uint64_t total = 0, data = 0;
};

Mapped mapped_now() {
  // open/read rather than a stream: this runs on every new buffer under a limit.
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char text[256];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return {};
  text[n] = '\0';
  unsigned long long size = 0, resident = 0, shared = 0, code = 0, lib = 0, data = 0;
  if (std::sscanf(text, "%llu %llu %llu %llu %llu %llu", &size, &resident, &shared, &code, &lib,
                  &data) != 6)
    return {};
  return {size * page_size(), data * page_size()};
}

std::string exceeds(const char* name, uint64_t limit, uint64_t mapped) {
  return std::string(name) + " is " + std::to_string(limit) + " bytes and " +
         std::to_string(mapped) + " are mapped";
}

}  // namespace

uint64_t pocl_mapping_bytes(uint64_t capacity) {
  const uint64_t page = page_size();
  return (capacity + page - 1) / page * page + page;
}

AddressLimits address_limits() {
  return {limit_of(RLIMIT_AS), limit_of(RLIMIT_DATA)};
}

std::string address_space_shortfall(const AddressLimits& limits, uint64_t bytes) {
  if (!limits.any()) return {};
  const Mapped now = mapped_now();
  if (limits.as != UINT64_MAX && (now.total > limits.as || bytes > limits.as - now.total))
    return exceeds("RLIMIT_AS (ulimit -v)", limits.as, now.total);
  if (limits.data != UINT64_MAX && (now.data > limits.data || bytes > limits.data - now.data))
    return exceeds("RLIMIT_DATA (ulimit -d)", limits.data, now.data);
  return {};
}

}  // namespace wick::opencl
