// ONNX's narrow types (wick/onnx/narrow_types.hpp): decoding stored codes and rounding to each
// type's value set as ONNX's Cast and QuantizeLinear specify, on hand-worked values: ties to even,
// saturation, NaN and infinity per type, float8e8m0's round modes, packed 4- and 2-bit data. (The
// whole value sets are checked against ml_dtypes, onnx's reference, by ONNX 1.23.2's node tests:
// ctest conformance_onnx_node_tests.)
#include <wick/onnx/narrow_types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

using namespace wick::onnx::narrow;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
double cast_f(int32_t t, double v, bool saturate = true) { return cast_value(t, v, true, saturate, "up"); }
}  // namespace

TEST_CASE("float8e4m3fn: bias 7 / max 448 / S.1111.111 the only NaN / no infinity") {
  CHECK(decode(kFloat8e4m3fn, 0x38) == 1.0);
  CHECK(decode(kFloat8e4m3fn, 0x7E) == 448.0);
  CHECK(decode(kFloat8e4m3fn, 0x01) == std::ldexp(1.0, -9));  // smallest subnormal: 1/8 * 2^-6
  CHECK(std::isnan(decode(kFloat8e4m3fn, 0x7F)));
  CHECK(std::signbit(decode(kFloat8e4m3fn, 0x80)));  // -0
  // 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39): to the even code; 1.1875 likewise to 1.25.
  CHECK(cast_f(kFloat8e4m3fn, 1.0625) == 1.0);
  CHECK(cast_f(kFloat8e4m3fn, 1.1875) == 1.25);
  CHECK(cast_f(kFloat8e4m3fn, 1000) == 448.0);
  CHECK(cast_f(kFloat8e4m3fn, kInf) == 448.0);
  CHECK(cast_f(kFloat8e4m3fn, -kInf) == -448.0);
  CHECK(std::isnan(cast_f(kFloat8e4m3fn, kNaN)));
  // saturate = 0: [x] > 448 is NaN; 464, halfway to the next step (480), rounds to even 448.
  CHECK(cast_f(kFloat8e4m3fn, 464, false) == 448.0);
  CHECK(std::isnan(cast_f(kFloat8e4m3fn, 465, false)));
  CHECK(std::isnan(cast_f(kFloat8e4m3fn, kInf, false)));
  CHECK(std::signbit(cast_f(kFloat8e4m3fn, -1e-7)));  // rounds to -0, which the type has
}

TEST_CASE("float8e4m3fnuz: bias 8 / max 240 / 0x80 the NaN / no -0") {
  CHECK(decode(kFloat8e4m3fnuz, 0x40) == 1.0);
  CHECK(decode(kFloat8e4m3fnuz, 0x7F) == 240.0);
  CHECK(std::isnan(decode(kFloat8e4m3fnuz, 0x80)));
  CHECK(encode_float(kFloat8e4m3fnuz, -0.0, true, "up") == 0x00);
  CHECK(encode_float(kFloat8e4m3fnuz, -1e-7, true, "up") == 0x00);
  CHECK(cast_f(kFloat8e4m3fnuz, 300) == 240.0);
  CHECK(encode_float(kFloat8e4m3fnuz, kInf, false, "up") == 0x80);
  CHECK(encode_float(kFloat8e4m3fnuz, -kNaN, true, "up") == 0x80);
}

TEST_CASE("float8e5m2: bias 15 / max 57344 / IEEE infinities and NaNs") {
  CHECK(decode(kFloat8e5m2, 0x3C) == 1.0);
  CHECK(decode(kFloat8e5m2, 0x7B) == 57344.0);
  CHECK(decode(kFloat8e5m2, 0x7C) == kInf);
  CHECK(decode(kFloat8e5m2, 0xFC) == -kInf);
  CHECK(std::isnan(decode(kFloat8e5m2, 0x7D)));
  CHECK(decode(kFloat8e5m2, 0x01) == std::ldexp(1.0, -16));
  CHECK(cast_f(kFloat8e5m2, kInf) == 57344.0);
  // saturate = 0: 61440 is halfway between 57344 (odd code 0x7B) and 65536: to even, infinity.
  CHECK(cast_f(kFloat8e5m2, 61439, false) == 57344.0);
  CHECK(cast_f(kFloat8e5m2, 61440, false) == kInf);
  CHECK(cast_f(kFloat8e5m2, -kInf, false) == -kInf);
  CHECK(cast_f(kFloat8e5m2, 1.125) == 1.0);  // halfway between 1.0 (0x3C) and 1.25 (0x3D)
}

TEST_CASE("float8e5m2fnuz: bias 16 / max 57344 / 0x80 the NaN") {
  CHECK(decode(kFloat8e5m2fnuz, 0x40) == 1.0);
  CHECK(decode(kFloat8e5m2fnuz, 0x01) == std::ldexp(1.0, -17));
  CHECK(decode(kFloat8e5m2fnuz, 0x7F) == 57344.0);
  CHECK(std::isnan(cast_f(kFloat8e5m2fnuz, kInf, false)));
  CHECK(cast_f(kFloat8e5m2fnuz, kInf) == 57344.0);
}

TEST_CASE("float4e2m1: 0 / 0.5 / 1 / 1.5 / 2 / 3 / 4 / 6 / always saturates") {
  const double values[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint32_t c = 0; c < 8; ++c) {
    CHECK(decode(kFloat4e2m1, c) == values[c]);
    CHECK(decode(kFloat4e2m1, c | 8) == -values[c]);
  }
  CHECK(cast_f(kFloat4e2m1, 2.5) == 2.0);   // halfway: to the even code 4 (2.0), not 5 (3.0)
  CHECK(cast_f(kFloat4e2m1, 5.0) == 4.0);   // halfway between 4 (code 6) and 6 (code 7)
  CHECK(cast_f(kFloat4e2m1, 0.75) == 1.0);  // halfway between 0.5 (code 1) and 1 (code 2)
  CHECK(cast_f(kFloat4e2m1, 0.25) == 0.0);
  CHECK(cast_f(kFloat4e2m1, 100, false) == 6.0);
  CHECK(cast_f(kFloat4e2m1, -kInf) == -6.0);
}

TEST_CASE("float8e8m0: 2^(code - 127) / 0xFF NaN / round_mode up / down / nearest / saturate") {
  CHECK(decode(kFloat8e8m0, 127) == 1.0);
  CHECK(decode(kFloat8e8m0, 0) == std::ldexp(1.0, -127));
  CHECK(std::isnan(decode(kFloat8e8m0, 0xFF)));
  CHECK(encode_float(kFloat8e8m0, 1.1, true, "up") == 128);
  CHECK(encode_float(kFloat8e8m0, 1.1, true, "down") == 127);
  CHECK(encode_float(kFloat8e8m0, 1.1, true, "nearest") == 127);
  CHECK(encode_float(kFloat8e8m0, 1.5, true, "nearest") == 128);  // the tie rounds up
  CHECK(encode_float(kFloat8e8m0, 2.0, true, "up") == 128);       // exact: no rounding
  const double big = 3.0e38;                                        // exponent field 254, a fraction
  CHECK(encode_float(kFloat8e8m0, big, true, "up") == 254);
  CHECK(encode_float(kFloat8e8m0, big, false, "up") == 0xFF);
  CHECK(encode_float(kFloat8e8m0, kInf, true, "up") == 0xFF);
}

TEST_CASE("int4 / uint4 / int2 / uint2: float sources truncate / out of range gives 0 / integer sources wrap") {
  CHECK(cast_int(kInt4, 7.9, true) == 7);
  CHECK(cast_int(kInt4, -8.9, true) == -8);
  CHECK(cast_int(kInt4, 8.0, true) == 0);
  CHECK(cast_int(kInt4, kNaN, true) == 0);
  CHECK(cast_int(kUint4, -0.5, true) == 0);
  CHECK(cast_int(kUint4, 15.0, true) == 15);
  CHECK(cast_int(kInt4, 200, false) == -8);  // 200 = 0xC8: low bits 1000
  CHECK(cast_int(kUint4, -1, false) == 15);
  CHECK(cast_int(kInt2, 3, false) == -1);
  CHECK(cast_int(kUint2, 5, false) == 1);
  CHECK(saturate_int(kInt4, 9) == 7);
  CHECK(saturate_int(kInt4, -9) == -8);
  CHECK(saturate_int(kUint2, -1) == 0);
  CHECK(saturate_int(kInt2, 1) == 1);
}

TEST_CASE("packed data: the first element in the low bits / a size that does not match throws") {
  CHECK(unpack(kInt4, {0x8F}, 2) == std::vector<double>{-1, -8});
  CHECK(unpack(kUint4, {0x21, 0x03}, 3) == std::vector<double>{1, 2, 3});
  CHECK(unpack(kUint2, {0xE4}, 4) == std::vector<double>{0, 1, 2, 3});  // 11 10 01 00
  CHECK(unpack(kInt2, {0xE4}, 4) == std::vector<double>{0, 1, -2, -1});
  CHECK(unpack(kFloat4e2m1, {0xF1}, 2) == std::vector<double>{0.5, -6});
  CHECK(unpack(kFloat8e5m2, {0x3C, 0xFC}, 2) == std::vector<double>{1.0, -kInf});
  CHECK_THROWS_AS(unpack(kUint4, {0x21}, 3), std::invalid_argument);
  CHECK(holder(kFloat8e4m3fn) == wick::DType::F32);
  CHECK(holder(kInt4) == wick::DType::I8);
  CHECK(holder(kUint2) == wick::DType::U8);
}
