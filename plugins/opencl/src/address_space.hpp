// address_space.hpp — the process's address-space budget (RLIMIT_AS, `ulimit -v`, and
// RLIMIT_DATA), checked before asking a driver whose device memory is the host's (PoCL) for a
// buffer: PoCL maps a buffer on its first use and asserts (SIGABRT) when the host refuses the
// mapping, so the plugin must know beforehand, and answer out of memory instead.
#pragma once

#include <cstdint>
#include <string>

namespace wick::opencl {

// The address space PoCL maps for a buffer of `capacity` bytes: the capacity rounded up to pages,
// plus one page (measured on PoCL 3.1's pthread device: a 1 GiB buffer adds 1 GiB + 4 KiB to
// VmSize at its first use, nothing at clCreateBuffer).
uint64_t pocl_mapping_bytes(uint64_t capacity);

// The finite limits of this process's address space, read now (two getrlimit calls, ~1 us).
struct AddressLimits {
  uint64_t as = UINT64_MAX;    // RLIMIT_AS in bytes; UINT64_MAX: none
  uint64_t data = UINT64_MAX;  // RLIMIT_DATA in bytes; UINT64_MAX: none
  bool any() const { return as != UINT64_MAX || data != UINT64_MAX; }
};
AddressLimits address_limits();

// Why mapping `bytes` more would exceed `limits` given what the process maps now (read from
// /proc/self/statm, ~6 us: only called when a limit is set), in words ("RLIMIT_AS (ulimit -v) is
// L bytes and M are mapped"); empty when it fits.
std::string address_space_shortfall(const AddressLimits& limits, uint64_t bytes);

}  // namespace wick::opencl
