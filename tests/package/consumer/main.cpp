// Adds two tensors on the CPU device of the Wick it was built against and checks the sum.
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <cstdio>

int main() {
  const wick::Device cpu = wick::Runtime::global().cpu_device();
  const wick::Tensor a = wick::Tensor::from_vector<float>({1, 2, 3}, {3}, cpu);
  const std::vector<float> sum = (a + a).to_vector<float>();
  std::printf("consumer: %s: %g %g %g\n", cpu.name().c_str(), sum[0], sum[1], sum[2]);
  return sum == std::vector<float>{2, 4, 6} ? 0 : 1;
}
