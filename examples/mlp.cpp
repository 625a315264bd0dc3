// wick-example-mlp — a 784-256-128-10 classifier of Fashion-MNIST, trained with Adam.
//   wick-example-mlp [--device opencl] [--epochs 5] [--batch-size 128] [--save mlp.safetensors]
#include "train_common.hpp"

int main(int argc, char** argv) {
  return wick::examples::run(argc, argv, {"mlp", "MLP classifier of Fashion-MNIST (784-256-128-10, Adam)", {784}, &wick::examples::mlp});
}
