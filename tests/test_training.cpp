// Training pieces against PyTorch and hand-worked values: the three Fashion-MNIST models load
// PyTorch's state_dicts (tests/data/make_torch_fixtures.py, Debian's python3-torch 1.13) and
// reproduce PyTorch's outputs; SGD, Adam and AdamW reproduce PyTorch's steps; losses, BatchNorm,
// Dropout and the parameter store behave as documented. On the CPU and, when usable, opencl, with
// no fallback.
#include "test_support.hpp"

#include "../examples/models.hpp"

#include <wick/nn/nn.hpp>
#include <wick/nn/optim.hpp>
#include <wick/safetensors.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
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

TEST_CASE("cross-entropy, MSE and BCE-with-logits match hand-worked values; accuracy counts rows",
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
