// GGML's block formats (wick/sdk/ggml_quants.hpp): bit-exactness against llama.cpp's C reference
// and the gguf package (the fixtures of tests/data/ggml_quants/make_fixtures.py, computed by them,
// never by Wick), layouts and values worked by hand, error bounds derived from each format, and the
// edge cases: zero, huge and negative-only blocks, NaN and infinity, partial blocks.
#include "ggml_fixtures.hpp"

#include <wick/sdk/ggml_quants.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace wick::sdk::ggml;
using Catch::Matchers::Contains;
using wick::sdk::f16;
using wick::test::ggml_fixture::bytes;
using wick::test::ggml_fixture::floats;
using wick::test::ggml_fixture::record;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();


// The first element at which two arrays differ (bitwise for floats), or -1.
template <class T>
int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  return -1;
}

std::vector<uint8_t> quantize(Type type, const std::vector<float>& x) {
  std::vector<uint8_t> q(*row_bytes(type, x.size()));
  quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantize(Type type, const std::vector<uint8_t>& q) {
  const TypeTraits t = traits(type);
  std::vector<float> y(q.size() / t.type_size * t.block_size);
  dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(y.size()));
  return y;
}

std::string name_of(Type type) {
  return std::string(traits(type).name);
}

// Values at magnitudes from 1e-3 to 1e2 (one per 32), deterministic on every platform.
std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&] { return static_cast<float>(rng() >> 8) * 0x1p-24f; };
  std::vector<float> x(n);
  float magnitude = 1;
  for (size_t i = 0; i < n; ++i) {
    if (i % 32 == 0) magnitude = std::pow(10.f, -3 + 5 * uniform());
    x[i] = (uniform() + uniform() + uniform() - 1.5f) * magnitude;
  }
  return x;
}

// y is (up to float rounding) the point of the grid step * q - offset, q in lo..hi, nearest x:
// |x - y| <= |step| * (1/2 + how far (x + offset) / step lies beyond lo..hi).
bool on_nearest_grid_point(float x, float y, double step, double offset, int lo, int hi,
                           double extra = 0) {
  const double t = (x + offset) / step;
  const double outside = t < lo ? lo - t : t > hi ? t - hi : 0;
  const double slack =
      1e-5 * (std::fabs(x) + std::fabs(step) * std::max(-lo, hi) + std::fabs(offset));
  return std::fabs(double(x) - y) <= std::fabs(step) * (0.5 + outside) + extra + slack;
}

const std::vector<Type> kSimple = {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0};
const std::vector<Type> kWithGgmlDequantize = {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1,
                                               Type::Q8_0, Type::Q2_K, Type::Q3_K, Type::Q4_K,
                                               Type::Q5_K, Type::Q6_K, Type::Q8_K};

}  // namespace

TEST_CASE("the type table agrees with llama.cpp's sizes and with gguf's GGML_QUANT_SIZES") {
  // Lines: number, name, gguf's block size and bytes, ggml's (ggml_blck_size, ggml_type_size).
  std::istringstream lines(record("sizes"));
  uint32_t num, gguf_bs, gguf_ts, ggml_bs, ggml_ts;
  std::string name;
  int checked = 0;
  while (lines >> num >> name >> gguf_bs >> gguf_ts >> ggml_bs >> ggml_ts) {
    const auto t = type_traits(num);
    if (!t) continue;  // a type newer than the table (gguf 0.19.0: NVFP4 = 40, Q1_0 = 41)
    INFO(name);
    CHECK(t->name == name);
    CHECK(t->block_size == ggml_bs);
    CHECK(t->type_size == ggml_ts);
    CHECK(t->block_size == gguf_bs);
    // gguf 0.19.0 still gives Q8_1 40 bytes (an f32 d and s), where ggml's block_q8_1 holds two
    // f16s and 32 quants: 36. The table, and the files llama.cpp writes, follow ggml.
    CHECK(t->type_size == (name == "Q8_1" ? gguf_ts - 4 : gguf_ts));
    ++checked;
  }
  CHECK(checked == 32);
}

TEST_CASE(
    "quantize_row writes the bytes of llama.cpp's reference quantizers and of the gguf package") {
  // For Q4_0..Q8_0 the script asserted that gguf.quants.quantize writes these same bytes.
  const std::vector<float> x = floats("input");
  for (Type type : kReferenceTypes) {
    const std::vector<uint8_t> expected = bytes(name_of(type) + ".quant");
    const std::vector<uint8_t> got = quantize(type, x);
    const int64_t at = first_difference(got, expected);
    INFO(name_of(type) << ": first difference in block " << at / traits(type).type_size << ", byte "
                       << at % traits(type).type_size);
    CHECK(at == -1);
  }
}

TEST_CASE("dequantize_row matches llama.cpp's and gguf's dequantization bit for bit") {
  // On the blocks quantized from the input and on random blocks (random bytes, finite scales).
  for (Type type : kWithGgmlDequantize) {
    for (const char* set : {"", "random."}) {
      const std::string key = *set == 0 ? ".quant" : ".random";
      const std::vector<float> got = dequantize(type, bytes(name_of(type) + key));
      const std::vector<float> expected = floats(name_of(type) + "." + set + "dequant");
      const int64_t at = first_difference(got, expected);
      INFO(name_of(type) << " " << set << "blocks: first difference at element " << at);
      CHECK(at == -1);
    }
  }
}

TEST_CASE("the typed row functions and the by-Type ones agree") {
  const std::vector<float> x = random_values(512, 7);
  std::vector<BlockQ4_K> blocks(2);
  quantize_row(x.data(), blocks.data(), 512);
  const std::vector<uint8_t> by_type = quantize(Type::Q4_K, x);
  CHECK(std::memcmp(blocks.data(), by_type.data(), by_type.size()) == 0);
  std::vector<float> y(512);
  dequantize_row(blocks.data(), y.data(), 512);
  CHECK(first_difference(y, dequantize(Type::Q4_K, by_type)) == -1);
  // The by-Type functions take blocks at any address.
  std::vector<uint8_t> shifted(by_type.size() + 1);
  std::memcpy(shifted.data() + 1, by_type.data(), by_type.size());
  std::vector<float> y_shifted(512);
  dequantize_row(Type::Q4_K, shifted.data() + 1, y_shifted.data(), 512);
  CHECK(first_difference(y, y_shifted) == -1);
}

TEST_CASE("32-element formats: requantizing dequantized values reproduces them exactly") {
  // Equal as numbers: a -0 (a zero level times a negative d) comes back +0, in ggml as here.
  for (const std::vector<float>& x : {floats("input"), random_values(4096, 11)}) {
    for (Type type : kSimple) {
      const std::vector<float> y = dequantize(type, quantize(type, x));
      const std::vector<float> y2 = dequantize(type, quantize(type, y));
      INFO(name_of(type));
      CHECK(std::equal(y.begin(), y.end(), y2.begin()));
    }
  }
}

TEST_CASE("32-element formats: each value is the nearest point of its block's grid") {
  // The grid is ggml's unrounded d (and min); storing d (and m) as f16 moves the point of level q
  // by at most |q| |d - f16(d)| (+ |m - f16(m)|).
  for (const std::vector<float>& x : {floats("input"), random_values(4096, 12)}) {
    for (Type type : kSimple) {
      const std::vector<uint8_t> q = quantize(type, x);
      const std::vector<float> y = dequantize(type, q);
      for (size_t b = 0; b < x.size() / 32; ++b) {
        const float* xb = &x[32 * b];
        const auto [mn, mx] = std::minmax_element(xb, xb + 32);
        float amax = 0, signed_max = 0;
        for (int j = 0; j < 32; ++j) {
          if (amax < std::fabs(xb[j])) {
            amax = std::fabs(xb[j]);
            signed_max = xb[j];
          }
        }
        const uint8_t* block = &q[b * traits(type).type_size];
        f16 d16, m16;
        std::memcpy(&d16.bits, block, 2);
        std::memcpy(&m16.bits, block + 2, 2);
        double d = 0, offset = 0, extra = 0;
        int lo = 0, hi = 0;
        switch (type) {
          case Type::Q4_0: d = signed_max / -8.f, lo = -8, hi = 7; break;
          case Type::Q5_0: d = signed_max / -16.f, lo = -16, hi = 15; break;
          case Type::Q8_0: d = amax / 127.f, lo = -127, hi = 127; break;
          case Type::Q4_1: d = (*mx - *mn) / 15.f, offset = -*mn, hi = 15; break;
          default: d = (*mx - *mn) / 31.f, offset = -*mn, hi = 31; break;  // Q5_1
        }
        extra = std::max(-lo, hi) * std::fabs(d - float(d16));
        if (offset != 0) extra += std::fabs(-offset - float(m16));
        for (int j = 0; j < 32; ++j) {
          if (d == 0) {  // a constant block: its value (0 for the symmetric ones), as an f16
            CHECK(std::fabs(xb[j] - y[32 * b + j]) <= std::fabs(xb[j]) * 0x1p-11f);
            continue;
          }
          INFO(name_of(type) << " block " << b << " element " << j << ": x " << xb[j] << ", y "
                             << y[32 * b + j] << ", d " << d);
          CHECK(on_nearest_grid_point(xb[j], y[32 * b + j], d, offset, lo, hi, extra));
        }
      }
    }
  }
}

namespace {

// A K-quant sub-block's grid as the stored block defines it: w = step * q - offset.
struct SubGrid {
  double step, offset;
  int lo, hi;
};

SubGrid k_grid(Type type, const uint8_t* block, int e) {
  auto half = [&](size_t at) {
    f16 h;
    std::memcpy(&h.bits, block + at, 2);
    return float(h);
  };
  uint8_t sc, m;
  switch (type) {
    case Type::Q2_K: {
      const uint8_t s = block[e / 16];
      return {half(80) * (s & 0xF), half(82) * (s >> 4), 0, 3};
    }
    case Type::Q3_K: return {half(108) * detail::q3k_scale(block + 96, e / 16), 0, -4, 3};
    case Type::Q4_K:
    case Type::Q5_K:
      detail::k4_scale_min(e / 32, block + 4, sc, m);
      return {half(0) * sc, half(2) * m, 0, type == Type::Q4_K ? 15 : 31};
    case Type::Q6_K: return {half(208) * static_cast<int8_t>(block[192 + e / 16]), 0, -32, 31};
    default: {  // Q8_K
      float d;
      std::memcpy(&d, block, 4);
      return {d, 0, -127, 127};
    }
  }
}

// Checks every element of every super-block against its sub-block's grid; returns how many
// sub-blocks had a zero step (ggml keeps its first fit's levels there: no finer bound).
int check_k_grid(Type type, const std::vector<float>& x, const std::vector<float>& y,
                 const std::vector<uint8_t>& q) {
  int zero_steps = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    const SubGrid g = k_grid(type, &q[e / 256 * traits(type).type_size], static_cast<int>(e % 256));
    if (g.step == 0) {
      zero_steps += (e % 16 == 0);
      continue;
    }
    INFO(name_of(type) << " element " << e << ": x " << x[e] << ", y " << y[e] << ", step "
                       << g.step);
    CHECK(on_nearest_grid_point(x[e], y[e], g.step, g.offset, g.lo, g.hi));
  }
  return zero_steps;
}

const std::vector<Type> kK = {Type::Q2_K, Type::Q3_K, Type::Q4_K,
                              Type::Q5_K, Type::Q6_K, Type::Q8_K};

}  // namespace

TEST_CASE("K-quants: each value is the nearest point of its sub-block's stored grid") {
  // The last pass of every K quantizer rounds each element against its sub-block's quantized
  // scale (and min): that is the whole round-trip error, whatever scales the search chose.
  for (const std::vector<float>& x : {floats("input"), random_values(256 * 64, 13)}) {
    for (Type type : kK) {
      const std::vector<uint8_t> q = quantize(type, x);
      check_k_grid(type, x, dequantize(type, q), q);
    }
  }
}

TEST_CASE("K-quants: requantizing dequantized values keeps them on the nearest grid point") {
  // Not exact (the scale search can settle elsewhere on its own output: about a third of random
  // super-blocks change), but every requantized value is within half a step of the dequantized
  // one, as for any input.
  const std::vector<float> x = random_values(256 * 64, 14);
  for (Type type : kK) {
    const std::vector<float> y = dequantize(type, quantize(type, x));
    const std::vector<uint8_t> q2 = quantize(type, y);
    check_k_grid(type, y, dequantize(type, q2), q2);
  }
}

TEST_CASE("Q8_K's bsums are the sums of its quants in groups of 16") {
  const std::vector<float> x = random_values(512, 15);
  std::vector<BlockQ8_K> b(2);
  quantize_row(x.data(), b.data(), 512);
  for (const BlockQ8_K& block : b)
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += block.qs[16 * j + i];
      CHECK(block.bsums[j] == sum);
    }
}

TEST_CASE("Q8_0 of 0..31 worked by hand: d = f16(31 / 127) and q = round(127 j / 31)") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j);
  BlockQ8_0 b;
  quantize_block(x.data(), b);
  // 31 / 127 = 0.2440944...; f16 steps by 2^-13 there: 1999.65 steps round to 2000 = 0.244140625.
  CHECK(b.d.bits == 0x33D0);
  CHECK(float(b.d) == 0.244140625f);
  float y[32];
  dequantize_block(b, y);
  for (int j = 0; j < 32; ++j) {
    const int q = static_cast<int>(std::lround(j * 127.0 / 31));  // 127 j / 31 is never a tie
    CHECK(b.qs[j] == q);
    CHECK(y[j] == q * 0.244140625f);
  }
  CHECK(b.qs[31] == 127);
  // Q8_1: the same quants, and s = d * sum(q) with d unrounded.
  BlockQ8_1 b1;
  quantize_block(x.data(), b1);
  CHECK(std::memcmp(b1.qs, b.qs, 32) == 0);
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += b.qs[j];
  CHECK(b1.s.bits == f16(static_cast<float>(sum) * (31.f / 127.f)).bits);
}

TEST_CASE("Q4_0 of -16..15 worked by hand: d = 2 and q = floor(x / 2 + 8.5) up to 15") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  BlockQ4_0 b;
  quantize_block(x.data(), b);
  CHECK(float(b.d) == 2.f);  // max |x| is 16, at -16: d = -16 / -8
  float y[32];
  dequantize_block(b, y);
  for (int j = 0; j < 32; ++j) {
    const int q = std::min(15, static_cast<int>(std::floor(x[j] / 2 + 8.5)));  // halves round up
    const int stored = (b.qs[j % 16] >> (j < 16 ? 0 : 4)) & 0xF;
    CHECK(stored == q);
    CHECK(y[j] == (q - 8) * 2.f);
  }
  CHECK(b.qs[0] == 0x80);  // element 0 (-16: q 0) low, element 16 (0: q 8) high
  CHECK(y[31] == 14.f);    // 15 would be q 15.5 -> 16: clamped to 15
}

TEST_CASE("Q4_1 and Q5_1 on their own grids worked by hand: exact round trips") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j % 16);  // min 0, max 15: d = 1
  BlockQ4_1 b4;
  quantize_block(x.data(), b4);
  CHECK(float(b4.d) == 1.f);
  CHECK(float(b4.m) == 0.f);
  for (int j = 0; j < 16; ++j) CHECK(b4.qs[j] == (j | (j << 4)));
  for (int j = 0; j < 32; ++j) x[j] = 0.25f * j - 3;  // min -3, range 7.75: d = 0.25
  BlockQ5_1 b5;
  quantize_block(x.data(), b5);
  CHECK(float(b5.d) == 0.25f);
  CHECK(float(b5.m) == -3.f);
  // q = j: bit 4 set for j >= 16, so qh is 0xFFFF0000 little-endian.
  CHECK((b5.qh[0] == 0 && b5.qh[1] == 0 && b5.qh[2] == 0xFF && b5.qh[3] == 0xFF));
  for (int j = 0; j < 16; ++j) CHECK(b5.qs[j] == (j | (j << 4)));
  float y[32];
  dequantize_block(b5, y);
  for (int j = 0; j < 32; ++j) CHECK(y[j] == x[j]);
}

TEST_CASE("Q5_0 of -16..15 worked by hand: d = 1 and q = x + 16") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  BlockQ5_0 b;
  quantize_block(x.data(), b);
  CHECK(float(b.d) == 1.f);
  CHECK((b.qh[0] == 0 && b.qh[1] == 0 && b.qh[2] == 0xFF && b.qh[3] == 0xFF));
  float y[32];
  dequantize_block(b, y);
  for (int j = 0; j < 32; ++j) CHECK(y[j] == x[j]);
}

TEST_CASE("Q4_K's layout worked by hand: 6-bit scales and mins packed in 12 bytes") {
  // Sub-block scales 1 2 3 4 33 34 35 63 and mins 5 6 7 8 17 18 40 62 (d = 1, dmin = 0.5).
  // Bytes 0-3: scale j (6 bits) | top 2 bits of scale j+4 << 6; bytes 4-7 the same for the mins;
  // bytes 8-11: low 4 bits of scale j+4 | low 4 bits of min j+4 << 4.
  const int sc[8] = {1, 2, 3, 4, 33, 34, 35, 63}, mn[8] = {5, 6, 7, 8, 17, 18, 40, 62};
  BlockQ4_K b{};
  b.d = f16(1.f);
  b.dmin = f16(0.5f);
  const uint8_t packed[12] = {0x81, 0x82, 0x83, 0xC4, 0x45, 0x46,
                              0x87, 0xC8, 0x11, 0x22, 0x83, 0xEF};
  std::memcpy(b.scales, packed, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i);
  float y[256];
  dequantize_block(b, y);
  for (int e = 0; e < 256; ++e) {
    // Element 64p + l (l < 32) is the low nibble of qs[32p + l]; element 64p + 32 + l its high one.
    const int p = e / 64, l = e % 32, byte = 32 * p + l;
    const int q = e % 64 < 32 ? byte & 0xF : byte >> 4;
    INFO("element " << e);
    CHECK(y[e] == sc[e / 32] * q - 0.5f * mn[e / 32]);
  }
}

TEST_CASE("Q3_K's layout worked by hand: high bits inverted in hmask and scales offset by 32") {
  BlockQ3_K b{};
  b.d = f16(0.5f);
  // Scale j = j - 8 + 32 (6 bits): low nibbles in bytes 0-7 (j < 8 low, j >= 8 high nibble of
  // byte j - 8); top 2 bits at bit 2 (j / 4) of byte 8 + j % 4.
  for (int j = 0; j < 16; ++j) {
    const int s = j - 8 + 32;
    b.scales[j % 8] = static_cast<uint8_t>(b.scales[j % 8] | ((s & 0xF) << (j < 8 ? 0 : 4)));
    b.scales[8 + j % 4] = static_cast<uint8_t>(b.scales[8 + j % 4] | ((s >> 4) << (2 * (j / 4))));
  }
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(37 * i + 5);
  for (int i = 0; i < 32; ++i) b.hmask[i] = static_cast<uint8_t>(0x5A ^ i);
  float y[256];
  dequantize_block(b, y);
  for (int e = 0; e < 256; ++e) {
    const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
    const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
    INFO("element " << e);
    CHECK(y[e] == 0.5f * (e / 16 - 8) * (low - (high ? 0 : 4)));
  }
}

TEST_CASE(
    "Q6_K's layout worked by hand: 4 low bits in ql and 2 high bits in qh with signed scales") {
  BlockQ6_K b{};
  b.d = f16(0.25f);
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(3 * j - 20);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(11 * i + 3);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(29 * i + 1);
  float y[256];
  dequantize_block(b, y);
  for (int e = 0; e < 256; ++e) {
    // Element 128h + 32k + l: low bits in the low (k < 2) or high nibble of ql[64h + 32(k % 2) +
    // l], high bits at 2k of qh[32h + l].
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    const int low = (b.ql[64 * h + 32 * (k % 2) + l] >> (k < 2 ? 0 : 4)) & 0xF;
    const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
    INFO("element " << e);
    CHECK(y[e] == 0.25f * (3 * (e / 16) - 20) * ((low | (high << 4)) - 32));
  }
}

TEST_CASE("an all-zero block quantizes to scale 0 and dequantizes to zeros and never NaN") {
  for (Type type : kReferenceTypes) {
    const std::vector<float> x(traits(type).block_size, 0.f);
    const std::vector<float> y = dequantize(type, quantize(type, x));
    INFO(name_of(type));
    // (Q4_0's and Q5_0's d is -0: max / -8 with max = +0; their zeros are -0, as in ggml.)
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 0.f; }));
  }
}

TEST_CASE("one huge value keeps its magnitude within half a step and the small ones round to 0") {
  std::vector<float> x(32, 0.f);
  for (int j = 0; j < 32; ++j) x[j] = 0.001f * (j - 16);
  x[5] = 1e6f;
  BlockQ8_0 b;
  quantize_block(x.data(), b);
  float y[32];
  dequantize_block(b, y);
  // d = 1e6 / 127 = 7874.02, stored as 7876 (f16 steps by 4 there): 127 * 7876 = 1000252.
  CHECK(float(b.d) == 7876.f);
  CHECK(y[5] == 1000252.f);
  for (int j = 0; j < 32; ++j)
    if (j != 5) CHECK(y[j] == 0.f);
  // Past 127 * 65504 the scale overflows f16 to infinity, as in ggml: the block dequantizes to
  // infinities (and 0 * inf = NaN for its zero quants).
  std::fill(x.begin(), x.end(), 1e7f);
  x[0] = 0;
  quantize_block(x.data(), b);
  dequantize_block(b, y);
  CHECK(float(b.d) == kInf);
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == kInf);
}

TEST_CASE("negative-only blocks give no positive value where the format's grid guarantees it") {
  // Symmetric grids scale the signed max onto their most negative level, so every x <= 0 rounds
  // to a level <= 0; Q4_1's and Q5_1's top level is the block's max (-1.x here) up to f16
  // rounding. (The affine K formats' top level may overshoot their max: the nearest-grid tests
  // bound them, and the fixture's negative-only super-block is compared with llama.cpp's bytes.)
  std::vector<float> x(256);
  for (int j = 0; j < 256; ++j) x[j] = -1.f - 0.37f * (j % 32) - 0.01f * j;
  for (Type type : {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0, Type::Q8_1,
                    Type::Q3_K, Type::Q6_K, Type::Q8_K}) {
    const std::vector<float> y = dequantize(type, quantize(type, x));
    INFO(name_of(type));
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v <= 0.f; }));
  }
}

TEST_CASE(
    "a NaN or infinity makes its block all NaN (NaN scales and zero quants) and no other block") {
  // ggml's reference leaves NaN undefined (its maxima drop a NaN or keep it by position and C
  // leaves NaN-to-integer undefined); Wick makes the damage visible and confined to its block.
  for (const float bad : {kNaN, kInf, -kInf}) {
    for (Type type : kReferenceTypes) {
      const int64_t bs = traits(type).block_size;
      std::vector<float> x = random_values(2 * bs, 16);
      x[bs + 3] = bad;
      const std::vector<uint8_t> q = quantize(type, x);
      const std::vector<float> y = dequantize(type, q);
      INFO(name_of(type) << " with " << bad);
      CHECK(std::none_of(y.begin(), y.begin() + bs, [](float v) { return std::isnan(v); }));
      CHECK(std::all_of(y.begin() + bs, y.end(), [](float v) { return std::isnan(v); }));
      // The first block is as if the second did not exist.
      const std::vector<float> first(x.begin(), x.begin() + bs);
      const std::vector<uint8_t> alone = quantize(type, first);
      CHECK(std::equal(alone.begin(), alone.end(), q.begin()));
    }
  }
}

TEST_CASE("a row that is not whole blocks is refused naming the type and n") {
  std::vector<float> x(300);
  std::vector<uint8_t> q(1000);
  CHECK_THROWS_WITH(quantize_row(Type::Q4_K, x.data(), q.data(), 300),
                    Contains("Q4_K") && Contains("256") && Contains("n = 300"));
  CHECK_THROWS_WITH(dequantize_row(Type::Q8_0, q.data(), x.data(), 33),
                    Contains("Q8_0") && Contains("n = 33"));
  CHECK_THROWS_AS(quantize_row(Type::Q5_1, x.data(), q.data(), -32), std::invalid_argument);
  std::vector<BlockQ6_K> blocks(2);
  CHECK_THROWS_WITH(quantize_row(x.data(), blocks.data(), 257),
                    Contains("Q6_K") && Contains("n = 257"));
  CHECK_NOTHROW(quantize_row(Type::Q8_0, x.data(), q.data(), 0));
}

TEST_CASE("types without a reference implementation here are refused by name") {
  std::vector<float> x(256);
  std::vector<uint8_t> q(1024);
  CHECK_THROWS_WITH(quantize_row(Type::IQ2_XXS, x.data(), q.data(), 256), Contains("IQ2_XXS"));
  CHECK_THROWS_WITH(dequantize_row(Type::F16, q.data(), x.data(), 256), Contains("F16"));
  CHECK_THROWS_WITH(dequantize_row(static_cast<Type>(77), q.data(), x.data(), 256),
                    Contains("#77"));
}
