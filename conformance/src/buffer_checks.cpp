// buffer_checks.cpp — write/read round trips and the leak check of `wick plugin check`
// (buffer_checks.hpp).
#include "buffer_checks.hpp"

#include <wick/buffer_io.hpp>
#include <wick/error.hpp>

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

namespace wick::conformance {

namespace {

constexpr uint64_t kCanaryBytes = 64;
constexpr uint8_t kCanary = 0x5A;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// A pattern that differs from its neighbours, from the canary and from zeroed memory.
std::vector<uint8_t> pattern(uint64_t n, uint64_t salt) {
  std::vector<uint8_t> p(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t v = static_cast<uint8_t>((i * 131 + salt * 29 + 7) & 0xFF);
    p[i] = v == 0 || v == kCanary ? static_cast<uint8_t>(v + 1) : v;
  }
  return p;
}

std::string byte_hex(uint8_t v) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", v);
  return text;
}

// "" when got equals want; else which of the bytes differ, with the first one's values.
std::string difference(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got,
                       uint64_t first_index = 0) {
  uint64_t first = want.size(), count = 0;
  for (uint64_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      first = std::min(first, i);
      ++count;
    }
  if (count == 0) return "";
  std::string text = std::to_string(count) + " of the " + std::to_string(want.size()) +
                     " bytes differ, the first at byte " + std::to_string(first + first_index) + " (read " +
                     byte_hex(got[first]) + ", written " + byte_hex(want[first]) + ")";
  // Bytes a write never reached may match by chance: most of the tail differing is enough.
  if (first > 0 && count * 10 >= (want.size() - first) * 9)
    text += ": the first " + std::to_string(first) + " bytes are right and every one after is not, as a "
            "write of fewer bytes than asked leaves it";
  else if (count == want.size())
    text += ": none of the bytes arrived (a write that did nothing, or a read from elsewhere)";
  return text;
}

// A buffer of n bytes written whole with one buffer_write, then read: whole, and from its middle.
std::string whole_buffer(const Device& device, uint64_t n) {
  const std::vector<uint8_t> want = pattern(n, n);
  const Tensor t = Tensor::from_bytes(want.data(), n, Shape{static_cast<int64_t>(n)}, DType::U8, device);
  std::vector<uint8_t> got(n);
  read_buffer_bytes(t, 0, got.data(), n);
  if (std::string d = difference(want, got); !d.empty())
    return "buffer_write of " + std::to_string(n) + " bytes at offset 0, then buffer_read of them: " + d;
  const uint64_t half = n / 2;
  std::vector<uint8_t> tail(n - half);
  read_buffer_bytes(t, half, tail.data(), tail.size());
  const std::vector<uint8_t> want_tail(want.begin() + static_cast<int64_t>(half), want.end());
  if (std::string d = difference(want_tail, tail, half); !d.empty())
    return "buffer_read of the last " + std::to_string(tail.size()) + " of " + std::to_string(n) +
           " bytes at offset " + std::to_string(half) + " (the whole buffer read back right): " + d;
  return "";
}

// n bytes written at an offset into a buffer of canaries: the bytes land there, and only there.
std::string between_canaries(const Device& device, uint64_t n) {
  const uint64_t total = kCanaryBytes + n + kCanaryBytes;
  const std::vector<uint8_t> canaries(total, kCanary);
  const Tensor t = Tensor::from_bytes(canaries.data(), total, Shape{static_cast<int64_t>(total)}, DType::U8, device);
  const std::vector<uint8_t> data = pattern(n, n + 1);
  write_buffer_bytes(t, kCanaryBytes, data.data(), n);
  std::vector<uint8_t> got(total);
  read_buffer_bytes(t, 0, got.data(), total);
  std::vector<uint8_t> want = canaries;
  std::copy(data.begin(), data.end(), want.begin() + static_cast<int64_t>(kCanaryBytes));
  uint64_t before = 0, after = 0;
  for (uint64_t i = 0; i < kCanaryBytes; ++i) {
    before += got[i] != kCanary;
    after += got[total - 1 - i] != kCanary;
  }
  const std::string what = "buffer_write of " + std::to_string(n) + " bytes at offset " +
                           std::to_string(kCanaryBytes) + " into a buffer of " + std::to_string(total) +
                           " canary bytes";
  if (before + after > 0)
    return what + " changed " + std::to_string(before) + " of the " + std::to_string(kCanaryBytes) +
           " bytes before them and " + std::to_string(after) + " of the " + std::to_string(kCanaryBytes) +
           " after them: it writes outside the range it was given";
  const std::vector<uint8_t> got_data(got.begin() + static_cast<int64_t>(kCanaryBytes),
                                      got.end() - static_cast<int64_t>(kCanaryBytes));
  if (std::string d = difference(data, got_data); !d.empty())
    return what + ", read back whole: " + d + " (is the offset ignored?)";
  return "";
}

// buffer_wrap_host (ABI 1.5) where the plugin offers it: a buffer over host memory reads that
// memory — as it is when read, not a snapshot — through buffer_read and through an op.
std::string wrapped_host(const Device& device, uint64_t n) {
  auto host = std::shared_ptr<uint8_t[]>(new uint8_t[n + 64]);
  uint8_t* at = host.get() + (64 - reinterpret_cast<uintptr_t>(host.get()) % 64) % 64;
  std::vector<uint8_t> want = pattern(n, n + 2);
  std::copy(want.begin(), want.end(), at);
  const Tensor t = Tensor::from_host_memory(host, at, n, Shape{static_cast<int64_t>(n)}, DType::U8, device);
  if (!t.is_read_only()) return "";  // declined: the host copied, which the checks above cover
  for (uint64_t i = 0; i < n; i += 7) want[i] = at[i] = static_cast<uint8_t>(at[i] ^ 0x5A);
  std::vector<uint8_t> got(n);
  read_buffer_bytes(t, 0, got.data(), n);
  if (std::string d = difference(want, got); !d.empty())
    return "buffer_wrap_host over " + std::to_string(n) +
           " bytes, the host memory changed, then buffer_read: " + d + " (a copy, not a view?)";
  const std::vector<int32_t> widened = t.to(DType::I32).to_vector<int32_t>();
  for (uint64_t i = 0; i < n; ++i)
    if (widened[i] != want[i])
      return "buffer_wrap_host over " + std::to_string(n) + " bytes, then a cast to i32: element " +
             std::to_string(i) + " is " + std::to_string(widened[i]) + ", the memory holds " +
             std::to_string(want[i]);
  return "";
}

// buffer_host_address (ABI 1.7) where the plugin offers it: the address of a buffer is the same on
// every call, holds what buffer_read reads, and is the buffer itself (writes there are read back,
// buffer_write lands there).
std::string host_address(const Device& device, uint64_t n) {
  std::vector<uint8_t> want = pattern(n, n + 3);
  const Tensor t = Tensor::from_bytes(want.data(), n, Shape{static_cast<int64_t>(n)}, DType::U8, device);
  auto* at = static_cast<uint8_t*>(t.host_data());
  if (at == nullptr) return "";  // no address: nothing to check
  const std::string what = "buffer_host_address of a buffer of " + std::to_string(n) + " bytes";
  if (t.host_data() != at) return what + ": a second call gave another address";
  if (std::string d = difference(want, std::vector<uint8_t>(at, at + n)); !d.empty())
    return what + ", then reading there what buffer_write wrote: " + d;
  for (uint64_t i = 0; i < n; i += 5) want[i] = at[i] = static_cast<uint8_t>(at[i] ^ 0x3C);
  std::vector<uint8_t> got(n);
  read_buffer_bytes(t, 0, got.data(), n);
  if (std::string d = difference(want, got); !d.empty())
    return what + ", written there, then buffer_read: " + d + " (the address of a copy?)";
  const std::vector<uint8_t> again = pattern(n, n + 4);
  write_buffer_bytes(t, 0, again.data(), n);
  if (t.host_data() != at) return what + ": the address changed after a buffer_write";
  if (std::string d = difference(again, std::vector<uint8_t>(at, at + n)); !d.empty())
    return what + ", then buffer_write, then reading the address: " + d;
  return "";
}

// buffer_native_memory (ABI 1.8) where the plugin offers it: the same answer on every call (also
// after a buffer_write), a view's first element at its offset from the buffer's, and two live
// buffers at two addresses on one queue. The host cannot read device memory itself: what lies
// there is checked through the collectives that use it (scripts/gpu-check.sh, NCCL).
std::string native_memory(const Device& device, uint64_t n) {
  std::vector<uint8_t> bytes = pattern(n, n + 6);
  const Tensor t = Tensor::from_bytes(bytes.data(), n, Shape{static_cast<int64_t>(n)}, DType::U8, device);
  const std::optional<NativeMemory> m = t.native_memory();
  if (!m) return "";  // no native memory: nothing to check
  const std::string what = "buffer_native_memory of a buffer of " + std::to_string(n) + " bytes";
  write_buffer_bytes(t, 0, bytes.data(), n);
  const std::optional<NativeMemory> again = t.native_memory();
  if (!again || again->data != m->data || again->queue != m->queue || again->kind != m->kind ||
      again->device_ordinal != m->device_ordinal)
    return what + ": a second call (after a buffer_write) gave another answer";
  if (n > 1) {
    const std::optional<NativeMemory> view = t.narrow(0, 1, static_cast<int64_t>(n) - 1).native_memory();
    if (!view || view->data != static_cast<uint8_t*>(m->data) + 1)
      return what + ": a view from element 1 is not one byte further";
  }
  const Tensor other = Tensor::zeros(Shape{static_cast<int64_t>(n)}, DType::U8, device);
  const std::optional<NativeMemory> o = other.native_memory();
  if (!o || o->data == m->data || o->queue != m->queue)
    return what + ": a second live buffer of the device has " +
           (!o ? std::string("no answer") : o->data == m->data ? "the same address" : "another queue");
  return "";
}

// buffer_wrap_host of a plugin of minor 7 or more, where it gives addresses: memory at an odd
// address wrapped for writing, which an op's output then reaches.
std::string wrapped_writable(const Device& device, uint64_t n) {
  auto host = std::shared_ptr<uint8_t[]>(new uint8_t[n + 64]);
  uint8_t* at = host.get() + (64 - reinterpret_cast<uintptr_t>(host.get()) % 64) % 64 + 1;
  std::fill(at, at + n, uint8_t{0});
  HostMemoryOptions writable;
  writable.writable = true;
  Tensor t = Tensor::from_host_memory(host, at, Shape{static_cast<int64_t>(n)}, DType::U8, device,
                                      writable);
  if (!t.is_host_view()) return "";  // the host copied: nothing of 1.7 to check
  const std::string what = "buffer_wrap_host (writable) over " + std::to_string(n) +
                           " bytes at an odd address";
  if (t.host_data() != at) return what + ": buffer_host_address gave another address";
  const std::vector<uint8_t> want = pattern(n, n + 5);
  t.copy_(Tensor::from_bytes(want.data(), n, Shape{static_cast<int64_t>(n)}, DType::U8, device));
  (void)t.host_data();  // waits for the copy
  if (std::string d = difference(want, std::vector<uint8_t>(at, at + n)); !d.empty())
    return what + ", then a copy into it, then reading the memory: " + d;
  return "";
}

}  // namespace

std::string round_trip_problem(const Device& device) {
  // The common size first: a short write shows there as the tail it did not write.
  for (const uint64_t n : {uint64_t{64}, uint64_t{1}, uint64_t{3}, uint64_t{4099}, kMiB + 5}) {
    try {
      if (std::string p = whole_buffer(device, n); !p.empty()) return device.name() + ": " + p;
      if (std::string p = between_canaries(device, n); !p.empty()) return device.name() + ": " + p;
      if (std::string p = wrapped_host(device, n); !p.empty()) return device.name() + ": " + p;
      if (std::string p = host_address(device, n); !p.empty()) return device.name() + ": " + p;
      if (std::string p = wrapped_writable(device, n); !p.empty()) return device.name() + ": " + p;
      if (std::string p = native_memory(device, n); !p.empty()) return device.name() + ": " + p;
    } catch (const std::exception& e) {
      return device.name() + ": with " + std::to_string(n) + " bytes: " + e.what();
    }
  }
  return "";
}

MemorySample sample_memory(const Device& device) {
  MemorySample m;
  m.device_free = device.free_memory();
  const struct mallinfo2 info = ::mallinfo2();
  m.heap_in_use = info.uordblks + info.hblkhd;
  return m;
}

namespace {

uint64_t fell(uint64_t before, uint64_t after) { return before > after ? before - after : 0; }

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
  return text;
}

}  // namespace

LeakCheck check_leaks(const ExecContext& ctx, const std::vector<std::string>& cases) {
  constexpr int kBigBuffers = 64;
  constexpr int kPasses = 3;
  LeakCheck leak;
  for (const std::string& id : cases) (void)execute_case(ctx, id);  // warm every cache
  const std::vector<uint8_t> big = pattern(kMiB, 3);                 // not counted against it
  leak.before = sample_memory(ctx.device);
  for (int pass = 0; pass < kPasses; ++pass) {
    for (const std::string& id : cases) {
      (void)execute_case(ctx, id);
      const CaseBuffers b = case_buffers(ctx.golden->load(id, ctx.seed));
      leak.buffers += b.count;
      leak.bytes += b.bytes;
    }
    ++leak.passes;
  }
  for (int i = 0; i < kBigBuffers; ++i) {
    (void)Tensor::from_bytes(big.data(), big.size(), Shape{static_cast<int64_t>(kMiB)}, DType::U8, ctx.device);
    ++leak.buffers;
    leak.bytes += kMiB;
  }
  leak.after = sample_memory(ctx.device);
  // What did not come back: the device's own memory where it reports it (a host-memory device's
  // free memory is the machine's, which every other process moves), and the heap's. A plugin that
  // keeps what it is given loses all of it; half leaves room for the noise.
  auto leaked = [&](uint64_t lost) { return lost >= kMiB && lost >= leak.bytes / 2; };
  const bool own_memory = (ctx.device.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) == 0;
  const uint64_t device_lost = own_memory && leak.before.device_free && leak.after.device_free
                                   ? fell(*leak.before.device_free, *leak.after.device_free)
                                   : 0;
  const uint64_t heap_lost = fell(leak.after.heap_in_use, leak.before.heap_in_use);  // it grew
  const bool on_device = leaked(device_lost);
  if (on_device || leaked(heap_lost)) {
    const uint64_t lost = on_device ? device_lost : heap_lost;
    const uint64_t per_buffer = leak.bytes / std::max<uint64_t>(leak.buffers, 1);
    const uint64_t about = std::min(leak.buffers, lost / std::max<uint64_t>(per_buffer, 1));
    leak.problem = "buffers leak: the host allocated and freed " + std::to_string(leak.buffers) +
                   " buffers (" + std::to_string(leak.bytes) + " bytes: the smoke set " +
                   std::to_string(leak.passes) + " times, then " + std::to_string(kBigBuffers) +
                   " of 1 MiB), and afterwards " + std::to_string(lost) + " bytes (" + mib(lost) +
                   ", about " + std::to_string(about) + " buffers' worth) more " +
                   (on_device ? "of the device's memory (device_get_free_memory)" : "of the process heap") +
                   " was in use: buffer_free does not give buffers back";
  }
  return leak;
}

}  // namespace wick::conformance
