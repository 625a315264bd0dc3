// optimize_internal.hpp — what the optimiser's passes share (optimize.cpp, optimize_fusions.cpp):
// an index of a graph's producers, uses and constants. Private to onnx/src.
#pragma once

#include <wick/onnx/optimize.hpp>
#include <wick/onnx/proto.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wick::onnx::opt {

// Producers, uses and constants of a graph's top-level values, built once per pass.
struct Index {
  std::map<std::string, size_t> producer;             // value -> the node that outputs it
  std::map<std::string, std::vector<size_t>> users;   // value -> nodes reading it (once per input)
  // Graph outputs and the values a subgraph (If, Loop, Scan bodies) reads by name: never removed
  // and never an intermediate a fusion may absorb.
  std::set<std::string> pinned;
  std::map<std::string, const TensorProto*> inits;    // initializers by name
  std::map<std::string, const ValueInfo*> inputs;     // graph inputs by name
  int64_t opset = 0;                                  // the model's ai.onnx opset
};
Index build_index(const GraphProto& g);

// The names a subgraph reads that it does not define (the outer values it sees), recursively.
void outer_reads(const GraphProto& g, std::set<std::string>& out);

// A value a fusion may absorb: produced by a node, read exactly once, not a graph output and not
// read by a subgraph.
bool single_use(const Index& ix, const std::string& name);
// The node producing `name` if it has op type `op` (ai.onnx), else nullptr.
const NodeProto* producer_of(const GraphProto& g, const Index& ix, const std::string& name,
                             const char* op);
// The value of a float32 initializer of one element and rank 0 or 1 (a scalar that broadcasts
// without changing any shape); nullopt for anything else.
std::optional<double> f32_scalar(const Index& ix, const std::string& name);
// An int64 initializer's values (a ReduceMean's axes input); nullopt otherwise.
std::optional<std::vector<int64_t>> i64_values(const Index& ix, const std::string& name);
// The rank of a value where the graph tells it without inference: a graph input's declared
// shape, an initializer, a Transpose's perm, a Reshape to a constant shape; -1 when unknown.
int known_rank(const GraphProto& g, const Index& ix, const std::string& name);

// A match of one fusion: the nodes it replaces and the node replacing them (placed where the
// last of them was).
struct Fusion {
  std::vector<size_t> nodes;
  NodeProto fused;
  std::string pattern;
};
// Removes every fusion's nodes and inserts its fused node; fusions must not share nodes.
void apply_fusions(GraphProto& g, std::vector<Fusion> fusions, OptimizeReport& report);

// The fusion passes (optimize_fusions.cpp): each appends its non-overlapping matches.
void match_layer_norm(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                      std::set<size_t>& claimed);
void match_rms_norm(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                    std::set<size_t>& claimed);
void match_gelu(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                std::set<size_t>& claimed);
void match_attention(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                     std::set<size_t>& claimed);
void match_conv_relu(const GraphProto& g, const Index& ix, std::vector<Fusion>& out,
                     std::set<size_t>& claimed);

// Constant folding (optimize_fold.cpp): replaces the deterministic nodes whose inputs are all
// constants by initializers computed on `device`; returns the count folded.
int fold_constants(GraphProto& g, int64_t opset, const Device& device);

// Attribute builders for fused nodes.
AttributeProto attr_int(const char* name, int64_t v);
AttributeProto attr_float(const char* name, float v);
AttributeProto attr_string(const char* name, const std::string& v);

}  // namespace wick::onnx::opt
