// denormals.hpp — [plugins.cpu-onednn] flush_denormals: subnormal floats flushed to zero (x86's
// MXCSR flags FTZ, results, and DAZ, inputs) on the threads that run the plugin's ops.
//
// The flags are per thread. With the option on, the plugin sets them on its OpenMP threads once,
// at initialize (threads OpenMP makes later copy them from the thread that makes them), and on the
// calling thread for the length of each op (FlushScope restores the caller's flags after), so the
// host program's own floating point is left as it was. Default off, as PyTorch's
// torch.set_flush_denormal(False).
#pragma once

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define WICK_CPU_HAS_MXCSR 1
#else
#define WICK_CPU_HAS_MXCSR 0
#endif

namespace wick::cpu {

// Whether this build can flush subnormals (x86-64 only; elsewhere the option is refused).
inline constexpr bool kCanFlushDenormals = WICK_CPU_HAS_MXCSR != 0;

#if WICK_CPU_HAS_MXCSR
inline constexpr unsigned kFlushBits = 0x8040u;  // FTZ (bit 15) | DAZ (bit 6)

inline void flush_denormals_on_this_thread() { _mm_setcsr(_mm_getcsr() | kFlushBits); }

// Sets FTZ and DAZ on the calling thread while alive (when `on`), then puts its flags back.
class FlushScope {
 public:
  // Off: saved_ stands as if both flags were set already, so nothing is read or changed.
  explicit FlushScope(bool on) : saved_(on ? _mm_getcsr() : kFlushBits) {
    if (changes()) _mm_setcsr(saved_ | kFlushBits);
  }
  ~FlushScope() {
    // Only the two flags go back: exception flags the op raised stay raised, as without the scope.
    if (changes()) _mm_setcsr((_mm_getcsr() & ~kFlushBits) | (saved_ & kFlushBits));
  }
  FlushScope(const FlushScope&) = delete;
  FlushScope& operator=(const FlushScope&) = delete;

 private:
  bool changes() const { return (saved_ & kFlushBits) != kFlushBits; }
  unsigned saved_;
};
#else
inline void flush_denormals_on_this_thread() {}
class FlushScope {
 public:
  explicit FlushScope(bool) {}
};
#endif

}  // namespace wick::cpu
