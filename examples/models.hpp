// models.hpp — the three Fashion-MNIST models, shared by the examples, the test that loads
// PyTorch's weights into them (tests/test_training.cpp) and bench/train_pytorch.py's twins. Names
// follow PyTorch's state_dict of the same nn.Sequential / module layout.
#pragma once

#include <wick/nn/nn.hpp>

namespace wick::examples {

// 784-256-128-10 with ReLU: "0.*", "2.*", "4.*" (nn.Sequential indices).
inline nn::Sequential mlp(const nn::Path& root) {
  nn::Sequential m;
  m.add(nn::Linear(root / "0", 784, 256)).add(nn::relu);
  m.add(nn::Linear(root / "2", 256, 128)).add(nn::relu);
  m.add(nn::Linear(root / "4", 128, 10));
  return m;
}

// Two blocks of 3x3 convolution (16, 32 channels, padding 1), ReLU, 2x2 max pooling; then
// Linear(32*7*7, 128), ReLU, Linear(128, 10): "0.*", "3.*", "7.*", "9.*". Input [N, 1, 28, 28].
inline nn::Sequential cnn(const nn::Path& root) {
  nn::Sequential m;
  m.add(nn::Conv2d(root / "0", 1, 16, 3, 1, 1)).add(nn::relu).add(nn::MaxPool2d(2));
  m.add(nn::Conv2d(root / "3", 16, 32, 3, 1, 1)).add(nn::relu).add(nn::MaxPool2d(2));
  m.add(nn::Flatten()).add(nn::Linear(root / "7", 32 * 7 * 7, 128)).add(nn::relu);
  m.add(nn::Linear(root / "9", 128, 10));
  return m;
}

// 784-256-64-256-784, ReLU inside, sigmoid output: "encoder.{0,2}.*", "decoder.{0,2}.*".
inline nn::Sequential autoencoder(const nn::Path& root) {
  const nn::Path enc = root / "encoder", dec = root / "decoder";
  nn::Sequential m;
  m.add(nn::Linear(enc / "0", 784, 256)).add(nn::relu).add(nn::Linear(enc / "2", 256, 64)).add(nn::relu);
  m.add(nn::Linear(dec / "0", 64, 256)).add(nn::relu).add(nn::Linear(dec / "2", 256, 784)).add(nn::sigmoid);
  return m;
}

}  // namespace wick::examples
