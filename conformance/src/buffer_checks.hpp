// buffer_checks.hpp — what `wick plugin check` asks of a plugin's buffers before and after its
// smoke set: that a write reads back as written (else every later case fails for the wrong
// reason), and that the buffers the host frees are given back (else the plugin leaks).
#pragma once

#include "execute.hpp"

#include <wick/device.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wick::conformance {

// Writes buffers on `device` and reads them back, through single buffer_write / buffer_read
// calls: whole buffers of 1 byte to 1 MiB + 5, reads at an offset, and a write at an offset into a
// buffer of canary bytes (read back whole: the bytes written, the canaries around them
// untouched), and, where the plugin wraps host memory (buffer_wrap_host), a wrapped buffer that
// reads the memory as it is when read; where it gives buffer addresses (buffer_host_address, ABI
// 1.7), an address that stays the same and holds what buffer_read reads, and a writable wrap at
// an odd address that an op's output reaches; where it names buffers natively
// (buffer_native_memory, ABI 1.8), an answer that stays the same and follows views. "" when every byte reads back as written; else the first problem, naming the call,
// the size and offset, and which bytes differ (a short or failed write shows as its tail).
std::string round_trip_problem(const Device& device);

// The memory a leak shows in: the device's free memory (when its plugin reports it) and the
// bytes this process's heap has in use (malloc'd or mapped by malloc: a host-memory plugin's
// buffers).
struct MemorySample {
  std::optional<uint64_t> device_free;
  uint64_t heap_in_use = 0;
};
MemorySample sample_memory(const Device& device);

struct LeakCheck {
  int passes = 0;          // measured passes over the cases
  uint64_t buffers = 0;    // buffers allocated and freed by the host while measured
  uint64_t bytes = 0;      // their bytes
  MemorySample before, after;
  std::string problem;     // "" when the memory came back
};
// Runs `cases` (test mode) once to warm every cache, samples the memory, runs them three times
// more and allocates, writes and frees 64 buffers of 1 MiB, and samples again: memory that did
// not come back (at least 1 MiB and half of what was allocated; the device's free memory only
// for a device with memory of its own, the heap always) is a leak, named with the buffers and
// bytes. Results of the cases are not judged here (the smoke stage does that).
LeakCheck check_leaks(const ExecContext& ctx, const std::vector<std::string>& cases);

}  // namespace wick::conformance
