// Reverse-mode autograd (wick/autograd.hpp, the autograd part of wick/tensor.hpp). Small cases are
// worked by hand; every backward rule is compared with central differences in f64
// (autograd::check_gradients) on small random inputs, with broadcasting, non-contiguous views and
// conv / pool geometry. Each rule runs on the CPU device and, when PoCL is usable, on opencl.
#include "test_support.hpp"

#include <wick/autograd.hpp>
#include <wick/dispatch.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>

using namespace wick;
using autograd::NoGradGuard;
using wick::test::cpu;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// The CPU and, when it loads and has a device, opencl.
std::vector<Device> devices() {
  static const std::vector<Device> all = test::cpu_and_opencl();
  return all;
}

uint64_t next_seed() {
  static uint64_t seed = 100;
  return ++seed;
}

Tensor randn(const Shape& s, const Device& d) {
  return Tensor::randn(s, 0.0, 1.0, DType::F64, d, next_seed());
}
Tensor rand(const Shape& s, double lo, double hi, const Device& d) {
  return Tensor::rand(s, lo, hi, DType::F64, d, next_seed());
}

std::vector<double> values(const Tensor& t) {
  return t.to(DType::F64).to_vector<double>();
}

// Autograd agrees with central differences (relative error 1e-6) on every device.
void check_rule(const std::string& name, const Fn& fn,
                const std::function<std::vector<Tensor>(const Device&)>& make) {
  for (const Device& d : devices()) {
    INFO(name << " on " << d.name());
    const autograd::GradCheck r = autograd::check_gradients(fn, make(d));
    INFO(r.worst);
    CHECK(r.max_error < 1e-6);
  }
}

void check_unary(const std::string& name, const std::function<Tensor(const Tensor&)>& f,
                 double lo = -2.0, double hi = 2.0) {
  check_rule(name, [f](const std::vector<Tensor>& x) { return f(x[0]); },
             [&](const Device& d) { return std::vector<Tensor>{rand({2, 3}, lo, hi, d)}; });
  // The same through a transposed (non-contiguous) view.
  check_rule(name + " of a transpose", [f](const std::vector<Tensor>& x) { return f(x[0].t()); },
             [&](const Device& d) { return std::vector<Tensor>{rand({3, 2}, lo, hi, d)}; });
}

}  // namespace

// ---- behaviour ------------------------------------------------------------------------------------

TEST_CASE("backward of a hand-worked expression", "[autograd]") {
  for (const Device& d : devices()) {
    INFO(d.name());
    // y = sum(x * w + x^2) with x = [1, 2, 3], w = [4, 5, 6]: dy/dx = w + 2x, dy/dw = x.
    Tensor x = Tensor::from_vector<float>({1, 2, 3}, d).set_requires_grad();
    Tensor w = Tensor::from_vector<float>({4, 5, 6}, d).set_requires_grad();
    Tensor y = (x * w + x.sqr()).sum();
    CHECK(y.requires_grad());
    CHECK_FALSE(y.is_leaf());
    CHECK(x.is_leaf());
    y.backward();
    CHECK(x.grad().to_vector<float>() == std::vector<float>{6, 9, 12});
    CHECK(w.grad().to_vector<float>() == std::vector<float>{1, 2, 3});
    CHECK_FALSE(y.grad().defined());  // non-leaf tensors keep no gradient
  }
}

TEST_CASE("a tensor used twice gets both gradients", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({2, -1}, cpu()).set_requires_grad();
  // y = sum(x * x) + sum(x): 2x + 1.
  (x.mul(x).sum() + x.sum()).backward();
  CHECK(values(x.grad()) == std::vector<double>{5, -1});
}

TEST_CASE("gradients accumulate across backward calls until cleared", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1, 2}, cpu()).set_requires_grad();
  const Tensor y = (x * 3.0).sum();
  y.backward();
  y.backward();  // the record is kept: the same graph again
  CHECK(values(x.grad()) == std::vector<double>{6, 6});
  (x * x).sum().backward();  // a new graph adds too
  CHECK(values(x.grad()) == std::vector<double>{8, 10});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  (x * 2.0).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{2, 2});
}

TEST_CASE("backward from eight threads into shared parameters accumulates every gradient",
          "[autograd][threads]") {
  // d sum(w * x) / dw = x for each of the 10 uses of w in a pass; thread t adds 10 (t + 1) in
  // each of its 100 passes, so the grad is 1000 * (1 + 2 + ... + 8) = 36000 (exact in f32). Without the leaf's lock,
  // concurrent read-add-store lost some of the adds (and TSan saw the race). The threads start
  // together, so that their passes overlap.
  constexpr int kThreads = 8, kPasses = 100, kUses = 10;
  Tensor w = Tensor::full({4096}, 0.5, DType::F32, cpu()).set_requires_grad();
  std::atomic<int> failures{0}, ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      try {
        const Tensor x = Tensor::full({4096}, t + 1.0, DType::F32, cpu());
        ++ready;
        while (ready < kThreads) std::this_thread::yield();
        for (int p = 0; p < kPasses; ++p) {
          Tensor loss = (w * x).sum();
          for (int k = 1; k < kUses; ++k) loss = loss + (w * x).sum();
          loss.backward();
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  CHECK(failures == 0);
  const std::vector<float> g = w.grad().to_vector<float>();
  CHECK(g == std::vector<float>(4096, 36000.0f));
}

TEST_CASE("a no-grad scope records nothing, and nests", "[autograd]") {
  Tensor x = Tensor::ones({2}, DType::F32, cpu()).set_requires_grad();
  CHECK(autograd::grad_enabled());
  {
    NoGradGuard outer;
    {
      NoGradGuard inner;
      CHECK_FALSE(autograd::grad_enabled());
    }
    CHECK_FALSE(autograd::grad_enabled());
    const Tensor y = (x * 2.0).exp().sum();
    CHECK_FALSE(y.requires_grad());
    CHECK(y.autograd_meta() == nullptr);
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("does not require grad"));
  }
  CHECK(autograd::grad_enabled());
  CHECK((x * 2.0).requires_grad());
}

TEST_CASE("ops on tensors that do not require grad record nothing", "[autograd]") {
  const Tensor a = Tensor::ones({2, 2}, DType::F32, cpu());
  const Tensor y = a.matmul(a).relu().sum({0}).reshape({1, 2});
  CHECK(y.autograd_meta() == nullptr);
}

TEST_CASE("detach stops gradients", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({3}, cpu()).set_requires_grad();
  // y = x * detach(x): dy/dx = detach(x) = 3, not 2x.
  const Tensor y = (x * x.detach()).sum();
  y.backward();
  CHECK(values(x.grad()) == std::vector<double>{3});
  CHECK_FALSE(x.detach().requires_grad());
  CHECK(x.detach().storage() == x.storage());
}

TEST_CASE("a chain 100000 ops deep runs backward and is freed without deep recursion",
          "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1.0}, cpu()).set_requires_grad();
  {
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y + 1.0;
    y.sum().backward();
  }
  CHECK(values(x.grad()) == std::vector<double>{1.0});
}

TEST_CASE("backward without a seed needs one element, and names the shape", "[autograd]") {
  Tensor x = Tensor::ones({2, 3}, DType::F32, cpu()).set_requires_grad();
  const Tensor y = x * 2.0;
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("shape [2, 3]") && Catch::Contains("seed"));
  y.backward(Tensor::full({2, 3}, 0.5, DType::F32, cpu()));
  CHECK(x.grad().to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK_THROWS_WITH(y.backward(Tensor::ones({3}, DType::F32, cpu())),
                    Catch::Contains("seed") && Catch::Contains("[2, 3]"));
}

TEST_CASE("integer and bool tensors cannot require grad", "[autograd]") {
  Tensor i = Tensor::zeros({2}, DType::I32, cpu());
  CHECK_THROWS_WITH(i.set_requires_grad(), Catch::Contains("i32") && Catch::Contains("floating"));
  Tensor b = Tensor::zeros({2}, DType::Bool, cpu());
  CHECK_THROWS_AS(b.set_requires_grad(), Error);
  // Integer results of float inputs are constants.
  Tensor x = Tensor::ones({2}, DType::F32, cpu()).set_requires_grad();
  CHECK_FALSE(x.argmax(0).requires_grad());
  CHECK_FALSE(x.gt(x).requires_grad());
}

TEST_CASE("an op without a backward rule fails at backward, naming it", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1, 3, 2}, cpu()).set_requires_grad();
  const Tensor y = x.cummax(0).sum();
  CHECK(y.requires_grad());
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("cummax") && Catch::Contains("no backward rule"));
}

TEST_CASE("broadcast gradients are summed back to each operand's shape", "[autograd]") {
  Tensor a = Tensor::ones({2, 3}, DType::F64, cpu()).set_requires_grad();
  Tensor b = Tensor::from_vector<double>({1, 2, 3}, cpu()).set_requires_grad();
  Tensor c = Tensor::full({2, 1}, 2.0, DType::F64, cpu()).set_requires_grad();
  ((a + b) * c).sum().backward();
  CHECK(values(a.grad()) == std::vector<double>(6, 2.0));
  CHECK(b.grad().shape() == Shape{3});
  CHECK(values(b.grad()) == std::vector<double>{4, 4, 4});
  CHECK(c.grad().shape() == Shape{2, 1});
  CHECK(values(c.grad()) == std::vector<double>{9, 9});  // sum(a + b) per row: 2 + 3 + 4
}

TEST_CASE("max ties share the gradient, and maximum ties give each side half", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1, 5, 5, 2}, cpu()).set_requires_grad();
  x.max({0}).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 0.5, 0.5, 0});
  Tensor a = Tensor::from_vector<double>({1, 2}, cpu()).set_requires_grad();
  Tensor b = Tensor::from_vector<double>({1, 3}, cpu()).set_requires_grad();
  a.maximum(b).sum().backward();
  CHECK(values(a.grad()) == std::vector<double>{0.5, 0});
  CHECK(values(b.grad()) == std::vector<double>{0.5, 1});
}

TEST_CASE("prod and cumprod gradients are exact with zeros", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({2, 0, 3}, cpu()).set_requires_grad();
  x.prod({0}).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 6, 0});
  Tensor y = Tensor::from_vector<double>({2, 0, 3}, cpu()).set_requires_grad();
  // cumprod = [2, 0, 0]; d/dx0 = 1, d/dx1 = 2 + 2*3, d/dx2 = 0.
  y.cumprod(0).sum().backward();
  CHECK(values(y.grad()) == std::vector<double>{1, 8, 0});
}

TEST_CASE("relu, sign and floor: zero gradient where the ops are flat", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({-1, 0, 2}, cpu()).set_requires_grad();
  (x.relu() + x.floor() + x.sign()).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 0, 1});
}

TEST_CASE("leaf gradients keep the leaf's dtype", "[autograd]") {
  Tensor x = Tensor::ones({2}, DType::F32, cpu()).set_requires_grad();
  const Tensor y = Tensor::ones({2}, DType::F64, cpu());
  (x * y).sum().backward();  // computed in f64
  CHECK(x.grad().dtype() == DType::F32);
  Tensor h = Tensor::ones({2}, DType::F32, cpu()).set_requires_grad();
  h.to(DType::F64).sum().backward();
  CHECK(h.grad().to_vector<float>() == std::vector<float>{1, 1});
}

// ---- every rule against central differences --------------------------------------------------------

TEST_CASE("views: gradients match central differences", "[autograd][gradcheck]") {
  auto one = [](Shape s) {
    return [s](const Device& d) { return std::vector<Tensor>{randn(s, d)}; };
  };
  check_rule("reshape", [](auto& x) { return x[0].t().reshape({3, 2, 1}); }, one({2, 3}));
  check_rule("permute", [](auto& x) { return x[0].permute({2, 0, 1}); }, one({2, 3, 4}));
  check_rule("transpose", [](auto& x) { return x[0].transpose(0, 2) * 2.0; }, one({2, 3, 4}));
  check_rule("broadcast_to", [](auto& x) { return x[0].broadcast_to({2, 3, 4}); }, one({3, 1}));
  check_rule("slice step 2", [](auto& x) { return x[0].slice(1, 1, std::nullopt, 2); }, one({2, 6}));
  check_rule("slice step -2", [](auto& x) { return x[0].slice(1, -1, 0, -2); }, one({2, 6}));
  check_rule("narrow", [](auto& x) { return x[0].narrow(0, 1, 2); }, one({4, 2}));
  check_rule("flip", [](auto& x) { return x[0].flip(0) * x[0]; }, one({3, 2}));
  check_rule("squeeze", [](auto& x) { return x[0].squeeze() * 1.5; }, one({1, 3, 1}));
  check_rule("squeeze axis", [](auto& x) { return x[0].squeeze(0); }, one({1, 3}));
  check_rule("unsqueeze", [](auto& x) { return x[0].unsqueeze(1); }, one({2, 3}));
  check_rule("contiguous", [](auto& x) { return x[0].t().contiguous(); }, one({2, 3}));
  check_rule("clone", [](auto& x) { return x[0].clone() * x[0]; }, one({2, 3}));
  check_rule("t", [](auto& x) { return x[0].t(); }, one({2, 3}));
}

TEST_CASE("unary math: gradients match central differences", "[autograd][gradcheck]") {
  check_unary("neg", [](const Tensor& x) { return x.neg(); });
  check_unary("abs", [](const Tensor& x) { return x.abs(); }, 0.2, 2.0);
  check_unary("abs negative", [](const Tensor& x) { return x.abs(); }, -2.0, -0.2);
  check_unary("exp", [](const Tensor& x) { return x.exp(); });
  check_unary("log", [](const Tensor& x) { return x.log(); }, 0.2, 3.0);
  check_unary("sqrt", [](const Tensor& x) { return x.sqrt(); }, 0.2, 3.0);
  check_unary("rsqrt", [](const Tensor& x) { return x.rsqrt(); }, 0.2, 3.0);
  check_unary("recip", [](const Tensor& x) { return x.recip(); }, 0.2, 3.0);
  check_unary("sqr", [](const Tensor& x) { return x.sqr(); });
  check_unary("tanh", [](const Tensor& x) { return x.tanh(); });
  check_unary("erf", [](const Tensor& x) { return x.erf(); });
  check_unary("erfc", [](const Tensor& x) { return x.erfc(); });
  check_unary("erfinv", [](const Tensor& x) { return x.erfinv(); }, -0.9, 0.9);
  check_unary("sigmoid", [](const Tensor& x) { return x.sigmoid(); });
  check_unary("sin", [](const Tensor& x) { return x.sin(); });
  check_unary("cos", [](const Tensor& x) { return x.cos(); });
  check_unary("tan", [](const Tensor& x) { return x.tan(); }, -1.2, 1.2);
  check_unary("asin", [](const Tensor& x) { return x.asin(); }, -0.9, 0.9);
  check_unary("acos", [](const Tensor& x) { return x.acos(); }, -0.9, 0.9);
  check_unary("atan", [](const Tensor& x) { return x.atan(); });
  check_unary("sinh", [](const Tensor& x) { return x.sinh(); });
  check_unary("cosh", [](const Tensor& x) { return x.cosh(); });
  check_unary("asinh", [](const Tensor& x) { return x.asinh(); });
  check_unary("acosh", [](const Tensor& x) { return x.acosh(); }, 1.2, 3.0);
  check_unary("atanh", [](const Tensor& x) { return x.atanh(); }, -0.9, 0.9);
  check_unary("expm1", [](const Tensor& x) { return x.expm1(); });
  check_unary("log1p", [](const Tensor& x) { return x.log1p(); }, -0.5, 2.0);
  check_unary("cbrt", [](const Tensor& x) { return x.cbrt(); }, 0.2, 3.0);
  check_unary("relu", [](const Tensor& x) { return x.relu(); }, 0.1, 2.0);
  check_unary("relu negative", [](const Tensor& x) { return x.relu(); }, -2.0, -0.1);
  check_unary("gelu", [](const Tensor& x) { return x.gelu(); });
  check_unary("gelu_erf", [](const Tensor& x) { return x.gelu_erf(); });
  check_unary("silu", [](const Tensor& x) { return x.silu(); });
  check_unary("elu", [](const Tensor& x) { return x.elu(0.7); });
  check_unary("affine", [](const Tensor& x) { return x.affine(-1.5, 2.0); });
  check_unary("powf", [](const Tensor& x) { return x.powf(2.5); }, 0.2, 2.0);
  check_unary("clamp", [](const Tensor& x) { return x.clamp(-0.5, 0.7); });
  check_unary("scalar operators", [](const Tensor& x) { return (2.0 - x) / 3.0 + 1.0 / (x + 3.0); });
}

TEST_CASE("binary ops with broadcasting: gradients match central differences",
          "[autograd][gradcheck]") {
  using F = std::function<Tensor(const Tensor&, const Tensor&)>;
  auto both = [](const std::string& name, F f, double lo, double hi) {
    for (const auto& shapes : {std::pair<Shape, Shape>{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}},
                               {{}, {2, 2}}}) {
      const Shape& sa = shapes.first;  // not a structured binding: clang 14 cannot capture those
      const Shape& sb = shapes.second;
      check_rule(name + " " + shape_to_string(sa) + " " + shape_to_string(sb),
                 [f](auto& x) { return f(x[0], x[1]); },
                 [&](const Device& d) {
                   return std::vector<Tensor>{rand(sa, lo, hi, d), rand(sb, lo, hi, d)};
                 });
    }
  };
  both("add", [](auto& a, auto& b) { return a + b; }, -2, 2);
  both("sub", [](auto& a, auto& b) { return a - b; }, -2, 2);
  both("mul", [](auto& a, auto& b) { return a * b; }, -2, 2);
  both("div", [](auto& a, auto& b) { return a / b; }, 0.5, 2);
  both("maximum", [](auto& a, auto& b) { return a.maximum(b); }, -2, 2);
  both("minimum", [](auto& a, auto& b) { return a.minimum(b); }, -2, 2);
  both("pow", [](auto& a, auto& b) { return a.pow(b); }, 0.5, 2);
  both("atan2", [](auto& a, auto& b) { return a.atan2(b); }, 0.5, 2);
  both("hypot", [](auto& a, auto& b) { return a.apply(WICK_OP_HYPOT, b); }, 0.5, 2);
  check_rule("rem", [](auto& x) { return x[0].rem(x[1]); }, [](const Device& d) {
    return std::vector<Tensor>{Tensor::from_vector<double>({5.3, -5.3, 7.1}, d),
                               Tensor::from_vector<double>({2.1, 2.1, -3.3}, d)};
  });
  check_rule("where", [](auto& x) { return Tensor::where(x[2].gt(x[1]), x[0], x[1]); },
             [](const Device& d) {
               return std::vector<Tensor>{randn({2, 3}, d), randn({3}, d), randn({2, 1}, d)};
             });
}

TEST_CASE("matmul: gradients match central differences", "[autograd][gradcheck]") {
  auto pair = [](Shape a, Shape b) {
    return [a, b](const Device& d) { return std::vector<Tensor>{randn(a, d), randn(b, d)}; };
  };
  auto mm = [](auto& x) { return x[0].matmul(x[1]); };
  check_rule("matmul 2-d", mm, pair({2, 3}, {3, 4}));
  check_rule("matmul vector-matrix", mm, pair({3}, {3, 4}));
  check_rule("matmul matrix-vector", mm, pair({2, 3}, {3}));
  check_rule("matmul vector-vector", mm, pair({3}, {3}));
  check_rule("matmul batch broadcast", mm, pair({2, 1, 2, 3}, {3, 3, 2}));
  check_rule("matmul with a transposed weight", [](auto& x) { return x[0].matmul(x[1].t()); },
             pair({2, 3}, {4, 3}));
  check_rule("matmul of a transposed input", [](auto& x) { return x[0].t().matmul(x[1]); },
             pair({3, 2}, {3, 4}));
}

TEST_CASE("reductions and scans: gradients match central differences", "[autograd][gradcheck]") {
  auto one = [](Shape s) {
    return [s](const Device& d) { return std::vector<Tensor>{randn(s, d)}; };
  };
  check_rule("sum all", [](auto& x) { return x[0].sum(); }, one({2, 3}));
  check_rule("sum axes", [](auto& x) { return x[0].sum({0, 2}); }, one({2, 3, 2}));
  check_rule("sum keepdim", [](auto& x) { return x[0].sum({1}, true) * x[0]; }, one({2, 3}));
  check_rule("mean", [](auto& x) { return x[0].mean({-1}); }, one({2, 3}));
  check_rule("mean keepdim", [](auto& x) { return x[0].mean({0, 1}, true); }, one({2, 3}));
  check_rule("prod", [](auto& x) { return x[0].prod({1}); }, one({2, 3}));
  check_rule("prod axes", [](auto& x) { return x[0].prod({0, 2}, true); }, one({2, 2, 2}));
  check_rule("max", [](auto& x) { return x[0].max({1}); }, one({2, 4}));
  check_rule("min keepdim", [](auto& x) { return x[0].min({0}, true); }, one({3, 2}));
  for (bool reverse : {false, true}) {
    for (bool exclusive : {false, true}) {
      const std::string flags =
          std::string(reverse ? " reverse" : "") + (exclusive ? " exclusive" : "");
      check_rule("cumsum" + flags, [=](auto& x) { return x[0].cumsum(1, reverse, exclusive); },
                 one({2, 4}));
      check_rule("cumprod" + flags, [=](auto& x) { return x[0].cumprod(0, reverse, exclusive); },
                 one({4, 2}));
    }
  }
}

TEST_CASE("indexing and joining: gradients match central differences", "[autograd][gradcheck]") {
  auto ids = [](std::vector<int64_t> v, Shape s, const Device& d) {
    return Tensor::from_vector<int64_t>(v, s, d);
  };
  check_rule("index_select",
             [](auto& x) {
               return x[0].index_select(
                   Tensor::from_vector<int64_t>({2, 0, 2, 1}, {2, 2}, x[0].device()), 1);
             },
             [](const Device& d) { return std::vector<Tensor>{randn({2, 3}, d)}; });
  check_rule("gather",
             [&](auto& x) { return x[0].gather(1, ids({0, 0, 2, 1}, {2, 2}, x[0].device())); },
             [](const Device& d) { return std::vector<Tensor>{randn({2, 3}, d)}; });
  for (std::string mode : {"set", "add"}) {
    check_rule("scatter " + mode,
               [&](auto& x) {
                 return x[0].scatter(0, ids({1, 0, 2}, {1, 3}, x[0].device()), x[1], mode);
               },
               [](const Device& d) { return std::vector<Tensor>{randn({3, 3}, d), randn({1, 3}, d)}; });
    check_rule("index_reduce " + mode,
               [&](auto& x) {
                 return x[0].index_reduce(1, ids({2, 0}, {2}, x[0].device()), x[1], mode);
               },
               [](const Device& d) { return std::vector<Tensor>{randn({2, 3}, d), randn({2, 2}, d)}; });
  }
  check_rule("index_add with a repeated index",
             [&](auto& x) { return x[0].index_add(0, ids({1, 1}, {2}, x[0].device()), x[1]); },
             [](const Device& d) { return std::vector<Tensor>{randn({3, 2}, d), randn({2, 2}, d)}; });
  check_rule("cat", [](auto& x) { return Tensor::cat({x[0], x[1].t(), x[0]}, 1); },
             [](const Device& d) { return std::vector<Tensor>{randn({2, 2}, d), randn({3, 2}, d)}; });
  check_rule("stack", [](auto& x) { return Tensor::stack({x[0], x[1]}, 1); },
             [](const Device& d) { return std::vector<Tensor>{randn({2, 3}, d), randn({2, 3}, d)}; });
  check_rule("sort", [](auto& x) { return x[0].sort(1, true).first; },
             [](const Device& d) { return std::vector<Tensor>{randn({2, 4}, d)}; });
  check_rule("topk", [](auto& x) { return x[0].topk(2, 0).first; },
             [](const Device& d) { return std::vector<Tensor>{randn({4, 2}, d)}; });
}

TEST_CASE("conv: gradients match central differences", "[autograd][gradcheck][conv]") {
  struct Case {
    const char* name;
    Shape x, w;
    std::vector<int64_t> strides, padding, dilations;
    int64_t groups;
  };
  const Case cases[] = {
      {"1-d plain", {2, 2, 6}, {3, 2, 3}, {}, {}, {}, 1},
      {"1-d stride 2 pad 1", {1, 2, 7}, {2, 2, 3}, {2}, {1}, {}, 1},
      {"2-d stride 2 pad 1", {2, 2, 5, 5}, {3, 2, 3, 3}, {2}, {1}, {}, 1},
      {"2-d dilation 2", {1, 2, 6, 5}, {2, 2, 2, 2}, {}, {}, {2}, 1},
      {"2-d groups 2", {1, 4, 4, 4}, {6, 2, 3, 3}, {1}, {1}, {}, 2},
      {"2-d stride 3, uneven padding, dilation", {1, 2, 8, 7}, {2, 2, 2, 3}, {3, 2}, {2, 0, 1, 3},
       {2, 1}, 1},
      {"2-d depthwise stride 2", {2, 3, 5, 6}, {3, 1, 3, 2}, {2}, {1}, {}, 3},
  };
  for (const Case& c : cases) {
    check_rule(c.name,
               [&](auto& x) { return x[0].conv(x[1], c.strides, c.padding, c.dilations, c.groups); },
               [&](const Device& d) { return std::vector<Tensor>{randn(c.x, d), randn(c.w, d)}; });
  }
}

TEST_CASE("windows and pooling: gradients match central differences", "[autograd][gradcheck]") {
  auto one = [](Shape s) {
    return [s](const Device& d) { return std::vector<Tensor>{randn(s, d)}; };
  };
  check_rule("window sum", [](auto& x) { return x[0].window_reduce("sum", {1, 2, 3}); },
             one({2, 4, 5}));
  check_rule("window sum stride, padding, dilation",
             [](auto& x) {
               return x[0].window_reduce("sum", {1, 2, 2}, {1, 2, 3}, {{0, 0}, {1, 0}, {2, 1}},
                                         {1, 2, 1});
             },
             one({2, 6, 7}));
  check_rule("window max stride 2 padding",
             [](auto& x) { return x[0].window_reduce("max", {2, 3}, {2, 2}, {{1, 1}, {0, 1}}); },
             one({5, 6}));
  check_rule("window min", [](auto& x) { return x[0].window_reduce("min", {2, 2}, {1, 1}); },
             one({3, 4}));
  check_rule("max_pool2d", [](auto& x) { return x[0].max_pool2d({2, 2}); }, one({2, 2, 4, 4}));
  check_rule("max_pool2d stride 1 padding 1",
             [](auto& x) { return x[0].max_pool2d({3, 3}, {1, 1}, {1, 1}); }, one({1, 2, 4, 5}));
  check_rule("avg_pool2d", [](auto& x) { return x[0].avg_pool2d({2, 2}); }, one({2, 2, 4, 4}));
  check_rule("avg_pool2d padding, excluding pads",
             [](auto& x) { return x[0].avg_pool2d({3, 3}, {2, 2}, {1, 1}, false); },
             one({1, 2, 5, 5}));
  check_rule("avg_pool2d padding, counting pads",
             [](auto& x) { return x[0].avg_pool2d({3, 3}, {2, 2}, {1, 1}, true); },
             one({1, 2, 5, 5}));
}

TEST_CASE("softmax and normalisation: gradients match central differences",
          "[autograd][gradcheck]") {
  auto shapes = [](std::vector<Shape> s) {
    return [s](const Device& d) {
      std::vector<Tensor> out;
      for (const Shape& x : s) out.push_back(randn(x, d));
      return out;
    };
  };
  check_rule("softmax", [](auto& x) { return x[0].softmax(1); }, shapes({{2, 4}}));
  check_rule("softmax of a transpose", [](auto& x) { return x[0].t().softmax(-1); },
             shapes({{4, 2}}));
  check_rule("log_softmax", [](auto& x) { return x[0].log_softmax(0); }, shapes({{3, 2}}));
  check_rule("layer_norm", [](auto& x) { return x[0].layer_norm(1, x[1], x[2]); },
             shapes({{3, 4}, {4}, {4}}));
  check_rule("layer_norm 2 axes, no affine", [](auto& x) { return x[0].layer_norm(2); },
             shapes({{2, 2, 3}}));
  check_rule("rms_norm", [](auto& x) { return x[0].rms_norm(x[1]); }, shapes({{3, 4}, {4}}));
  check_rule("rms_norm, no weight", [](auto& x) { return x[0].rms_norm(); }, shapes({{2, 5}}));
  check_rule("batch_norm",
             [](auto& x) { return x[0].batch_norm(x[1], x[2].exp(), x[3], x[4]); },
             shapes({{2, 3, 2, 2}, {3}, {3}, {3}, {3}}));
  check_rule("batch_norm with batch statistics",
             [](auto& x) {
               const Tensor m = x[0].mean({0, 2});
               const Tensor v = (x[0] - m.reshape({3, 1})).sqr().mean({0, 2});
               return x[0].batch_norm(m, v);
             },
             shapes({{4, 3, 2}}));
  check_rule("attention", [](auto& x) { return Tensor::attention(x[0], x[1], x[2]); },
             shapes({{2, 3, 4}, {2, 5, 4}, {2, 5, 2}}));
  check_rule("attention causal with mask",
             [](auto& x) { return Tensor::attention(x[0], x[1], x[2], x[3], 0.7, true); },
             shapes({{3, 4}, {3, 4}, {3, 2}, {3, 3}}));
}

TEST_CASE("check_gradients finds a gradient that autograd gets wrong", "[autograd][gradcheck]") {
  // x * detach(x) has autograd gradient x but true derivative 2x: the checker must notice.
  const autograd::GradCheck r = autograd::check_gradients(
      [](const std::vector<Tensor>& x) { return x[0] * x[0].detach(); },
      {Tensor::from_vector<double>({1.0, 2.0}, cpu())});
  CHECK(r.max_error > 0.1);
  CHECK_THAT(r.worst, Catch::Contains("input 0 element"));
}

TEST_CASE("sort of a 0-d tensor passes its gradient through", "[autograd]") {
  Tensor x = Tensor::scalar<double>(4.0, cpu()).set_requires_grad();
  (x.sort().first * 3.0).backward();
  CHECK(values(x.grad()) == std::vector<double>{3});
}

TEST_CASE("a slice whose step is past the axis sends its gradient to the one element it took",
          "[autograd][edge]") {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, cpu()).set_requires_grad();
  // x[1::2**63-1] is [x1]; x[2::-2**63] is [x2] (the step cut to -(2**63-1), as Python does).
  (x.slice(0, 1, std::nullopt, std::numeric_limits<int64_t>::max()) * 3.0).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 3, 0, 0});
  x.zero_grad();
  (x.slice(0, 2, std::nullopt, std::numeric_limits<int64_t>::min()) * 5.0).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 0, 5, 0});
}

TEST_CASE("backward names the op and the saved tensor that an in-place write changed", "[autograd]") {
  for (const Device& d : devices()) {
    INFO(d.name());
    // gather keeps its indices; written in place after the forward pass, they would send the
    // gradient to the wrong elements.
    Tensor x = Tensor::from_vector<float>({1, 2, 3}, d).set_requires_grad();
    const Tensor ids = Tensor::from_vector<int64_t>({0, 2}, d);
    const Tensor y = x.gather(0, ids).sum();
    dispatch_in_place(WICK_OP_COPY, nullptr, {Tensor::from_vector<int64_t>({1, 1}, d)}, {ids});
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("backward: gather needs a tensor it saved") &&
                                        Catch::Contains("(version 0 then, 1 now)"));
    // matmul keeps both operands; the message says which, with its shape and dtype.
    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, d).set_requires_grad();
    const Tensor a = Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2}, d);
    const Tensor z = a.matmul(w).sum();
    dispatch_in_place(WICK_OP_COPY, nullptr, {a.t()}, {a});  // two writes: version 2
    dispatch_in_place(WICK_OP_COPY, nullptr, {a.t()}, {a});
    CHECK_THROWS_WITH(z.backward(), Catch::Contains("backward: matmul needs its input 0 ([2, 2] f32)") &&
                                        Catch::Contains("(version 0 then, 2 now)"));
  }
}

TEST_CASE("a unary op saves only what its backward reads: writing the other is no error",
          "[autograd]") {
  for (const Device& d : devices()) {
    INFO(d.name());
    // exp's gradient is g * exp(x), read from its output: its input may change after the forward
    // pass (PyTorch allows it too). log's is g / x: there the write is refused.
    for (const bool is_exp : {true, false}) {
      Tensor leaf = Tensor::from_vector<float>({1, 2}, d).set_requires_grad();
      const Tensor x = leaf + Tensor::zeros({2}, DType::F32, d);  // add saves nothing
      const Tensor y = (is_exp ? x.exp() : x.log()).sum();
      dispatch_in_place(WICK_OP_COPY, nullptr, {Tensor::from_vector<float>({5, 5}, d)}, {x});
      if (is_exp) {
        y.backward();
        const std::vector<float> g = leaf.grad().to_vector<float>();
        CHECK(g[0] == Approx(std::exp(1.0)).epsilon(1e-6));
        CHECK(g[1] == Approx(std::exp(2.0)).epsilon(1e-6));
      } else {
        CHECK_THROWS_WITH(y.backward(), Catch::Contains("backward: log needs its input 0"));
      }
    }
    // neg reads neither: its input and output may both be written.
    Tensor leaf = Tensor::from_vector<float>({1, 2}, d).set_requires_grad();
    const Tensor x = leaf + Tensor::zeros({2}, DType::F32, d);
    const Tensor y = x.neg();
    dispatch_in_place(WICK_OP_COPY, nullptr, {Tensor::from_vector<float>({5, 5}, d)}, {x});
    dispatch_in_place(WICK_OP_COPY, nullptr, {Tensor::from_vector<float>({7, 7}, d)}, {y});
    y.sum().backward();
    CHECK(leaf.grad().to_vector<float>() == std::vector<float>{-1, -1});
  }
}

TEST_CASE("to(device) sends the gradient back to the source device", "[autograd]") {
  if (devices().size() < 2) return;
  const Device other = devices()[1];
  Tensor x = Tensor::from_vector<float>({1, 2}, cpu()).set_requires_grad();
  (x.to(other) * 3.0).sum().backward();
  REQUIRE(x.grad().device() == cpu());
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 3});
}

TEST_CASE("leaf gradients are stored without copies and read right, shared or broadcast", "[autograd]") {
  Tensor a = Tensor::ones({2}, DType::F32, cpu()).set_requires_grad();
  Tensor b = Tensor::ones({2}, DType::F32, cpu()).set_requires_grad();
  (a + b).backward(Tensor::full({2}, 2.0, DType::F32, cpu()));  // add hands one gradient to both
  CHECK(a.grad().to_vector<float>() == std::vector<float>{2, 2});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{2, 2});
  (a * 3.0).sum().backward();  // accumulating into a does not change b's gradient
  CHECK(a.grad().to_vector<float>() == std::vector<float>{5, 5});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{2, 2});
  Tensor c = Tensor::ones({2, 2}, DType::F32, cpu()).set_requires_grad();
  c.sum().backward();  // a broadcast view of one element
  CHECK(c.grad().to_vector<float>() == std::vector<float>(4, 1.0f));
}
