// cpu-onednn's vector math (plugins/cpu-onednn/src/vector_math.hpp, SLEEF): on every ISA this CPU
// has, each function against a reference computed a precision wider (f32 through double, f64
// through long double) over special values and a sweep of every binade, within a few ULP; its
// special values (NaN, infinities, signed zeros) as the plugin's scalar formulas give them; and the
// ISA it picks held down by ONEDNN_MAX_CPU_ISA (each ctest pass runs this under its cap).
#include "vector_math.hpp"  // plugins/cpu-onednn/src

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using wick::cpu::vecmath::Fn;
using wick::cpu::vecmath::Isa;
namespace vm = wick::cpu::vecmath;

namespace {

// f(x) by the plugin's scalar formulas (unary.cpp float_fn) on any floating type R; for f32 the
// GELUs compute in double as float_fn does (the reference the f32 kernels are held to).
template <class R>
R formula(Fn fn, R x, R a) {
  using std::exp;
  const R inf = std::numeric_limits<R>::infinity();
  switch (fn) {
    case Fn::EXP: return std::exp(x);
    case Fn::LOG: return std::log(x);
    case Fn::TANH: return std::tanh(x);
    case Fn::ERF: return std::erf(x);
    case Fn::ERFC: return std::erfc(x);
    case Fn::SIN: return std::sin(x);
    case Fn::COS: return std::cos(x);
    case Fn::TAN: return std::tan(x);
    case Fn::ASIN: return std::asin(x);
    case Fn::ACOS: return std::acos(x);
    case Fn::ATAN: return std::atan(x);
    case Fn::SINH: return std::sinh(x);
    case Fn::COSH: return std::cosh(x);
    case Fn::ASINH: return std::asinh(x);
    case Fn::ACOSH: return std::acosh(x);
    case Fn::ATANH: return std::atanh(x);
    case Fn::EXPM1: return std::expm1(x);
    case Fn::LOG1P: return std::log1p(x);
    case Fn::CBRT: return std::cbrt(x);
    case Fn::POW: return std::pow(x, a);
    case Fn::SIGMOID: return R(1) / (R(1) + std::exp(-x));
    case Fn::SILU: return x == -inf ? R(0) : x / (R(1) + std::exp(-x));
    case Fn::ELU: return x > R(0) ? x : a * std::expm1(x);
    case Fn::GELU_TANH: {
      using W = std::conditional_t<std::is_same_v<R, float>, double, R>;
      const W d = x, u = W(0.79788456080286535587989211986876L) * (d + W(0.044715L) * d * d * d);
      return x == -inf ? R(0) : static_cast<R>(d / (W(1) + std::exp(W(-2) * u)));
    }
    case Fn::GELU_ERF: {
      using W = std::conditional_t<std::is_same_v<R, float>, double, R>;
      const W d = x;
      return x == -inf ? R(0) : static_cast<R>(W(0.5) * d * std::erfc(-d * W(0.70710678118654752440084436210485L)));
    }
  }
  return R(0);
}

// The distance in representable values (ULP) between two finite floats or doubles: their bits
// mapped to unsigned keys in the order of the values.
template <class T>
uint64_t ulp_distance(T a, T b) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr U kSign = U(1) << (sizeof(T) * 8 - 1);
  const auto key = [](T v) {
    U u;
    std::memcpy(&u, &v, sizeof u);
    return (u & kSign) != 0 ? static_cast<U>(~u) : static_cast<U>(u | kSign);
  };
  const U ka = key(a), kb = key(b);
  return ka > kb ? ka - kb : kb - ka;
}

// Error bounds in ULP of the wider reference: SLEEF's u10 functions are within 1 ULP of the exact
// value (erfc 1.5, tanh 3.5), the rounded reference within half an ULP; the activations compose a few
// roundings.
template <class T>
uint64_t ulp_bound(Fn fn) {
  switch (fn) {
    // f64: SLEEF's u35, 3.5 ULP; f32: on FMA ISAs a rational function, at most 6 ULP from the
    // rounded value over every f32 (vector_math_kernels.inc), elsewhere SLEEF's u35
    case Fn::TANH: return std::is_same_v<T, float> ? 6 : 4;
    case Fn::SIGMOID: case Fn::SILU: case Fn::ELU: return 4;
    // f64: erfc's 1.5 ULP or exp's 1 and three roundings (f32: in units of |x|, scaled_by_x).
    case Fn::GELU_TANH: case Fn::GELU_ERF: return 4;
    default: return 2;
  }
}

// The f32 GELUs compute in f32 with an absolute error in units of |x| (docs/ops/elementwise.md):
// |got - reference| <= 8 * 2^-24 |x|, the golden suite's measure for x f(x)-shaped activations.
template <class T>
bool scaled_by_x(Fn fn) {
  return std::is_same_v<T, float> && (fn == Fn::GELU_TANH || fn == Fn::GELU_ERF);
}

// Inputs: special values, every binade of T (a stride through the bit patterns), and a dense
// uniform sweep of [-12, 12] where the activations do their work.
template <class T>
std::vector<T> inputs(int64_t pattern_stride, int64_t dense) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(),
                      L::min(), -L::min(), L::denorm_min(), -L::denorm_min(), L::max(), -L::max(),
                      L::epsilon(), T(1), T(-1), T(0.5), T(-0.5), T(2), T(1e-10), T(-1e-10),
                      T(88.72), T(89), T(-87.3), T(-103), T(-104), T(-150), T(709.7), T(710),
                      T(-745), T(1e30), T(-1e30), T(1e38), T(3.14159265358979), T(1.5707963267949),
                      std::nextafter(T(1), T(0)), std::nextafter(T(1), T(2)),
                      std::nextafter(T(-1), T(0)), std::nextafter(T(-1), T(-2)),
                      // f32 tanh and GELU (erf) hold |x| to 9 and 5.3 on FMA ISAs
                      T(9), std::nextafter(T(9), T(0)), T(-9), T(5.3), T(-5.3), T(9.0105),
                      T(8.99999714), T(-8.99999809)};  // where the f32 rational rounds above 1
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const U top = std::numeric_limits<U>::max() / static_cast<U>(pattern_stride);
  for (U k = 0; k < top; ++k) {
    const U bits = k * static_cast<U>(pattern_stride);
    T x;
    std::memcpy(&x, &bits, sizeof x);
    if (!std::isnan(x)) v.push_back(x);
  }
  for (int64_t i = 0; i <= dense; ++i) v.push_back(static_cast<T>(-12.0 + 24.0 * static_cast<double>(i) / static_cast<double>(dense)));
  return v;
}

std::vector<Isa> isas_here() {
  std::vector<Isa> out;
  for (int i = 0; i < vm::kIsaCount; ++i)
    if (vm::cpu_has(static_cast<Isa>(i))) out.push_back(static_cast<Isa>(i));
  return out;
}

// The exponents (pow) and alphas (elu) each function is checked with.
std::vector<double> alphas(Fn fn) {
  if (fn == Fn::POW) return {2.0, 0.5, -1.5, 3.0, 0.0};
  if (fn == Fn::ELU) return {1.0, 0.3};
  return {0.0};
}

// Checks fn for T (float or double) on every ISA here against the wider W; returns the failures
// (a few per ISA, described), empty when every input passes.
template <class T, class W>
std::vector<std::string> check(Fn fn, const std::vector<T>& x, double alpha) {
  std::vector<T> scalar(x.size()), want(x.size()), got(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    scalar[i] = formula<T>(fn, x[i], static_cast<T>(alpha));
    want[i] = static_cast<T>(formula<W>(fn, static_cast<W>(x[i]), static_cast<W>(alpha)));
  }
  const double atol = sizeof(T) == 4 ? 1e-30 : 1e-300;  // docs/ops.md's math class near zero
  std::vector<std::string> bad;
  for (const Isa isa : isas_here()) {
    const vm::Kernels& k = vm::kernels_of(isa);
    const auto n = static_cast<int64_t>(x.size());
    if constexpr (std::is_same_v<T, float>) k.f32(fn, x.data(), got.data(), n, static_cast<float>(alpha));
    else k.f64(fn, x.data(), got.data(), n, alpha);
    size_t failures = 0;
    for (size_t i = 0; i < x.size() && failures < 4; ++i) {
      const T g = got[i], sc = scalar[i], w = want[i];
      bool ok;
      if (std::isnan(sc) || std::isnan(w)) ok = std::isnan(g) && std::isnan(sc) == std::isnan(w);
      else if (std::isinf(sc) && std::isinf(w)) ok = g == sc;
      else if (sc == 0 && g == 0) ok = std::signbit(sc) == std::signbit(g);
      else if (std::isinf(g) || std::isnan(g)) ok = false;
      // At most the bound further from the reference than the scalar formula (whose own error
      // is the argument's rounding where the function amplifies it: the f64 GELUs' tails), or
      // within the absolute error docs/ops.md allows (a flushed subnormal).
      else if (scaled_by_x<T>(fn)) ok = std::fabs(static_cast<double>(g) - static_cast<double>(w)) <=
                                        8 * 0x1p-24 * std::fabs(static_cast<double>(x[i])) + atol;
      else ok = ulp_distance(g, w) <= ulp_distance(sc, w) + ulp_bound<T>(fn) ||
                std::fabs(static_cast<double>(g) - static_cast<double>(w)) <= atol;
      if (fn == Fn::TANH && std::fabs(g) > 1) ok = false;  // within ULP of 1, but out of range
      if (ok) continue;
      ++failures;
      char line[256];
      std::snprintf(line, sizeof line, "%s %s(%.17g, alpha %g): got %.17g, scalar %.17g, reference %.17g",
                    vm::isa_name(isa), vm::fn_name(fn), static_cast<double>(x[i]), alpha,
                    static_cast<double>(g), static_cast<double>(sc), static_cast<double>(w));
      bad.emplace_back(line);
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("vector math: every f32 function on every ISA here is within a few ULP of a double reference, special values as the scalar formulas", "[vector_math]") {
  const std::vector<float> x = inputs<float>(65537, 100000);
  for (int f = 0; f < vm::kFnCount; ++f) {
    for (const double a : alphas(static_cast<Fn>(f))) {
      INFO(vm::fn_name(static_cast<Fn>(f)) << " alpha " << a);
      const std::vector<std::string> bad = check<float, double>(static_cast<Fn>(f), x, a);
      for (const std::string& b : bad) UNSCOPED_INFO(b);
      CHECK(bad.empty());
    }
  }
}

TEST_CASE("vector math: every f64 function on every ISA here is within a few ULP of a long double reference", "[vector_math]") {
  const std::vector<double> x = inputs<double>(int64_t(1) << 48, 20000);
  for (int f = 0; f < vm::kFnCount; ++f) {
    for (const double a : alphas(static_cast<Fn>(f))) {
      INFO(vm::fn_name(static_cast<Fn>(f)) << " alpha " << a);
      const std::vector<std::string> bad = check<double, long double>(static_cast<Fn>(f), x, a);
      for (const std::string& b : bad) UNSCOPED_INFO(b);
      CHECK(bad.empty());
    }
  }
}

TEST_CASE("vector math: a run of any length is computed whole and nothing past its end is written", "[vector_math]") {
  for (const Isa isa : isas_here()) {
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<float> in(static_cast<size_t>(n) + 8, 0.25f), out(static_cast<size_t>(n) + 8, -7.0f);
      vm::kernels_of(isa).f32(Fn::EXP, in.data(), out.data(), n, 0.0f);
      INFO(vm::isa_name(isa) << " n " << n);
      for (int64_t i = 0; i < n; ++i) CHECK(out[static_cast<size_t>(i)] == Approx(std::exp(0.25)).epsilon(1e-6));
      for (size_t i = static_cast<size_t>(n); i < out.size(); ++i) CHECK(out[i] == -7.0f);
    }
  }
}

TEST_CASE("vector math: ONEDNN_MAX_CPU_ISA caps the ISA as it caps oneDNN", "[vector_math]") {
  CHECK(vm::parse_isa_cap("SSE41") == Isa::SSE41);
  CHECK(vm::parse_isa_cap("avx") == Isa::SSE41);
  CHECK(vm::parse_isa_cap("AVX2") == Isa::AVX2);
  CHECK(vm::parse_isa_cap("avx2_vnni") == Isa::AVX2);
  CHECK(vm::parse_isa_cap("AVX512_CORE") == Isa::AVX512);
  CHECK(vm::parse_isa_cap("AVX512_CORE_AMX") == Isa::AVX512);
  CHECK(vm::parse_isa_cap("ALL") == std::nullopt);
  CHECK(vm::parse_isa_cap("") == std::nullopt);
  CHECK(vm::parse_isa_cap("no-such-isa") == std::nullopt);
  // This process's cap (the ctest pass's): the widest ISA this CPU has at or under it.
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::optional<Isa> cap = env != nullptr ? vm::parse_isa_cap(env) : std::nullopt;
  Isa want = Isa::SSE2;
  for (const Isa isa : isas_here())
    if (!cap || isa <= *cap) want = isa;
  INFO("ONEDNN_MAX_CPU_ISA=" << (env != nullptr ? env : "(unset)"));
  CHECK(vm::active_isa() == want);
  if (cap) CHECK(vm::active_isa() <= *cap);
}

TEST_CASE("vector math: a softmax row's max ignores NaN, and its weights and sum match a double reference", "[vector_math]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const Isa isa : isas_here()) {
    const vm::Kernels& k = vm::kernels_of(isa);
    for (const int64_t n : {0, 1, 15, 16, 17, 63, 64, 65, 100, 515}) {
      INFO(vm::isa_name(isa) << " n " << n);
      std::vector<float> x(static_cast<size_t>(n) + 4, 99.0f);  // 99: past the end, never read
      for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * 6.0f;
      float want = -inf;
      for (int64_t i = 0; i < n; ++i) want = std::max(want, x[static_cast<size_t>(i)]);
      CHECK(k.max_f32(x.data(), n) == want);
      if (n > 2) {  // NaNs anywhere are passed over; a row of -inf and NaN has max -inf
        std::vector<float> y = x;
        y[0] = y[static_cast<size_t>(n) - 1] = std::numeric_limits<float>::quiet_NaN();
        float w = -inf;
        for (int64_t i = 1; i + 1 < n; ++i) w = std::max(w, y[static_cast<size_t>(i)]);
        CHECK(k.max_f32(y.data(), n) == w);
        for (int64_t i = 1; i + 1 < n; ++i) y[static_cast<size_t>(i)] = -inf;
        CHECK(k.max_f32(y.data(), n) == -inf);
      }
      // exp((x - max) * 0.3) in place and the sum; nothing past n written.
      const float shift = n > 0 ? want : 0.0f;
      std::vector<float> e = x;
      const float sum = k.exp_shift_sum(e.data(), n, shift, 0.3f);
      double ref_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double r = std::exp(static_cast<double>((x[static_cast<size_t>(i)] - shift) * 0.3f));
        ref_sum += r;
        CHECK(e[static_cast<size_t>(i)] == Approx(r).epsilon(3e-7));
      }
      CHECK(sum == Approx(ref_sum).epsilon(1e-6));
      for (size_t i = static_cast<size_t>(n); i < e.size(); ++i) CHECK(e[i] == 99.0f);
    }
  }
}

TEST_CASE("vector math: one row times W^T (dot_rows_f32) matches a double reference for every n and k tail, and writes only its outputs", "[vector_math]") {
  for (const Isa isa : isas_here()) {
    const vm::Kernels& k = vm::kernels_of(isa);
    if (k.dot_rows_f32 == nullptr) continue;  // ISAs without FMA: matmul.cpp's own loop
    for (const int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 13}) {
      for (const int64_t depth : {1, 3, 8, 15, 16, 17, 31, 32, 33, 47, 64, 100, 257}) {
        INFO(vm::isa_name(isa) << " n " << n << " k " << depth);
        const int64_t bn = depth + 5, on = 3;  // W's rows padded, z strided
        std::vector<float> x(static_cast<size_t>(depth)), w(static_cast<size_t>(n * bn), 1e30f);
        for (int64_t p = 0; p < depth; ++p) x[static_cast<size_t>(p)] = std::sin(0.7f * static_cast<float>(p) + 0.1f);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t p = 0; p < depth; ++p)
            w[static_cast<size_t>(j * bn + p)] = std::cos(0.3f * static_cast<float>(j * depth + p));
        std::vector<float> z(static_cast<size_t>(n * on), 99.0f);
        k.dot_rows_f32(x.data(), w.data(), bn, z.data(), on, n, depth);
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, scale = 0;
          for (int64_t p = 0; p < depth; ++p) {
            const double t = static_cast<double>(x[static_cast<size_t>(p)]) * w[static_cast<size_t>(j * bn + p)];
            want += t;
            scale += std::fabs(t);
          }
          // f32 accumulation: within a few ULP of the sum of |terms|.
          CHECK(std::fabs(z[static_cast<size_t>(j * on)] - want) <= 1e-6 * scale + 1e-30);
          for (int64_t q = 1; q < on; ++q) CHECK(z[static_cast<size_t>(j * on + q)] == 99.0f);
        }
      }
    }
  }
}
