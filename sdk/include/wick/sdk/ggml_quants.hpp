// wick/sdk/ggml_quants.hpp — the reference block quantization of GGML/GGUF tensors (llama.cpp's
// formats): block layouts, and scalar, deterministic quantize and dequantize, bit-exact with
// llama.cpp's ggml-quants.c (quantize_row_*_ref, dequantize_row_*) and the `gguf` package's NumPy
// code (gguf.quants) wherever each defines a result (tests/test_ggml_quants.cpp checks both). This
// header holds the formats of 32 elements (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1) and the dispatch on
// a ggml::Type; <wick/sdk/ggml_quants_k.hpp> the K-quants, the shared helpers and the row loops
// (see there for the rules on floating-point contraction and on NaN and infinite input).
//
//   quantize_row(Type::Q4_K, x, bytes, n);      // n floats -> n / 256 blocks of 144 bytes
//   dequantize_row(Type::Q4_K, bytes, y, n);
//   quantize_row(x, blocks, n);                 // typed: BlockQ4_K* blocks
//
// A reference for building files and checking kernels, not a fast path: one element at a time.
#pragma once

#include <wick/sdk/ggml_quants_k.hpp>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

// No fused multiply-adds here either (see ggml_quants_k.hpp).
#if defined(__clang__)
#pragma float_control(push)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace wick::sdk::ggml {

// ---- Block layouts: 32 elements each; element j of the block is x[j]. ----

// Q4_0: w = d * (q - 8), q in 0..15 (d = max / -8, the max of largest magnitude, lands on q = 0).
struct BlockQ4_0 {
  static constexpr Type kType = Type::Q4_0;
  f16 d;
  uint8_t qs[16];  // element j (< 16) in the low nibble of qs[j], element j + 16 in its high nibble
};

// Q4_1: w = d * q + m, q in 0..15 (m the block's min, d its range / 15).
struct BlockQ4_1 {
  static constexpr Type kType = Type::Q4_1;
  f16 d;
  f16 m;
  uint8_t qs[16];  // as Q4_0's
};

// Q5_0: w = d * (q - 16), q in 0..31.
struct BlockQ5_0 {
  static constexpr Type kType = Type::Q5_0;
  f16 d;
  uint8_t qh[4];   // bit 4 of q of element j: bit j of the little-endian uint32 qh
  uint8_t qs[16];  // bits 0..3 of q, laid out as Q4_0's
};

// Q5_1: w = d * q + m, q in 0..31.
struct BlockQ5_1 {
  static constexpr Type kType = Type::Q5_1;
  f16 d;
  f16 m;
  uint8_t qh[4];  // as Q5_0's
  uint8_t qs[16];
};

// Q8_0: w = d * q, q in -127..127 (d = max |x| / 127).
struct BlockQ8_0 {
  static constexpr Type kType = Type::Q8_0;
  f16 d;
  int8_t qs[32];
};

// Q8_1: Q8_0 plus s = d * sum(q), which the dot products with Q4_1 and Q5_1 use for the min.
struct BlockQ8_1 {
  static constexpr Type kType = Type::Q8_1;
  f16 d;
  f16 s;
  int8_t qs[32];
};

static_assert(sizeof(BlockQ4_0) == traits(Type::Q4_0).type_size);
static_assert(sizeof(BlockQ4_1) == traits(Type::Q4_1).type_size);
static_assert(sizeof(BlockQ5_0) == traits(Type::Q5_0).type_size);
static_assert(sizeof(BlockQ5_1) == traits(Type::Q5_1).type_size);
static_assert(sizeof(BlockQ8_0) == traits(Type::Q8_0).type_size);
static_assert(sizeof(BlockQ8_1) == traits(Type::Q8_1).type_size);

namespace detail {

// The least and greatest of a 32-element block, scanned in order as ggml does (Q4_1, Q5_1).
inline std::pair<float, float> min_max32(const float* x) {
  float min = std::numeric_limits<float>::max(), max = -std::numeric_limits<float>::max();
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  return {min, max};
}

inline uint32_t load_qh(const uint8_t* qh) {
  return qh[0] | (uint32_t{qh[1]} << 8) | (uint32_t{qh[2]} << 16) | (uint32_t{qh[3]} << 24);
}

inline void store_qh(uint32_t bits, uint8_t* qh) {
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(bits >> (8 * k));
}

// ggml's (int8_t)(v): the float truncated to an integer, then its low byte.
inline int8_t to_int8(float v) {
  return static_cast<int8_t>(trunc_int(v));
}

// Q5_0's and Q5_1's packing of q (0..31) into qs (low 4 bits) and qh (bit 4).
template <class Block>
void pack_q5(const uint8_t* q, Block& b) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    b.qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    qh |= ((q[j] & 0x10u) >> 4) << j;
    qh |= ((q[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  store_qh(qh, b.qh);
}

// Q5_0's and Q5_1's q of element j.
template <class Block>
int unpack_q5(const Block& b, int j) {
  const int low = (b.qs[j % 16] >> (j < 16 ? 0 : 4)) & 0x0F;
  return low | static_cast<int>(((load_qh(b.qh) >> j) & 1u) << 4);
}

}  // namespace detail

// ---- Quantize (ggml's quantize_row_*_ref; the gguf package computes the same bytes). ----

inline void quantize_block(const float* x, BlockQ4_0& b) {
  b = BlockQ4_0{};
  if (!detail::all_finite(x, 32)) {
    b.d = detail::nan_half();
    return;
  }
  const float d = detail::signed_absmax(32, x) / -8;
  const float id = d ? 1.0f / d : 0.0f;
  b.d = f16(d);
  for (int j = 0; j < 16; ++j) {
    // Truncating q + 0.5 (+ 8, the offset) rounds half up; the far end, +8, clamps to 15.
    const auto x0 = static_cast<uint8_t>(std::min<int>(15, detail::to_int8(x[j] * id + 8.5f)));
    const auto x1 = static_cast<uint8_t>(std::min<int>(15, detail::to_int8(x[j + 16] * id + 8.5f)));
    b.qs[j] = static_cast<uint8_t>(x0 | (x1 << 4));
  }
}

inline void quantize_block(const float* x, BlockQ4_1& b) {
  b = BlockQ4_1{};
  if (!detail::all_finite(x, 32)) {
    b.d = b.m = detail::nan_half();
    return;
  }
  const auto [min, max] = detail::min_max32(x);
  const float d = (max - min) / ((1 << 4) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  b.d = f16(d);
  b.m = f16(min);
  for (int j = 0; j < 16; ++j) {
    const auto x0 =
        static_cast<uint8_t>(std::min<int>(15, detail::to_int8((x[j] - min) * id + 0.5f)));
    const auto x1 =
        static_cast<uint8_t>(std::min<int>(15, detail::to_int8((x[j + 16] - min) * id + 0.5f)));
    b.qs[j] = static_cast<uint8_t>(x0 | (x1 << 4));
  }
}

inline void quantize_block(const float* x, BlockQ5_0& b) {
  b = BlockQ5_0{};
  if (!detail::all_finite(x, 32)) {
    b.d = detail::nan_half();
    return;
  }
  const float d = detail::signed_absmax(32, x) / -16;
  const float id = d ? 1.0f / d : 0.0f;
  b.d = f16(d);
  uint8_t q[32];
  for (int j = 0; j < 32; ++j)
    q[j] = static_cast<uint8_t>(std::min<int>(31, detail::to_int8(x[j] * id + 16.5f)));
  detail::pack_q5(q, b);
}

inline void quantize_block(const float* x, BlockQ5_1& b) {
  b = BlockQ5_1{};
  if (!detail::all_finite(x, 32)) {
    b.d = b.m = detail::nan_half();
    return;
  }
  const auto [min, max] = detail::min_max32(x);
  const float d = (max - min) / ((1 << 5) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  b.d = f16(d);
  b.m = f16(min);
  uint8_t q[32];  // ggml does not clamp here: (max - min) * id + 0.5 stays below 32
  for (int j = 0; j < 32; ++j)
    q[j] = static_cast<uint8_t>(detail::trunc_int((x[j] - min) * id + 0.5f));
  detail::pack_q5(q, b);
}

namespace detail {

// Q8_0's and Q8_1's q: x / d rounded half away from zero (roundf), d = max |x| / 127.
template <class Block>
float quantize_q8(const float* x, Block& b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / ((1 << 7) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  b.d = f16(d);
  for (int j = 0; j < 32; ++j) b.qs[j] = to_int8(std::round(x[j] * id));
  return d;
}

}  // namespace detail

inline void quantize_block(const float* x, BlockQ8_0& b) {
  b = BlockQ8_0{};
  if (!detail::all_finite(x, 32)) {
    b.d = detail::nan_half();
    return;
  }
  detail::quantize_q8(x, b);
}

inline void quantize_block(const float* x, BlockQ8_1& b) {
  b = BlockQ8_1{};
  if (!detail::all_finite(x, 32)) {
    b.d = b.s = detail::nan_half();
    return;
  }
  const float d = detail::quantize_q8(x, b);
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += b.qs[j];
  b.s = f16(sum * d);  // from the unrounded d, as ggml does
}

// ---- Dequantize (ggml's dequantize_row_*; gguf's dequantize computes the same floats). ----

inline void dequantize_block(const BlockQ4_0& b, float* y) {
  const float d = float(b.d);
  for (int j = 0; j < 32; ++j) y[j] = (((b.qs[j % 16] >> (j < 16 ? 0 : 4)) & 0x0F) - 8) * d;
}

inline void dequantize_block(const BlockQ4_1& b, float* y) {
  const float d = float(b.d), m = float(b.m);
  for (int j = 0; j < 32; ++j) y[j] = ((b.qs[j % 16] >> (j < 16 ? 0 : 4)) & 0x0F) * d + m;
}

inline void dequantize_block(const BlockQ5_0& b, float* y) {
  const float d = float(b.d);
  for (int j = 0; j < 32; ++j) y[j] = (detail::unpack_q5(b, j) - 16) * d;
}

inline void dequantize_block(const BlockQ5_1& b, float* y) {
  const float d = float(b.d), m = float(b.m);
  for (int j = 0; j < 32; ++j) y[j] = detail::unpack_q5(b, j) * d + m;
}

inline void dequantize_block(const BlockQ8_0& b, float* y) {
  const float d = float(b.d);
  for (int j = 0; j < 32; ++j) y[j] = b.qs[j] * d;
}

// ggml has no dequantize for Q8_1 (it is only ever a dot-product operand); s plays no part.
inline void dequantize_block(const BlockQ8_1& b, float* y) {
  const float d = float(b.d);
  for (int j = 0; j < 32; ++j) y[j] = b.qs[j] * d;
}

// ---- By ggml::Type, on raw bytes (any alignment: each block is copied in or out). ----

// The types quantize_row and dequantize_row take.
inline constexpr Type kReferenceTypes[] = {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1,
                                           Type::Q8_0, Type::Q8_1, Type::Q2_K, Type::Q3_K,
                                           Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::Q8_K};

// Whether quantize_row and dequantize_row take `type`.
constexpr bool has_reference(Type type) {
  for (Type r : kReferenceTypes)
    if (r == type) return true;
  return false;
}

// Calls f(std::type_identity<Block>{}) for type's block struct; throws std::invalid_argument for a
// type without one here (the plain types, the IQ and ternary formats).
template <class F>
void visit_block_type(Type type, const char* what, F&& f) {
  switch (type) {
    case Type::Q4_0: return f(std::type_identity<BlockQ4_0>{});
    case Type::Q4_1: return f(std::type_identity<BlockQ4_1>{});
    case Type::Q5_0: return f(std::type_identity<BlockQ5_0>{});
    case Type::Q5_1: return f(std::type_identity<BlockQ5_1>{});
    case Type::Q8_0: return f(std::type_identity<BlockQ8_0>{});
    case Type::Q8_1: return f(std::type_identity<BlockQ8_1>{});
    case Type::Q2_K: return f(std::type_identity<BlockQ2_K>{});
    case Type::Q3_K: return f(std::type_identity<BlockQ3_K>{});
    case Type::Q4_K: return f(std::type_identity<BlockQ4_K>{});
    case Type::Q5_K: return f(std::type_identity<BlockQ5_K>{});
    case Type::Q6_K: return f(std::type_identity<BlockQ6_K>{});
    case Type::Q8_K: return f(std::type_identity<BlockQ8_K>{});
    default: break;
  }
  throw std::invalid_argument(
      "ggml " + std::string(what) + ": no reference implementation for type " + type_name(type) +
      " (these have one: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K)");
}

// Quantizes the n floats at x (a whole number of blocks) into n / block size blocks at `blocks`.
inline void quantize_row(Type type, const float* x, void* blocks, int64_t n) {
  visit_block_type(type, "quantize_row", [&](auto tag) {
    using Block = typename decltype(tag)::type;
    constexpr int64_t kSize = traits(Block::kType).block_size;
    const int64_t count = detail::block_count(Block::kType, n, "quantize_row");
    auto* out = static_cast<unsigned char*>(blocks);
    for (int64_t i = 0; i < count; ++i) {
      Block b;
      quantize_block(x + i * kSize, b);
      std::memcpy(out + i * sizeof(Block), &b, sizeof(Block));
    }
  });
}

// Dequantizes the n / block size blocks at `blocks` into n floats at y.
inline void dequantize_row(Type type, const void* blocks, float* y, int64_t n) {
  visit_block_type(type, "dequantize_row", [&](auto tag) {
    using Block = typename decltype(tag)::type;
    constexpr int64_t kSize = traits(Block::kType).block_size;
    const int64_t count = detail::block_count(Block::kType, n, "dequantize_row");
    const auto* in = static_cast<const unsigned char*>(blocks);
    for (int64_t i = 0; i < count; ++i) {
      Block b;
      std::memcpy(&b, in + i * sizeof(Block), sizeof(Block));
      dequantize_block(b, y + i * kSize);
    }
  });
}

}  // namespace wick::sdk::ggml

#if defined(__clang__)
#pragma float_control(pop)
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif
