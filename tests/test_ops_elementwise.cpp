// Elementwise ops on the CPU device (docs/ops/elementwise.md). Every op x dtype pair of the table
// is checked against NumPy-generated fixtures (tests/data/gen_elementwise.py writes
// tests/data/elementwise/*.json) or is rejected with an error; the edge cases are worked by hand.
#include "test_support.hpp"

#include <wick/sdk/philox.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

using namespace wick;
using json = nlohmann::json;
using wick::test::cpu;

namespace {

const std::vector<DType> kAllDtypes = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                       DType::I8,  DType::U8,  DType::I16, DType::I32,
                                       DType::I64, DType::U32, DType::U64, DType::Bool};

const json& fixture(const std::string& name) {
  static std::map<std::string, json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::ifstream in(std::string(WICK_TEST_DATA_DIR) + "/elementwise/" + name);
    if (!in) throw std::runtime_error("cannot open fixture " + name + "; run tests/data/gen_elementwise.py");
    it = cache.emplace(name, json::parse(in)).first;
  }
  return it->second;
}

DType dtype_named(const std::string& name) {
  for (DType t : kAllDtypes)
    if (name == dtype_name(t)) return t;
  throw std::runtime_error("unknown dtype " + name);
}

double decode(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  return v.get<double>();
}

// A tensor of dtype t holding the fixture values (exactly: integers are read as integers).
Tensor make(const json& values, DType t, const Shape& shape) {
  return sdk::visit_dtype(to_c(t), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> data;
    for (const json& v : values) {
      if constexpr (std::is_same_v<T, bool>) data.push_back(v.get<int>() != 0);
      else if constexpr (std::is_integral_v<T>) data.push_back(v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>()));
      else if constexpr (std::is_floating_point_v<T>) data.push_back(static_cast<T>(decode(v)));
      else data.push_back(T(static_cast<float>(decode(v))));
    }
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      return Tensor::from_bytes(bytes.data(), bytes.size(), shape, t, cpu());
    } else {
      return Tensor::from_bytes(data.data(), data.size() * sizeof(T), shape, t, cpu());
    }
  });
}

json reversed(const json& values) { return json(std::vector<json>(values.rbegin(), values.rend())); }

// The largest difference a float result may have from the correctly rounded reference: a few ulp
// of f32/f64 (libm is not correctly rounded), one ulp of f16/bf16 (computed in f32, rounded once).
struct Tolerance {
  double rel, abs;
};
Tolerance tolerance(DType t) {
  switch (t) {
    case DType::F64: return {1e-13, 1e-300};
    case DType::F16: return {1e-3, 6e-8};
    case DType::BF16: return {8e-3, 1e-38};
    default: return {4e-7, 1e-38};
  }
}

// Compares every element of got (in C order) with the expected values: integers and bool exactly,
// floats within the dtype's tolerance with NaN matching NaN and infinities matching exactly.
// Returns a description of the first mismatches, empty when all match. `x_scale`: the inputs of an
// x f(x)-shaped activation (the GELUs), whose f32 error docs/ops/elementwise.md bounds in units of
// |x|: the relative bound then applies to max(|expected|, |x|).
std::string mismatches(const Tensor& got, const json& expected, const json* x_scale = nullptr) {
  std::ostringstream report;
  if (got.numel() != static_cast<int64_t>(expected.size())) {
    return "got " + std::to_string(got.numel()) + " elements, expected " + std::to_string(expected.size());
  }
  int shown = 0;
  auto mismatch = [&](size_t i, const std::string& g) {
    if (shown++ < 6) report << "[" << i << "] got " << g << ", expected " << expected[i].dump() << "; ";
  };
  sdk::visit_dtype(to_c(got.dtype()), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> host(expected.size());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> raw(expected.size());
      got.copy_to_host(raw.data(), raw.size());
      for (size_t i = 0; i < raw.size(); ++i)
        if ((raw[i] != 0) != (expected[i].get<int>() != 0)) mismatch(i, std::to_string(raw[i]));
    } else {
      got.copy_to_host(host.data(), host.size() * sizeof(T));
      for (size_t i = 0; i < host.size(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          const bool ok = std::is_signed_v<T> ? static_cast<int64_t>(host[i]) == expected[i].get<int64_t>()
                                              : static_cast<uint64_t>(host[i]) == expected[i].get<uint64_t>();
          if (!ok) mismatch(i, std::to_string(host[i]));
        } else {
          double g;
          if constexpr (std::is_floating_point_v<T>) g = static_cast<double>(host[i]);
          else g = static_cast<double>(static_cast<float>(host[i]));
          const double e = decode(expected[i]);
          const Tolerance tol = tolerance(got.dtype());
          const double scale = x_scale != nullptr ? std::max(std::abs(e), std::abs(decode((*x_scale)[i]))) : std::abs(e);
          const bool ok = std::isnan(e) ? std::isnan(g)
                          : std::isinf(e) ? g == e
                                          : std::abs(g - e) <= tol.abs + tol.rel * scale;
          if (!ok) {
            std::ostringstream s;
            s.precision(17);
            s << g;
            mismatch(i, s.str());
          }
        }
      }
    }
  });
  return report.str();
}

using UnaryFn = std::function<Tensor(const Tensor&, const std::vector<double>&)>;

const std::map<std::string, UnaryFn>& unary_ops() {
  static const std::map<std::string, UnaryFn> ops = {
      {"neg", [](const Tensor& x, auto&) { return -x; }},
      {"abs", [](const Tensor& x, auto&) { return x.abs(); }},
      {"sign", [](const Tensor& x, auto&) { return x.sign(); }},
      {"exp", [](const Tensor& x, auto&) { return x.exp(); }},
      {"log", [](const Tensor& x, auto&) { return x.log(); }},
      {"sqrt", [](const Tensor& x, auto&) { return x.sqrt(); }},
      {"rsqrt", [](const Tensor& x, auto&) { return x.rsqrt(); }},
      {"recip", [](const Tensor& x, auto&) { return x.recip(); }},
      {"sqr", [](const Tensor& x, auto&) { return x.sqr(); }},
      {"tanh", [](const Tensor& x, auto&) { return x.tanh(); }},
      {"erf", [](const Tensor& x, auto&) { return x.erf(); }},
      {"sigmoid", [](const Tensor& x, auto&) { return x.sigmoid(); }},
      {"sin", [](const Tensor& x, auto&) { return x.sin(); }},
      {"cos", [](const Tensor& x, auto&) { return x.cos(); }},
      {"tan", [](const Tensor& x, auto&) { return x.tan(); }},
      {"asin", [](const Tensor& x, auto&) { return x.asin(); }},
      {"acos", [](const Tensor& x, auto&) { return x.acos(); }},
      {"atan", [](const Tensor& x, auto&) { return x.atan(); }},
      {"sinh", [](const Tensor& x, auto&) { return x.sinh(); }},
      {"cosh", [](const Tensor& x, auto&) { return x.cosh(); }},
      {"asinh", [](const Tensor& x, auto&) { return x.asinh(); }},
      {"acosh", [](const Tensor& x, auto&) { return x.acosh(); }},
      {"atanh", [](const Tensor& x, auto&) { return x.atanh(); }},
      {"expm1", [](const Tensor& x, auto&) { return x.expm1(); }},
      {"log1p", [](const Tensor& x, auto&) { return x.log1p(); }},
      {"cbrt", [](const Tensor& x, auto&) { return x.cbrt(); }},
      {"erfc", [](const Tensor& x, auto&) { return x.erfc(); }},
      {"erfinv", [](const Tensor& x, auto&) { return x.erfinv(); }},
      {"floor", [](const Tensor& x, auto&) { return x.floor(); }},
      {"ceil", [](const Tensor& x, auto&) { return x.ceil(); }},
      {"round", [](const Tensor& x, auto&) { return x.round(); }},
      {"round_half_even", [](const Tensor& x, auto&) { return x.round(true); }},
      {"relu", [](const Tensor& x, auto&) { return x.relu(); }},
      {"gelu", [](const Tensor& x, auto&) { return x.gelu(); }},
      {"gelu_erf", [](const Tensor& x, auto&) { return x.gelu_erf(); }},
      {"silu", [](const Tensor& x, auto&) { return x.silu(); }},
      {"elu", [](const Tensor& x, const std::vector<double>& a) { return x.elu(a.at(0)); }},
      {"affine", [](const Tensor& x, const std::vector<double>& a) { return x.affine(a.at(0), a.at(1)); }},
      {"powf", [](const Tensor& x, const std::vector<double>& a) { return x.powf(a.at(0)); }},
      {"isnan", [](const Tensor& x, auto&) { return x.isnan(); }},
      {"isinf", [](const Tensor& x, auto&) { return x.isinf(); }},
      {"logical_not", [](const Tensor& x, auto&) { return x.logical_not(); }},
      {"bitwise_not", [](const Tensor& x, auto&) { return x.bitwise_not(); }},
      {"popcount", [](const Tensor& x, auto&) { return x.popcount(); }},
      {"clz", [](const Tensor& x, auto&) { return x.clz(); }},
  };
  return ops;
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::map<std::string, BinaryFn>& binary_ops() {
  static const std::map<std::string, BinaryFn> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); }},
      {"rem", [](const Tensor& a, const Tensor& b) { return a.rem(b); }},
      {"atan2", [](const Tensor& a, const Tensor& b) { return a.atan2(b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return a.ne(b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return a.gt(b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return a.ge(b); }},
      {"bitwise_and", [](const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }},
      {"bitwise_or", [](const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }},
      {"bitwise_xor", [](const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }},
      {"shl", [](const Tensor& a, const Tensor& b) { return a.shl(b); }},
      {"shr", [](const Tensor& a, const Tensor& b) { return a.shr(b); }},
  };
  return ops;
}

// The op x input-dtype pairs the table marks unsupported, each an error that names the op.
const std::set<std::pair<std::string, DType>>& unsupported() {
  static const std::set<std::pair<std::string, DType>> pairs = [] {
    std::set<std::pair<std::string, DType>> s;
    const std::vector<DType> floats = {DType::F32, DType::F64, DType::F16, DType::BF16};
    s.insert({"neg", DType::Bool});
    for (const char* op : {"sub", "div", "pow", "rem", "shl", "shr", "popcount", "clz"}) s.insert({op, DType::Bool});
    for (DType t : floats) {
      for (const char* op : {"bitwise_not", "popcount", "clz", "bitwise_and", "bitwise_or", "bitwise_xor", "shl", "shr"})
        s.insert({op, t});
    }
    return s;
  }();
  return pairs;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  return t.to_vector<T>();
}

// from_vector needs contiguous storage, which std::vector<bool> is not.
Tensor bools(const std::vector<int>& v) {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  return Tensor::from_bytes(bytes.data(), bytes.size(), {static_cast<int64_t>(v.size())}, DType::Bool, cpu());
}

}  // namespace

// ---- the op table -------------------------------------------------------------------------------

TEST_CASE("unary ops match NumPy for every dtype on contiguous reversed and broadcast views", "[elementwise][unary][fixture]") {
  int checked = 0;
  for (const json& c : fixture("unary.json")["cases"]) {
    const std::string op = c["op"];
    const DType t = dtype_named(c["dtype"]);
    const DType out_t = dtype_named(c["out_dtype"]);
    const auto args = c["args"].get<std::vector<double>>();
    const UnaryFn& fn = unary_ops().at(op);
    const int64_t n = static_cast<int64_t>(c["x"].size());
    INFO(op << " on " << dtype_name(t));
    const json* x_scale = op == "gelu" || op == "gelu_erf" ? &c["x"] : nullptr;

    const Tensor y = fn(make(c["x"], t, {n}), args);
    CHECK(y.dtype() == out_t);
    CHECK(y.shape() == Shape{n});
    CHECK(mismatches(y, c["y"], x_scale) == "");

    // A negative stride: the reversed data walked backwards is the original order.
    const Tensor flipped = make(reversed(c["x"]), t, {n}).flip(0);
    CHECK(mismatches(fn(flipped, args), c["y"], x_scale) == "");

    // A zero stride: two rows that share one buffer row.
    const Tensor rows = make(c["x"], t, {1, n}).broadcast_to({2, n});
    json twice = c["y"], x_twice = c["x"];
    for (const json& v : c["y"]) twice.push_back(v);
    for (const json& v : c["x"]) x_twice.push_back(v);
    const Tensor y2 = fn(rows, args);
    CHECK(y2.shape() == Shape{2, n});
    CHECK(mismatches(y2, twice, x_scale != nullptr ? &x_twice : nullptr) == "");
    ++checked;
  }
  CHECK(checked > 500);
}

TEST_CASE("binary ops match NumPy for every dtype with broadcasting and transposed operands", "[elementwise][binary][fixture]") {
  int checked = 0;
  for (const json& c : fixture("binary.json")["cases"]) {
    const std::string op = c["op"];
    const DType t = dtype_named(c["dtype"]);
    const DType out_t = dtype_named(c["out_dtype"]);
    const BinaryFn& fn = binary_ops().at(op);
    const int64_t n = static_cast<int64_t>(c["a"].size()), m = static_cast<int64_t>(c["b"].size());
    INFO(op << " on " << dtype_name(t));

    // A column against a row: every pair, through stride-0 broadcasting.
    const Tensor a = make(c["a"], t, {n, 1});
    const Tensor b = make(c["b"], t, {1, m});
    const Tensor y = fn(a, b);
    CHECK(y.dtype() == out_t);
    CHECK(y.shape() == Shape{n, m});
    CHECK(mismatches(y, c["y"]) == "");

    // The same pairs as transposed (non-contiguous) full operands: the result is y transposed.
    const Tensor at = a.broadcast_to({n, m}).contiguous().t();
    const Tensor bt = b.broadcast_to({n, m}).contiguous().t();
    const Tensor yt = fn(at, bt);
    CHECK(yt.shape() == Shape{m, n});
    CHECK(mismatches(yt.t(), c["y"]) == "");
    ++checked;
  }
  CHECK(checked > 200);
}

TEST_CASE("every op and dtype pair is either checked by a fixture or rejected with an error naming it", "[elementwise][table]") {
  std::set<std::pair<std::string, DType>> covered;
  for (const char* file : {"unary.json", "binary.json"}) {
    for (const json& c : fixture(file)["cases"]) covered.insert({c["op"].get<std::string>(), dtype_named(c["dtype"])});
  }
  const Tensor scalar_values = Tensor::from_vector<double>({1.0, 2.0}, cpu());
  for (DType t : kAllDtypes) {
    const Tensor x = scalar_values.to(t);
    for (const auto& [op, fn] : unary_ops()) {
      INFO(op << " on " << dtype_name(t));
      const bool is_covered = covered.count({op, t}) > 0;
      const bool is_unsupported = unsupported().count({op, t}) > 0;
      CHECK(is_covered != is_unsupported);
      if (is_unsupported) CHECK_THROWS_WITH(fn(x, {1.0, 1.0}), Catch::Contains(dtype_name(t)));
    }
    for (const auto& [op, fn] : binary_ops()) {
      INFO(op << " on " << dtype_name(t));
      const bool is_covered = covered.count({op, t}) > 0;
      const bool is_unsupported = unsupported().count({op, t}) > 0;
      CHECK(is_covered != is_unsupported);
      if (is_unsupported) CHECK_THROWS_WITH(fn(x, x), Catch::Contains(op) && Catch::Contains(dtype_name(t)));
    }
  }
}

// ---- edge cases ---------------------------------------------------------------------------------

TEST_CASE("elementwise ops keep empty and zero-size shapes and 0-d scalars", "[elementwise][edge]") {
  const Tensor empty = Tensor::zeros({0}, DType::F32, cpu());
  const Tensor zero_dim = Tensor::zeros({2, 0, 3}, DType::I32, cpu());
  CHECK(empty.exp().shape() == Shape{0});
  CHECK(zero_dim.neg().shape() == Shape{2, 0, 3});
  CHECK(zero_dim.exp().dtype() == DType::F32);  // float math of integers gives f32 even when empty
  CHECK(zero_dim.isnan().dtype() == DType::Bool);
  CHECK(zero_dim.popcount().numel() == 0);
  // A zero-size dim broadcasts against 1 and stays 0.
  const Tensor b = Tensor::zeros({3, 0}, DType::F32, cpu()).maximum(Tensor::ones({1}, DType::F32, cpu()));
  CHECK(b.shape() == Shape{3, 0});
  CHECK(Tensor::zeros({0, 2}, DType::I64, cpu()).lt(Tensor::ones({2}, DType::I64, cpu())).shape() == Shape{0, 2});
  CHECK(Tensor::where(Tensor::zeros({0}, DType::Bool, cpu()), empty, empty).shape() == Shape{0});

  const Tensor s = Tensor::scalar(2.0f, cpu());
  CHECK(s.sqrt().shape() == Shape{});
  CHECK(s.sqrt().item<float>() == Approx(1.41421356f));
  CHECK(s.gt(Tensor::scalar(1.0f, cpu())).item<bool>());
  const Tensor v = Tensor::from_vector<int32_t>({1, 5, 3}, cpu());
  CHECK(values<int32_t>(v.maximum(Tensor::scalar<int32_t>(3, cpu()))) == std::vector<int32_t>{3, 5, 3});
}

TEST_CASE("integer ops wrap and divide by zero as documented", "[elementwise][edge][int]") {
  const Tensor a = Tensor::from_vector<int8_t>({127, -128, -7, 7, -128}, cpu());
  const Tensor b = Tensor::from_vector<int8_t>({1, -1, 2, 0, -1}, cpu());
  CHECK(values<int8_t>(a + b) == std::vector<int8_t>{-128, 127, -5, 7, 127});
  CHECK(values<int8_t>(a / b) == std::vector<int8_t>{127, -128, -3, 0, -128});  // MIN / -1 wraps; x / 0 is 0
  CHECK(values<int8_t>(a.rem(b)) == std::vector<int8_t>{0, 0, -1, 0, 0});       // sign of the dividend; x rem 0 is 0
  CHECK(values<int8_t>(a.neg()) == std::vector<int8_t>{-127, -128, 7, -7, -128});
  CHECK(values<int8_t>(a.abs()) == std::vector<int8_t>{127, -128, 7, 7, -128});
  const Tensor u = Tensor::from_vector<uint8_t>({0, 1, 200}, cpu());
  CHECK(values<uint8_t>(u.neg()) == std::vector<uint8_t>{0, 255, 56});
  CHECK(values<uint8_t>(u.sqr()) == std::vector<uint8_t>{0, 1, 64});  // 40000 mod 256
  // Shift counts outside [0, bits) shift every bit out.
  const Tensor s = Tensor::from_vector<int8_t>({-128, -128, 1, 1, 64}, cpu());
  const Tensor k = Tensor::from_vector<int8_t>({9, 7, 8, -1, 1}, cpu());
  CHECK(values<int8_t>(s.shr(k)) == std::vector<int8_t>{-1, -1, 0, 0, 32});
  CHECK(values<int8_t>(s.shl(k)) == std::vector<int8_t>{0, 0, 0, 0, -128});
  // Integer pow: negative exponents truncate 1 / a^-b.
  const Tensor base = Tensor::from_vector<int32_t>({2, -1, 1, 0, 3}, cpu());
  const Tensor ex = Tensor::from_vector<int32_t>({-1, -3, -5, -1, 31}, cpu());
  // 3^31 = 617673396283947 = 143813 * 2^32 + 1264544299.
  CHECK(values<int32_t>(base.pow(ex)) == std::vector<int32_t>{0, -1, 1, 0, 1264544299});
}

TEST_CASE("NaN propagates through maximum minimum and clamp and compares unequal", "[elementwise][edge][nan]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor a = Tensor::from_vector<float>({nan, 1.0f, -inf, 2.0f}, cpu());
  const Tensor b = Tensor::from_vector<float>({1.0f, nan, 0.0f, 2.0f}, cpu());
  const std::vector<float> mx = values<float>(a.maximum(b)), mn = values<float>(a.minimum(b));
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 0.0f);
  CHECK(std::isnan(mn[0]));
  CHECK(std::isnan(mn[1]));
  CHECK(mn[2] == -inf);
  CHECK(values<bool>(a.eq(a)) == std::vector<bool>{false, true, true, true});
  CHECK(values<bool>(a.ne(a)) == std::vector<bool>{true, false, false, false});
  const std::vector<float> c = values<float>(a.clamp(-1.0, 1.5));
  CHECK(std::isnan(c[0]));
  CHECK(c[1] == 1.0f);
  CHECK(c[2] == -1.0f);
  CHECK(c[3] == 1.5f);
  // A float rem by zero is NaN (C fmod), unlike the integer rule.
  CHECK(std::isnan(Tensor::scalar(5.0f, cpu()).rem(Tensor::scalar(0.0f, cpu())).item<float>()));
}

TEST_CASE("activations reach their limits at infinities", "[elementwise][edge][nan]") {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>({-inf, inf}, cpu());
  CHECK(values<float>(x.gelu()) == std::vector<float>{0.0f, inf});
  CHECK(values<float>(x.gelu_erf()) == std::vector<float>{0.0f, inf});
  CHECK(values<float>(x.silu()) == std::vector<float>{0.0f, inf});
  CHECK(values<float>(x.sigmoid()) == std::vector<float>{0.0f, 1.0f});
  CHECK(values<float>(x.elu(2.0)) == std::vector<float>{-2.0f, inf});
  CHECK(values<float>(x.relu()) == std::vector<float>{0.0f, inf});
}

TEST_CASE("where selects with broadcasting in every dtype and promotes a and b", "[elementwise][where]") {
  const Tensor cond = bools({1, 0, 1});
  for (DType t : kAllDtypes) {
    INFO(dtype_name(t));
    // a is a column [2, 1] (values 1, 0 for bool), b a 0-d scalar; the result is [2, 3].
    const Tensor a = Tensor::from_vector<double>({1.0, 0.0}, {2, 1}, cpu()).to(t);
    const Tensor b = Tensor::scalar(1.0, cpu()).to(t);
    const Tensor w = Tensor::where(cond, a, b);
    CHECK(w.dtype() == t);
    CHECK(w.shape() == Shape{2, 3});
    CHECK(values<double>(w.to(DType::F64)) == std::vector<double>{1, 1, 1, 0, 1, 0});
  }
  const Tensor wi = Tensor::where(cond, Tensor::from_vector<int32_t>({1, 2, 3}, cpu()), Tensor::scalar(0.5f, cpu()));
  CHECK(wi.dtype() == DType::F32);
  CHECK(values<float>(wi) == std::vector<float>{1.0f, 0.5f, 3.0f});
  // A reversed condition (negative stride).
  CHECK(values<int32_t>(Tensor::where(cond.flip(0).logical_not(), Tensor::scalar<int32_t>(1, cpu()),
                                      Tensor::scalar<int32_t>(0, cpu()))) == std::vector<int32_t>{0, 1, 0});
  CHECK_THROWS_WITH(Tensor::where(cond.to(DType::I32), cond, cond), Catch::Contains("condition must be bool, got i32"));
  CHECK_THROWS_WITH(Tensor::where(cond, Tensor::zeros({2}, DType::F32, cpu()), Tensor::zeros({3}, DType::F32, cpu())),
                    Catch::Contains("where"));
}

TEST_CASE("logical ops treat nonzero and NaN as true across dtypes", "[elementwise][logical]") {
  const Tensor a = Tensor::from_vector<float>({0.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f}, cpu());
  const Tensor b = Tensor::from_vector<int32_t>({0, 0, 5, -1}, cpu());
  CHECK(values<bool>(a.logical_and(b)) == std::vector<bool>{false, false, true, false});
  CHECK(values<bool>(a.logical_or(b)) == std::vector<bool>{false, true, true, true});
  CHECK(values<bool>(a.logical_xor(b)) == std::vector<bool>{false, true, false, true});
  CHECK(values<bool>(a.logical_not()) == std::vector<bool>{true, false, false, true});
  CHECK(a.logical_and(b).dtype() == DType::Bool);
}

TEST_CASE("clamp keeps the dtype for whole bounds and saturates bounds outside the range", "[elementwise][clamp]") {
  const Tensor u = Tensor::from_vector<uint8_t>({0, 5, 250}, cpu());
  const Tensor c = u.clamp(-10.0, 300.0);  // both bounds lie outside u8: nothing is clamped
  CHECK(c.dtype() == DType::U8);
  CHECK(values<uint8_t>(c) == std::vector<uint8_t>{0, 5, 250});
  CHECK(values<uint8_t>(u.clamp(2.0, 100.0)) == std::vector<uint8_t>{2, 5, 100});
  const Tensor f = u.clamp(0.5, 99.5);  // fractional bounds make an integer tensor f32
  CHECK(f.dtype() == DType::F32);
  CHECK(values<float>(f) == std::vector<float>{0.5f, 5.0f, 99.5f});
  CHECK(values<float>(Tensor::from_vector<float>({-3.0f, 3.0f}, cpu()).clamp(2.0, 1.0)) == std::vector<float>{1.0f, 1.0f});
}

TEST_CASE("scalar operators take the tensor's dtype and make integers f32 for fractions", "[elementwise][scalar]") {
  const Tensor f = Tensor::from_vector<float>({1.0f, 2.0f}, cpu());
  const Tensor h = Tensor::from_vector<double>({1.0, 2.0}, cpu()).to(DType::BF16);
  const Tensor i = Tensor::from_vector<int32_t>({7, -7}, cpu());
  const Tensor u = Tensor::from_vector<uint8_t>({250, 3}, cpu());
  const Tensor b = bools({1, 0});
  CHECK((f + 2.0).dtype() == DType::F32);
  CHECK(values<float>(f + 2.5) == std::vector<float>{3.5f, 4.5f});
  CHECK((h * 3.0).dtype() == DType::BF16);
  CHECK(values<int32_t>(i * 2.0) == std::vector<int32_t>{14, -14});
  CHECK(values<int32_t>(i / 2.0) == std::vector<int32_t>{3, -3});  // integer division truncates
  CHECK((i + 0.5).dtype() == DType::F32);
  CHECK(values<float>(i + 0.5) == std::vector<float>{7.5f, -6.5f});
  CHECK(values<float>(2.0 - f) == std::vector<float>{1.0f, 0.0f});
  CHECK(values<float>(1.0 / f) == std::vector<float>{1.0f, 0.5f});
  CHECK(values<int32_t>(10.0 - i) == std::vector<int32_t>{3, 17});
  CHECK(values<uint8_t>(u + 10.0) == std::vector<uint8_t>{4, 13});  // wraps like u8 + u8
  CHECK_THROWS_WITH(u + 300.0, Catch::Contains("add: the scalar 300 does not fit u8"));
  CHECK_THROWS_WITH(u - (-1.0), Catch::Contains("does not fit u8"));
  CHECK((b + 2.0).dtype() == DType::I64);
  CHECK(values<int64_t>(b + 2.0) == std::vector<int64_t>{3, 2});
  CHECK((b * 0.5).dtype() == DType::F32);
  CHECK(values<float>(-f) == std::vector<float>{-1.0f, -2.0f});
  CHECK(values<float>(f + std::numeric_limits<double>::infinity()) ==
        std::vector<float>{std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()});
  const Tensor big = Tensor::from_vector<uint64_t>({1}, cpu()) + 18446744073709549568.0;  // 2^64 - 2048, exact
  CHECK(values<uint64_t>(big) == std::vector<uint64_t>{18446744073709549569ull});
}

TEST_CASE("unsupported dtypes give errors that name the op and the dtype", "[elementwise][errors]") {
  const Tensor f = Tensor::from_vector<float>({1.0f}, cpu());
  const Tensor b = bools({1});
  CHECK_THROWS_WITH(f.popcount(), Catch::Contains("popcount: not defined for f32 tensors (only integers)"));
  CHECK_THROWS_WITH(b.neg(), Catch::Contains("neg: not defined for bool"));
  CHECK_THROWS_WITH(f.shl(f), Catch::Contains("shl: not defined for f32"));
  CHECK_THROWS_WITH(b.pow(b), Catch::Contains("pow: not defined for bool"));
  CHECK_THROWS_WITH(Tensor().exp(), Catch::Contains("exp: the tensor is undefined"));
  CHECK_THROWS_WITH(Tensor::zeros({3}, DType::F32, cpu()).maximum(Tensor::zeros({2, 2}, DType::F32, cpu())),
                    Catch::Contains("maximum") && Catch::Contains("[3]") && Catch::Contains("[2, 2]"));
}

// ---- creation -----------------------------------------------------------------------------------

TEST_CASE("arange follows numpy.arange for floats and whole integer steps", "[elementwise][creation]") {
  CHECK(values<float>(Tensor::arange(0, 5, 1, DType::F32, cpu())) == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(values<int32_t>(Tensor::arange(5, 0, -2, DType::I32, cpu())) == std::vector<int32_t>{5, 3, 1});
  CHECK(values<double>(Tensor::arange(0, 1, 0.25, DType::F64, cpu())) == std::vector<double>{0, 0.25, 0.5, 0.75});
  CHECK(Tensor::arange(0, 1, 0.1, DType::F64, cpu()).numel() == 10);  // ceil((stop - start) / step)
  CHECK(Tensor::arange(3, 3, 1, DType::I64, cpu()).shape() == Shape{0});
  CHECK(Tensor::arange(3, 0, 1, DType::I64, cpu()).shape() == Shape{0});
  CHECK(values<uint8_t>(Tensor::arange(250, 256, 2, DType::U8, cpu())) == std::vector<uint8_t>{250, 252, 254});
  CHECK(values<int64_t>(Tensor::arange(-4611686018427387904.0, 0, 2305843009213693952.0, DType::I64, cpu())) ==
        std::vector<int64_t>{-4611686018427387904LL, -2305843009213693952LL});
  const Tensor h = Tensor::arange(0, 3, 0.5, DType::BF16, cpu());
  CHECK(values<float>(h.to(DType::F32)) == std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f});
  CHECK_THROWS_WITH(Tensor::arange(0, 1, 0, DType::F32, cpu()), Catch::Contains("step non-zero"));
  CHECK_THROWS_WITH(Tensor::arange(0, 3, 0.5, DType::I32, cpu()), Catch::Contains("whole start and step"));
  CHECK_THROWS_WITH(Tensor::arange(0, 300, 1, DType::U8, cpu()), Catch::Contains("0 to 299, outside u8"));
  CHECK_THROWS_WITH(Tensor::arange(0, 3, 1, DType::Bool, cpu()), Catch::Contains("arange: not defined for bool"));
}

TEST_CASE("iota counts along one axis or in flat C order for every numeric dtype", "[elementwise][creation]") {
  for (DType t : kAllDtypes) {
    if (t == DType::Bool) continue;
    INFO(dtype_name(t));
    CHECK(values<double>(Tensor::iota({2, 3}, 1, t, cpu()).to(DType::F64)) == std::vector<double>{0, 1, 2, 0, 1, 2});
    CHECK(values<double>(Tensor::iota({2, 3}, 0, t, cpu()).to(DType::F64)) == std::vector<double>{0, 0, 0, 1, 1, 1});
    CHECK(values<double>(Tensor::iota({2, 3}, -1, t, cpu()).to(DType::F64)) == std::vector<double>{0, 1, 2, 3, 4, 5});
  }
  CHECK(values<int64_t>(Tensor::iota({}, -1, DType::I64, cpu())) == std::vector<int64_t>{0});
  CHECK(Tensor::iota({4, 0}, 0, DType::F32, cpu()).shape() == Shape{4, 0});
  // 300 elements of u8 wrap past 255.
  CHECK(values<uint8_t>(Tensor::iota({300}, 0, DType::U8, cpu()))[257] == 1);
  CHECK_THROWS_WITH(Tensor::iota({2}, 1, DType::F32, cpu()), Catch::Contains("axis 1 is out of range for shape [2]"));
  CHECK_THROWS_WITH(Tensor::iota({2}, -2, DType::F32, cpu()), Catch::Contains("or -1 for the C-order flat index"));
  CHECK_THROWS_WITH(Tensor::iota({2}, 0, DType::Bool, cpu()), Catch::Contains("iota: not defined for bool"));
}

TEST_CASE("parallel work on large tensors matches plain loops", "[elementwise][parallel]") {
  // 300 x 1000 elements: above the threshold where rows are split across threads.
  const int64_t rows = 300, cols = 1000;
  std::vector<int32_t> a(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int32_t>(i % 2001) - 1000;
  std::vector<int32_t> row(static_cast<size_t>(cols));
  for (size_t j = 0; j < row.size(); ++j) row[j] = static_cast<int32_t>(j % 7) - 3;
  const Tensor ta = Tensor::from_vector(a, {rows, cols}, cpu());
  const Tensor tr = Tensor::from_vector(row, {1, cols}, cpu());
  const std::vector<int32_t> got = values<int32_t>(ta.mul(tr).maximum(ta.t().t()));
  const std::vector<bool> lt = values<bool>(ta.lt(tr));
  const std::vector<int32_t> ab = values<int32_t>(ta.flip(1).abs());
  size_t bad = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = static_cast<size_t>(i * cols + j);
      const int32_t x = a[k], r = row[static_cast<size_t>(j)];
      bad += got[k] != std::max(x * r, x);
      bad += lt[k] != (x < r);
      bad += ab[k] != std::abs(a[static_cast<size_t>(i * cols + (cols - 1 - j))]);
    }
  }
  CHECK(bad == 0);
  const std::vector<float> e = values<float>(Tensor::full({rows, cols}, 1.0, DType::F32, cpu()).exp());
  CHECK(std::all_of(e.begin(), e.end(), [](float v) { return v == std::exp(1.0f); }));
}

// ---- random numbers -----------------------------------------------------------------------------

TEST_CASE("Philox-4x32-10 reproduces Random123's known-answer vectors", "[elementwise][rng]") {
  // Random123 1.14, tests/kat_vectors, the three "philox4x32 10" lines: counter, key -> output.
  CHECK(sdk::philox4x32_10({0, 0, 0, 0}, {0, 0}) == sdk::PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(sdk::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        sdk::PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(sdk::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        sdk::PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  // Element counters: offset + index as a 128-bit number, carrying into the third word.
  const json& r = fixture("rng.json");
  const uint64_t seed = r["seed"], carry = r["carry_offset"];
  for (uint64_t i = 0; i < 8; ++i) {
    CHECK(sdk::philox_for_element(seed, 0, i) == r["blocks"][i].get<sdk::PhiloxBlock>());
    CHECK(sdk::philox_for_element(seed, carry, i) == r["carry_blocks"][i].get<sdk::PhiloxBlock>());
  }
}

TEST_CASE("rand and randn produce the documented Philox stream in every float dtype", "[elementwise][rng]") {
  const json& r = fixture("rng.json");
  const uint64_t seed = r["seed"];
  const double a = r["a"], b = r["b"];
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO(dtype_name(t));
    const std::string suffix = std::string("_") + dtype_name(t);
    CHECK(mismatches(Tensor::rand({2, 4}, a, b, t, cpu(), seed), r["uniform" + suffix]) == "");
    CHECK(mismatches(Tensor::randn({8}, a, b, t, cpu(), seed), r["normal" + suffix]) == "");
  }
}

TEST_CASE("the same seed gives the same bytes and the process generator continues its stream", "[elementwise][rng]") {
  const Tensor x1 = Tensor::randn({1000}, 0.0, 1.0, DType::F32, cpu(), 7);
  const Tensor x2 = Tensor::randn({1000}, 0.0, 1.0, DType::F32, cpu(), 7);
  CHECK(values<float>(x1) == values<float>(x2));
  CHECK(values<float>(Tensor::randn({1000}, 0.0, 1.0, DType::F32, cpu(), 8)) != values<float>(x1));
  // Two draws after manual_seed are the two halves of one draw with that seed.
  const std::vector<double> whole = values<double>(Tensor::rand({16}, 0.0, 1.0, DType::F64, cpu(), 99));
  manual_seed(99);
  const std::vector<double> first = values<double>(Tensor::rand({8}, 0.0, 1.0, DType::F64, cpu()));
  const std::vector<double> second = values<double>(Tensor::rand({2, 4}, 0.0, 1.0, DType::F64, cpu()));
  CHECK(first == std::vector<double>(whole.begin(), whole.begin() + 8));
  CHECK(second == std::vector<double>(whole.begin() + 8, whole.end()));
  manual_seed(99);
  CHECK(values<double>(Tensor::rand({8}, 0.0, 1.0, DType::F64, cpu())) == first);
  CHECK(Tensor::rand({0, 3}, 0.0, 1.0, DType::F32, cpu()).shape() == Shape{0, 3});
  CHECK_THROWS_WITH(Tensor::rand({2}, 0.0, 1.0, DType::I32, cpu()), Catch::Contains("rand: not defined for i32"));
  CHECK_THROWS_WITH(Tensor::rand({2}, 1.0, 0.0, DType::F32, cpu()), Catch::Contains("lo <= hi"));
  CHECK_THROWS_WITH(Tensor::randn({2}, 0.0, -1.0, DType::F32, cpu()), Catch::Contains("std >= 0"));
}

TEST_CASE("rand and randn have the expected mean and spread over 1e5 samples", "[elementwise][rng][stats]") {
  const int64_t n = 100000;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO(dtype_name(t));
    // Uniform on [1, 2): mean 1.5, variance 1/12. The bound must hold after rounding to bf16/f16.
    const std::vector<double> u = values<double>(Tensor::rand({n}, 1.0, 2.0, t, cpu(), 1234).to(DType::F64));
    double sum = 0, sq = 0;
    for (double v : u) {
      sum += v;
      sq += v * v;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    CHECK(*std::min_element(u.begin(), u.end()) >= 1.0);
    CHECK(*std::max_element(u.begin(), u.end()) < 2.0);
    CHECK(mean == Approx(1.5).margin(0.01));
    CHECK(var == Approx(1.0 / 12).margin(0.005));
    // Normal with mean 3 and standard deviation 2: the standard error of the mean is 0.006.
    const std::vector<double> z = values<double>(Tensor::randn({n}, 3.0, 2.0, t, cpu(), 4321).to(DType::F64));
    sum = sq = 0;
    for (double v : z) {
      sum += v;
      sq += v * v;
    }
    const double zmean = sum / n, zstd = std::sqrt(sq / n - zmean * zmean);
    CHECK(zmean == Approx(3.0).margin(0.04));
    CHECK(zstd == Approx(2.0).margin(0.04));
  }
}

// ---- ops by code (the op table) -------------------------------------------------------------------

TEST_CASE("apply runs any elementwise op of the op table by code with the table's dtype rules", "[elementwise][table]") {
  const Tensor a = Tensor::from_vector<float>({3, 5, -8, 0}, cpu());
  const Tensor b = Tensor::from_vector<float>({4, 12, 15, 0}, cpu());
  // hypot: hand-worked Pythagorean triples.
  CHECK(a.apply(WICK_OP_HYPOT, b).to_vector<float>() == std::vector<float>{5, 13, 17, 0});
  // Float math on integers is computed in f32; the result is f32.
  const Tensor ai = Tensor::from_vector<int32_t>({3, 5}, cpu());
  const Tensor bi = Tensor::from_vector<int32_t>({4, 12}, cpu());
  const Tensor h = ai.apply(WICK_OP_HYPOT, bi);
  CHECK(h.dtype() == DType::F32);
  CHECK(h.to_vector<float>() == std::vector<float>{5, 13});
  // Comparisons give bool, unary ops take their params.
  CHECK(a.apply(WICK_OP_LT, b).dtype() == DType::Bool);
  const wick_unary_params p{sizeof(wick_unary_params), 2.0, 1.0, 0};
  CHECK(a.apply(WICK_OP_AFFINE, &p).to_vector<float>() == std::vector<float>{7, 11, -15, 1});
  // Outside the op's class: an error naming the op and the dtypes it takes.
  const Tensor f = Tensor::from_vector<float>({1.5f}, cpu());
  CHECK_THROWS_WITH(f.apply(WICK_OP_SHL, f), Catch::Contains("shl") && Catch::Contains("integers"));
  // Not an elementwise op of the table.
  CHECK_THROWS_WITH(a.apply(WICK_OP_MATMUL, b), Catch::Contains("matmul") && Catch::Contains("not a binary"));
  CHECK_THROWS_WITH(a.apply(static_cast<wick_op_code>(998)), Catch::Contains("unknown-op"));
}
