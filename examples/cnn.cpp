// wick-example-cnn — a convolutional classifier of Fashion-MNIST: two blocks of 3x3 convolution
// (16 and 32 channels, padding 1), ReLU and 2x2 max pooling, then Linear(32*7*7, 128), ReLU,
// Linear(128, 10); Adam with lr 2e-3.
//   wick-example-cnn [--device opencl] [--epochs 5] [--batch-size 128] [--save cnn.safetensors]
#include "train_common.hpp"

int main(int argc, char** argv) {
  wick::examples::Options defaults;
  defaults.lr = 2e-3;  // 1e-3 stops at 0.888 after 5 epochs, 2e-3 reaches 0.900
  return wick::examples::run(argc, argv,
                             {"cnn", "CNN classifier of Fashion-MNIST (2 x conv+pool, 2 x Linear; Adam)", {1, 28, 28},
                              &wick::examples::cnn},
                             defaults);
}
