// wick::onnx::optimize: constant folding, dead-node removal and the fusions, each on a small graph
// (tests/data/onnx_optimize, made by make_fixtures.py): the report and the rewritten graph's ops,
// and both the unoptimised and the optimised graph run on the CPU device against the outputs of
// onnx's reference evaluator. Near misses (a wrong axis, constant or consumer) are not fused and
// still give the reference's numbers.
#include "test_support.hpp"

#include <wick/onnx/lower.hpp>
#include <wick/onnx/model.hpp>
#include <wick/onnx/optimize.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace wick;

namespace {

const std::string kDir = std::string(WICK_TEST_DATA_DIR) + "/onnx_optimize/";

// Whether the lowering serves op (a fusion onto it is made only then).
bool served(const char* op) {
  onnx::NodeProto n;
  n.op_type = op;
  n.domain = onnx::kFusedDomain;
  n.inputs = {"x"};
  n.outputs = {"y"};
  try {
    onnx::OnnxLowering(test::cpu(), 17).check(n);
    return true;
  } catch (const onnx::NotImportable&) {
    return false;
  }
}

// Runs `model` on the case's inputs and compares every output with the reference's.
void check_outputs(const std::string& name, const onnx::ModelProto& model) {
  const std::string data = kDir + name + "/test_data_set_0/";
  const onnx::Model m = onnx::Model::from_proto(model, test::cpu());
  std::vector<Tensor> ins;
  for (size_t i = 0; i < m.inputs().size(); ++i)
    ins.push_back(onnx::upload_proto(onnx::read_tensor(data + "input_" + std::to_string(i) + ".pb"), test::cpu()));
  const std::vector<Tensor> outs = m.run(ins);
  REQUIRE(outs.size() == m.outputs().size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor want = onnx::upload_proto(onnx::read_tensor(data + "output_" + std::to_string(i) + ".pb"), test::cpu());
    REQUIRE(outs[i].shape() == want.shape());
    const std::vector<float> g = outs[i].to_vector<float>(), w = want.to_vector<float>();
    size_t bad = 0;
    for (size_t k = 0; k < w.size(); ++k) bad += std::fabs(g[k] - w[k]) <= 2e-5 + 2e-4 * std::fabs(w[k]) ? 0 : 1;
    INFO(name << " output " << i);
    CHECK(bad == 0);
  }
}

struct Optimised {
  onnx::ModelProto model;
  onnx::OptimizeReport report;
  std::vector<std::string> ops;  // the rewritten graph's op types, in order
};

// Loads the case, checks the unoptimised graph against the reference, optimises it and checks
// the result against the reference too.
Optimised optimise_case(const std::string& name) {
  Optimised o;
  const onnx::ModelProto original = onnx::read_model(kDir + name + "/model.onnx");
  check_outputs(name, original);
  o.model = original;
  o.model.graph = onnx::optimize(original.graph, original.opset, test::cpu(), {}, &o.report);
  for (const onnx::NodeProto& n : o.model.graph.nodes) o.ops.push_back(n.op_type);
  check_outputs(name, o.model);
  CHECK(original.graph.nodes.size() == onnx::read_model(kDir + name + "/model.onnx").graph.nodes.size());
  return o;
}

using Ops = std::vector<std::string>;

// A fusion onto `op` of the whole graph, when the lowering serves op; else the graph unchanged.
void check_fused(const std::string& name, const char* op, size_t unfused_nodes) {
  const Optimised o = optimise_case(name);
  INFO(name << ": " << o.report.summary());
  if (served(op)) {
    CHECK(o.report.fused.count(op) == 1);
    CHECK(o.report.fused.at(op) == 1);
    CHECK(o.ops == Ops{op});
    CHECK(o.model.graph.nodes[0].domain == onnx::kFusedDomain);
  } else {
    CHECK(o.report.fused.empty());
    CHECK(o.ops.size() == unfused_nodes);
  }
}

void check_not_fused(const std::string& name, size_t nodes) {
  const Optimised o = optimise_case(name);
  INFO(name << ": " << o.report.summary());
  CHECK(o.report.fused.empty());
  CHECK(o.ops.size() == nodes);
}

}  // namespace

TEST_CASE("the optimiser folds constant chains into initializers", "[onnx][optimize]") {
  const Optimised o = optimise_case("fold_chain");
  CHECK(o.report.folded == 3);  // Constant, Add, Mul
  CHECK(o.ops == Ops{"Add"});
  CHECK(o.report.summary() == "folded 3, removed 0");
}

TEST_CASE("the optimiser folds Shape of a static input", "[onnx][optimize]") {
  const Optimised o = optimise_case("fold_shape");
  CHECK(o.report.folded == 1);
  CHECK(o.ops == Ops{"Reshape", "Add"});
}

TEST_CASE("the optimiser leaves a ConstantOfShape larger than the fold limit as a node", "[onnx][optimize]") {
  const Optimised o = optimise_case("fold_limit");
  CHECK(o.report.folded == 1);  // the Constant only
  CHECK(o.ops == Ops{"ConstantOfShape", "Add"});
}

TEST_CASE("the optimiser removes dead nodes but keeps what a subgraph reads", "[onnx][optimize]") {
  const Optimised o = optimise_case("dead_nodes");
  CHECK(o.report.removed == 2);  // Exp -> Neg
  CHECK(o.ops == Ops{"Sigmoid", "Relu", "If"});
  onnx::OptimizeOptions off;
  off.eliminate_dead = false;
  const onnx::ModelProto m = onnx::read_model(kDir + "dead_nodes/model.onnx");
  CHECK(onnx::optimize(m.graph, m.opset, test::cpu(), off).nodes.size() == 5);
}

TEST_CASE("the optimiser fuses LayerNorm decompositions", "[onnx][optimize]") {
  check_fused("layer_norm_pow_div", "LayerNormalization", 9);
  check_fused("layer_norm_mul_recip_opset18", "LayerNormalization", 9);
  const Optimised o = optimise_case("layer_norm_pow_div");
  REQUIRE(o.model.graph.nodes.size() == 1);
  const onnx::NodeProto& n = o.model.graph.nodes[0];
  CHECK(n.inputs == std::vector<std::string>{"x", "gamma", "beta"});
  REQUIRE(n.attribute("axis") != nullptr);
  CHECK(n.attribute("axis")->i == -1);
  CHECK(n.attribute("epsilon")->f == Approx(1e-5f));
}

TEST_CASE("the optimiser does not fuse LayerNorm near misses", "[onnx][optimize]") {
  check_not_fused("layer_norm_miss_axes", 9);
  check_not_fused("layer_norm_miss_exponent", 9);
  check_not_fused("layer_norm_miss_consumer", 9);
}

TEST_CASE("the optimiser fuses RMSNorm decompositions", "[onnx][optimize]") {
  check_fused("rms_norm_recip", "RMSNormalization", 7);
  check_fused("rms_norm_mul_div", "RMSNormalization", 6);
  check_not_fused("rms_norm_miss_weight", 7);
}

TEST_CASE("the optimiser fuses GELU in its erf and tanh forms", "[onnx][optimize]") {
  check_fused("gelu_erf_a", "Gelu", 5);
  check_fused("gelu_erf_b", "Gelu", 5);
  check_fused("gelu_erf_c", "Gelu", 5);
  check_fused("gelu_tanh_pow", "Gelu", 8);
  check_fused("gelu_tanh_mul", "Gelu", 9);
  check_not_fused("gelu_erf_miss_const", 5);
  check_not_fused("gelu_erf_miss_half", 5);
  check_not_fused("gelu_tanh_miss_const", 8);
}

TEST_CASE("the optimiser fuses scaled dot-product attention", "[onnx][optimize]") {
  check_fused("attention_mask_div", "Attention", 6);
  check_fused("attention_mul_nomask", "Attention", 5);
  check_not_fused("attention_miss_axis", 6);
}

TEST_CASE("the optimiser fuses Conv followed by Relu onto FusedConv", "[onnx][optimize]") {
  check_fused("conv_relu_bias", "FusedConv", 2);
  check_fused("conv_relu_groups_nobias", "FusedConv", 2);
  check_not_fused("conv_relu_miss_consumer", 2);  // the Conv's output is a graph output too
  const Optimised o = optimise_case("conv_relu_groups_nobias");
  REQUIRE(o.model.graph.nodes.size() == 1);
  const onnx::NodeProto& n = o.model.graph.nodes[0];
  CHECK(n.inputs == std::vector<std::string>{"x", "w"});
  REQUIRE(n.attribute("activation") != nullptr);
  CHECK(n.attribute("activation")->s == "Relu");
  REQUIRE(n.attribute("group") != nullptr);
  CHECK(n.attribute("group")->i == 2);
}

TEST_CASE("FusedConv is Wick's own: refused in ai.onnx and without its activation", "[onnx][optimize]") {
  onnx::NodeProto n;
  n.op_type = "FusedConv";
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  onnx::OnnxLowering lowering(test::cpu(), 17);
  CHECK_THROWS_WITH(lowering.check(n), Catch::Contains("FusedConv is not mapped"));
  n.domain = onnx::kFusedDomain;
  n.attributes = {onnx::AttributeProto{}};
  n.attributes[0].name = "alpha";
  n.attributes[0].type = 1;
  CHECK_THROWS_WITH(lowering.check(n), Catch::Contains("alpha"));
}

TEST_CASE("the optimiser's options turn each pass off", "[onnx][optimize]") {
  const onnx::ModelProto m = onnx::read_model(kDir + "layer_norm_pow_div/model.onnx");
  onnx::OptimizeOptions none;
  none.fold_constants = none.eliminate_dead = none.fuse = false;
  onnx::OptimizeReport r;
  CHECK(onnx::optimize(m.graph, m.opset, test::cpu(), none, &r).nodes.size() == 9);
  CHECK(r.summary() == "folded 0, removed 0");
}
