// autograd::on_grad_ready (wick/autograd.hpp): a hook per leaf that a backward pass calls once it
// is done with the leaf, while the pass goes on — what data parallelism starts its gradient
// all-reduces from. The gradients the hooks see are worked by hand.
#include "test_support.hpp"

#include <wick/autograd.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace wick;
using wick::test::cpu;

namespace {

std::vector<double> values(const Tensor& t) {
  return t.to(DType::F64).to_vector<double>();
}

Tensor leaf(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_vector<double>(v, shape, cpu()).set_requires_grad();
}

}  // namespace

TEST_CASE("a grad-ready hook sees the leaf's whole gradient of the pass, once",
          "[autograd][hooks]") {
  // loss = sum(3 x) + sum(x * x) with x = [2, 5]: two edges reach x; d loss / dx = 3 + 2x = [7,
  // 13].
  Tensor x = leaf({2, 5}, {2});
  // The hook reads the gradient through a reference to a Tensor outside the leaf (no cycle).
  std::vector<std::vector<double>> grads;
  const autograd::GradReadyHook hook =
      autograd::on_grad_ready(x, [&grads, &x] { grads.push_back(values(x.grad())); });
  const Tensor loss = (x * 3.0).sum() + x.mul(x).sum();
  loss.backward();
  REQUIRE(grads.size() == 1);
  CHECK(grads[0] == std::vector<double>{7, 13});
  // A second pass over the same graph: called again, the gradient then accumulated (14, 26).
  loss.backward();
  REQUIRE(grads.size() == 2);
  CHECK(grads[1] == std::vector<double>{14, 26});
}

TEST_CASE("grad-ready hooks run during backward, the last layer's first", "[autograd][hooks]") {
  // y = sum((x W1) W2): W2's gradient is complete before backward reaches W1.
  const Tensor x = Tensor::from_vector<double>({1, 2}, {1, 2}, cpu());
  Tensor w1 = leaf({1, 0, 0, 1}, {2, 2});
  Tensor w2 = leaf({3, 4}, {2, 1});
  std::vector<std::string> order;
  bool w1_grad_when_w2_ready = true;
  Tensor w1_view = w1;
  const auto h1 = autograd::on_grad_ready(w1, [&] { order.push_back("w1"); });
  const auto h2 = autograd::on_grad_ready(w2, [&] {
    order.push_back("w2");
    w1_grad_when_w2_ready = w1_view.grad().defined();
  });
  x.matmul(w1).matmul(w2).sum().backward();
  CHECK(order == std::vector<std::string>{"w2", "w1"});
  CHECK_FALSE(w1_grad_when_w2_ready);
  // By hand: h = x W1 = [1, 2]; dW2 = h^T = [1, 2]; dW1 = x^T W2^T = [[3, 4], [6, 8]].
  CHECK(values(w2.grad()) == std::vector<double>{1, 2});
  CHECK(values(w1.grad()) == std::vector<double>{3, 4, 6, 8});
}

TEST_CASE(
    "a grad-ready hook is not called for a pass that misses its leaf, and stops with its "
    "handle",
    "[autograd][hooks]") {
  Tensor a = leaf({1}, {1});
  Tensor b = leaf({2}, {1});
  int calls = 0;
  autograd::GradReadyHook hook = autograd::on_grad_ready(a, [&calls] { ++calls; });
  (b * 2.0).sum().backward();  // a is not in this graph
  CHECK(calls == 0);
  a.backward();  // a leaf as the root: its hook runs too
  CHECK(calls == 1);
  autograd::GradReadyHook moved = std::move(hook);  // the hook moves with its handle
  (a * 2.0).sum().backward();
  CHECK(calls == 2);
  moved.reset();
  (a * 2.0).sum().backward();
  CHECK(calls == 2);
  {
    const autograd::GradReadyHook scoped = autograd::on_grad_ready(a, [&calls] { calls += 10; });
  }
  (a * 2.0).sum().backward();
  CHECK(calls == 2);
}

TEST_CASE("on_grad_ready refuses a tensor that is not a leaf requiring grad, naming it",
          "[autograd][hooks]") {
  const Tensor plain = Tensor::from_vector<double>({1, 2, 3}, cpu());
  CHECK_THROWS_WITH(autograd::on_grad_ready(plain, [] {}),
                    Catch::Contains("[3] f64 does not require grad"));
  const Tensor x = leaf({1, 2}, {2});
  CHECK_THROWS_WITH(autograd::on_grad_ready(x * 2.0, [] {}), Catch::Contains("not a leaf"));
  CHECK_THROWS_WITH(autograd::on_grad_ready(x, {}), Catch::Contains("an empty hook"));
}

TEST_CASE("an exception from a grad-ready hook ends the backward with it", "[autograd][hooks]") {
  Tensor x = leaf({1}, {1});
  const auto hook = autograd::on_grad_ready(x, [] { throw Error("hook failed on purpose"); });
  CHECK_THROWS_WITH((x * 2.0).sum().backward(), Catch::Contains("hook failed on purpose"));
}
