// ggml_fixtures.hpp — tests/data/ggml_quants/fixtures.bin (made by make_fixtures.py there from the
// `gguf` package's and llama.cpp's references), read by test_ggml_quants.cpp,
// test_quant.cpp and test_quant_round_x.cpp.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace wick::test::ggml_fixture {

// fixtures.bin: records of u32 name length, name, u32 kind, u32 payload bytes, payload.
inline const std::map<std::string, std::string>& fixtures() {
  static const std::map<std::string, std::string> records = [] {
    std::ifstream f(std::string(WICK_TEST_DATA_DIR) + "/ggml_quants/fixtures.bin",
                    std::ios::binary);
    const std::string all(std::istreambuf_iterator<char>(f), {});
    std::map<std::string, std::string> r;
    size_t at = 0;
    auto u32 = [&] {
      uint32_t v = 0;
      std::memcpy(&v, all.data() + at, 4);
      at += 4;
      return v;
    };
    while (at + 12 <= all.size()) {
      const uint32_t name_len = u32();
      std::string name = all.substr(at, name_len);
      at += name_len;
      u32();  // kind: the test knows what each record holds
      const uint32_t bytes = u32();
      r[name] = all.substr(at, bytes);
      at += bytes;
    }
    return r;
  }();
  return records;
}

inline const std::string& record(const std::string& name) {
  const auto it = fixtures().find(name);
  if (it == fixtures().end())
    FAIL("fixture record '" << name << "' missing: rerun make_fixtures.py");
  return it->second;
}

inline std::vector<float> floats(const std::string& name) {
  const std::string& r = record(name);
  std::vector<float> v(r.size() / 4);
  std::memcpy(v.data(), r.data(), r.size());
  return v;
}

inline std::vector<uint8_t> bytes(const std::string& name) {
  const std::string& r = record(name);
  return std::vector<uint8_t>(r.begin(), r.end());
}

// x [rows, k] times w [n, k] transposed, in double, with each element's sum of |products| (the
// scale f32 summation error is relative to): the reference of test_quant's and
// test_quant_round_x's matmuls.
struct Reference {
  std::vector<double> y, scale;
};
inline Reference reference(const std::vector<float>& x, const std::vector<float>& w, int64_t rows,
                           int64_t n, int64_t k) {
  Reference r{std::vector<double>(static_cast<size_t>(rows * n)),
              std::vector<double>(static_cast<size_t>(rows * n))};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, a = 0;
      for (int64_t e = 0; e < k; ++e) {
        const double p = double(x[size_t(i * k + e)]) * w[size_t(j * k + e)];
        s += p;
        a += std::fabs(p);
      }
      r.y[size_t(i * n + j)] = s;
      r.scale[size_t(i * n + j)] = a;
    }
  return r;
}

}  // namespace wick::test::ggml_fixture
