// Uses one thing of each layer above the core, on the CPU device of the Wick it was built against:
// nn's mean squared error, and onnx's reader and upload of a hand-encoded TensorProto.
#include <wick/nn/nn.hpp>
#include <wick/onnx/lower.hpp>
#include <wick/onnx/proto.hpp>
#include <wick/runtime.hpp>

#include <cmath>
#include <cstdio>

int main() {
  const wick::Device cpu = wick::Runtime::global().cpu_device();
  const wick::Tensor p = wick::Tensor::from_vector<float>({1, 2, 3}, {3}, cpu);
  const wick::Tensor t = wick::Tensor::from_vector<float>({1, 2, 5}, {3}, cpu);
  const float mse = wick::nn::mse_loss(p, t).item<float>();  // (0 + 0 + 4) / 3
  // dims = [2] (field 1), data_type = FLOAT (field 2), float_data = [1.5, -2] packed (field 4).
  const unsigned char bytes[] = {0x08, 0x02, 0x10, 0x01, 0x22, 0x08, 0x00, 0x00,
                                 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0};
  const wick::onnx::TensorProto proto = wick::onnx::parse_tensor(bytes, sizeof bytes, "consumer");
  const std::vector<float> v = wick::onnx::upload_proto(proto, cpu).to_vector<float>();
  std::printf("layers-consumer: %s: mse %g, onnx tensor %g %g\n", cpu.name().c_str(), mse, v[0], v[1]);
  const bool ok = std::fabs(mse - 4.0f / 3.0f) < 1e-6f && v == std::vector<float>{1.5f, -2.0f};
  return ok ? 0 : 1;
}
