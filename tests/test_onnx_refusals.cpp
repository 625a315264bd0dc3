// The ONNX importer is never silently wrong: a node of an opset newer than its lowering table, an
// attribute the op's schema lacks, one the lowering does not implement, or a value outside what it
// implements is refused (NotImportable) naming op, opset, attribute and value; the importer's
// limits name themselves and how to raise them; and the results that were wrong before (Mod's
// fmod = 0 on floats, SpaceToDepth CRD, Resize half_pixel_symmetric, ceil_mode pools, ConvInteger's
// per-channel w_zero_point, MatMul of two vectors) match onnx's reference implementation
// (fixtures: tests/data/onnx/make_onnx_fixtures.py, run with onnx 1.23.2).
#include "test_support.hpp"

#include <wick/onnx/lower.hpp>
#include <wick/onnx/proto.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace wick;
using wick::onnx::NotImportable;
using wick::onnx::OnnxLowering;

namespace {

Tensor f32s(const std::vector<float>& v, const Shape& s) {
  return Tensor::from_bytes(v.data(), v.size() * 4, s, DType::F32, test::cpu());
}
Tensor i64s(const std::vector<int64_t>& v, const Shape& s) {
  return Tensor::from_bytes(v.data(), v.size() * 8, s, DType::I64, test::cpu());
}

onnx::AttributeProto int_attr(const char* name, int64_t v) {
  onnx::AttributeProto a;
  a.name = name;
  a.type = 2;
  a.i = v;
  return a;
}
onnx::AttributeProto string_attr(const char* name, const char* v) {
  onnx::AttributeProto a;
  a.name = name;
  a.type = 3;
  a.s = v;
  return a;
}
onnx::NodeProto node(const char* op, std::vector<std::string> inputs, std::vector<onnx::AttributeProto> attrs = {}) {
  onnx::NodeProto n;
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.outputs = {"y"};
  n.attributes = std::move(attrs);
  return n;
}

// The refusal's message, or "" when the node ran.
std::string refusal(int64_t opset, const onnx::NodeProto& n, const std::vector<std::pair<std::string, Tensor>>& ins) {
  OnnxLowering low(test::cpu(), opset);
  for (const auto& [name, t] : ins) low.set(name, t);
  try {
    low.run(n);
  } catch (const NotImportable& e) {
    return e.what();
  }
  return "";
}

std::vector<double> host_values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  std::vector<unsigned char> raw(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  if (!raw.empty()) t.copy_to_host(raw.data(), raw.size());
  for (size_t k = 0; k < v.size(); ++k) {
    if (t.dtype() == DType::F32) {
      float x;
      std::memcpy(&x, raw.data() + 4 * k, 4);
      v[k] = x;
    } else if (t.dtype() == DType::I32) {
      int32_t x;
      std::memcpy(&x, raw.data() + 4 * k, 4);
      v[k] = x;
    } else {
      FAIL("unexpected dtype " << dtype_name(t.dtype()));
    }
  }
  return v;
}

// Runs a fixture folder's model on its data set and compares every output with the reference's.
void check_fixture(const std::string& name) {
  const std::string dir = std::string(WICK_TEST_DATA_DIR) + "/onnx/" + name;
  const onnx::ModelProto m = onnx::read_model(dir + "/model.onnx");
  OnnxLowering low(test::cpu(), m.opset);
  for (size_t i = 0; i < m.graph.inputs.size(); ++i)
    low.set(m.graph.inputs[i].name,
            onnx::upload_proto(onnx::read_tensor(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"), test::cpu()));
  for (const onnx::NodeProto& n : m.graph.nodes) low.run(n);
  for (size_t o = 0; o < m.graph.outputs.size(); ++o) {
    const Tensor want = onnx::upload_proto(
        onnx::read_tensor(dir + "/test_data_set_0/output_" + std::to_string(o) + ".pb"), test::cpu());
    const Tensor got = low.contiguous(low.get(m.graph.outputs[o].name));
    INFO(name << " output " << o);
    REQUIRE(got.dtype() == want.dtype());
    REQUIRE(shape_to_string(got.shape()) == shape_to_string(want.shape()));
    const std::vector<double> g = host_values(got), w = host_values(want);
    for (size_t k = 0; k < w.size(); ++k) {
      INFO("element " << k);
      CHECK(std::fabs(g[k] - w[k]) <= 1e-6 + 1e-5 * std::fabs(w[k]));
    }
  }
}

}  // namespace

TEST_CASE("a node of an opset newer than the lowering table is refused naming op, opset and the newest served",
          "[onnx]") {
  const Tensor x = f32s({1, -2}, {2});
  const std::string why = refusal(29, node("Mod", {"a", "b"}), {{"a", x}, {"b", x}});
  CHECK_THAT(why, Catch::Contains("ONNX op Mod at opset 29") && Catch::Contains("the newest supported is 28"));
  // The newest opset served is the newest checked: 28 runs, 29 does not.
  CHECK(refusal(28, node("Mod", {"a", "b"}), {{"a", x}, {"b", x}}).empty());
  CHECK_THAT(refusal(29, node("Relu", {"a"}), {{"a", x}}), Catch::Contains("ONNX op Relu at opset 29"));
}

TEST_CASE("an attribute the op's schema does not have is refused naming op, opset and attribute", "[onnx]") {
  const std::string why = refusal(14, node("Relu", {"x"}, {int_attr("alpha", 2)}), {{"x", f32s({1, -1}, {2})}});
  CHECK_THAT(why, Catch::Contains("ONNX op Relu (opset 14)") && Catch::Contains("attribute 'alpha' = 2") &&
                      Catch::Contains("not in the op's schema"));
}

TEST_CASE("an input the lowering does not use is refused naming op, opset and input", "[onnx]") {
  const Tensor x = f32s({1, -1}, {2});
  CHECK_THAT(refusal(14, node("Relu", {"x", "z"}), {{"x", x}, {"z", x}}),
             Catch::Contains("ONNX op Relu (opset 14)") && Catch::Contains("input 1 ('z') is not implemented"));
}

TEST_CASE("a schema attribute the lowering does not implement is refused unless it holds its default", "[onnx]") {
  const std::vector<std::pair<std::string, Tensor>> ins{{"x", f32s({1, 2, 3, 4}, {1, 1, 2, 2})},
                                                        {"s", f32s({1, 1, 2, 2}, {4})}};
  const std::string why = refusal(19, node("Resize", {"x", "", "s"}, {int_attr("antialias", 1)}), ins);
  CHECK_THAT(why, Catch::Contains("ONNX op Resize (opset 19)") && Catch::Contains("attribute 'antialias' = 1") &&
                      Catch::Contains("only its default, 0"));
  CHECK(refusal(19, node("Resize", {"x", "", "s"}, {int_attr("antialias", 0)}), ins).empty());
}

TEST_CASE("an attribute value outside what the lowering implements is refused naming it", "[onnx]") {
  const Tensor x = f32s(std::vector<float>(16, 1.0f), {1, 1, 4, 4});
  CHECK_THAT(refusal(19, node("Pad", {"x", "p"}, {string_attr("mode", "wrap")}),
                     {{"x", x}, {"p", i64s({0, 0, 1, 1, 0, 0, 1, 1}, {8})}}),
             Catch::Contains("ONNX op Pad (opset 19)") && Catch::Contains("attribute 'mode' = \"wrap\"") &&
                 Catch::Contains("constant, reflect, edge"));
  CHECK_THAT(refusal(19, node("Resize", {"x", "", "s"}, {string_attr("coordinate_transformation_mode", "centred")}),
                     {{"x", x}, {"s", f32s({1, 1, 2, 2}, {4})}}),
             Catch::Contains("ONNX op Resize (opset 19)") &&
                 Catch::Contains("attribute 'coordinate_transformation_mode' = \"centred\""));
  CHECK_THAT(refusal(28, node("SpaceToDepth", {"x"}, {int_attr("blocksize", 2), string_attr("mode", "RCD")}), {{"x", x}}),
             Catch::Contains("ONNX op SpaceToDepth (opset 28)") && Catch::Contains("attribute 'mode' = \"RCD\""));
  const Tensor v = f32s({1, 2}, {2});
  CHECK_THAT(refusal(13, node("Mod", {"a", "b"}, {int_attr("fmod", 2)}), {{"a", v}, {"b", v}}),
             Catch::Contains("ONNX op Mod (opset 13)") && Catch::Contains("attribute 'fmod' = 2"));
}

TEST_CASE("the importer's limits fit real models and, when exceeded, name the limit and how to raise it",
          "[onnx]") {
  const std::vector<std::pair<std::string, Tensor>> ins{{"s", i64s({4096, 4096}, {2})}};
  CHECK(refusal(21, node("ConstantOfShape", {"s"}), ins).empty());  // 2^24 elements: ordinary
  const onnx::ImportLimits saved = onnx::import_limits();
  onnx::ImportLimits tight = saved;
  tight.max_elements = int64_t{1} << 20;
  onnx::set_import_limits(tight);
  const std::string why = refusal(21, node("ConstantOfShape", {"s"}), ins);
  onnx::set_import_limits(saved);
  CHECK_THAT(why, Catch::Contains("max_elements = 1048576") && Catch::Contains("WICK_ONNX_MAX_ELEMENTS") &&
                      Catch::Contains("set_import_limits"));
}

TEST_CASE("results that were silently wrong match onnx's reference implementation", "[onnx]") {
  for (const char* name : {"mod_float_fmod_0", "mod_float_fmod_1", "spacetodepth_dcr", "spacetodepth_crd",
                           "resize_half_pixel_symmetric_down", "resize_half_pixel_symmetric_up",
                           "maxpool_ceil_reduce_by_one", "maxpool_ceil_pads", "averagepool_ceil_count_include_pad_0",
                           "averagepool_ceil_count_include_pad_1", "convinteger_per_channel_w_zero_point",
                           "matmul_1d_1d"}) {
    check_fixture(name);
  }
}
