// wick::onnx::Model: a .onnx file loaded, its inputs and outputs listed as declared, and run on a
// device; the output against onnx's reference evaluator (fixture tests/data/onnx/model_mlp, made
// by tests/data/onnx/make_onnx_fixtures.py).
#include "test_support.hpp"

#include <wick/onnx/model.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

using namespace wick;

namespace {

const std::string kMlp = std::string(WICK_TEST_DATA_DIR) + "/onnx/model_mlp";

}  // namespace

TEST_CASE("an ONNX model lists its inputs and outputs as the graph declares them", "[onnx]") {
  const onnx::Model m = onnx::Model::load(kMlp + "/model.onnx", test::cpu());
  CHECK(m.opset() == 17);
  REQUIRE(m.inputs().size() == 1);  // the initializers w1, b1, w2 are not inputs
  CHECK(m.inputs()[0].name == "x");
  CHECK(m.inputs()[0].dtype == DType::F32);
  CHECK(m.inputs()[0].shape == std::vector<int64_t>{-1, 3});  // "batch" is symbolic
  CHECK(m.inputs()[0].describe() == "f32 [-1, 3]");
  REQUIRE(m.outputs().size() == 1);
  CHECK(m.outputs()[0].name == "y");
}

TEST_CASE("an ONNX model runs on the device and matches onnx's reference evaluator", "[onnx]") {
  const onnx::Model m = onnx::Model::load(kMlp + "/model.onnx", test::cpu());
  const Tensor x = onnx::upload_proto(onnx::read_tensor(kMlp + "/test_data_set_0/input_0.pb"), test::cpu());
  const Tensor want = onnx::upload_proto(onnx::read_tensor(kMlp + "/test_data_set_0/output_0.pb"), test::cpu());
  const std::vector<Tensor> y = m.run({x});
  REQUIRE(y.size() == 1);
  REQUIRE(y[0].shape() == Shape{5, 2});
  const std::vector<float> g = y[0].to_vector<float>(), w = want.to_vector<float>();
  for (size_t k = 0; k < w.size(); ++k) CHECK(std::fabs(g[k] - w[k]) <= 1e-6 + 1e-5 * std::fabs(w[k]));
  // By name, the same values.
  const std::map<std::string, Tensor> named = m.run(std::map<std::string, Tensor>{{"x", x}});
  CHECK(named.at("y").to_vector<float>() == g);
}

TEST_CASE("an ONNX model refuses inputs it does not declare, naming the input", "[onnx]") {
  const onnx::Model m = onnx::Model::load(kMlp + "/model.onnx", test::cpu());
  const Tensor wrong_extent = Tensor::zeros({5, 4}, DType::F32, test::cpu());
  CHECK_THROWS_WITH(m.run({wrong_extent}), Catch::Contains("input 'x' (f32 [-1, 3]) given a tensor of shape [5, 4]"));
  const Tensor wrong_dtype = Tensor::zeros({5, 3}, DType::F64, test::cpu());
  CHECK_THROWS_WITH(m.run({wrong_dtype}), Catch::Contains("input 'x' (f32 [-1, 3]) given a tensor of dtype f64"));
  CHECK_THROWS_WITH(m.run(std::vector<Tensor>{}), Catch::Contains("takes 1 inputs, given 0"));
  CHECK_THROWS_WITH(m.run(std::map<std::string, Tensor>{{"x", wrong_dtype}, {"z", wrong_dtype}}),
                    Catch::Contains("'z' is not an input"));
}

TEST_CASE("an ONNX model with a node the importer does not serve is refused at load, naming it", "[onnx]") {
  onnx::ModelProto p = onnx::read_model(kMlp + "/model.onnx");
  p.opset = 29;  // newer than the lowering table
  CHECK_THROWS_WITH(onnx::Model::from_proto(p, test::cpu()),
                    Catch::Contains("ONNX op MatMul at opset 29") && Catch::Contains("the newest supported is 28"));
  p.opset = 17;
  onnx::AttributeProto a;
  a.name = "alpha";
  a.type = 1;
  a.f = 0.5f;
  p.graph.nodes[2].attributes.push_back(a);  // Relu has no attribute alpha
  CHECK_THROWS_WITH(onnx::Model::from_proto(p, test::cpu()),
                    Catch::Contains("ONNX op Relu (opset 17): attribute 'alpha' = 0.5 is not in the op's schema"));
}
