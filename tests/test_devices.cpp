// The built plugins on this machine: cpu-onednn and opencl (PoCL) must be usable; cuda, when
// built, must load and be either usable or unavailable with the driver's reason. The same ops on
// cpu and opencl give the same results.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace wick;

namespace {

Device opencl() {
  Device d = test::built_runtime().registry().find_device("opencl");
  REQUIRE(d.valid());
  return d;
}

}  // namespace

TEST_CASE("cpu-onednn is usable with one CPU device", "[devices]") {
  auto info = test::built_runtime().registry().find("cpu-onednn");
  REQUIRE(info != nullptr);
  CHECK(info->state == PluginState::Usable);
  REQUIRE(info->devices.size() == 1);
  CHECK(info->devices[0].kind == DeviceKind::CPU);
  CHECK(info->abi_major == WICK_ABI_MAJOR);
}

TEST_CASE("opencl is usable on PoCL", "[devices][opencl]") {
  auto info = test::built_runtime().registry().find("opencl");
  REQUIRE(info != nullptr);
  INFO(info->reason);
  CHECK(info->state == PluginState::Usable);
  CHECK_FALSE(info->devices.empty());
}

TEST_CASE("cuda, when built, loads and never fails: usable, or unavailable with a reason",
          "[devices][cuda]") {
  auto info = test::built_runtime().registry().find("cuda");
  if (info == nullptr || info->state == PluginState::NotFound) {
    WARN("the CUDA plugin was not built (no CUDA toolkit at configure time)");
    return;
  }
  INFO(info->reason);
  const bool ok = info->state == PluginState::Usable ||
                  (info->state == PluginState::Unavailable && !info->reason.empty());
  CHECK(ok);
}

TEST_CASE("the default priority never puts an OpenCL CPU device (PoCL) ahead of the CPU plugin",
          "[devices]") {
  const Selection& s = test::built_runtime().selection();
  auto cuda = test::built_runtime().registry().find("cuda");
  if (cuda != nullptr && cuda->state == PluginState::Usable) {
    CHECK(s.device.plugin_name() == "cuda");
  } else if (s.device.plugin_name() == "opencl") {
    CHECK(s.device.kind() != DeviceKind::CPU);  // an OpenCL GPU or accelerator
  } else {
    // Here: PoCL is the only OpenCL device, of kind cpu, so cpu-onednn is chosen.
    CHECK(s.device.kind() == DeviceKind::CPU);
    CHECK(s.device.plugin_name() != "opencl");
    CHECK_THAT(s.reason, Catch::Contains("'cpu' is priority 4 of 4"));
  }
}

TEST_CASE("a priority entry plugin:kind picks that plugin's first device of the kind",
          "[devices]") {
  const PluginRegistry& r = test::built_runtime().registry();
  const Device pocl = r.find_device("opencl:cpu");
  if (pocl.valid()) {
    CHECK(pocl.plugin_name() == "opencl");
    CHECK(pocl.kind() == DeviceKind::CPU);
  }
  CHECK_FALSE(r.find_device("cpu-onednn:gpu").valid());
  CHECK(r.find_device("cpu-onednn:cpu").valid());
}

TEST_CASE("the same ops give the same results on cpu and opencl", "[devices][opencl]") {
  const Device cl = opencl();
  const Device cpu = test::cpu();
  std::vector<float> av(24), bv(4);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) * 0.5f - 3.0f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i) + 0.25f;
  auto both = [&](auto&& f) {
    const Tensor on_cpu = f(cpu);
    const Tensor on_cl = f(cl);
    CHECK(on_cl.device() == cl);
    CHECK(on_cl.shape() == on_cpu.shape());
    return std::make_pair(on_cpu.to(cpu).contiguous(), on_cl.to(cpu).contiguous());
  };
  SECTION("strided copies: transpose, permute, negative steps") {
    auto [x, y] = both([&](const Device& d) {
      return Tensor::from_vector(av, {2, 3, 4}, d)
          .permute({2, 0, 1})
          .flip(1)
          .slice(2, 2, std::nullopt, -2)
          .contiguous();
    });
    CHECK(x.to_vector<float>() == y.to_vector<float>());
    CHECK(x.numel() == 4 * 2 * 2);
  }
  SECTION("broadcast add in f32, i32 and i64") {
    auto [x, y] = both([&](const Device& d) {
      return Tensor::from_vector(av, {2, 3, 4}, d) + Tensor::from_vector(bv, {4}, d);
    });
    CHECK(x.to_vector<float>() == y.to_vector<float>());
    auto [i, j] = both([&](const Device& d) {
      return Tensor::from_vector<int32_t>({1, -2, 3}, {3, 1}, d) +
             Tensor::from_vector<int32_t>({10, 20}, {1, 2}, d);
    });
    CHECK(i.to_vector<int32_t>() == std::vector<int32_t>{11, 21, 8, 18, 13, 23});
    CHECK(j.to_vector<int32_t>() == i.to_vector<int32_t>());
    auto [k, l] = both([&](const Device& d) {
      return Tensor::from_vector<int64_t>({1LL << 40, -5}, d) + Tensor::scalar<int64_t>(7, d);
    });
    CHECK(l.to_vector<int64_t>() == std::vector<int64_t>{(1LL << 40) + 7, 2});
    CHECK(k.to_vector<int64_t>() == l.to_vector<int64_t>());
  }
  SECTION("fill of every dtype") {
    auto [x, y] = both([&](const Device& d) { return Tensor::full({3, 2}, -2.0, DType::I16, d); });
    CHECK(y.to_vector<int16_t>() == std::vector<int16_t>(6, -2));
    auto [h, g] = both([&](const Device& d) { return Tensor::full({2}, 0.1, DType::BF16, d); });
    CHECK(g.to(DType::F32).to_vector<float>() == h.to(DType::F32).to_vector<float>());
  }
  SECTION("arithmetic: sub, mul, div, maximum and minimum with NaN, in f32 and i32") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto [x, y] = both([&](const Device& d) {
      const Tensor a = Tensor::from_vector<float>({1, -2, nan, 4}, d);
      const Tensor b = Tensor::from_vector<float>({3, 5, 1, nan}, d);
      return Tensor::stack({a - b, a * b, a / b, a.maximum(b), a.minimum(b)}, 0);
    });
    (void)x;
    // Hand-worked: rows sub, mul, div, maximum, minimum; NaN wherever an operand is NaN.
    const std::vector<float> got = y.to_vector<float>();
    const std::vector<float> want = {-2,  -7,  nan, nan, 3,   -10, nan, nan, 1.0f / 3, -0.4f,
                                     nan, nan, 3,   5,   nan, nan, 1,   -2,  nan,      nan};
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i);
      if (std::isnan(want[i]))
        CHECK(std::isnan(got[i]));
      else
        CHECK(got[i] == Approx(want[i]));
    }
    auto [i, j] = both([&](const Device& d) {
      return Tensor::from_vector<int32_t>({7, -7, 5, std::numeric_limits<int32_t>::min()}, d) /
             Tensor::from_vector<int32_t>({2, 2, 0, -1}, d);
    });
    CHECK(j.to_vector<int32_t>() ==
          std::vector<int32_t>{3, -3, 0, std::numeric_limits<int32_t>::min()});
    CHECK(i.to_vector<int32_t>() == j.to_vector<int32_t>());
  }
  SECTION("unary math in f32 agrees within a few ulp") {
    auto [x, y] = both([&](const Device& d) {
      const Tensor a = Tensor::from_vector(av, {24}, d);
      return Tensor::stack({a.neg(), a.abs(), a.exp(), a.abs().sqrt(), a.tanh(), a.sigmoid(),
                            a.relu(), a.sin(), a.cos(), (a.abs() + 1.0).log()},
                           0);
    });
    const std::vector<float> c = x.to_vector<float>(), g = y.to_vector<float>();
    REQUIRE(c.size() == g.size());
    for (size_t i = 0; i < c.size(); ++i) CHECK(g[i] == Approx(c[i]).epsilon(1e-5).margin(1e-6));
  }
  SECTION("matmul: batched, transposed and reversed operands, and K = 0") {
    auto [x, y] = both([&](const Device& d) {
      const Tensor a = Tensor::from_vector(av, {2, 3, 4}, d);
      return a.matmul(a.transpose(1, 2).flip(2));
    });
    const std::vector<float> c = x.to_vector<float>(), g = y.to_vector<float>();
    for (size_t i = 0; i < c.size(); ++i) CHECK(g[i] == Approx(c[i]).epsilon(1e-5));
    auto [z0, z1] = both([&](const Device& d) {
      return Tensor::zeros({2, 0}, DType::F32, d).matmul(Tensor::zeros({0, 3}, DType::F32, d));
    });
    CHECK(z1.to_vector<float>() == std::vector<float>(6, 0.0f));
    CHECK(z0.to_vector<float>() == z1.to_vector<float>());
  }
  SECTION("ops the opencl plugin lacks fall back to the CPU and still match") {
    auto [x, y] = both([&](const Device& d) {
      const Tensor a = Tensor::from_vector(av, {2, 3, 4}, d);
      return a.matmul(a.transpose(1, 2)).sum({0});
    });
    CHECK(x.to_vector<float>() == y.to_vector<float>());
  }
}

TEST_CASE("an index out of range on the OpenCL device is an error naming it, not a wild read",
          "[devices][opencl]") {
  const Device cl = opencl();
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, cl);
  const Tensor good = Tensor::from_vector<int64_t>({2, -1, 0}, {3}, cl);  // -1 counts from the end
  CHECK(x.index_select(good, 1).to_vector<float>() == std::vector<float>{3, 3, 1, 6, 6, 4});
  const Tensor bad = Tensor::from_vector<int64_t>({0, 7}, {2}, cl);
  CHECK_THROWS_WITH(x.index_select(bad, 1), Catch::Contains("index 7 is out of range") &&
                                                Catch::Contains("axis 1 of extent 3"));
  // The device stays usable after the error.
  CHECK(x.index_select(good, 1).to_vector<float>() == std::vector<float>{3, 3, 1, 6, 6, 4});
}
