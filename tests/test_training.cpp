// Training pieces against PyTorch and hand-worked values: the three Fashion-MNIST models load
// PyTorch's state_dicts (tests/data/make_torch_fixtures.py, Debian's python3-torch 1.13) and
// reproduce PyTorch's outputs; SGD, Adam and AdamW reproduce PyTorch's steps; losses, BatchNorm,
// Dropout and the parameter store behave as documented. On the CPU and, when usable, opencl, with
// no fallback.
#include "test_support.hpp"

#include "../examples/models.hpp"

#include <wick/dispatch.hpp>
#include <wick/nn/nn.hpp>
#include <wick/nn/optim.hpp>
#include <wick/safetensors.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

using namespace wick;
using test::cpu;

namespace {

const std::string kTorch = std::string(WICK_TEST_DATA_DIR) + "/torch/";

std::vector<Device> devices() { return test::cpu_and_opencl(); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.to(DType::F64).to_vector<double>(), y = b.to(DType::F64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

}  // namespace

TEST_CASE("PyTorch's weights load into the example models and give PyTorch's outputs to 1e-5",
          "[training][torch]") {
  using Builder = std::function<nn::Sequential(const nn::Path&)>;
  const std::pair<std::string, Builder> models[] = {
      {"mlp", &examples::mlp}, {"cnn", &examples::cnn}, {"autoencoder", &examples::autoencoder}};
  for (const Device& device : devices()) {
    for (const auto& [name, build] : models) {
      INFO(name << " on " << device.name());
      nn::VarStore store(device);
      const nn::Sequential model = build(store.root());
      store.load(kTorch + name + ".safetensors");  // names, shapes and dtypes checked
      const safetensors::File io = safetensors::load(kTorch + name + "_io.safetensors", device);
      const uint64_t fallbacks = test::built_runtime().fallback_count();
      nn::EvalGuard eval;
      const Tensor out = model(io.tensors.at("input"));
      CHECK(test::built_runtime().fallback_count() == fallbacks);
      CHECK(max_abs_diff(out, io.tensors.at("output")) <= 1e-5);
    }
  }
}

TEST_CASE("loading a state dict names what is missing, extra or of another shape", "[training]") {
  nn::VarStore store(cpu());
  (void)examples::cnn(store.root());
  try {
    store.load(kTorch + "mlp.safetensors");
    FAIL("loading the MLP's weights into the CNN should fail");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("3.weight"));   // the CNN's, missing from the file
    CHECK_THAT(m, Catch::Contains("2.weight"));   // the MLP's, extra
    CHECK_THAT(m, Catch::Contains("0.weight: expected [16, 1, 3, 3] f32, found [256, 784] f32"));
  }
}

TEST_CASE("SGD, Adam and AdamW take PyTorch's steps, fused or as separate ops", "[training][optim]") {
  const safetensors::File f = safetensors::load(kTorch + "optimizers.safetensors", cpu());
  for (const Device& device : devices()) {
    for (const std::string label : {"adam", "adamw", "sgd"}) {
      INFO(label << " on " << device.name());
      Tensor p = f.tensors.at("param").to(device).clone();
      p.set_requires_grad(true);
      std::unique_ptr<optim::Optimizer> opt;
      if (label == "adam") opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
      if (label == "adamw") opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
      if (label == "sgd")
        opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
      for (int i = 0; i < 3; ++i) {
        p.set_grad(f.tensors.at("grad" + std::to_string(i)).to(device));
        opt->step();
        CHECK(max_abs_diff(p, f.tensors.at(label + "_step" + std::to_string(i))) <= 1e-12);
      }
    }
  }
}

TEST_CASE("an optimizer restored from a saved state_dict takes PyTorch's next step", "[training][optim]") {
  // Two steps, the state through a safetensors file's bytes into a fresh optimizer over a fresh copy
  // of the parameter, then the third step: PyTorch's third step (the fixture), as without the break.
  const safetensors::File f = safetensors::load(kTorch + "optimizers.safetensors", cpu());
  for (const Device& device : devices()) {
    for (const std::string label : {"adam", "adamw", "sgd"}) {
      INFO(label << " on " << device.name());
      auto make = [&](Tensor p) -> std::unique_ptr<optim::Optimizer> {
        if (label == "sgd")
          return std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
        const optim::AdamOptions o{.lr = 0.01, .weight_decay = 0.1};
        if (label == "adam") return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
        return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, o);
      };
      Tensor p = f.tensors.at("param").to(device).clone().set_requires_grad(true);
      const std::unique_ptr<optim::Optimizer> first = make(p);
      for (int i = 0; i < 2; ++i) {
        p.set_grad(f.tensors.at("grad" + std::to_string(i)).to(device));
        first->step();
      }
      const std::string bytes = safetensors::save_bytes(first->state_dict());
      const safetensors::File saved = safetensors::load_bytes(bytes.data(), bytes.size(), cpu());
      Tensor q = p.detach().clone().set_requires_grad(true);
      const std::unique_ptr<optim::Optimizer> second = make(q);
      second->load_state_dict(saved.tensors);
      q.set_grad(f.tensors.at("grad2").to(device));
      second->step();
      CHECK(max_abs_diff(q, f.tensors.at(label + "_step2")) <= 1e-12);
      if (label != "sgd") CHECK(dynamic_cast<optim::Adam&>(*second).steps() == 3);
    }
  }
}

TEST_CASE("load_state_dict names unknown, missing and misshapen entries and changes nothing", "[training][optim]") {
  Tensor w = Tensor::zeros({2, 3}, DType::F32, cpu()).set_requires_grad(true);
  Tensor b = Tensor::zeros({3}, DType::F32, cpu()).set_requires_grad(true);
  optim::SGD sgd({w, b}, {.lr = 0.1, .momentum = 0.9});
  optim::Adam adam({w, b}, {});
  const Tensor m = Tensor::ones({2, 3}, DType::F32, cpu());
  CHECK_THROWS_WITH(sgd.load_state_dict({{"0.exp_avg", m}}),
                    Catch::Contains("SGD::load_state_dict") && Catch::Contains("unknown entry '0.exp_avg'"));
  CHECK_THROWS_WITH(sgd.load_state_dict({{"2.momentum_buffer", m}}), Catch::Contains("unknown entry '2.momentum_buffer'"));
  CHECK_THROWS_WITH(sgd.load_state_dict({{"1.momentum_buffer", m}}),
                    Catch::Contains("'1.momentum_buffer' is [2, 3] f32, its parameter [3] f32"));
  CHECK_THROWS_WITH(adam.load_state_dict({{"0.exp_avg", m}, {"0.exp_avg_sq", m}}), Catch::Contains("no 'step'"));
  CHECK_THROWS_WITH(adam.load_state_dict({{"0.exp_avg", m}, {"step", Tensor::scalar<int64_t>(1, cpu())}}),
                    Catch::Contains("parameter 0 has 1 of its 2 state tensors"));
  CHECK(sgd.state_dict().empty());  // nothing was loaded
  CHECK(adam.steps() == 0);
}

TEST_CASE("cross-entropy, MSE and BCE-with-logits match hand-worked values, and accuracy counts rows",
          "[training][nn]") {
  for (const Device& device : devices()) {
    INFO(device.name());
    // logits [[0, ln 3], [ln 2, 0]], labels [1, 1]: -(ln(3/4) + ln(1/3)) / 2.
    const Tensor logits = Tensor::from_vector<double>({0, std::log(3.0), std::log(2.0), 0}, {2, 2}, device);
    const Tensor labels = Tensor::from_vector<int64_t>({1, 1}, {2}, device);
    CHECK(nn::cross_entropy(logits, labels).item<double>() == Approx(-(std::log(0.75) + std::log(1.0 / 3)) / 2).epsilon(1e-12));
    CHECK(nn::accuracy(logits, labels) == 0.5);
    const Tensor a = Tensor::from_vector<double>({1, 2, 3}, {3}, device), b = Tensor::from_vector<double>({1, 0, 5}, {3}, device);
    CHECK(nn::mse_loss(a, b).item<double>() == Approx((0 + 4 + 4) / 3.0).epsilon(1e-12));
    // x = [-2, 0, 3], t = [0, 1, 1]: mean of log(1 + e^-2) + 2, log 2, log(1 + e^-3).
    const Tensor x = Tensor::from_vector<double>({-2, 0, 3}, {3}, device), t = Tensor::from_vector<double>({0, 1, 1}, {3}, device);
    const double bce = (std::log1p(std::exp(-2.0)) + std::log(2.0) + std::log1p(std::exp(-3.0))) / 3;
    CHECK(nn::bce_with_logits(x, t).item<double>() == Approx(bce).epsilon(1e-12));
    CHECK_THROWS_WITH(nn::cross_entropy(logits, labels.to(DType::F32)), Catch::Contains("integer class indices"));
  }
}

TEST_CASE("cross-entropy refuses a label out of range and names it, its position and the classes",
          "[training][nn]") {
  for (const Device& device : devices()) {
    INFO(device.name());
    const Tensor logits = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3}, device);
    CHECK_THROWS_WITH(nn::cross_entropy(logits, Tensor::from_vector<int64_t>({0, -1}, {2}, device)),
                      Catch::Contains("nn::cross_entropy: label -1 at [1] is outside [0, 3)"));
    CHECK_THROWS_WITH(nn::cross_entropy(logits, Tensor::from_vector<int32_t>({3, 1}, {2}, device)),
                      Catch::Contains("nn::cross_entropy: label 3 at [0] is outside [0, 3)"));
    // [N, C, d]: the position is a full index into the labels [N, d].
    const Tensor logits3 = Tensor::zeros({2, 10, 2}, DType::F32, device);
    CHECK_THROWS_WITH(nn::cross_entropy(logits3, Tensor::from_vector<int64_t>({0, 9, 2, 10}, {2, 2}, device)),
                      Catch::Contains("nn::cross_entropy: label 10 at [1, 1] is outside [0, 10)"));
    CHECK(std::isfinite(nn::cross_entropy(logits3, Tensor::from_vector<int64_t>({0, 9, 2, 9}, {2, 2}, device)).item<float>()));
  }
}

TEST_CASE("BatchNorm uses batch statistics in training and running ones in inference", "[training][nn]") {
  nn::VarStore store(cpu(), DType::F64);
  const nn::BatchNorm bn(store.root() / "bn", 2, 0.0, 0.5);
  // Channel 0 holds 1, 3; channel 1 holds 2, 6 (N = 2, no spatial axes).
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 6}, {2, 2}, cpu());
  const Tensor y = bn(x);
  CHECK(y.to_vector<double>() == std::vector<double>{-1, -1, 1, 1});  // (x - mean) / sqrt(biased var)
  // running = 0.5 * initial + 0.5 * batch; the running variance uses the unbiased estimate.
  CHECK(store.get("bn.running_mean").to_vector<double>() == std::vector<double>{1, 2});
  CHECK(store.get("bn.running_var").to_vector<double>() == std::vector<double>{0.5 * 1 + 0.5 * 2, 0.5 * 1 + 0.5 * 8});
  CHECK(store.get("bn.num_batches_tracked").item<int64_t>() == 1);
  nn::EvalGuard eval;
  const Tensor z = bn(Tensor::from_vector<double>({2, 2}, {1, 2}, cpu()));
  CHECK(z.to_vector<double>()[0] == Approx((2 - 1) / std::sqrt(1.5)));
  CHECK(z.to_vector<double>()[1] == Approx((2 - 2) / std::sqrt(4.5)));
}

TEST_CASE("AvgPool2d follows PyTorch: padding counts in the divisor unless count_include_pad is off",
          "[training][nn]") {
  for (const Device& device : devices()) {
    INFO(device.name());
    // 1..16 as [1, 1, 4, 4]; kernel 3, stride 2, padding 1: the four windows cover the real
    // elements 1+2+5+6 = 14, 2+3+4+6+7+8 = 30, 5+6+9+10+13+14 = 57 and 6+7+8+10+11+12+14+15+16 = 99,
    // which are 4, 6, 6 and 9 of the 9 places.
    std::vector<float> v(16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i + 1);
    const Tensor x = Tensor::from_vector(v, {1, 1, 4, 4}, device);
    const nn::AvgPool2d pool(3, 2, 1);
    CHECK(pool.count_include_pad);
    const std::vector<float> with_pad = pool(x).to_vector<float>();
    const std::vector<double> want_with{14.0 / 9, 30.0 / 9, 57.0 / 9, 99.0 / 9};
    const std::vector<float> without = nn::AvgPool2d(3, 2, 1, false)(x).to_vector<float>();
    const std::vector<double> want_without{14.0 / 4, 30.0 / 6, 57.0 / 6, 99.0 / 9};
    REQUIRE(with_pad.size() == 4);
    REQUIRE(without.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
      CHECK(with_pad[i] == Approx(want_with[i]).epsilon(1e-6));
      CHECK(without[i] == Approx(want_without[i]).epsilon(1e-6));
    }
    // Without padding the two agree, and the stride defaults to the kernel.
    CHECK(nn::AvgPool2d(2)(x).to_vector<float>() == std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f});
  }
}

TEST_CASE("nn::assign from a view of its own target reads the whole value before writing",
          "[training][nn]") {
  using V = std::vector<float>;
  for (const Device& device : devices()) {
    INFO(device.name());
    Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, device);
    nn::assign(t, t.flip(0));
    CHECK(t.to_vector<float>() == V{4, 3, 2, 1});

    Tensor u = Tensor::from_vector<float>({1, 2, 3, 4, 5}, device);
    Tensor tail = u.slice(0, 1, std::nullopt);
    nn::assign(tail, u.slice(0, 0, 4));  // u[1:] = u[:4]: a forward copy would smear u[0]
    CHECK(u.to_vector<float>() == V{1, 1, 2, 3, 4});
    Tensor head = u.slice(0, 0, 4);
    nn::assign(head, u.slice(0, 1, std::nullopt));  // u[:4] = u[1:]
    CHECK(u.to_vector<float>() == V{1, 2, 3, 4, 4});

    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, device);
    nn::assign(w, w.slice(0, 1, 2));  // row 1 broadcast over both rows
    CHECK(w.to_vector<float>() == V{4, 5, 6, 4, 5, 6});
    Tensor sq = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, device);
    nn::assign(sq, sq.t());
    CHECK(sq.to_vector<float>() == V{1, 3, 2, 4});

    // Disjoint views of one storage: copied directly, and right.
    Tensor d = Tensor::from_vector<float>({1, 2, 3, 4}, device);
    Tensor front = d.slice(0, 0, 2);
    CHECK_FALSE(may_share_memory(front, d.slice(0, 2, std::nullopt)));
    nn::assign(front, d.slice(0, 2, std::nullopt));
    CHECK(d.to_vector<float>() == V{3, 4, 3, 4});
  }
}

TEST_CASE("backward refuses a saved tensor that an in-place write changed after the forward pass",
          "[training][autograd]") {
  for (const Device& device : devices()) {
    INFO(device.name());
    // y = sum(w * x), dy/dw = x = [2, 3]; with x overwritten by [100, 100] the rule would give
    // [100, 100] without a word.
    Tensor w = Tensor::from_vector<float>({1, 1}, device).set_requires_grad();
    Tensor x = Tensor::from_vector<float>({2, 3}, device);
    const Tensor y = (w * x).sum();
    nn::assign(x, Tensor::from_vector<float>({100, 100}, device));
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("backward: mul needs its input 1 ([2] f32)") &&
                                        Catch::Contains("modified it since (version 0 then, 1 now)"));
    CHECK_FALSE(w.grad().defined());
    (w * x).sum().backward();  // a forward pass after the write is fine
    CHECK(w.grad().to_vector<float>() == std::vector<float>{100, 100});

    // add keeps no operand: writing one is harmless.
    w.zero_grad();
    const Tensor z = (w + x).sum();
    nn::assign(x, Tensor::from_vector<float>({7, 7}, device));
    z.backward();
    CHECK(w.grad().to_vector<float>() == std::vector<float>{1, 1});

    // exp keeps its output.
    const Tensor e = w.exp();
    const Tensor loss = e.sum();
    Tensor out = e.detach();
    nn::assign(out, Tensor::from_vector<float>({0, 0}, device));
    CHECK_THROWS_WITH(loss.backward(), Catch::Contains("backward: exp needs its output"));
  }
}

TEST_CASE("an optimizer step between forward and backward makes that backward throw",
          "[training][autograd][optim]") {
  for (const Device& device : devices()) {
    for (const bool adam : {false, true}) {
      INFO(device.name() << (adam ? " Adam" : " SGD"));
      Tensor p = Tensor::from_vector<float>({1, 2}, device).set_requires_grad();
      std::unique_ptr<optim::Optimizer> opt;
      if (adam) opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions{});
      else opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{});
      const Tensor first = (p * p).sum();
      first.backward();
      opt->step();
      // first's record is kept, so it could run backward again, but the step has changed p.
      CHECK_THROWS_WITH(first.backward(), Catch::Contains("backward: mul needs its input 0 ([2] f32)"));
      (p * p).sum().backward();  // a forward pass after the step is fine
    }
  }
}

TEST_CASE("Dropout zeroes about p of the elements, scales the rest, and is the identity in inference",
          "[training][nn]") {
  const nn::Dropout drop(0.25);
  const Tensor x = Tensor::ones({10000}, DType::F32, cpu());
  const std::vector<float> y = drop(x).to_vector<float>();
  int zeros = 0;
  for (float v : y) {
    if (v == 0) ++zeros;
    else CHECK(v == Approx(1 / 0.75));
  }
  CHECK(zeros > 2300);
  CHECK(zeros < 2700);
  nn::EvalGuard eval;
  CHECK(drop(x).to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("the parameter store names, initialises reproducibly and refuses clashes", "[training][nn]") {
  nn::VarStore a(cpu(), DType::F32, 7), b(cpu(), DType::F32, 7);
  const nn::Linear la(a.root() / "enc" / 0, 100, 50), lb(b.root() / "enc" / 0, 100, 50);
  CHECK(a.names() == std::vector<std::string>{"enc.0.weight", "enc.0.bias"});
  CHECK(la.weight.to_vector<float>() == lb.weight.to_vector<float>());  // same seed, same numbers
  // PyTorch's Linear init: U(-1/sqrt(in), 1/sqrt(in)); 5000 draws fill most of the range.
  const std::vector<float> w = la.weight.to_vector<float>();
  const float bound = 1 / std::sqrt(100.0f);
  float lo = 1, hi = -1;
  for (float v : w) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo >= -bound);
  CHECK(hi <= bound);
  CHECK(hi - lo > 1.9f * bound);
  CHECK(a.num_parameters() == 100 * 50 + 50);
  CHECK_THROWS_WITH(nn::Linear(a.root() / "enc" / 0, 10, 50), Catch::Contains("'enc.0.weight' exists with shape [50, 100]"));
  CHECK_THROWS_WITH(a.get("nope"), Catch::Contains("known: enc.0.weight, enc.0.bias"));
}

TEST_CASE("a small MLP learns: the loss falls by half in 60 Adam steps on every device", "[training]") {
  for (const Device& device : devices()) {
    INFO(device.name());
    nn::VarStore store(device, DType::F32, 3);
    nn::Sequential model;
    model.add(nn::Linear(store.root() / "0", 8, 16)).add(nn::relu).add(nn::Linear(store.root() / "2", 16, 3));
    optim::Adam opt(store.trainable(), {.lr = 0.05});
    // Three separable classes: the label is the argmax of the first three inputs.
    const Tensor x = Tensor::randn({64, 8}, 0, 1, DType::F32, device, 11);
    const Tensor y = x.narrow(1, 0, 3).argmax(1);
    double first = 0, last = 0;
    for (int i = 0; i < 60; ++i) {
      Tensor loss = nn::cross_entropy(model(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      (i == 0 ? first : last) = loss.item<float>();
    }
    CHECK(last < first / 2);
  }
}
