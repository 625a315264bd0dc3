// mlp_fixture.hpp — the small data set and MLP that the data-parallel and resume checks train
// (dp_check.cpp, resume_check.cpp).
#pragma once

#include <wick/nn/data.hpp>
#include <wick/nn/nn.hpp>

#include <cmath>
#include <vector>

namespace dp_fixture {

using namespace wick;

constexpr int64_t kSamples = 96, kFeatures = 12, kClasses = 4;

// Features sin(0.37 s + 0.91 f), labels from their sign pattern: fixed, and not trivially
// separable.
inline data::Dataset make_data() {
  std::vector<float> x(static_cast<size_t>(kSamples * kFeatures));
  std::vector<int64_t> y(static_cast<size_t>(kSamples));
  for (int64_t s = 0; s < kSamples; ++s) {
    for (int64_t f = 0; f < kFeatures; ++f)
      x[size_t(s * kFeatures + f)] = float(std::sin(0.37 * double(s) + 0.91 * double(f)));
    y[size_t(s)] =
        (x[size_t(s * kFeatures)] > 0 ? 1 : 0) + (x[size_t(s * kFeatures + 1)] > 0 ? 2 : 0);
  }
  return data::Dataset(Tensor::from_vector(x, {kSamples, kFeatures}),
                       Tensor::from_vector(y, {kSamples}));
}

// 12-32-4 with a ReLU between (and, with `dropout` > 0, a Dropout after it: random draws).
inline nn::Sequential mlp(const nn::Path& root, double dropout = 0) {
  nn::Sequential m;
  m.add(nn::Linear(root / "0", kFeatures, 32)).add(nn::relu);
  if (dropout > 0) m.add(nn::Dropout(dropout));
  m.add(nn::Linear(root / "2", 32, kClasses));
  return m;
}

}  // namespace dp_fixture
