// The built plugins on this machine: cpu-onednn and opencl (PoCL) must be usable; cuda, when
// built, must load and be either usable or unavailable with the driver's reason. The same ops on
// cpu and opencl give the same results.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// The values of t as f64 on the host (any dtype, any device).
std::vector<double> host_values(const Tensor& t, const Device& cpu) {
  return t.to(DType::F64).to(cpu).contiguous().to_vector<double>();
}

using Program = std::function<Tensor(const Device&)>;

// Every family of the Tensor API, each a small program over tensors made on the device it is given.
std::vector<std::pair<std::string, Program>> tensor_api_programs() {
  auto x = [](const Device& d) {
    return Tensor::from_vector<float>({0.5f, -1.25f, 2, 3.5f, -0.75f, 1}, {2, 3}, d);
  };
  auto y = [](const Device& d) {
    return Tensor::from_vector<float>({1.5f, 2, -0.5f, 0.25f, 4, -3}, {2, 3}, d);
  };
  auto ints = [](const Device& d) {
    return Tensor::from_vector<int32_t>({7, -3, 12, 5, 0, -8}, {2, 3}, d);
  };
  auto img = [](const Device& d) {
    return Tensor::arange(0, 32, 1, DType::F32, d).reshape({1, 2, 4, 4}) * 0.25;
  };
  std::vector<std::pair<std::string, Program>> p = {
      {"arithmetic", [=](const Device& d) { return (x(d) + y(d)) * x(d) - y(d) / 2.0; }},
      {"unary math",
       [=](const Device& d) {
         const Tensor a = x(d);
         return a.exp() + a.sin() + a.tanh() + a.sigmoid() + a.abs().sqrt() + a.gelu() + a.silu() +
                a.erf() + a.atan() + a.cbrt() + a.floor() + a.round(true) + a.elu(0.5) +
                a.affine(2, 1) + a.relu();
       }},
      {"binary math",
       [=](const Device& d) {
         return x(d).maximum(y(d)) + x(d).atan2(y(d)) + x(d).abs().pow(y(d));
       }},
      {"comparisons and where",
       [=](const Device& d) { return Tensor::where(x(d).lt(y(d)), x(d), y(d)); }},
      {"integers and bits",
       [=](const Device& d) {
         const Tensor i = ints(d);
         return (i * i + i / ints(d).abs().maximum(Tensor::from_vector<int32_t>({1}, d)))
                    .bitwise_xor(i.shl(Tensor::from_vector<int32_t>({2}, d))) +
                i.popcount();
       }},
      {"casts",
       [=](const Device& d) {
         return x(d).to(DType::I32).to(DType::BF16).to(DType::F16).to(DType::F64);
       }},
      {"creation",
       [](const Device& d) {
         return Tensor::arange(1, 7, 1, DType::F32, d) +
                Tensor::rand({6}, 0, 1, DType::F32, d, 42) + Tensor::iota({6}, 0, DType::F32, d);
       }},
      {"views and copies",
       [=](const Device& d) {
         return x(d).t().flip(0).contiguous().reshape({3, 2}).clamp(-1, 2);
       }},
      {"reductions",
       [=](const Device& d) {
         const Tensor a = x(d);
         return Tensor::stack({a.sum({1}), a.max({1}), a.min({1}), a.mean({1}), a.prod({1}),
                               a.argmax(1).to(DType::F32), a.any({1}).to(DType::F32)},
                              0);
       }},
      {"scans",
       [=](const Device& d) {
         return x(d).cumsum(1) + x(d).cummax(1, true) + x(d).cumprod(0, false, true);
       }},
      {"indexing",
       [=](const Device& d) {
         const Tensor ids = Tensor::from_vector<int64_t>({2, 0, 1, 1}, {4}, d);
         const Tensor gids = Tensor::from_vector<int64_t>({1, 0, 2, 0, 2, 1}, {2, 3}, d);
         return Tensor::cat(
             {x(d).index_select(ids, 1), x(d).gather(1, gids).to(DType::F32),
              x(d).scatter(1, gids, y(d), "add"),
              x(d).index_add(1, Tensor::from_vector<int64_t>({0, 0, 2}, {3}, d), y(d))},
             1);
       }},
      {"sort", [=](const Device& d) { return x(d).argsort(1, true).to(DType::F32); }},
      {"matmul", [=](const Device& d) { return x(d).matmul(y(d).t()); }},
      {"conv and pooling",
       [=](const Device& d) {
         const Tensor w = Tensor::arange(-4, 5, 1, DType::F32, d)
                              .reshape({1, 1, 3, 3})
                              .broadcast_to({2, 2, 3, 3}) *
                          0.1;
         const Tensor c = img(d).conv(w.contiguous(), {1, 1}, {1, 1});
         return c.max_pool2d({2}, {2}) + c.avg_pool2d({2}, {2});
       }},
      {"window ops",
       [=](const Device& d) {
         const Tensor m = img(d);
         const Tensor pooled = m.window_reduce("max", {1, 1, 2, 2}, {1, 1, 2, 2});
         return m.window_scatter("max", pooled, {1, 1, 2, 2}, {1, 1, 2, 2}) +
                m.window_reduce("sum", {1, 1, 2, 2}).sum();
       }},
      {"fused ops",
       [=](const Device& d) {
         const Tensor a = x(d);
         const Tensor w = Tensor::from_vector<float>({1, 0.5f, 2}, {3}, d);
         return a.softmax(1) + a.log_softmax(0) + a.layer_norm(1, w, w) + a.rms_norm(w) +
                a.reshape({2, 3, 1}).batch_norm(w, w, w, w).reshape({2, 3});
       }},
      {"attention",
       [](const Device& d) {
         const Tensor q = Tensor::arange(0, 24, 1, DType::F32, d).reshape({2, 3, 4}) * 0.1;
         return Tensor::attention(q, q, q, {}, std::nullopt, true);
       }},
  };
  return p;
}

}  // namespace

TEST_CASE(
    "every family of the Tensor API runs on the OpenCL device in strict mode and matches the CPU",
    "[devices][opencl][strict]") {
  auto rt = test::fixture_runtime(true, {"opencl"});  // strict: any CPU fallback is an error
  const Device cl = rt->registry().find_device("opencl");
  REQUIRE(cl.valid());
  const Device cpu = rt->cpu_device();
  for (const auto& [name, program] : tensor_api_programs()) {
    INFO(name);
    std::vector<double> on_cl, on_cpu;
    REQUIRE_NOTHROW(on_cl = host_values(program(cl), cpu));
    on_cpu = host_values(program(cpu), cpu);
    REQUIRE(on_cl.size() == on_cpu.size());
    for (size_t i = 0; i < on_cl.size(); ++i)
      CHECK(on_cl[i] == Approx(on_cpu[i]).epsilon(1e-5).margin(1e-6));
  }
  CHECK(rt->fallbacks().empty());
}

TEST_CASE(
    "opencl options choose the platform and the device, and name what exists when they match "
    "nothing",
    "[devices][opencl][config]") {
  auto with = [](std::vector<std::pair<std::string, OptionValue>> values) {
    Config c = default_config();
    c.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
    c.log_level = "error";
    c.plugin_options["opencl"].values = std::move(values);
    return std::make_unique<Runtime>(c, RegistryOptions{false, false});
  };
  {
    auto rt = with({{"platform", std::string("Portable")}, {"device", int64_t{0}}});
    auto info = rt->registry().find("opencl");
    REQUIRE(info != nullptr);
    CHECK(info->state == PluginState::Usable);
    CHECK(info->devices.size() == 1);
  }
  {
    auto info = with({{"platform", std::string("No Such Vendor")}})->registry().find("opencl");
    CHECK(info->state == PluginState::Failed);
    CHECK_THAT(info->reason, Catch::Contains("matches none of the OpenCL platforms") &&
                                 Catch::Contains("Portable Computing Language"));
  }
  {
    auto info = with({{"device", int64_t{5}}})->registry().find("opencl");
    CHECK(info->state == PluginState::Failed);
    CHECK_THAT(info->reason, Catch::Contains("'device' = 5") && Catch::Contains("1 matching"));
  }
}

TEST_CASE(
    "OpenCL's two-pass reductions, register-tiled matmul and bitonic sort give hand-computed "
    "results in strict mode",
    "[devices][opencl][strict]") {
  auto rt = test::fixture_runtime(true, {"opencl"});  // strict: any CPU fallback is an error
  const Device cl = rt->registry().find_device("opencl");
  REQUIRE(cl.valid());
  const Device cpu = rt->cpu_device();
  SECTION("long reductions (two passes) are exact where the arithmetic is") {
    const int64_t n = 100000;
    const Tensor r = Tensor::arange(0, static_cast<double>(n), 1, DType::I64, cl);
    CHECK(r.sum().to(cpu).item<int64_t>() == n * (n - 1) / 2);
    CHECK(r.max({0}).to(cpu).item<int64_t>() == n - 1);
    CHECK((-r).min({0}).to(cpu).item<int64_t>() == -(n - 1));
    const Tensor ones = Tensor::full({300000}, 1.0, DType::F32, cl);
    CHECK(ones.sum().to(cpu).item<float>() == 300000.0f);
    // Rows of i32 summed into i64: row k holds k, k+1, ..., k+49999.
    const Tensor rows = Tensor::arange(0, 50000, 1, DType::I32, cl).reshape({1, 50000}) +
                        Tensor::arange(0, 3, 1, DType::I32, cl).reshape({3, 1});
    const std::vector<int64_t> sums = rows.sum({1}).to(cpu).to_vector<int64_t>();
    for (int64_t k = 0; k < 3; ++k) CHECK(sums[k] == 50000 * k + int64_t{50000} * 49999 / 2);
    // A NaN anywhere in a long max wins; a product of 2,000 signs is the sign of their count.
    std::vector<float> v(70000, 1.0f);
    v[54321] = std::numeric_limits<float>::quiet_NaN();
    CHECK(std::isnan(Tensor::from_vector(v, {70000}, cl).max({0}).to(cpu).item<float>()));
    std::vector<int32_t> signs(2000, 1);
    for (size_t i = 0; i < 777; ++i) signs[i * 2] = -1;
    CHECK(Tensor::from_vector(signs, {2000}, cl).prod({0}).to(cpu).item<int64_t>() == -1);
  }
  SECTION("matmul with edge tiles, batches and transposed operands equals the plain triple loop") {
    const int64_t b = 2, m = 37, k = 53, n = 41;  // not multiples of the 6 x 16 tile
    std::vector<float> a(static_cast<size_t>(b * m * k)), w(static_cast<size_t>(b * k * n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    std::vector<float> want(static_cast<size_t>(b * m * n), 0.0f);
    for (int64_t z = 0; z < b; ++z)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t q = 0; q < k; ++q)
            want[static_cast<size_t>((z * m + i) * n + j)] +=
                a[static_cast<size_t>((z * m + i) * k + q)] * w[static_cast<size_t>((z * k + q) * n + j)];
    const Tensor ta = Tensor::from_vector(a, {b, m, k}, cl), tw = Tensor::from_vector(w, {b, k, n}, cl);
    CHECK(ta.matmul(tw).to(cpu).to_vector<float>() == want);  // small integers: exact
    // The same product through transposed views (rhs columns not contiguous: the scalar path).
    const Tensor tw_t = tw.transpose(1, 2).contiguous().transpose(1, 2);
    CHECK(ta.matmul(tw_t).to(cpu).to_vector<float>() == want);
    CHECK(ta.to(DType::F64).matmul(tw.to(DType::F64)).to(DType::F32).to(cpu).to_vector<float>() == want);
    CHECK(ta.to(DType::I32).matmul(tw.to(DType::I32)).to(DType::F32).to(cpu).to_vector<float>() == want);
  }
  SECTION("conv as im2col + GEMM (groups, stride, padding, dilation, batch chunks) equals the loop") {
    struct Case {
      int64_t n, c, h, o, k, groups, stride, pad, dil;
    };
    // The second case's columns (64 x 9 taps x 128 x 128 floats, 38 MB per image) exceed the
    // 64 MB scratch for two images: it runs in two chunks.
    for (const Case& q : {Case{3, 8, 9, 8, 3, 2, 2, 1, 2}, Case{2, 64, 128, 8, 3, 1, 1, 1, 1}}) {
      const int64_t cg = q.c / q.groups, og = q.o / q.groups;
      const int64_t out = (q.h + 2 * q.pad - q.dil * (q.k - 1) - 1) / q.stride + 1;
      std::vector<float> x(static_cast<size_t>(q.n * q.c * q.h * q.h)), w(static_cast<size_t>(q.o * cg * q.k * q.k));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
      for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 3) - 1);
      std::vector<float> want(static_cast<size_t>(q.n * q.o * out * out), 0.0f);
      for (int64_t b = 0; b < q.n; ++b)
        for (int64_t o = 0; o < q.o; ++o)
          for (int64_t i = 0; i < out; ++i)
            for (int64_t j = 0; j < out; ++j) {
              float acc = 0;
              for (int64_t c = 0; c < cg; ++c)
                for (int64_t u = 0; u < q.k; ++u)
                  for (int64_t v = 0; v < q.k; ++v) {
                    const int64_t yy = i * q.stride - q.pad + u * q.dil, xx = j * q.stride - q.pad + v * q.dil;
                    if (yy < 0 || yy >= q.h || xx < 0 || xx >= q.h) continue;
                    const int64_t ch = o / og * cg + c;
                    acc += x[static_cast<size_t>(((b * q.c + ch) * q.h + yy) * q.h + xx)] *
                           w[static_cast<size_t>(((o * cg + c) * q.k + u) * q.k + v)];
                  }
              want[static_cast<size_t>(((b * q.o + o) * out + i) * out + j)] = acc;
            }
      const Tensor tx = Tensor::from_vector(x, {q.n, q.c, q.h, q.h}, cl);
      const Tensor tw = Tensor::from_vector(w, {q.o, cg, q.k, q.k}, cl);
      const Tensor y = tx.conv(tw, {q.stride, q.stride}, {q.pad, q.pad}, {q.dil, q.dil}, q.groups);
      CHECK(y.to(cpu).to_vector<float>() == want);  // small integers: exact in any order
    }
  }
  SECTION("sort of long lines with ties and NaN is stable, NaN last ascending and first descending") {
    const size_t n = 3001;  // more than one work-group's worth, not a power of two
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37) % 11);  // many ties
    v[100] = v[2000] = std::numeric_limits<float>::quiet_NaN();
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    auto key = [&](size_t i) { return std::isnan(v[i]) ? 1e9f : v[i]; };
    std::stable_sort(order.begin(), order.end(), [&](size_t p, size_t q) { return key(p) < key(q); });
    auto [vals, idx] = Tensor::from_vector(v, {1, n}, cl).sort(1, false, true);
    const std::vector<int64_t> got = idx.to(cpu).to(DType::I64).to_vector<int64_t>();
    const std::vector<float> got_v = vals.to(cpu).to_vector<float>();
    for (size_t i = 0; i < n; ++i) {
      CHECK(got[i] == static_cast<int64_t>(order[i]));
      if (!std::isnan(v[order[i]])) CHECK(got_v[i] == v[order[i]]);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t p, size_t q) {
      return (std::isnan(v[p]) && !std::isnan(v[q])) || (!std::isnan(v[q]) && v[p] > v[q]);
    });
    auto [dv, di] = Tensor::from_vector(v, {1, n}, cl).sort(1, true, true);
    const std::vector<int64_t> got_d = di.to(cpu).to(DType::I64).to_vector<int64_t>();
    for (size_t i = 0; i < n; ++i) CHECK(got_d[i] == static_cast<int64_t>(order[i]));
  }
  CHECK(rt->fallbacks().empty());
}

TEST_CASE("config check finds plugin options the plugins refuse, at the key's file:line:column",
          "[devices][opencl][config]") {
  auto problems_of = [](const std::string& text) {
    Config base = default_config();
    base.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
    base.log_level = "error";
    const Config c = apply_config_text(base, text, "wick.toml");
    PluginRegistry registry(c, RegistryOptions{false, false});
    return check_plugin_options(registry, c);
  };
  CHECK(problems_of("[plugins.opencl]\nplatform = \"Portable\"\ndevice = 0\n").empty());
  {
    const auto p = problems_of("[plugins.opencl]\nplatform = \"Portable\"\ndevice = 7\n");
    REQUIRE(p.size() == 1);
    CHECK(p[0].where.to_string() == "wick.toml:3:10");
    CHECK_THAT(p[0].message, Catch::StartsWith("[plugins.opencl] device: plugin 'opencl' refused") &&
                                 Catch::Contains("'device' = 7"));
  }
  {
    const auto p = problems_of("[plugins.opencl]\n\nplatfrom = \"Portable\"\n");
    REQUIRE(p.size() == 1);
    CHECK(p[0].where.to_string() == "wick.toml:3:12");
    CHECK_THAT(p[0].message, Catch::Contains("unknown option 'platfrom'") &&
                                 Catch::Contains("platform"));
  }
  {
    const auto p = problems_of("[devices]\npriority = [\"cpu\"]\n[plugins.openlc]\ndevice = 0\n");
    REQUIRE(p.size() == 1);
    CHECK(p[0].where.to_string() == "wick.toml:3:1");
    CHECK_THAT(p[0].message, Catch::Contains("no plugin named 'openlc'") &&
                                 Catch::Contains("found: ") && Catch::Contains("opencl"));
  }
}

TEST_CASE("eight threads using one device at once get correct results (the host serialises calls "
          "into a plugin)",
          "[devices][threads]") {
  for (const Device& d : {test::cpu(), opencl()}) {
    INFO(d.name());
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 25; ++i) {
          const Tensor a = Tensor::full({1000}, static_cast<double>(t), DType::F32, d);
          const Tensor b = Tensor::arange(0, 1000, 1, DType::F32, d);
          const float s = (a + b).sum().to(test::cpu()).item<float>();
          if (s != 1000.0f * static_cast<float>(t) + 499500.0f) ++wrong;
        }
      });
    for (std::thread& th : threads) th.join();
    CHECK(wrong == 0);
  }
}

TEST_CASE("opencl refuses buffers beyond the device's global memory with an out-of-memory error "
          "(PoCL would abort when the host runs out)",
          "[devices][opencl]") {
  const Device d = opencl();
  const uint64_t total = d.memory_bytes();
  REQUIRE(total > 0);
  // Buffers of a power of two near an eighth of the device each, a size the plugin does not round
  // up (PoCL backs them lazily: nothing is touched here).
  int64_t part = 1;
  while (static_cast<uint64_t>(part) * 2 <= total / 8) part *= 2;
  const size_t fit = static_cast<size_t>(total / static_cast<uint64_t>(part));
  std::vector<Tensor> held;
  std::string error;
  for (size_t i = 0; i < fit + 2 && error.empty(); ++i) {
    try {
      held.push_back(Tensor::empty({part}, DType::U8, d));
    } catch (const Error& e) {
      error = e.what();
    }
  }
  CHECK(held.size() == fit);  // as many as the device holds, and no more
  CHECK_THAT(error, Catch::Contains("CL_DEVICE_GLOBAL_MEM_SIZE") && Catch::Contains("bytes in use"));
  // Freed memory is usable again, and the device still computes.
  held.clear();
  const Tensor t = Tensor::empty({part}, DType::U8, d);
  CHECK(t.numel() == part);
  CHECK((Tensor::arange(0, 4, 1, DType::F32, d) + 1.0).sum().to(test::cpu()).item<float>() == 10.0f);
}
