// save_checkpoint and load_checkpoint (wick/distributed/checkpoint.hpp), run as one process and
// under mpirun -n 2 (rank 0 writes and reads the file, the others get its bytes by broadcast). The
// values are worked by hand: numbers a binary fraction holds, so every step is exact in f64.
#include "test_group.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/checkpoint.hpp>
#include <wick/distributed/distributed.hpp>
#include <wick/error.hpp>
#include <wick/runtime.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace wick;
using namespace wick::distributed;

namespace {

// A file name rank 0 writes (each rank makes its own; only rank 0's is used).
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("wick-checkpoint-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

struct Model {
  nn::VarStore store;
  nn::Linear fc;
  Model(uint64_t seed)
      : store(Runtime::global().default_device(), DType::F64, seed),
        fc(store.root() / "fc", 2, 1) {}
  void set(const std::vector<double>& weight, double bias) {
    autograd::NoGradGuard no_grad;
    Tensor w = store.get("fc.weight"), b = store.get("fc.bias");
    nn::assign(w, Tensor::from_vector(weight, {1, 2}, store.device()));
    nn::assign(b, Tensor::from_vector<double>({bias}, {1}, store.device()));
  }
  void set_grads(double g) {
    for (Tensor p : store.trainable())
      p.set_grad(Tensor::full(p.shape(), g, DType::F64, p.device()));
  }
  std::vector<double> weight() const { return store.get("fc.weight").to_vector<double>(); }
  double bias() const { return store.get("fc.bias").to_vector<double>()[0]; }
};

}  // namespace

TEST_CASE("a checkpoint carries the weights, the momentum and the position to a fresh model",
          "[checkpoint]") {
  pg();
  const std::string path = temp_path("sgd.safetensors");
  const optim::SGDOptions o{.lr = 0.5, .momentum = 0.5};
  Model a(1);
  a.set({2, 4}, 1);
  optim::SGD sgd_a(a.store.trainable(), o);
  a.set_grads(1.0);
  sgd_a.step();  // momentum b = g = 1; w = [2, 4] - 0.5 = [1.5, 3.5], bias 0.5
  save_checkpoint(path, a.store, sgd_a, {.epoch = 3, .batch = 4});

  Model b(2);  // other initial weights
  optim::SGD sgd_b(b.store.trainable(), o);
  const TrainingPosition at = load_checkpoint(path, b.store, sgd_b);
  CHECK(at.epoch == 3);
  CHECK(at.batch == 4);
  CHECK(b.weight() == std::vector<double>{1.5, 3.5});
  CHECK(b.bias() == 0.5);
  // The next step with g = 0.5 uses the saved momentum: b = 0.5 * 1 + 0.5 = 1, w -= 0.5 * 1
  // (a fresh momentum would give b = 0.5 and w = [1.25, 3.25]).
  b.set_grads(0.5);
  sgd_b.step();
  CHECK(b.weight() == std::vector<double>{1.0, 3.0});
  CHECK(b.bias() == 0.0);
  if (pg().rank() == 0) std::filesystem::remove(path);
}

TEST_CASE("a checkpoint carries Adam's moments and step count", "[checkpoint]") {
  pg();
  const std::string path = temp_path("adam.safetensors");
  Model a(1);
  a.set({2, 4}, 1);
  optim::Adam adam_a(a.store.trainable(), {.lr = 0.25});
  for (int i = 0; i < 3; ++i) {
    a.set_grads(1.0);
    adam_a.step();
  }
  save_checkpoint(path, a.store, adam_a, {.epoch = 0, .batch = 3});
  Model b(2);
  optim::Adam adam_b(b.store.trainable(), {.lr = 0.25});
  load_checkpoint(path, b.store, adam_b);
  CHECK(adam_b.steps() == 3);
  // With a constant gradient g = 1 the bias-corrected moments are g and g^2 at every step t (the
  // corrections divide by 1 - beta^t exactly what the moments lack), so each step moves by
  // lr g / (|g| + eps) = 0.25 (1 - 1e-8): four steps take [2, 4] and 1 to [1, 3] and 0. Had the
  // step count restarted at 0 with the moments kept, the fourth step would be 0.25 (3.439 /
  // sqrt(3.994)) = 0.43 instead.
  b.set_grads(1.0);
  adam_b.step();
  const std::vector<double> w = b.weight();
  CHECK(w[0] == Approx(1.0).margin(1e-7));
  CHECK(w[1] == Approx(3.0).margin(1e-7));
  CHECK(b.bias() == Approx(0.0).margin(1e-7));
  if (pg().rank() == 0) std::filesystem::remove(path);
}

TEST_CASE("checkpoint errors name the file on every rank", "[checkpoint]") {
  const int r = pg().rank();
  Model m(1);
  optim::SGD sgd(m.store.trainable(), {.lr = 0.1});
  const std::string missing = temp_path("no-such-dir") + "/ckpt.safetensors";
  const std::string rank0_says = r == 0 ? "" : "failed on rank 0";
  CHECK_THROWS_WITH(save_checkpoint(missing, m.store, sgd, {}),
                    Catch::Contains("ckpt.safetensors") && Catch::Contains(rank0_says));
  CHECK_THROWS_WITH(load_checkpoint(missing, m.store, sgd),
                    Catch::Contains("cannot open the checkpoint") &&
                        Catch::Contains("ckpt.safetensors") && Catch::Contains(rank0_says));
  // Another model's checkpoint: the names and shapes that differ.
  const std::string other = temp_path("other.safetensors");
  nn::VarStore store(Runtime::global().default_device(), DType::F64, 1);
  nn::Linear wide(store.root() / "fc", 3, 1);
  optim::SGD sgd_wide(store.trainable(), {.lr = 0.1});
  save_checkpoint(other, store, sgd_wide, {});
  CHECK_THROWS_WITH(load_checkpoint(other, m.store, sgd),
                    Catch::Contains("fc.weight: expected [1, 2] f64, found [1, 3] f64"));
  if (r == 0) std::filesystem::remove(other);
}
