// wick/sdk/philox.hpp — the counter-based generator behind WICK_OP_RNG_UNIFORM / RNG_NORMAL, so
// that every plugin produces the same stream (docs/ops.md, "Random numbers").
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), as in
// Random123: four 32-bit counter words, two key words, ten rounds. Pure functions, header-only,
// usable from any thread.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace wick::sdk {

using PhiloxBlock = std::array<uint32_t, 4>;

inline PhiloxBlock philox4x32_10(PhiloxBlock ctr, std::array<uint32_t, 2> key) {
  constexpr uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key is bumped before every round but the first
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = kM0 * ctr[0];
    const uint64_t p1 = kM1 * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return ctr;
}

// The block of element `index` of a Wick RNG op: key (seed_lo, seed_hi), counter offset + index
// as a 128-bit little-endian number.
inline PhiloxBlock philox_for_element(uint64_t seed, uint64_t offset, uint64_t index) {
  const uint64_t lo = offset + index;
  const uint32_t carry = lo < offset ? 1u : 0u;
  return philox4x32_10({static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), carry, 0u},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Uniform in [0, 1) with 24 random bits (the f32 stream) or 53 (the f64 stream); both exact.
inline double philox_uniform24(const PhiloxBlock& w) {
  return static_cast<double>(w[0] >> 8) * 0x1p-24;
}
inline double philox_uniform53(const PhiloxBlock& w) {
  const uint64_t bits = (static_cast<uint64_t>(w[0]) << 21) | (w[1] >> 11);
  return static_cast<double>(bits) * 0x1p-53;
}

// A standard normal value by Box-Muller on w0 and w1, in double precision. u1 lies in (0, 1], so
// the logarithm is finite.
inline double philox_normal(const PhiloxBlock& w) {
  const double u1 = (static_cast<double>(w[0]) + 1.0) * 0x1p-32;
  const double u2 = static_cast<double>(w[1]) * 0x1p-32;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

}  // namespace wick::sdk
