#include "commands.hpp"

#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <cmath>
#include <iostream>

namespace wick::cli {

namespace {

// Compares a result with its hand-worked expectation and says which.
bool check(const std::string& what, const Tensor& t, const std::vector<float>& expected) {
  const std::vector<float> got = t.to_vector<float>();
  bool ok = got.size() == expected.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = std::fabs(got[i] - expected[i]) <= 1e-5f * (1 + std::fabs(expected[i]));
  std::cout << "  " << what << " = " << t.to_string() << (ok ? "  [ok]" : "  [WRONG]") << "\n";
  return ok;
}

}  // namespace

int run_demo(const ConfigOverrides& overrides) {
  Runtime::configure(resolve_config(overrides));
  Runtime& rt = Runtime::global();
  const Device device = rt.default_device();
  std::cout << "Selected device: " << rt.selection().reason << "\n";
  for (const std::string& s : rt.selection().skipped) std::cout << "  passed over " << s << "\n";
  std::cout << "Running the demo on " << device.name() << " (" << device.description() << ")\n";

  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, device);
  const Tensor b = Tensor::from_vector<float>({10, 20, 30}, {3}, device);
  bool ok = true;
  ok &= check("a + b (broadcast)", a + b, {11, 22, 33, 14, 25, 36});
  ok &= check("a * a", a * a, {1, 4, 9, 16, 25, 36});
  ok &= check("a^T (strided copy)", a.t().contiguous(), {1, 4, 2, 5, 3, 6});
  ok &= check("a @ a^T", a.matmul(a.t()), {14, 32, 32, 77});
  ok &= check("sum(a, axis 1)", a.sum({1}), {6, 15});
  ok &= check("flip(a, 1) - a", a.flip(1) - a, {2, 0, -2, 2, 0, -2});

  const auto fallbacks = rt.fallbacks();
  if (fallbacks.empty()) {
    std::cout << "Fallbacks: none (every op ran on " << device.name() << ")\n";
  } else {
    std::cout << "Fallbacks to " << rt.cpu_device().name() << ":\n";
    for (const FallbackRecord& f : fallbacks) {
      std::cout << "  " << f.op << " (" << f.dtype << ") on " << f.device << ": " << f.reason
                << ", " << f.count << (f.count == 1 ? " time\n" : " times\n");
    }
  }
  std::cout << (ok ? "Demo: all results match the hand-worked values\n" : "Demo: WRONG results\n");
  return ok ? 0 : 1;
}

}  // namespace wick::cli
