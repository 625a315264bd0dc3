// wick-example-autoencoder — a 784-256-64-256-784 autoencoder of Fashion-MNIST (ReLU inside, a
// sigmoid output), trained with Adam on the mean squared reconstruction error.
//   wick-example-autoencoder [--device opencl] [--epochs 5] [--save autoencoder.safetensors]
#include "train_common.hpp"

int main(int argc, char** argv) {
  return wick::examples::run(argc, argv,
                             {"autoencoder", "Autoencoder of Fashion-MNIST (784-256-64-256-784, MSE, Adam)", {784},
                              &wick::examples::autoencoder, true});
}
