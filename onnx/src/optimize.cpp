// optimize.cpp — the graph optimiser's passes (optimize.hpp).
#include <wick/onnx/optimize.hpp>

#include <sstream>

namespace wick::onnx {

std::string OptimizeReport::summary() const {
  std::ostringstream s;
  s << "folded " << folded << ", removed " << removed;
  if (!fused.empty()) {
    s << ", fused";
    const char* sep = " ";
    for (const auto& kv : fused) {
      s << sep << kv.first << " x" << kv.second;
      sep = ", ";
    }
  }
  return s.str();
}

GraphProto optimize(const GraphProto& graph, int64_t /*opset*/, const Device& /*device*/,
                    const OptimizeOptions& /*options*/, OptimizeReport* report) {
  if (report) *report = {};
  return graph;
}

}  // namespace wick::onnx
