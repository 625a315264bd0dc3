// narrow_types.cpp — the host codecs of ONNX's narrow element types (wick/onnx/narrow_types.hpp).
#include <wick/onnx/narrow_types.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace wick::onnx::narrow {

namespace {

// A small float format: exponent and mantissa widths, bias, and how it spells NaN and infinity.
enum class Specials {
  kFn,    // no infinity; NaN is S.1111.111 (float8e4m3fn)
  kIeee,  // an all-ones exponent is infinity (mantissa 0) or NaN (float8e5m2)
  kFnuz,  // no infinity, no -0: 0x80 is the one NaN (the fnuz types)
  kNone,  // neither (float4e2m1)
};
struct Format {
  int e, m, bias;
  Specials specials;
  uint32_t max_code;  // the largest finite positive code
};

Format format(int32_t t) {
  switch (t) {
    case kFloat8e4m3fn: return {4, 3, 7, Specials::kFn, 0x7E};
    case kFloat8e4m3fnuz: return {4, 3, 8, Specials::kFnuz, 0x7F};
    case kFloat8e5m2: return {5, 2, 15, Specials::kIeee, 0x7B};
    case kFloat8e5m2fnuz: return {5, 2, 16, Specials::kFnuz, 0x7F};
    case kFloat4e2m1: return {2, 1, 1, Specials::kNone, 0x7};
    default: throw std::invalid_argument("ONNX data type " + std::to_string(t) + " is not a small float format");
  }
}

// The magnitude of a positive code (no specials).
double magnitude(const Format& f, uint32_t code) {
  const uint32_t exp = (code >> f.m) & ((1u << f.e) - 1), mant = code & ((1u << f.m) - 1);
  const double frac = static_cast<double>(mant) / static_cast<double>(1u << f.m);
  return exp != 0 ? std::ldexp(1.0 + frac, static_cast<int>(exp) - f.bias) : std::ldexp(frac, 1 - f.bias);
}

uint32_t sign_mask(const Format& f) { return 1u << (f.e + f.m); }

uint32_t nan_code(const Format& f, bool negative) {
  switch (f.specials) {
    case Specials::kFn: return (sign_mask(f) - 1) | (negative ? sign_mask(f) : 0);
    case Specials::kIeee: return (((1u << f.e) - 1) << f.m) | (1u << (f.m - 1)) | (negative ? sign_mask(f) : 0);
    case Specials::kFnuz: return sign_mask(f);
    // float4e2m1 has no NaN: ml_dtypes (onnx's reference) gives -0 for NaN and +0 for -NaN.
    case Specials::kNone: return negative ? 0 : sign_mask(f);
  }
  return 0;
}

// What a value past the largest finite one becomes without saturation.
uint32_t overflow_code(const Format& f, bool negative) {
  if (f.specials == Specials::kIeee) return (((1u << f.e) - 1) << f.m) | (negative ? sign_mask(f) : 0);
  return nan_code(f, negative);
}

// Round-to-nearest-even of a >= 0 to a positive code; `overflow` when it rounds past the largest.
uint32_t round_magnitude(const Format& f, double a, bool& overflow) {
  overflow = false;
  uint32_t c = 0;
  while (c < f.max_code && magnitude(f, c + 1) <= a) ++c;
  const double lo = magnitude(f, c);
  if (lo == a) return c;
  const double hi = c < f.max_code ? magnitude(f, c + 1) : lo + (lo - magnitude(f, c - 1));
  const bool up = a - lo > hi - a || (a - lo == hi - a && (c & 1) != 0);
  if (!up) return c;
  if (c == f.max_code) {
    overflow = true;
    return c;
  }
  return c + 1;
}

uint32_t encode_e8m0(double v, bool saturate, const std::string& round_mode) {
  const float x = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return 0xFF;  // NaN and infinities: the NaN code
  bool round_up = false;
  if (round_mode == "nearest") {
    const bool g = (bits & 0x400000) != 0, r = (bits & 0x200000) != 0, s = (bits & 0x1FFFFF) != 0;
    round_up = g && (r || s || exponent > 0);
  } else if (round_mode == "up") {
    round_up = (bits & 0x7FFFFF) != 0;
  } else if (round_mode != "down") {
    throw std::invalid_argument("round_mode '" + round_mode + "'");
  }
  if (round_up && !(saturate && exponent == 0xFE)) ++exponent;
  return exponent;  // 0xFF (NaN) when an unsaturated 0xFE rounded up
}

struct IntRange {
  int64_t lo, hi;
};
IntRange int_range(int32_t t) {
  switch (t) {
    case kInt4: return {-8, 7};
    case kUint4: return {0, 15};
    case kInt2: return {-2, 1};
    case kUint2: return {0, 3};
    default: throw std::invalid_argument("ONNX data type " + std::to_string(t) + " is not a narrow integer type");
  }
}

}  // namespace

bool is_narrow(int32_t t) { return t >= kFloat8e4m3fn && t <= kInt2; }
bool is_float(int32_t t) {
  return t == kFloat8e4m3fn || t == kFloat8e4m3fnuz || t == kFloat8e5m2 || t == kFloat8e5m2fnuz ||
         t == kFloat4e2m1 || t == kFloat8e8m0;
}
const char* name(int32_t t) {
  switch (t) {
    case kFloat8e4m3fn: return "float8e4m3fn";
    case kFloat8e4m3fnuz: return "float8e4m3fnuz";
    case kFloat8e5m2: return "float8e5m2";
    case kFloat8e5m2fnuz: return "float8e5m2fnuz";
    case kUint4: return "uint4";
    case kInt4: return "int4";
    case kFloat4e2m1: return "float4e2m1";
    case kFloat8e8m0: return "float8e8m0";
    case kUint2: return "uint2";
    case kInt2: return "int2";
    default: return "?";
  }
}
DType holder(int32_t t) {
  if (is_float(t)) return DType::F32;
  return t == kInt4 || t == kInt2 ? DType::I8 : DType::U8;
}
int bits(int32_t t) {
  if (t == kUint4 || t == kInt4 || t == kFloat4e2m1) return 4;
  return t == kUint2 || t == kInt2 ? 2 : 8;
}

double decode(int32_t t, uint32_t code) {
  if (t == kFloat8e8m0) return code == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(code) - 127);
  if (!is_float(t)) {
    const int b = bits(t);
    const int64_t v = code & ((1u << b) - 1);
    return static_cast<double>(int_range(t).lo < 0 && v >= (int64_t{1} << (b - 1)) ? v - (int64_t{1} << b) : v);
  }
  const Format f = format(t);
  const bool negative = (code & sign_mask(f)) != 0;
  const uint32_t exp = (code >> f.m) & ((1u << f.e) - 1), mant = code & ((1u << f.m) - 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.specials == Specials::kFnuz && code == sign_mask(f)) return nan;
  if (f.specials == Specials::kFn && exp == (1u << f.e) - 1 && mant == (1u << f.m) - 1) return nan;
  if (f.specials == Specials::kIeee && exp == (1u << f.e) - 1)
    return mant != 0 ? nan : (negative ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
  const double a = magnitude(f, code & (sign_mask(f) - 1));
  return negative ? -a : a;
}

std::vector<double> unpack(int32_t t, const std::vector<unsigned char>& raw, size_t n) {
  const int b = bits(t);
  const size_t per_byte = static_cast<size_t>(8 / b);
  if (raw.size() != (n + per_byte - 1) / per_byte)
    throw std::invalid_argument(std::to_string(raw.size()) + " bytes for " + std::to_string(n) + " " + name(t) +
                                " elements");
  std::vector<double> v(n);
  for (size_t k = 0; k < n; ++k) {
    const unsigned char byte = raw[k / per_byte];
    const uint32_t code = (byte >> (b * static_cast<int>(k % per_byte))) & ((1u << b) - 1);
    v[k] = decode(t, code);
  }
  return v;
}

uint32_t encode_float(int32_t t, double v, bool saturate, const std::string& round_mode) {
  if (t == kFloat8e8m0) return encode_e8m0(v, saturate, round_mode);
  const Format f = format(t);
  const bool negative = std::signbit(v);
  if (std::isnan(v)) return nan_code(f, negative);
  // float4e2m1 has neither infinity nor NaN: it always saturates (as ml_dtypes, onnx's reference).
  const bool clip = saturate || f.specials == Specials::kNone;
  double a = std::fabs(v);
  if (std::isinf(a) && !clip) return overflow_code(f, negative);
  if (clip) a = std::min(a, magnitude(f, f.max_code));
  bool overflow = false;
  const uint32_t c = round_magnitude(f, a, overflow);
  if (overflow) return overflow_code(f, negative);
  if (!negative || (c == 0 && f.specials == Specials::kFnuz)) return c;  // fnuz has no -0
  return c | sign_mask(f);
}

int64_t cast_int(int32_t t, double v, bool from_float) {
  const IntRange r = int_range(t);
  if (from_float) {
    if (std::isnan(v)) return 0;
    const double x = std::trunc(v);
    return x >= static_cast<double>(r.lo) && x <= static_cast<double>(r.hi) ? static_cast<int64_t>(x) : 0;
  }
  const int b = bits(t);
  const int64_t low = static_cast<int64_t>(v) & ((int64_t{1} << b) - 1);
  return r.lo < 0 && low >= (int64_t{1} << (b - 1)) ? low - (int64_t{1} << b) : low;
}

int64_t saturate_int(int32_t t, double v) {
  const IntRange r = int_range(t);
  if (v <= static_cast<double>(r.lo)) return r.lo;
  if (v >= static_cast<double>(r.hi)) return r.hi;
  return static_cast<int64_t>(v);
}

double cast_value(int32_t t, double v, bool from_float, bool saturate, const std::string& round_mode) {
  if (is_float(t)) return decode(t, encode_float(t, v, saturate, round_mode));
  return static_cast<double>(cast_int(t, v, from_float));
}

}  // namespace wick::onnx::narrow
