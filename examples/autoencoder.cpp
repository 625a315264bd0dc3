// wick-example-autoencoder — a 784-256-64-256-784 autoencoder of Fashion-MNIST (ReLU inside, a
// sigmoid output), trained with Adam on the mean squared reconstruction error.
//   wick-example-autoencoder [--device opencl] [--epochs 5] [--save autoencoder.safetensors]
#include "train_common.hpp"

using namespace wick;

int main(int argc, char** argv) try {
  const examples::Options o = examples::parse(argc, argv, "Autoencoder of Fashion-MNIST (784-256-64-256-784, MSE, Adam)", {});
  const Device device = examples::setup_runtime(o);
  examples::Data data = examples::load_data(o);

  nn::VarStore store(device, DType::F32, o.seed);
  const nn::Sequential model = examples::autoencoder(store.root());
  optim::Adam opt(store.trainable(), {.lr = o.lr});
  std::cout << "model: " << store.num_parameters() << " parameters\n";

  data::BatchOptions bo{.batch_size = o.batch, .drop_last = false, .image_shape = {784}, .device = device};
  double loss = 0, mse = 0, seconds = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    auto [l, s] = examples::train_epoch(o, data.train, epoch, bo, [&](const data::Batch& b) {
      Tensor out = nn::mse_loss(model(b.images), b.images);
      opt.zero_grad();
      out.backward();
      opt.step();
      return out.detach();
    });
    loss = l;
    seconds = s;
    if (o.eval)
      mse = examples::evaluate(o, data.test, bo, [&](const data::Batch& b) {
        return double(nn::mse_loss(model(b.images), b.images).item<float>());
      });
    std::printf("epoch %d: train MSE %.5f, test MSE %.5f, %.2f s (%.0f images/s)\n", epoch, loss, mse, s,
                double(o.limit > 0 ? std::min(o.limit, data.train.size()) : data.train.size()) / s);
  }
  if (!o.save.empty()) {
    store.save(o.save);
    std::cout << "weights: " << o.save << "\n";
  }
  examples::print_result("model=autoencoder loss=" + std::to_string(loss) + " test_mse=" + std::to_string(mse) +
                         " epoch_seconds=" + std::to_string(seconds) +
                         " fallbacks=" + std::to_string(Runtime::global().fallback_count()));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "wick-example-autoencoder: error: %s\n", e.what());
  return 1;
}
