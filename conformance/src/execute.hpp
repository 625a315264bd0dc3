// execute.hpp — runs one case on one device inside a worker process, directly through the plugin
// (wick/direct.hpp: a decline is UNSUPPORTED, never a CPU fallback).
#pragma once

#include "case.hpp"
#include "compare.hpp"
#include "result.hpp"

#include <wick/device.hpp>

#include <optional>
#include <string>

namespace wick::conformance {

class OnnxStore;

struct ExecContext {
  Device device;                    // the backend under test
  std::string backend;              // its plugin name
  std::optional<Device> reference;  // the differential reference (cpu-onednn), when loaded
  std::string reference_name;
  const GoldenStore* golden = nullptr;
  const OnnxStore* onnx = nullptr;
  const ToleranceTable* tolerances = nullptr;
  std::string mode = "test";  // test, support, perf, grad
  uint64_t seed = kDefaultBaseSeed;
};

// Never throws: errors become FAIL results with the message.
Result execute_case(const ExecContext& ctx, const std::string& id);

// The buffers a golden or diff case allocates on the device under test in test mode: one per
// input and one per guarded output (the output between its canaries), with their bytes.
struct CaseBuffers {
  uint64_t count = 0;
  uint64_t bytes = 0;
};
CaseBuffers case_buffers(const Case& c);

// Helpers shared with the ONNX runner.
Tensor upload(const Operand& operand, const Device& device);
std::vector<unsigned char> download(const Tensor& t);

}  // namespace wick::conformance
