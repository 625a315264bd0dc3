// wick/onnx/optimize.hpp — graph optimisations run once when a model is loaded: dead-node removal,
// constant folding (through the lowering, on a device) and fusions of exported decompositions
// (LayerNorm, RMSNorm, GELU, attention) onto one standard ONNX op with a fused Wick lowering, and
// Conv followed by Relu onto Wick's FusedConv.
//
//   wick::onnx::OptimizeReport report;
//   const wick::onnx::GraphProto g = wick::onnx::optimize(model.graph, model.opset, device, {}, &report);
//   std::cout << report.summary() << "\n";
//
// Every rewrite is exact: a pattern whose axes, constants, consumers or shapes do not match
// exactly is left as it is. Fused nodes carry the domain kFusedDomain and the standard op's type;
// the lowering runs them through that op's newest lowering whatever the model's opset.
#pragma once

#include <wick/onnx/proto.hpp>

#include <wick/device.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace wick::onnx {

// The domain of nodes the optimiser fused: a standard ai.onnx op (LayerNormalization, Gelu,
// RMSNormalization, Attention) lowered at its newest opset, independent of the model's.
inline constexpr const char* kFusedDomain = "com.wick.fused";

// Wick's own fused op types in kFusedDomain, which ai.onnx does not have: FusedConv (Conv's
// attributes plus activation = "Relu": Conv followed by Relu). The lowering keys them
// "com.wick.fused.<type>"; any other op type in the domain is the standard op's.
inline bool is_wick_fused_op(const std::string& op_type) { return op_type == "FusedConv"; }

struct OptimizeOptions {
  bool fold_constants = true;
  bool eliminate_dead = true;
  bool fuse = true;
};

struct OptimizeReport {
  int folded = 0;   // nodes replaced by initializers
  int removed = 0;  // dead nodes removed (folded nodes not counted)
  std::map<std::string, int> fused;  // pattern name ("LayerNormalization", "Gelu", ...) -> count
  std::string summary() const;  // "folded 3, removed 1, fused LayerNormalization x2"
};

// Returns the rewritten graph; `graph` is not modified. `device` runs the constant subgraphs.
// `opset` is the model's ai.onnx version.
GraphProto optimize(const GraphProto& graph, int64_t opset, const Device& device,
                    const OptimizeOptions& options = {}, OptimizeReport* report = nullptr);

}  // namespace wick::onnx
