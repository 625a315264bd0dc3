// ops_nn_fixtures.hpp — what the nn tests share: reading tests/data/nn/*.json (written by
// tests/data/gen_nn.py), building tensors of any dtype and layout from fixture values, comparing
// results with the dtype's tolerance, and running a fused-op case.
#pragma once

#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace wick::test::nn {

using json = nlohmann::json;

inline const std::vector<DType> kAll = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                        DType::I8,  DType::U8,  DType::I16, DType::I32,
                                        DType::I64, DType::U32, DType::U64, DType::Bool};
inline const std::vector<DType> kNumeric(kAll.begin(), kAll.end() - 1);
inline const std::vector<DType> kFloats = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

inline bool is_unsigned(DType t) {
  return t == DType::U8 || t == DType::U32 || t == DType::U64;
}

inline const json& fixture(const std::string& name) {
  static std::map<std::string, json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::ifstream in(std::string(WICK_TEST_DATA_DIR) + "/nn/" + name);
    if (!in)
      throw std::runtime_error("cannot open fixture nn/" + name + "; run tests/data/gen_nn.py");
    it = cache.emplace(name, json::parse(in)).first;
  }
  return it->second;
}

inline double decode(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? kInf : -kInf;
  }
  return v.get<double>();
}

inline Shape shape_of(const json& t) {
  return t["shape"].get<Shape>();
}

// A tensor of dtype t holding the values, built on the host (integers exactly, floats rounded
// once).
inline Tensor make(const std::vector<double>& values, const Shape& shape, DType t,
                   const Device& device = cpu()) {
  return sdk::visit_dtype(to_c(t), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> data;
    for (double v : values) {
      if constexpr (std::is_same_v<T, bool>)
        data.push_back(v != 0);
      else if constexpr (std::is_integral_v<T>)
        data.push_back(static_cast<T>(static_cast<int64_t>(v)));
      else if constexpr (std::is_floating_point_v<T>)
        data.push_back(static_cast<T>(v));
      else
        data.push_back(T(static_cast<float>(v)));
    }
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      return Tensor::from_bytes(bytes.data(), bytes.size(), shape, t, device);
    } else {
      return Tensor::from_bytes(data.data(), data.size() * sizeof(T), shape, t, device);
    }
  });
}

inline std::vector<double> values_of(const json& t) {
  std::vector<double> v;
  for (const json& e : t["data"]) v.push_back(decode(e));
  return v;
}

inline Tensor make(const json& t, DType dtype, const Device& device = cpu()) {
  return make(values_of(t), shape_of(t), dtype, device);
}

// The same logical tensor stored with axes permuted: the data is laid out in `order` and the view
// permuted back, so the result has the fixture's shape but non-contiguous strides.
inline Tensor make_permuted(const json& t, DType dtype, const std::vector<int>& order) {
  const Shape shape = shape_of(t);
  const std::vector<double> v = values_of(t);
  Shape stored(order.size());
  for (size_t i = 0; i < order.size(); ++i) stored[i] = shape[static_cast<size_t>(order[i])];
  std::vector<double> data(v.size());
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t k = 0; k < v.size(); ++k) {
    // idx: the C-order index of element k in `shape`; place it at the permuted position.
    int64_t flat = 0;
    for (size_t i = 0; i < order.size(); ++i)
      flat = flat * stored[i] + idx[static_cast<size_t>(order[i])];
    data[static_cast<size_t>(flat)] = v[k];
    for (size_t i = shape.size(); i-- > 0;) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
  std::vector<int> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    inverse[static_cast<size_t>(order[i])] = static_cast<int>(i);
  return make(data, stored, dtype).permute(inverse);
}

// The same logical tensor viewed through a negative stride on `axis`: the data is stored reversed
// along the axis and the view flips it back.
inline Tensor make_flipped(const json& t, DType dtype, int axis) {
  const Shape shape = shape_of(t);
  const std::vector<double> v = values_of(t);
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[static_cast<size_t>(axis)];
  std::vector<double> data(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const int64_t i = static_cast<int64_t>(k) / inner % n;
    const int64_t moved = static_cast<int64_t>(k) + (n - 1 - 2 * i) * inner;
    data[static_cast<size_t>(moved)] = v[k];
  }
  Tensor f = make(data, shape, dtype).flip(axis);
  REQUIRE(f.strides()[static_cast<size_t>(axis)] < 0);
  return f;
}

// The same logical tensor with stride 2 on the last axis: the data is stored with a gap (holding
// 7s) after every element, and the view steps over the gaps.
inline Tensor make_spread(const json& t, DType dtype) {
  Shape stored = shape_of(t);
  stored.back() *= 2;
  const std::vector<double> v = values_of(t);
  std::vector<double> data(v.size() * 2, 7.0);
  for (size_t k = 0; k < v.size(); ++k) data[2 * k] = v[k];
  Tensor s = make(data, stored, dtype).slice(-1, 0, std::nullopt, 2);
  REQUIRE(s.strides().back() == 2);
  return s;
}

struct Tolerance {
  double rel, abs;
};
// The rounding of the result to its dtype, plus f32 arithmetic inside the 16-bit paths.
inline Tolerance tolerance(DType t) {
  switch (t) {
    case DType::F64: return {1e-12, 1e-14};
    case DType::F16: return {1e-3, 1e-4};
    case DType::BF16: return {8e-3, 1e-3};
    default: return {2e-6, 1e-6};
  }
}

// Compares got (C order) with the expected tensor: the shape, integers and bool exactly (expected
// integers wrap into the dtype, -inf/inf stand for the dtype's lowest/max), floats within the
// dtype's tolerance, NaN matching NaN. Returns the first mismatches, empty when all match.
// The fused ops in f32 go through oneDNN's exp and log approximations: log_softmax and the norms
// are within 1e-5 of the exact value near zero, where a relative bound says nothing.
inline std::optional<Tolerance> fused_tolerance(DType t) {
  if (t == DType::F32) return Tolerance{2e-6, 1e-5};
  return std::nullopt;
}

inline std::string mismatches(const Tensor& got, const json& expected,
                              std::optional<Tolerance> tolerance_override = {}) {
  if (got.shape() != shape_of(expected)) {
    return "shape " + shape_to_string(got.shape()) + ", expected " +
           shape_to_string(shape_of(expected));
  }
  const std::vector<double> want = values_of(expected);
  std::ostringstream report;
  int shown = 0;
  auto mismatch = [&](size_t i, double g, double e) {
    if (shown++ < 6) report << "[" << i << "] got " << g << ", expected " << e << "; ";
  };
  sdk::visit_dtype(to_c(got.dtype()), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> raw(want.size());
      got.copy_to_host(raw.data(), raw.size());
      for (size_t i = 0; i < raw.size(); ++i)
        if ((raw[i] != 0) != (want[i] != 0)) mismatch(i, raw[i], want[i]);
    } else {
      std::vector<T> host(want.size());
      got.copy_to_host(host.data(), host.size() * sizeof(T));
      for (size_t i = 0; i < host.size(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          T e;
          if (want[i] == -kInf)
            e = std::numeric_limits<T>::lowest();
          else if (want[i] == kInf)
            e = std::numeric_limits<T>::max();
          else
            e = static_cast<T>(static_cast<int64_t>(want[i]));  // wraps, as integer arithmetic does
          if (host[i] != e) mismatch(i, static_cast<double>(host[i]), static_cast<double>(e));
        } else {
          const double g = static_cast<double>(
              static_cast<std::conditional_t<std::is_floating_point_v<T>, T, float>>(host[i]));
          const double e = want[i];
          const Tolerance tol = tolerance_override.value_or(tolerance(got.dtype()));
          const bool ok = std::isnan(e)   ? std::isnan(g)
                          : std::isinf(e) ? g == e
                                          : std::abs(g - e) <= tol.abs + tol.rel * std::abs(e);
          if (!ok) mismatch(i, g, e);
        }
      }
    }
  });
  return report.str();
}

inline json literal(const Shape& shape, const std::vector<double>& values) {
  json data = json::array();
  for (double v : values) {
    if (std::isnan(v))
      data.push_back("nan");
    else if (std::isinf(v))
      data.push_back(v > 0 ? "inf" : "-inf");
    else
      data.push_back(v);
  }
  return json{{"shape", shape}, {"data", data}};
}

inline std::vector<float> floats(const Tensor& t) {
  return t.to(DType::F32).to_vector<float>();
}

inline std::string label(const json& c, DType t) {
  return c["name"].get<std::string>() + " as " + dtype_name(t);
}

inline std::vector<std::pair<int64_t, int64_t>> pairs(const json& c) {
  std::vector<std::pair<int64_t, int64_t>> p;
  for (size_t i = 0; i < c["padding_lo"].size(); ++i)
    p.emplace_back(c["padding_lo"][i].get<int64_t>(), c["padding_hi"][i].get<int64_t>());
  return p;
}

inline bool needs_plugin(const json& c) {
  for (const json& v : c["input_dilations"])
    if (v.get<int64_t>() != 1) return true;
  for (const char* side : {"padding_lo", "padding_hi"})
    for (const json& v : c[side])
      if (v.get<int64_t>() < 0) return true;
  return false;
}

// Tensor::conv with the case's parameters; padding as (lo, hi) pairs.
inline Tensor conv_of(const Tensor& x, const Tensor& w, const json& c) {
  std::vector<int64_t> padding;
  for (const auto& [lo, hi] : pairs(c)) {
    padding.push_back(lo);
    padding.push_back(hi);
  }
  return x.conv(w, c["strides"].get<std::vector<int64_t>>(), padding,
                c["dilations"].get<std::vector<int64_t>>(), c["groups"].get<int64_t>());
}

// Runs a fused-op case of fused.json with inputs of dtype t on `device`.
inline Tensor run_fused(const json& c, DType t, const Device& device) {
  const std::string op = c["op"];
  auto in = [&](const char* key) { return c.contains(key) ? make(c[key], t, device) : Tensor(); };
  if (op == "softmax") return in("x").softmax(c["axis"].get<int>());
  if (op == "log_softmax") return in("x").log_softmax(c["axis"].get<int>());
  if (op == "layer_norm")
    return in("x").layer_norm(c["normalized_rank"].get<int>(), in("weight"), in("bias"),
                              c["eps"].get<double>());
  if (op == "rms_norm") return in("x").rms_norm(in("weight"), c["eps"].get<double>());
  if (op == "batch_norm")
    return in("x").batch_norm(in("mean"), in("var"), in("weight"), in("bias"),
                              c["eps"].get<double>());
  std::optional<double> scale;
  if (c.contains("scale")) scale = c["scale"].get<double>();
  return Tensor::attention(in("q"), in("k"), in("v"), in("mask"), scale, c["causal"].get<bool>());
}

}  // namespace wick::test::nn
