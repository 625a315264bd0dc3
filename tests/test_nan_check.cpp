// Decoding and debugging aids (issue 24): fully masked attention rows give 0, not NaN (forward on
// every path, and backward); whole-tensor statistics; the NaN check mode ([debug] check_nan,
// WICK_CHECK_NAN) naming the op, shapes, device and wick::ModuleScope path. On cpu-onednn and
// opencl in strict mode; expected values are worked by hand or by a double loop here.
#include "test_support.hpp"

#include <wick/autograd.hpp>
#include <wick/dispatch.hpp>
#include <wick/module_scope.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace wick;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::unique_ptr<Runtime> make_runtime(bool check_nan) {
  Config c = default_config();
  c.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  c.strict = true;
  c.check_nan = check_nan;
  c.priority = {DeviceEntry{"cpu", SourceLocation{"test", 0, 0}}};
  return std::make_unique<Runtime>(c, RegistryOptions{false, false});
}

Runtime& strict_runtime() {
  static Runtime* rt = make_runtime(false).release();
  return *rt;
}

std::vector<Device> devices_of(Runtime& rt) {
  std::vector<Device> d{rt.cpu_device()};
  try {
    const Device ocl = rt.registry().find_device("opencl");
    if (ocl.valid()) d.push_back(ocl);
  } catch (const Error&) {
  }
  return d;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::isfinite(got[i]));
    CHECK(std::abs(double(got[i]) - want[i]) <= tol * (1.0 + std::abs(want[i])));
  }
}

// softmax(q kᵀ scale + mask) v in double over [B, H, L, E] etc. (k, v with H heads), causal
// top-left aligned, keys of batch b below pad[b] masked off; a row with no key left gives 0.
std::vector<double> masked_reference(const std::vector<float>& q, const std::vector<float>& k,
                                     const std::vector<float>& v, int64_t B, int64_t H, int64_t L,
                                     int64_t S, int64_t E, int64_t Ev, bool causal,
                                     const std::vector<int64_t>& pad) {
  std::vector<double> out(static_cast<size_t>(B * H * L * Ev), 0.0);
  const double scale = 1.0 / std::sqrt(double(E));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> w(static_cast<size_t>(S), 0.0);
        double m = -kInf;
        for (int64_t j = 0; j < S; ++j) {
          if (j < pad[size_t(b)] || (causal && j > i)) continue;
          double d = 0;
          for (int64_t e = 0; e < E; ++e)
            d += double(q[size_t(((b * H + h) * L + i) * E + e)]) *
                 k[size_t(((b * H + h) * S + j) * E + e)];
          w[size_t(j)] = d * scale;
          m = std::max(m, w[size_t(j)]);
        }
        if (m == -kInf) continue;  // fully masked: 0
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          const bool seen = j >= pad[size_t(b)] && !(causal && j > i);
          w[size_t(j)] = seen ? std::exp(w[size_t(j)] - m) : 0.0;
          sum += w[size_t(j)];
        }
        for (int64_t c = 0; c < Ev; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j)
            acc += w[size_t(j)] / sum * v[size_t(((b * H + h) * S + j) * Ev + c)];
          out[size_t(((b * H + h) * L + i) * Ev + c)] = acc;
        }
      }
  return out;
}

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(static_cast<size_t>(n));
  for (float& x : out) x = dist(gen);
  return out;
}

// A [B, 1, 1, S] bool mask: key j of batch b is seen when j >= pad[b] (left padding).
Tensor padding_mask(const std::vector<int64_t>& pad, int64_t S, const Device& dev) {
  std::vector<uint8_t> m;
  for (int64_t p : pad)
    for (int64_t j = 0; j < S; ++j) m.push_back(j >= p ? 1 : 0);
  return Tensor::from_vector(m, {int64_t(pad.size()), 1, 1, S}, dev).to(DType::Bool);
}

// q = [[1], [2]], k = [[1], [0]], v = [[1, 2], [3, 4]], scale 1. Row 0 sees both keys: scores
// [1, 0], weights [e / (1 + e), 1 / (1 + e)] = [0.7310586, 0.2689414], out = [1.5378828,
// 2.5378828]. Row 1 sees none: out [0, 0].
constexpr double kW0 = 0.7310585786300049, kW1 = 0.2689414213699951;
const std::vector<double> kSmallOut{kW0 * 1 + kW1 * 3, kW0 * 2 + kW1 * 4, 0.0, 0.0};

}  // namespace

TEST_CASE("a fully masked attention row gives 0, and the other rows stay exact",
          "[attention][nan]") {
  for (const Device& dev : devices_of(strict_runtime())) {
    INFO(dev.name());
    const Tensor q = Tensor::from_vector<float>({1, 2}, {1, 1, 2, 1}, dev);
    const Tensor k = Tensor::from_vector<float>({1, 0}, {1, 1, 2, 1}, dev);
    const Tensor v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}, dev);
    const Tensor bool_mask =
        Tensor::from_vector<uint8_t>({1, 1, 0, 0}, {2, 2}, dev).to(DType::Bool);
    check_close(Tensor::attention(q, k, v, bool_mask, 1.0).to_vector<float>(), kSmallOut, 1e-6);
    // The same with an additive mask of -inf, and with causal masking on top (row 0 then sees
    // key 0 only: out = v[0]).
    const Tensor float_mask = Tensor::from_vector<float>({0, 0, -INFINITY, -INFINITY}, {2, 2}, dev);
    check_close(Tensor::attention(q, k, v, float_mask, 1.0).to_vector<float>(), kSmallOut, 1e-6);
    check_close(Tensor::attention(q, k, v, bool_mask, 1.0, true).to_vector<float>(), {1, 2, 0, 0},
                1e-6);
    // Causal, with key 0 masked: row 0 has no key left (0), row 1 sees key 1 only (v[1]).
    const Tensor hide0 = Tensor::from_vector<uint8_t>({0, 1}, {2}, dev).to(DType::Bool);
    check_close(Tensor::attention(q, k, v, hide0, 1.0, true).to_vector<float>(), {0, 0, 3, 4},
                1e-6);
  }
}

TEST_CASE("left-padded causal batches: the pad rows give 0 and nothing leaks (double loop)",
          "[attention][nan]") {
  struct Size {
    int64_t B, H, L, E, Ev;
    std::vector<int64_t> pad;
  };
  // The second is long enough for the CPU kernel's causal row blocks (128 rows) and several steps.
  for (const Size& z : {Size{2, 2, 6, 4, 3, {2, 0}}, Size{2, 2, 200, 8, 4, {150, 3}}}) {
    for (const Device& dev : devices_of(strict_runtime())) {
      INFO(dev.name() << " L " << z.L);
      const int64_t S = z.L;
      const auto qv = random_values(z.B * z.H * z.L * z.E, 1),
                 kv = random_values(z.B * z.H * S * z.E, 2),
                 vv = random_values(z.B * z.H * S * z.Ev, 3);
      const Tensor q = Tensor::from_vector(qv, {z.B, z.H, z.L, z.E}, dev);
      const Tensor k = Tensor::from_vector(kv, {z.B, z.H, S, z.E}, dev);
      const Tensor v = Tensor::from_vector(vv, {z.B, z.H, S, z.Ev}, dev);
      const Tensor out =
          Tensor::attention(q, k, v, padding_mask(z.pad, S, dev), std::nullopt, true);
      check_close(out.to_vector<float>(),
                  masked_reference(qv, kv, vv, z.B, z.H, z.L, S, z.E, z.Ev, true, z.pad), 1e-4);
    }
  }
}

TEST_CASE("a fully masked attention row gives 0 in f64, f16 and bf16 too", "[attention][nan]") {
  for (const Device& dev : devices_of(strict_runtime())) {
    for (const DType t : {DType::F64, DType::F16, DType::BF16}) {
      if (t == DType::F64 && !(dev.capabilities() & WICK_DEVICE_CAP_F64)) continue;
      INFO(dev.name() << " " << dtype_name(t));
      const Tensor q = Tensor::from_vector<float>({1, 2}, {1, 1, 2, 1}, dev).to(t);
      const Tensor k = Tensor::from_vector<float>({1, 0}, {1, 1, 2, 1}, dev).to(t);
      const Tensor v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}, dev).to(t);
      const Tensor mask = Tensor::from_vector<uint8_t>({1, 1, 0, 0}, {2, 2}, dev).to(DType::Bool);
      const Tensor out = Tensor::attention(q, k, v, mask, 1.0);
      CHECK(out.dtype() == t);
      check_close(out.to(DType::F32).to_vector<float>(), kSmallOut, t == DType::F64 ? 1e-6 : 1e-2);
    }
  }
}

TEST_CASE("the gradient through a fully masked row is 0 (hand-worked)",
          "[attention][nan][autograd]") {
  for (const Device& dev : devices_of(strict_runtime())) {
    INFO(dev.name());
    Tensor q = Tensor::from_vector<float>({1, 2}, {1, 1, 2, 1}, dev).set_requires_grad();
    Tensor k = Tensor::from_vector<float>({1, 0}, {1, 1, 2, 1}, dev).set_requires_grad();
    Tensor v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}, dev).set_requires_grad();
    const Tensor mask = Tensor::from_vector<uint8_t>({1, 1, 0, 0}, {2, 2}, dev).to(DType::Bool);
    const Tensor out = Tensor::attention(q, k, v, mask, 1.0);
    check_close(out.detach().to_vector<float>(), kSmallOut, 1e-6);
    out.sum().backward();
    // d sum / d v[j][c] = w0j (row 1 adds 0); with the row sums of v [3, 7], d / d q0 =
    // w0 w1 (k0 - k1)(3 - 7) = -4 w0 w1, d / d q1 = 0, d / d k = q0 (w0 (3 - o), w1 (7 - o)) with
    // o = 3 w0 + 7 w1: (-4 w0 w1, 4 w0 w1).
    const double g = 4 * kW0 * kW1;
    check_close(v.grad().to_vector<float>(), {kW0, kW0, kW1, kW1}, 1e-6);
    check_close(q.grad().to_vector<float>(), {-g, 0.0}, 1e-6);
    check_close(k.grad().to_vector<float>(), {-g, g}, 1e-6);
  }
}

TEST_CASE("the core's composite attention gives 0 for a fully masked row too", "[attention][nan]") {
  // fixture-good runs no attention: the core composes it from ops (each run on the CPU).
  auto rt = test::fixture_runtime(false, {"fixture-good"});
  const Device dev = rt->default_device();
  REQUIRE(dev.name() == "fixture-good:0");
  const Tensor q = Tensor::from_vector<float>({1, 2}, {1, 1, 2, 1}, dev);
  const Tensor k = Tensor::from_vector<float>({1, 0}, {1, 1, 2, 1}, dev);
  const Tensor v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}, dev);
  const Tensor mask = Tensor::from_vector<uint8_t>({1, 1, 0, 0}, {2, 2}, dev).to(DType::Bool);
  check_close(Tensor::attention(q, k, v, mask, 1.0).to_vector<float>(), kSmallOut, 1e-6);
  CHECK(rt->fallback_count() > 0);  // it did go through the composite's ops
}

TEST_CASE("whole-tensor statistics skip NaN and are worked on the device", "[stats]") {
  for (const Device& dev : devices_of(strict_runtime())) {
    INFO(dev.name());
    // Non-NaN elements -1, 2, 4, 0.5, 3: mean 8.5 / 5 = 1.7; squared deviations 7.29, 0.09, 5.29,
    // 1.44, 1.69 sum to 15.8: std sqrt(15.8 / 5) = 1.7776389, with ddof 1 sqrt(15.8 / 4)
    // = 1.9874607.
    const Tensor x = Tensor::from_vector<float>({-1, 2, 4, NAN, 0.5f, 3}, {2, 3}, dev);
    CHECK(x.min_all() == -1.0);
    CHECK(x.max_all() == 4.0);
    CHECK(x.mean_all() == Approx(1.7).epsilon(1e-6));
    CHECK(x.std_all() == Approx(1.7776389).epsilon(1e-6));
    CHECK(x.std_all(1) == Approx(1.9874607).epsilon(1e-6));
    CHECK(x.count_nan() == 1);
    CHECK(x.count_inf() == 0);
    CHECK(x.summary() ==
          "f32 [2, 3] " + dev.name() + " min -1 max 4 mean 1.7 std 1.77764 nan 1 inf 0");
    // A strided view: the transposed columns 1..2 are 2, 0.5, 4, 3.
    const Tensor cols = x.narrow(1, 1, 2).t();
    CHECK(cols.min_all() == 0.5);
    CHECK(cols.mean_all() == Approx(2.375).epsilon(1e-6));
    // Infinities are values; every element NaN leaves nothing.
    const Tensor inf = Tensor::from_vector<float>({1, INFINITY, -INFINITY, NAN}, dev);
    CHECK(inf.min_all() == -kInf);
    CHECK(inf.max_all() == kInf);
    CHECK(inf.count_inf() == 2);
    CHECK(inf.count_nan() == 1);
    CHECK(std::isnan(Tensor::full({3}, NAN, DType::F32, dev).mean_all()));
    CHECK(std::isnan(Tensor::full({3}, NAN, DType::F32, dev).max_all()));
    // Integers: in f64, no NaN. [3, -5, 7]: mean 5 / 3, std sqrt(74.6667 / 3) = 4.9888765.
    const Tensor i = Tensor::from_vector<int32_t>({3, -5, 7}, dev);
    CHECK(i.min_all() == -5.0);
    CHECK(i.max_all() == 7.0);
    CHECK(i.count_nan() == 0);
    if (dev.capabilities() & WICK_DEVICE_CAP_F64) {
      CHECK(i.mean_all() == Approx(5.0 / 3.0).epsilon(1e-12));
      CHECK(i.std_all() == Approx(4.988876515698588).epsilon(1e-12));
    }
  }
  const Tensor empty = Tensor::zeros({0, 3}, DType::F32, strict_runtime().cpu_device());
  CHECK(empty.summary() == "f32 [0, 3] " + strict_runtime().cpu_device().name() + " empty");
  CHECK(std::isnan(empty.min_all()));
  CHECK(empty.count_nan() == 0);
}

TEST_CASE("the NaN check is off by default: NaN-making ops run quietly", "[nan_check]") {
  CHECK_FALSE(default_config().check_nan);
  CHECK_FALSE(strict_runtime().check_nan());
  const Tensor x = Tensor::from_vector<float>({1, -1}, strict_runtime().cpu_device());
  CHECK(x.log().count_nan() == 1);
}

TEST_CASE("the NaN check names the op, shapes, device and module of the first NaN made",
          "[nan_check]") {
  auto rt = make_runtime(true);
  REQUIRE(rt->check_nan());
  for (const Device& dev : devices_of(*rt)) {
    INFO(dev.name());
    const Tensor x = Tensor::from_vector<float>({1, -1, 2, 4, 5, 6}, {2, 3}, dev);
    {
      const ModuleScope encoder("encoder");
      const ModuleScope layer("layer.0.attention");
      CHECK(ModuleScope::current() == "encoder.layer.0.attention");
      CHECK_THROWS_WITH(x.log(), Catch::Contains("check_nan") && Catch::Contains("'log'") &&
                                     Catch::Contains("1 NaN") && Catch::Contains("[2, 3] f32") &&
                                     Catch::Contains(dev.name()) &&
                                     Catch::Contains("'encoder.layer.0.attention'"));
    }
    CHECK(ModuleScope::current().empty());
    // 0 / 0 and 1 / 0, outside any scope.
    const Tensor zero = Tensor::zeros({3}, DType::F32, dev);
    CHECK_THROWS_WITH(zero / zero, Catch::Contains("'div'") && Catch::Contains("3 NaN") &&
                                       Catch::Contains("inputs [3] f32, [3] f32") &&
                                       Catch::Contains("no wick::ModuleScope"));
    CHECK_THROWS_WITH(x.narrow(0, 0, 1) / zero,
                      Catch::Contains("'div'") && Catch::Contains("3 Inf"));
    // In place (the op overwrites its input): the input is judged as it was before.
    Tensor y = Tensor::from_vector<float>({4, -1}, dev);
    CHECK_THROWS_WITH(dispatch_in_place(WICK_OP_SQRT, nullptr, {y}, {y}),
                      Catch::Contains("'sqrt'") && Catch::Contains("1 NaN"));
    // ... and a NaN it already held is passed through.
    CHECK_NOTHROW(dispatch_in_place(WICK_OP_SQRT, nullptr, {y}, {y}));
  }
}

TEST_CASE("the NaN check lets through what finite inputs did not make", "[nan_check]") {
  auto rt = make_runtime(true);
  for (const Device& dev : devices_of(*rt)) {
    INFO(dev.name());
    // A NaN passed through exp and add, a fill of -inf, a where with an -inf operand.
    const Tensor x = Tensor::from_vector<float>({NAN, 1}, dev);
    CHECK(x.exp().add(x).count_nan() == 1);
    const Tensor minus_inf = Tensor::full({2}, -kInf, DType::F32, dev);
    CHECK(minus_inf.count_inf() == 2);
    const Tensor cond = Tensor::from_vector<uint8_t>({1, 0}, dev).to(DType::Bool);
    CHECK(Tensor::where(cond, x.narrow(0, 1, 1), minus_inf).count_inf() == 1);
    // Attention over a fully masked row makes no NaN now: nothing to raise.
    const Tensor q = Tensor::from_vector<float>({1, 2}, {1, 1, 2, 1}, dev);
    const Tensor mask = Tensor::from_vector<uint8_t>({1, 1, 0, 0}, {2, 2}, dev).to(DType::Bool);
    CHECK(Tensor::attention(q, q, q, mask).count_nan() == 0);
  }
}

TEST_CASE("[debug] check_nan is read from the config and WICK_CHECK_NAN overrides it",
          "[nan_check][config]") {
  CHECK(apply_config_text(default_config(), "[debug]\ncheck_nan = true\n", "t.toml").check_nan);
  CHECK_THROWS_WITH(
      apply_config_text(default_config(), "[debug]\ncheck_nan = 1\n", "t.toml"),
      "t.toml:2:13: 'debug.check_nan' must be a boolean (true or false), not an integer");
  CHECK_THROWS_WITH(
      apply_config_text(default_config(), "[debug]\ncheck_nans = true\n", "t.toml"),
      Catch::Contains("unknown key 'check_nans' in [debug]; did you mean 'check_nan'?"));
  const test::ScopedEnv no_config("WICK_CONFIG", std::nullopt);
  const test::ScopedEnv no_home("HOME", std::nullopt);
  const test::ScopedEnv no_xdg("XDG_CONFIG_HOME", std::nullopt);
  {
    const test::ScopedEnv on("WICK_CHECK_NAN", "1");
    const Config c = resolve_config({}, {}, [](const char* n) -> std::optional<std::string> {
      if (const char* v = std::getenv(n)) return std::string(v);
      return std::nullopt;
    });
    CHECK(c.check_nan);
    CHECK_THAT(c.to_toml(),
               Catch::Contains("[debug]\ncheck_nan = true") && Catch::Contains("WICK_CHECK_NAN"));
  }
  const test::ScopedEnv bad("WICK_CHECK_NAN", "maybe");
  CHECK_THROWS_WITH(
      resolve_config({}, {},
                     [](const char* n) -> std::optional<std::string> {
                       if (const char* v = std::getenv(n)) return std::string(v);
                       return std::nullopt;
                     }),
      Catch::Contains("WICK_CHECK_NAN") && Catch::Contains("'maybe' is not a boolean"));
}
