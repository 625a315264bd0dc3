// wick/sdk/dtype.hpp — element types for plugin (and host) code: sizes, names, the two 16-bit
// float types with round-to-nearest-even conversion, and one dtype switch (visit_dtype).
#pragma once

#include <wick/wick_plugin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <stdexcept>
#include <string>

namespace wick::sdk {

// IEEE 754 binary16, stored as its bits; arithmetic goes through float.
struct f16 {
  uint16_t bits = 0;
  f16() = default;
  explicit f16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN (keep NaN quiet and non-zero)
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
    if (abs < 0x38800000u) {  // result is subnormal or zero: round abs / 2^-24 to an integer
      float a;
      std::memcpy(&a, &abs, 4);
      // Adding 0.5 (2^-1) aligns the mantissa so that the FPU rounds to nearest-even for us.
      float r = a + 0.5f;
      uint32_t rb;
      std::memcpy(&rb, &r, 4);
      return static_cast<uint16_t>(sign | (rb - 0x3f000000u));
    }
    // Normal: rebias exponent (127 -> 15) and round the 13 dropped bits to nearest-even.
    uint32_t m = abs + 0xc8000000u;  // subtract (127-15) << 23
    m += 0x0fffu + ((m >> 13) & 1u);
    return static_cast<uint16_t>(sign | (m >> 13));
  }
  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
      x = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
      x = sign | ((exp + 112u) << 23) | (man << 13);
    } else {  // zero or subnormal: man * 2^-24
      float f = static_cast<float>(man) * 5.9604644775390625e-8f;
      std::memcpy(&x, &f, 4);
      x |= sign;
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

// bfloat16: the upper 16 bits of an f32, rounded to nearest-even.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

inline size_t dtype_size(wick_dtype t) {
  switch (t) {
    case WICK_DTYPE_F64: case WICK_DTYPE_I64: case WICK_DTYPE_U64: return 8;
    case WICK_DTYPE_F32: case WICK_DTYPE_I32: case WICK_DTYPE_U32: return 4;
    case WICK_DTYPE_F16: case WICK_DTYPE_BF16: case WICK_DTYPE_I16: return 2;
    case WICK_DTYPE_I8: case WICK_DTYPE_U8: case WICK_DTYPE_BOOL: return 1;
    default: return 0;
  }
}

inline const char* dtype_name(wick_dtype t) {
  switch (t) {
    case WICK_DTYPE_F32: return "f32";
    case WICK_DTYPE_F64: return "f64";
    case WICK_DTYPE_F16: return "f16";
    case WICK_DTYPE_BF16: return "bf16";
    case WICK_DTYPE_I8: return "i8";
    case WICK_DTYPE_U8: return "u8";
    case WICK_DTYPE_I16: return "i16";
    case WICK_DTYPE_I32: return "i32";
    case WICK_DTYPE_I64: return "i64";
    case WICK_DTYPE_U32: return "u32";
    case WICK_DTYPE_U64: return "u64";
    case WICK_DTYPE_BOOL: return "bool";
    default: return "invalid";
  }
}

inline bool dtype_is_float(wick_dtype t) {
  return t == WICK_DTYPE_F32 || t == WICK_DTYPE_F64 || t == WICK_DTYPE_F16 || t == WICK_DTYPE_BF16;
}

template <class T>
struct type_tag {
  using type = T;
};

// The dtype of a C++ element type (the inverse of visit_dtype); WICK_DTYPE_INVALID for others.
template <class T>
inline constexpr wick_dtype dtype_of =
    std::is_same_v<T, float>      ? WICK_DTYPE_F32
    : std::is_same_v<T, double>   ? WICK_DTYPE_F64
    : std::is_same_v<T, f16>      ? WICK_DTYPE_F16
    : std::is_same_v<T, bf16>     ? WICK_DTYPE_BF16
    : std::is_same_v<T, int8_t>   ? WICK_DTYPE_I8
    : std::is_same_v<T, uint8_t>  ? WICK_DTYPE_U8
    : std::is_same_v<T, int16_t>  ? WICK_DTYPE_I16
    : std::is_same_v<T, int32_t>  ? WICK_DTYPE_I32
    : std::is_same_v<T, int64_t>  ? WICK_DTYPE_I64
    : std::is_same_v<T, uint32_t> ? WICK_DTYPE_U32
    : std::is_same_v<T, uint64_t> ? WICK_DTYPE_U64
    : std::is_same_v<T, bool>     ? WICK_DTYPE_BOOL
                                  : WICK_DTYPE_INVALID;

// The one dtype switch: calls f(type_tag<T>{}) with the C++ type of dtype t.
template <class F>
decltype(auto) visit_dtype(wick_dtype t, F&& f) {
  switch (t) {
    case WICK_DTYPE_F32: return f(type_tag<float>{});
    case WICK_DTYPE_F64: return f(type_tag<double>{});
    case WICK_DTYPE_F16: return f(type_tag<f16>{});
    case WICK_DTYPE_BF16: return f(type_tag<bf16>{});
    case WICK_DTYPE_I8: return f(type_tag<int8_t>{});
    case WICK_DTYPE_U8: return f(type_tag<uint8_t>{});
    case WICK_DTYPE_I16: return f(type_tag<int16_t>{});
    case WICK_DTYPE_I32: return f(type_tag<int32_t>{});
    case WICK_DTYPE_I64: return f(type_tag<int64_t>{});
    case WICK_DTYPE_U32: return f(type_tag<uint32_t>{});
    case WICK_DTYPE_U64: return f(type_tag<uint64_t>{});
    case WICK_DTYPE_BOOL: return f(type_tag<bool>{});
    default: throw std::invalid_argument("invalid dtype " + std::to_string(static_cast<int>(t)));
  }
}

}  // namespace wick::sdk
