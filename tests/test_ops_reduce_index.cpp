// Reductions, arg-reductions, scans, indexing, sorting and joining on the CPU device (and OpenCL).
//
// The fixture tests run every case of tests/data/reduce_index/*.txt (written by
// tests/data/gen_reduce_index.py from NumPy and plain Python loops, never from Wick) in every
// dtype and in three memory layouts of the same values: contiguous, reversed (a negative stride)
// and transposed. The plugin tests call the plugin directly (wick/direct.hpp) for what the Tensor
// API never asks: i32 index outputs, exclusive cummax, the identity of an empty max. The other
// tests are hand-worked edge cases: empty axes, 0-d tensors, broadcast
// (stride 0) inputs, ties, NaN, integer wrap-around, out-of-range indices and long inputs that
// take the multi-threaded paths.
#include "test_support.hpp"

#include <wick/direct.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

using namespace wick;
using wick::test::cpu;

namespace {

// ---- fixtures -----------------------------------------------------------------------------------

struct FixtureTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<std::string> values;
};

struct Case {
  std::string op;
  std::map<std::string, std::string> attrs;
  std::map<std::string, FixtureTensor> tensors;
  std::string where;  // file:line, for messages

  int integer(const std::string& key) const { return std::stoi(attrs.at(key)); }
  const FixtureTensor& tensor(const std::string& name) const { return tensors.at(name); }
};

const std::vector<DType> kAllDTypes = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                       DType::I8,  DType::U8,  DType::I16, DType::I32,
                                       DType::I64, DType::U32, DType::U64, DType::Bool};

DType parse_dtype(const std::string& name) {
  for (DType t : kAllDTypes)
    if (name == dtype_name(t)) return t;
  throw std::runtime_error("unknown dtype " + name);
}

std::vector<Case> load_cases(const std::string& file) {
  const std::string path = std::string(WICK_TEST_DATA_DIR) + "/reduce_index/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<Case> cases;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "case") {
      Case c;
      words >> c.op;
      c.where = file + ":" + std::to_string(number);
      for (std::string kv; words >> kv;) {
        const size_t eq = kv.find('=');
        c.attrs[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      cases.push_back(c);
    } else if (kind == "tensor") {
      std::string name, dtype, colon;
      int rank = 0;
      words >> name >> dtype >> rank;
      FixtureTensor t;
      t.dtype = parse_dtype(dtype);
      t.shape.resize(static_cast<size_t>(rank));
      for (int64_t& d : t.shape) words >> d;
      words >> colon;
      for (std::string v; words >> v;) t.values.push_back(v);
      cases.back().tensors[name] = t;
    }
  }
  return cases;
}

// The fixture's values as the bytes of its dtype.
std::vector<unsigned char> fixture_bytes(const FixtureTensor& f) {
  std::vector<unsigned char> bytes(f.values.size() * dtype_size(f.dtype));
  sdk::visit_dtype(to_c(f.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < f.values.size(); ++i) {
      const char* text = f.values[i].c_str();
      T v;
      if constexpr (std::is_same_v<T, bool>)
        v = std::strtoll(text, nullptr, 10) != 0;
      else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
        v = T(std::strtof(text, nullptr));
      else if constexpr (std::is_floating_point_v<T>)
        v = static_cast<T>(std::strtod(text, nullptr));
      else if constexpr (std::is_signed_v<T>)
        v = static_cast<T>(std::strtoll(text, nullptr, 10));
      else
        v = static_cast<T>(std::strtoull(text, nullptr, 10));
      std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  return bytes;
}

Tensor make(const FixtureTensor& f) {
  const std::vector<unsigned char> bytes = fixture_bytes(f);
  return Tensor::from_bytes(bytes.data(), bytes.size(), f.shape, f.dtype, cpu());
}

// Empty when got equals the fixture exactly (floats: same value and sign of zero, or both NaN);
// otherwise what differs.
std::string mismatch(const Tensor& got, const FixtureTensor& want) {
  if (got.dtype() != want.dtype)
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype);
  if (got.shape() != want.shape)
    return "shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape);
  std::vector<unsigned char> actual(static_cast<size_t>(got.numel()) * dtype_size(got.dtype()));
  got.copy_to_host(actual.data(), actual.size());
  const std::vector<unsigned char> expected = fixture_bytes(want);
  std::string diff;
  sdk::visit_dtype(to_c(want.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < want.values.size() && diff.empty(); ++i) {
      T a, e;
      std::memcpy(&a, actual.data() + i * sizeof(T), sizeof(T));
      std::memcpy(&e, expected.data() + i * sizeof(T), sizeof(T));
      bool same;
      std::string shown;
      if constexpr (std::is_integral_v<T>) {
        same = a == e;
        shown = std::to_string(a);
      } else {
        const double x = static_cast<double>(
            static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(a));
        const double y = static_cast<double>(
            static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(e));
        same = (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y));
        std::ostringstream os;
        os.precision(17);
        os << x;
        shown = os.str();
      }
      if (!same)
        diff = "element " + std::to_string(i) + " is " + shown + ", expected " + want.values[i];
    }
  });
  return diff;
}

// The same values in three memory layouts: as given, reversed along axis 0 (a negative stride)
// and transposed (first and last axes swapped in memory).
Tensor layout(const Tensor& x, int which) {
  if (which == 1 && x.rank() >= 1 && x.numel() > 0) return x.flip(0).contiguous().flip(0);
  if (which == 2 && x.rank() >= 2) return x.transpose(0, -1).contiguous().transpose(0, -1);
  return x;
}

std::vector<int> parse_axes(const std::string& text, int rank) {
  std::vector<int> axes;
  if (text == "all") {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  std::istringstream in(text);
  for (std::string a; std::getline(in, a, ',');) axes.push_back(std::stoi(a));
  return axes;
}

// Runs one case in one layout; returns (output name, tensor) pairs to compare with the fixture.
std::vector<std::pair<std::string, Tensor>> run_case(const Case& c, int which) {
  std::map<std::string, Tensor> in;
  for (const auto& [name, t] : c.tensors) in[name] = layout(make(t), which);
  const Tensor& x = in.at("x");
  const std::string& op = c.op;
  if (op == "sum" || op == "prod" || op == "max" || op == "min" || op == "mean" || op == "all" ||
      op == "any") {
    const std::vector<int> axes = parse_axes(c.attrs.at("axes"), x.rank());
    const bool keep = c.integer("keepdim") != 0;
    Tensor r = op == "sum"    ? x.sum(axes, keep)
               : op == "prod" ? x.prod(axes, keep)
               : op == "max"  ? x.max(axes, keep)
               : op == "min"  ? x.min(axes, keep)
               : op == "mean" ? x.mean(axes, keep)
               : op == "all"  ? x.all(axes, keep)
                              : x.any(axes, keep);
    return {{"expected", r}};
  }
  if (op == "argmax" || op == "argmin") {
    const int axis = c.integer("axis");
    const bool keep = c.integer("keepdim") != 0, last = c.integer("last") != 0;
    return {{"expected", op == "argmax" ? x.argmax(axis, keep, last) : x.argmin(axis, keep, last)}};
  }
  if (op == "cumsum" || op == "cumprod" || op == "cummax" || op == "cummin") {
    const int axis = c.integer("axis");
    const bool reverse = c.integer("reverse") != 0, exclusive = c.integer("exclusive") != 0;
    if (op == "cumsum") return {{"expected", x.cumsum(axis, reverse, exclusive)}};
    if (op == "cumprod") return {{"expected", x.cumprod(axis, reverse, exclusive)}};
    return {{"expected", op == "cummax" ? x.cummax(axis, reverse) : x.cummin(axis, reverse)}};
  }
  if (op == "index_select") return {{"expected", x.index_select(in.at("ids"), c.integer("axis"))}};
  if (op == "index_reduce")
    return {{"expected",
             x.index_reduce(c.integer("axis"), in.at("ids"), in.at("src"), c.attrs.at("mode"))}};
  if (op == "gather") return {{"expected", x.gather(c.integer("axis"), in.at("ids"))}};
  if (op == "scatter")
    return {
        {"expected", x.scatter(c.integer("axis"), in.at("ids"), in.at("src"), c.attrs.at("mode"))}};
  if (op == "sort") {
    auto [values, indices] = x.sort(c.integer("axis"), c.integer("descending") != 0);
    return {{"values", values}, {"indices", indices}};
  }
  if (op == "topk") {
    auto [values, indices] = x.topk(c.integer("k"), c.integer("axis"), c.integer("largest") != 0);
    return {{"values", values}, {"indices", indices}};
  }
  throw std::runtime_error("no runner for op " + op);
}

// Runs every case of a fixture file in every layout; returns the number of (case, layout) runs.
int run_fixture(const std::string& file) {
  int runs = 0;
  for (const Case& c : load_cases(file)) {
    for (int which = 0; which < 3; ++which) {
      INFO(c.where << " " << c.op << " x " << dtype_name(c.tensor("x").dtype) << " layout "
                   << which);
      for (const auto& [name, got] : run_case(c, which)) {
        INFO("output " << name);
        CHECK(mismatch(got, c.tensor(name)) == "");
      }
      ++runs;
    }
  }
  return runs;
}

// Every op of a fixture file is there in all twelve dtypes.
void require_every_dtype(const std::string& file, const std::set<std::string>& ops) {
  std::map<std::string, std::set<DType>> seen;
  for (const Case& c : load_cases(file)) seen[c.op].insert(c.tensor("x").dtype);
  for (const std::string& op : ops) {
    INFO(file << ": op " << op);
    CHECK(seen[op].size() == kAllDTypes.size());
  }
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  return t.to_vector<T>();
}

// A bool tensor (std::vector<bool> has no data() to copy from).
Tensor bools(const std::vector<uint8_t>& v) {
  return Tensor::from_bytes(v.data(), v.size(), {static_cast<int64_t>(v.size())}, DType::Bool,
                            cpu());
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

// ---- fixtures: every op in every dtype and layout
// -------------------------------------------------

TEST_CASE("sum prod max min mean all and any match NumPy in every dtype and layout",
          "[reduce][fixture]") {
  require_every_dtype("reduce.txt", {"sum", "prod", "max", "min", "mean", "all", "any"});
  CHECK(run_fixture("reduce.txt") > 1000);
}

TEST_CASE("argmax and argmin match NumPy with first or last ties and first-NaN in every dtype",
          "[reduce][fixture]") {
  require_every_dtype("arg.txt", {"argmax", "argmin"});
  CHECK(run_fixture("arg.txt") > 400);
}

TEST_CASE("cumsum cumprod cummax and cummin match NumPy forward reversed and exclusive",
          "[scan][fixture]") {
  require_every_dtype("scan.txt", {"cumsum", "cumprod", "cummax", "cummin"});
  CHECK(run_fixture("scan.txt") > 700);
}

TEST_CASE("index_select index_reduce gather and scatter match NumPy in every dtype",
          "[index][fixture]") {
  require_every_dtype("index.txt", {"index_select", "index_reduce", "gather", "scatter"});
  CHECK(run_fixture("index.txt") > 900);
}

TEST_CASE("sort argsort and topk are stable with NaN last ascending and first descending",
          "[sort][fixture]") {
  require_every_dtype("sort.txt", {"sort", "topk"});
  CHECK(run_fixture("sort.txt") > 250);
}

// ---- reductions: edge cases ---------------------------------------------------------------------

TEST_CASE("empty reductions: sum is 0 and prod is 1 and max of an empty axis names op and shape",
          "[reduce][edge]") {
  Tensor e = Tensor::zeros({0, 3}, DType::F32, cpu());
  CHECK(values_of<float>(e.sum({0})) == std::vector<float>{0, 0, 0});
  CHECK(values_of<float>(e.prod({0})) == std::vector<float>{1, 1, 1});
  CHECK(e.sum().shape() == Shape{});
  CHECK(e.sum().item<float>() == 0.0f);
  CHECK(Tensor::zeros({0}, DType::I32, cpu()).prod({0}).item<int64_t>() == 1);
  CHECK_THROWS_WITH(e.max({0}), Catch::Contains("max: axis 0 of shape [0, 3] is empty"));
  CHECK_THROWS_WITH(e.min({0, 1}), Catch::Contains("min: axis 0 of shape [0, 3] is empty"));
  // Reducing a non-empty axis of an empty tensor is fine: the result is empty.
  CHECK(e.max({1}).shape() == Shape{0});
  CHECK(values_of<bool>(e.all({0})) == std::vector<bool>{true, true, true});
  CHECK(values_of<bool>(e.any({0})) == std::vector<bool>{false, false, false});
  CHECK(std::isnan(e.mean({0, 1}).item<float>()));
  CHECK_THROWS_WITH(e.argmax(0), Catch::Contains("argmax: axis 0 of shape [0, 3] is empty"));
  CHECK(e.argmax(1).shape() == Shape{0});
  CHECK(e.cumsum(0).shape() == Shape{0, 3});
  CHECK_THROWS_WITH(e.sum({1, -1}), Catch::Contains("sum: axis -1 is given twice"));
  CHECK_THROWS_WITH(e.sum({2}), Catch::Contains("axis 2 is out of range for a tensor of rank 2"));
}

TEST_CASE("an empty axis reduces to the identity on every device and scans to an empty result",
          "[reduce][edge][opencl]") {
  for (const Device& dev : test::cpu_and_opencl()) {
    INFO(dev.name());
    for (const Shape& shape : {Shape{0, 3}, Shape{3, 0}, Shape{2, 0, 3}}) {
      INFO(shape_to_string(shape));
      const int empty_axis = shape[0] == 0 ? 0 : 1;
      const Tensor f = Tensor::zeros(shape, DType::F32, dev);
      const Tensor kept = f.sum({empty_axis});
      const std::vector<float> zeros(static_cast<size_t>(kept.numel()), 0.0f);
      const std::vector<float> ones(zeros.size(), 1.0f);
      CHECK(values_of<float>(kept) == zeros);
      CHECK(values_of<float>(f.prod({empty_axis})) == ones);
      CHECK(std::isnan(f.mean({empty_axis}).to_vector<float>().at(0)));
      CHECK(values_of<bool>(f.all({empty_axis})) == std::vector<bool>(zeros.size(), true));
      CHECK(values_of<bool>(f.any({empty_axis})) == std::vector<bool>(zeros.size(), false));
      // Every axis at once, and in other dtypes (integers widen to i64, bool sums count).
      std::vector<int> every(shape.size());
      std::iota(every.begin(), every.end(), 0);
      CHECK(f.sum().item<float>() == 0.0f);
      CHECK(Tensor::zeros(shape, DType::F16, dev).prod(every).to(DType::F32).item<float>() == 1.0f);
      CHECK(Tensor::zeros(shape, DType::I32, dev).prod(every).item<int64_t>() == 1);
      CHECK(Tensor::zeros(shape, DType::U8, dev).sum().item<uint64_t>() == 0);
      CHECK(Tensor::zeros(shape, DType::Bool, dev).sum().item<int64_t>() == 0);
      CHECK(std::isnan(Tensor::zeros(shape, DType::I64, dev).mean(every).item<double>()));
      CHECK(Tensor::zeros(shape, DType::Bool, dev).all(every).item<bool>());
      CHECK_FALSE(Tensor::zeros(shape, DType::I16, dev).any(every).item<bool>());
      CHECK_THROWS_WITH(f.max({empty_axis}), Catch::Contains("is empty"));
      CHECK_THROWS_WITH(f.argmin(empty_axis), Catch::Contains("is empty"));
      for (int axis = 0; axis < f.rank(); ++axis) {
        CHECK(f.cumsum(axis).shape() == shape);
        CHECK(f.cumprod(axis, true, true).shape() == shape);
        CHECK(f.cummax(axis).shape() == shape);
      }
    }
  }
}

TEST_CASE("0-d tensors reduce scan and sort as one element", "[reduce][edge]") {
  Tensor s = Tensor::scalar(2.5f, cpu());
  CHECK(s.sum().shape() == Shape{});
  CHECK(s.sum().item<float>() == 2.5f);
  CHECK(s.max({}).item<float>() == 2.5f);
  CHECK(s.mean({}).item<float>() == 2.5f);
  CHECK(s.argmax(0).shape() == Shape{});
  CHECK(s.argmax(-1).item<int64_t>() == 0);
  CHECK(s.cumsum(0).item<float>() == 2.5f);
  CHECK(s.cumsum(0, false, true).item<float>() == 0.0f);
  auto [v, i] = s.sort();
  CHECK(v.item<float>() == 2.5f);
  CHECK(i.item<int64_t>() == 0);
  CHECK_THROWS_WITH(s.argmax(1), Catch::Contains("argmax: axis 1 is out of range"));
  // No axes: nothing is reduced, but the sum still widens integers.
  Tensor n = Tensor::from_vector<int8_t>({100, 100}, cpu());
  CHECK(n.sum({}).dtype() == DType::I64);
  CHECK(values_of<int64_t>(n.sum({})) == std::vector<int64_t>{100, 100});
}

TEST_CASE("broadcast inputs with stride 0 reduce scan and sort like their copies",
          "[reduce][edge]") {
  Tensor row = Tensor::from_vector<float>({1, 2, 3}, cpu()).broadcast_to({4, 3});
  CHECK(row.strides() == std::vector<int64_t>{0, 1});
  CHECK(values_of<float>(row.sum({0})) == std::vector<float>{4, 8, 12});
  CHECK(values_of<float>(row.prod({0})) == std::vector<float>{1, 16, 81});
  CHECK(values_of<float>(row.max({1})) == std::vector<float>{3, 3, 3, 3});
  // Along the broadcast axis every element ties.
  CHECK(values_of<int64_t>(row.argmax(0)) == std::vector<int64_t>{0, 0, 0});
  CHECK(values_of<int64_t>(row.argmax(0, false, true)) == std::vector<int64_t>{3, 3, 3});
  CHECK(values_of<float>(row.cumsum(0)) == std::vector<float>{1, 2, 3, 2, 4, 6, 3, 6, 9, 4, 8, 12});
  CHECK(values_of<int64_t>(row.argsort(0)) ==
        std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3});
  CHECK(values_of<int64_t>(row.argsort(0, true)) ==
        std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3});
  Tensor scalar = Tensor::scalar<int32_t>(7, cpu()).broadcast_to({5});
  CHECK(scalar.sum().item<int64_t>() == 35);
  CHECK(scalar.cumprod(0).to_vector<int64_t>() == std::vector<int64_t>{7, 49, 343, 2401, 16807});
}

TEST_CASE("argmax of a reversed view counts along the view", "[reduce][edge]") {
  Tensor r = Tensor::from_vector<int32_t>({1, 5, 5, 2}, cpu()).flip(0);  // [2, 5, 5, 1]
  CHECK(r.strides() == std::vector<int64_t>{-1});
  CHECK(r.argmax(0).item<int64_t>() == 1);
  CHECK(r.argmax(0, false, true).item<int64_t>() == 2);
  CHECK(r.argmin(0).item<int64_t>() == 3);
  CHECK(values_of<int64_t>(r.cumsum(0)) == std::vector<int64_t>{2, 7, 12, 13});
  CHECK(values_of<int64_t>(r.cumsum(0, true)) == std::vector<int64_t>{13, 11, 6, 1});
  CHECK(values_of<int64_t>(r.cumsum(0, true, true)) == std::vector<int64_t>{11, 6, 1, 0});
}

TEST_CASE("NaN propagates through max min and cummax and wins argmax whatever the tie flag",
          "[reduce][edge]") {
  Tensor x = Tensor::from_vector<float>({1, kNaN, 3, kNaN, -kInf}, cpu());
  CHECK(std::isnan(x.max({0}).item<float>()));
  CHECK(std::isnan(x.min({0}).item<float>()));
  CHECK(std::isnan(x.sum().item<float>()));
  CHECK(x.argmax(0).item<int64_t>() == 1);
  CHECK(x.argmax(0, false, true).item<int64_t>() == 1);
  CHECK(x.argmin(0, false, true).item<int64_t>() == 1);
  const std::vector<float> cm = values_of<float>(x.cummax(0));
  CHECK(cm[0] == 1.0f);
  CHECK(std::isnan(cm[1]));
  CHECK(std::isnan(cm[4]));
  Tensor inf = Tensor::from_vector<float>({kInf, -kInf}, cpu());
  CHECK(std::isnan(inf.sum().item<float>()));
  CHECK(inf.max({0}).item<float>() == kInf);
  CHECK(values_of<bool>(Tensor::from_vector<float>({kNaN, 0}, cpu()).any({0}, true)) ==
        std::vector<bool>{true});
}

TEST_CASE("integer sums and products widen to 64 bits and wrap there", "[reduce][edge]") {
  const int64_t big = std::numeric_limits<int64_t>::max();
  CHECK(Tensor::from_vector<int64_t>({big, 1}, cpu()).sum().item<int64_t>() ==
        std::numeric_limits<int64_t>::min());
  CHECK(Tensor::from_vector<uint64_t>({~uint64_t(0), 2}, cpu()).sum().item<uint64_t>() == 1u);
  // i32 * i32 overflows 32 bits but not the i64 result.
  Tensor p = Tensor::from_vector<int32_t>({65536, 65536}, cpu()).prod({0});
  CHECK(p.dtype() == DType::I64);
  CHECK(p.item<int64_t>() == int64_t(1) << 32);
  Tensor b = bools({1, 1, 0, 1});
  CHECK(b.sum().dtype() == DType::I64);
  CHECK(b.sum().item<int64_t>() == 3);
  CHECK(values_of<int64_t>(b.cumsum(0)) == std::vector<int64_t>{1, 2, 2, 3});
  CHECK(Tensor::from_vector<uint8_t>({200, 100}, cpu()).cumsum(0).to_vector<uint64_t>() ==
        std::vector<uint64_t>{200, 300});
}

TEST_CASE("mean returns floats in their dtype and integers and bool as f64", "[reduce]") {
  CHECK(Tensor::from_vector<int32_t>({1, 2}, cpu()).mean({0}).dtype() == DType::F64);
  CHECK(Tensor::from_vector<int32_t>({1, 2}, cpu()).mean({0}).item<double>() == 1.5);
  CHECK(bools({1, 0, 0, 0}).mean({0}).item<double>() == 0.25);
  // f16 averages in f32: 60000 + 60000 overflows f16 (max 65504) but the mean does not.
  Tensor h = Tensor::from_vector<float>({60000, 60000}, cpu()).to(DType::F16);
  Tensor m = h.mean({0});
  CHECK(m.dtype() == DType::F16);
  CHECK(m.to(DType::F32).item<float>() == 60000.0f);
}

TEST_CASE("long reductions split across threads give exact results", "[reduce][threads]") {
  const int64_t n = 1 << 20;
  Tensor ones = Tensor::ones({n}, DType::F32, cpu());
  CHECK(ones.sum().item<float>() == static_cast<float>(n));
  // 0 + 1 + ... + (n - 1) is exact in f64 and rounds once to f32.
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = static_cast<double>(i);
  Tensor ramp = Tensor::from_vector(r, cpu());
  CHECK(ramp.sum().item<double>() == static_cast<double>(n) * static_cast<double>(n - 1) / 2);
  CHECK(ramp.to(DType::F32).sum().item<float>() ==
        static_cast<float>(static_cast<double>(n) * static_cast<double>(n - 1) / 2));
  CHECK(ramp.max({0}).item<double>() == static_cast<double>(n - 1));
  // Inexact values: within a few f32 ulps of the sum computed here in f64, along both loop shapes.
  std::vector<float> odd(static_cast<size_t>(n));
  double exact = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    odd[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.001f + 0.1f;
    exact += static_cast<double>(odd[static_cast<size_t>(i)]);
  }
  Tensor o = Tensor::from_vector(odd, cpu());
  CHECK(o.sum().item<float>() == Approx(exact).epsilon(1e-6));
  CHECK(o.reshape({1024, 1024}).sum({0}).sum().item<float>() == Approx(exact).epsilon(1e-6));
  // Outer-axis (column) reductions, with the rows cut between threads.
  Tensor cols = Tensor::ones({100000, 16}, DType::F32, cpu());
  CHECK(values_of<float>(cols.sum({0})) == std::vector<float>(16, 100000.0f));
  Tensor wide = Tensor::ones({300, 1000}, DType::I32, cpu());
  CHECK(values_of<int64_t>(wide.sum({0})) == std::vector<int64_t>(1000, 300));
  CHECK(values_of<int64_t>(wide.sum({1})) == std::vector<int64_t>(300, 1000));
  // Ties and NaN far apart land in different pieces.
  std::vector<float> v(static_cast<size_t>(n), 0.0f);
  v[123] = 7;
  v[999000] = 7;
  Tensor t = Tensor::from_vector(v, cpu());
  CHECK(t.argmax(0).item<int64_t>() == 123);
  CHECK(t.argmax(0, false, true).item<int64_t>() == 999000);
  v[500000] = kNaN;
  v[600000] = kNaN;
  Tensor tn = Tensor::from_vector(v, cpu());
  CHECK(tn.argmax(0, false, true).item<int64_t>() == 500000);
  CHECK(std::isnan(tn.max({0}).item<float>()));
  // Column scans.
  Tensor c = Tensor::ones({1000, 64}, DType::F32, cpu()).cumsum(0);
  const std::vector<float> cv = values_of<float>(c);
  CHECK(cv[0] == 1.0f);
  CHECK(cv[64 * 999 + 5] == 1000.0f);
}

// ---- indexing: edge cases
// -------------------------------------------------------------------------

TEST_CASE("out-of-range indices are errors naming the index the axis and the extent",
          "[index][edge]") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, cpu());
  Tensor bad = Tensor::from_vector<int64_t>({0, 4}, cpu());
  CHECK_THROWS_WITH(
      x.index_select(bad, 0),
      Catch::Contains("index_select: index 4 is out of range for axis 0 of extent 4"));
  Tensor neg = Tensor::from_vector<int32_t>({-5}, cpu());
  CHECK_THROWS_WITH(
      x.index_select(neg, 0),
      Catch::Contains("index -5 is out of range for axis 0 of extent 4 (valid: -4 to 3)"));
  CHECK_THROWS_WITH(
      x.index_add(1, Tensor::from_vector<int64_t>({2}, cpu()),
                  Tensor::ones({4, 1}, DType::F32, cpu())),
      Catch::Contains("index_reduce: index 2 is out of range for axis 1 of extent 2"));
  Tensor g = Tensor::from_vector<int64_t>({0, 1, 2, 0}, {2, 2}, cpu());
  CHECK_THROWS_WITH(
      x.gather(1, g),
      Catch::Contains("gather_elements: index 2 is out of range for axis 1 of extent 2"));
  CHECK_THROWS_WITH(
      x.scatter(1, g, Tensor::zeros({2, 2}, DType::F32, cpu())),
      Catch::Contains("scatter_elements: index 2 is out of range for axis 1 of extent 2"));
  CHECK_THROWS_WITH(x.index_select(Tensor::from_vector<float>({0}, cpu()), 0),
                    Catch::Contains("index_select: indices must be i32 or i64, got f32"));
  CHECK_THROWS_WITH(x.index_reduce(0, bad, x, "mean"),
                    Catch::Contains("unknown mode 'mean' (valid: set, add, mul, max, min)"));
  CHECK_THROWS_WITH(x.index_add(0, Tensor::from_vector<int64_t>({0}, cpu()), x),
                    Catch::Contains("src has shape [4, 2]; for a tensor of shape [4, 2] and 1 "
                                    "indices along axis 0 it must be [1, 2]"));
  CHECK_THROWS_WITH(x.gather(0, Tensor::zeros({2, 3}, DType::I64, cpu())),
                    Catch::Contains("do not fit a tensor of shape [4, 2]"));
  // A failed op leaves its input untouched.
  CHECK(values_of<float>(x) == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_CASE("index_add accumulates repeated indices and scatter broadcasts src", "[index]") {
  Tensor x = Tensor::zeros({3, 2}, DType::F32, cpu());
  Tensor ids = Tensor::from_vector<int64_t>({2, 0, 2, -1}, cpu());
  Tensor src = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, cpu());
  // row 2 gets rows 0, 2 and 3 (index -1 is 2): [1+5+7, 2+6+8]; row 0 gets row 1.
  CHECK(values_of<float>(x.index_add(0, ids, src)) == std::vector<float>{3, 4, 0, 0, 13, 16});
  // A scalar src broadcast to the indices' shape.
  Tensor s = x.scatter(1, Tensor::from_vector<int32_t>({1, 0, 1}, {3, 1}, cpu()),
                       Tensor::scalar(9.0f, cpu()));
  CHECK(values_of<float>(s) == std::vector<float>{0, 9, 9, 0, 0, 9});
  // Indices read through a reversed (negative-stride) view.
  Tensor picked = src.index_select(Tensor::from_vector<int64_t>({0, 1, 3}, cpu()).flip(0), 0);
  CHECK(values_of<float>(picked) == std::vector<float>{7, 8, 3, 4, 1, 2});
  // index_select with a 2-D index tensor makes an embedding lookup.
  Tensor table = Tensor::from_vector<float>({0, 0, 1, 1, 2, 2}, {3, 2}, cpu());
  Tensor e = table.index_select(Tensor::from_vector<int32_t>({2, 1, 0, 2}, {2, 2}, cpu()), 0);
  CHECK(e.shape() == Shape{2, 2, 2});
  CHECK(values_of<float>(e) == std::vector<float>{2, 2, 1, 1, 0, 0, 2, 2});
}

TEST_CASE("a long embedding lookup and index_add run across threads", "[index][threads]") {
  const int64_t rows = 1000, dim = 64, lookups = 5000;
  std::vector<float> t(static_cast<size_t>(rows * dim));
  for (int64_t i = 0; i < rows * dim; ++i) t[static_cast<size_t>(i)] = static_cast<float>(i / dim);
  Tensor table = Tensor::from_vector(t, {rows, dim}, cpu());  // row r holds r
  std::vector<int64_t> ids(static_cast<size_t>(lookups));
  for (int64_t i = 0; i < lookups; ++i) ids[static_cast<size_t>(i)] = (i * 7) % rows;
  Tensor out = table.index_select(Tensor::from_vector(ids, cpu()), 0);
  const std::vector<float> v = values_of<float>(out);
  CHECK(v[static_cast<size_t>(4999 * dim + 63)] == static_cast<float>((4999 * 7) % rows));
  // Every row is hit 5 times (5000 lookups of 1000 rows, 7 coprime with 1000).
  Tensor sums = Tensor::zeros({rows, dim}, DType::F32, cpu())
                    .index_add(0, Tensor::from_vector(ids, cpu()),
                               Tensor::ones({lookups, dim}, DType::F32, cpu()));
  CHECK(values_of<float>(sums.sum()) == std::vector<float>{static_cast<float>(lookups * dim)});
  CHECK(sums.max({0, 1}).item<float>() == 5.0f);
}

// ---- sorting: edge cases ------------------------------------------------------------------------

TEST_CASE("sort keeps equal elements in order in long lines both directions", "[sort][edge]") {
  const int64_t n = 3000;
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3);
  auto [values, indices] = Tensor::from_vector(v, cpu()).sort(0);
  const std::vector<int64_t> idx = values_of<int64_t>(indices);
  // Ascending: all 0s (indices 0, 3, 6, ...), then the 1s, then the 2s.
  CHECK(idx[0] == 0);
  CHECK(idx[1] == 3);
  CHECK(idx[999] == 2997);
  CHECK(idx[1000] == 1);
  CHECK(idx[2999] == 2999);
  const std::vector<int64_t> desc =
      values_of<int64_t>(Tensor::from_vector(v, cpu()).argsort(0, true));
  CHECK(desc[0] == 2);
  CHECK(desc[1] == 5);
  CHECK(desc[2999] == 2997);
  CHECK(values_of<int32_t>(values)[1500] == 1);
}

TEST_CASE("topk picks the largest or smallest and rejects k beyond the axis", "[sort]") {
  Tensor x = Tensor::from_vector<float>({3, 1, 4, 1, 5, 9, 2, 6}, {2, 4}, cpu());
  auto [v, i] = x.topk(2);
  CHECK(values_of<float>(v) == std::vector<float>{4, 3, 9, 6});
  CHECK(values_of<int64_t>(i) == std::vector<int64_t>{2, 0, 1, 3});
  auto [sv, si] = x.topk(1, 0, false);
  CHECK(values_of<float>(sv) == std::vector<float>{3, 1, 2, 1});
  CHECK(values_of<int64_t>(si) == std::vector<int64_t>{0, 0, 1, 0});
  CHECK_THROWS_WITH(x.topk(5),
                    Catch::Contains("topk: k = 5 is outside [0, 4] for axis 1 of shape [2, 4]"));
}

// ---- cat and stack ------------------------------------------------------------------------------

TEST_CASE("cat joins along an axis with promotion and strided or broadcast inputs", "[cat]") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, cpu());
  Tensor b = Tensor::from_vector<int32_t>({5, 6}, {2, 1}, cpu());
  Tensor c = Tensor::cat({a, b}, 1);
  CHECK(c.dtype() == DType::F32);
  CHECK(c.shape() == Shape{2, 3});
  CHECK(values_of<float>(c) == std::vector<float>{1, 2, 5, 3, 4, 6});
  // A transposed, a reversed and a broadcast input, and an empty one.
  Tensor d = Tensor::cat({a.t(), a.flip(0), Tensor::scalar(7.0f, cpu()).broadcast_to({1, 2}),
                          Tensor::zeros({0, 2}, DType::F32, cpu())},
                         0);
  CHECK(d.shape() == Shape{5, 2});
  CHECK(values_of<float>(d) == std::vector<float>{1, 3, 2, 4, 3, 4, 1, 2, 7, 7});
  CHECK(values_of<float>(Tensor::cat({a}, -1)) == std::vector<float>{1, 2, 3, 4});
  CHECK_THROWS_WITH(
      Tensor::cat({a, b}, 0),
      Catch::Contains(
          "cat: tensor 1 has shape [2, 1], which does not match tensor 0's [2, 2] off axis 0"));
  CHECK_THROWS_WITH(Tensor::cat({}, 0), Catch::Contains("cat: no tensors given"));
  CHECK_THROWS_WITH(Tensor::cat({Tensor::scalar(1.0f, cpu())}, 0), Catch::Contains("use stack"));
}

TEST_CASE("stack adds a new axis at any position", "[cat]") {
  Tensor a = Tensor::from_vector<int64_t>({1, 2, 3}, cpu());
  Tensor b = Tensor::from_vector<int64_t>({4, 5, 6}, cpu());
  Tensor s0 = Tensor::stack({a, b}, 0);
  CHECK(s0.shape() == Shape{2, 3});
  CHECK(values_of<int64_t>(s0) == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  Tensor s1 = Tensor::stack({a, b}, -1);
  CHECK(s1.shape() == Shape{3, 2});
  CHECK(values_of<int64_t>(s1) == std::vector<int64_t>{1, 4, 2, 5, 3, 6});
  Tensor scalars =
      Tensor::stack({Tensor::scalar<int64_t>(8, cpu()), Tensor::scalar<int64_t>(9, cpu())}, 0);
  CHECK(values_of<int64_t>(scalars) == std::vector<int64_t>{8, 9});
  CHECK_THROWS_WITH(
      Tensor::stack({a, Tensor::zeros({2}, DType::I64, cpu())}, 0),
      Catch::Contains("stack: tensor 1 has shape [2], tensor 0 has [3]; all must be equal"));
  CHECK_THROWS_WITH(Tensor::stack({a, b}, 2), Catch::Contains("stack: axis 2 is out of range"));
}

// ---- the plugin, called directly
// ------------------------------------------------------------------

namespace {

wick_axis_params axis_flag(int axis, int flag) {
  wick_axis_params p{};
  p.struct_size = sizeof(p);
  p.axis = axis;
  p.flag = flag;
  return p;
}

// Reduce over axis 0.
wick_reduce_params over_axis0() {
  static const int32_t axis0 = 0;
  wick_reduce_params p{};
  p.struct_size = sizeof(p);
  p.axes = &axis0;
  p.num_axes = 1;
  return p;
}

void run_direct(wick_op_code op, const void* params, const std::vector<Tensor>& in,
                const std::vector<Tensor>& out) {
  const DirectResult r = run_op_direct(cpu(), op, params, in, out);
  INFO(r.message);
  REQUIRE(r.status == DirectResult::Status::Ran);
}

}  // namespace

TEST_CASE("the plugin writes i32 indices for argmax argmin and sort when asked", "[plugin]") {
  Tensor x = Tensor::from_vector<float>({3, 1, 3, 0, 5, 5}, {2, 3}, cpu());
  Tensor idx = Tensor::empty({2, 1}, DType::I32, cpu());
  const wick_axis_params first = axis_flag(1, 0), last = axis_flag(1, 1);
  run_direct(WICK_OP_ARGMAX, &first, {x}, {idx});
  CHECK(values_of<int32_t>(idx) == std::vector<int32_t>{0, 1});
  run_direct(WICK_OP_ARGMAX, &last, {x}, {idx});
  CHECK(values_of<int32_t>(idx) == std::vector<int32_t>{2, 2});
  run_direct(WICK_OP_ARGMIN, &first, {x}, {idx});
  CHECK(values_of<int32_t>(idx) == std::vector<int32_t>{1, 0});
  wick_sort_params sp{};
  sp.struct_size = sizeof(sp);
  sp.axis = 1;
  Tensor values = Tensor::empty({2, 3}, DType::F32, cpu());
  Tensor order = Tensor::empty({2, 3}, DType::I32, cpu());
  run_direct(WICK_OP_SORT, &sp, {x}, {values, order});
  CHECK(values_of<float>(values) == std::vector<float>{1, 3, 3, 0, 5, 5});
  CHECK(values_of<int32_t>(order) == std::vector<int32_t>{1, 0, 2, 0, 1, 2});
  sp.descending = 1;
  run_direct(WICK_OP_SORT, &sp, {x}, {values, order});
  CHECK(values_of<float>(values) == std::vector<float>{3, 3, 1, 5, 5, 0});
  CHECK(values_of<int32_t>(order) == std::vector<int32_t>{0, 2, 1, 1, 2, 0});
}

TEST_CASE("integer sums and scans in their own dtype wrap at its width", "[plugin][reduce]") {
  const wick_reduce_params rp = over_axis0();
  // Columns: [INT32_MAX, 1] and [65536, 65536].
  Tensor x = Tensor::from_vector<int32_t>({std::numeric_limits<int32_t>::max(), 65536, 1, 65536},
                                          {2, 2}, cpu());
  Tensor out = Tensor::empty({1, 2}, DType::I32, cpu());
  run_direct(WICK_OP_REDUCE_SUM, &rp, {x}, {out});
  CHECK(values_of<int32_t>(out) ==
        std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 131072});
  // 65536 * 65536 = 2^32 keeps its low 32 bits: 0.
  run_direct(WICK_OP_REDUCE_PROD, &rp, {x}, {out});
  CHECK(values_of<int32_t>(out) == std::vector<int32_t>{std::numeric_limits<int32_t>::max(), 0});
  Tensor u = Tensor::from_vector<uint8_t>({200, 100, 3}, cpu());
  Tensor uo = Tensor::empty({3}, DType::U8, cpu());
  const wick_axis_params forward = axis_flag(0, 0);
  run_direct(WICK_OP_CUMSUM, &forward, {u}, {uo});
  CHECK(values_of<uint8_t>(uo) == std::vector<uint8_t>{200, 44, 47});  // 300 wraps to 44
  run_direct(WICK_OP_CUMPROD, &forward, {u}, {uo});
  CHECK(values_of<uint8_t>(uo) == std::vector<uint8_t>{200, 32, 96});  // 20000 % 256 = 32
}

TEST_CASE("exclusive cummax and cummin start from the identity", "[plugin][scan]") {
  Tensor x = Tensor::from_vector<int32_t>({2, 1, 4, 3}, cpu());
  Tensor out = Tensor::empty({4}, DType::I32, cpu());
  const wick_axis_params exclusive = axis_flag(0, 2), reverse_exclusive = axis_flag(0, 3);
  run_direct(WICK_OP_CUMMAX, &exclusive, {x}, {out});
  CHECK(values_of<int32_t>(out) ==
        std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 2, 2, 4});
  run_direct(WICK_OP_CUMMIN, &reverse_exclusive, {x}, {out});
  CHECK(values_of<int32_t>(out) ==
        std::vector<int32_t>{1, 3, 3, std::numeric_limits<int32_t>::max()});
  Tensor f = Tensor::from_vector<float>({2, kNaN, 1}, cpu());
  Tensor fo = Tensor::empty({3}, DType::F32, cpu());
  run_direct(WICK_OP_CUMMIN, &exclusive, {f}, {fo});
  const std::vector<float> v = values_of<float>(fo);
  CHECK(v[0] == kInf);
  CHECK(v[1] == 2.0f);
  CHECK(std::isnan(v[2]));
}

TEST_CASE("the plugin fills an empty max or min with the identity and says no to other dtypes",
          "[plugin][reduce]") {
  const wick_reduce_params rp = over_axis0();
  Tensor e = Tensor::zeros({0, 2}, DType::F32, cpu());
  Tensor out = Tensor::empty({1, 2}, DType::F32, cpu());
  run_direct(WICK_OP_REDUCE_MAX, &rp, {e}, {out});
  CHECK(values_of<float>(out) == std::vector<float>{-kInf, -kInf});
  Tensor e8 = Tensor::zeros({0, 2}, DType::I8, cpu());
  Tensor out8 = Tensor::empty({1, 2}, DType::I8, cpu());
  run_direct(WICK_OP_REDUCE_MAX, &rp, {e8}, {out8});
  CHECK(values_of<int8_t>(out8) == std::vector<int8_t>{-128, -128});
  Tensor eu = Tensor::zeros({0, 2}, DType::U8, cpu());
  Tensor outu = Tensor::empty({1, 2}, DType::U8, cpu());
  run_direct(WICK_OP_REDUCE_MIN, &rp, {eu}, {outu});
  CHECK(values_of<uint8_t>(outu) == std::vector<uint8_t>{255, 255});
  // Integer sums write their own dtype or 64 bits, nothing else.
  Tensor i = Tensor::zeros({3, 2}, DType::I32, cpu());
  CHECK(query_op_direct(cpu(), WICK_OP_REDUCE_SUM, &rp, {i},
                        {Tensor::empty({1, 2}, DType::I16, cpu())}) == WICK_SUPPORT_NO_DTYPE);
  CHECK(query_op_direct(cpu(), WICK_OP_REDUCE_SUM, &rp, {i},
                        {Tensor::empty({1, 2}, DType::I64, cpu())}) == WICK_SUPPORT_YES);
  Tensor b = Tensor::zeros({3, 2}, DType::Bool, cpu());
  CHECK(query_op_direct(cpu(), WICK_OP_REDUCE_SUM, &rp, {b},
                        {Tensor::empty({1, 2}, DType::Bool, cpu())}) == WICK_SUPPORT_NO_DTYPE);
  CHECK(query_op_direct(cpu(), WICK_OP_REDUCE_SUM, &rp, {i},
                        {Tensor::empty({2, 2}, DType::I64, cpu())}) == WICK_SUPPORT_NO_PARAMS);
  const wick_axis_params a = axis_flag(0, 0);
  CHECK(query_op_direct(cpu(), WICK_OP_ARGMAX, &a, {i},
                        {Tensor::empty({1, 2}, DType::F32, cpu())}) == WICK_SUPPORT_NO_DTYPE);
  wick_sort_params sp{};
  sp.struct_size = sizeof(sp);
  CHECK(query_op_direct(cpu(), WICK_OP_SORT, &sp, {i},
                        {Tensor::empty({3, 2}, DType::I32, cpu())}) == WICK_SUPPORT_NO_PARAMS);
}
