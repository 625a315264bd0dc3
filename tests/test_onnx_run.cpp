// ONNX models as a user runs them (issue 25, item 1): wick::onnx::Model with external data and
// mapped initializers, each value freed after its last use, `wick run` and `wick inspect`, and the
// .npy files they read and write. Expected values: onnx's reference evaluator and NumPy's own
// files (tests/data/onnx_run/make_fixtures.py), or worked by hand.
#include "cli_run.hpp"
#include "test_support.hpp"

#include <wick/npy.hpp>
#include <wick/onnx/model.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace wick;

namespace {

const std::string kData = std::string(WICK_TEST_DATA_DIR) + "/onnx_run";

void check_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(double(g[i]) - w[i]));
  INFO("max abs error " << worst);
  CHECK(worst <= tol);
}

using Run = wick::test::CliRun;
using wick::test::wick_cli;

std::string scratch_dir(const std::string& tag) {
  const std::string d = "/tmp/wick-test-onnx-run-" + tag + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("an ONNX model with external data and mapped initializers gives the reference's outputs on every device", "[onnx]") {
  const Tensor want = read_npy(kData + "/y.npy", test::cpu());
  for (const std::string file : {"/ext_mlp/model.onnx", "/inline_mlp.onnx"}) {
    const onnx::ModelProto proto = onnx::read_model(kData + file);
    REQUIRE(proto.graph.initializers.size() == 4);
    CHECK(proto.graph.initializers[0].view != nullptr);  // w1: 64 KiB, not copied out of the mapping
    CHECK(proto.graph.initializers[0].nbytes() == 64 * 256 * 4);
    CHECK(proto.producer_name == "wick-fixtures");
    REQUIRE(proto.opset_imports.size() == 1);
    CHECK(proto.opset_imports[0].second == 17);
    for (const Device& d : test::strict_devices()) {
      INFO(file << " on " << d.name());
      const onnx::Model m = onnx::Model::load(kData + file, d);
      const std::vector<Tensor> y = m.run({read_npy(kData + "/x.npy", d)});
      REQUIRE(y.size() == 1);
      check_close(y[0], want, 1e-5);
    }
  }
}

TEST_CASE("external data outside the model's folder, past its file's end or missing is refused naming the tensor", "[onnx]") {
  const auto refused = [](const std::string& folder, const std::string& what) {
    INFO(folder);
    CHECK_THROWS_WITH(onnx::read_model(kData + "/" + folder + "/model.onnx"),
                      Catch::Contains("tensor 'w'") && Catch::Contains(what));
  };
  refused("ext_escape", "'../weights.bin' is not a path inside the model's folder");
  refused("ext_short", "[8, 24) runs past the end of weights.bin (16 bytes)");
  refused("ext_missing", "nope.bin");
}

TEST_CASE("a model run frees each value after its last use: a chain of 12 adds on 1 MiB holds at most 3 MiB", "[onnx]") {
  const onnx::Model m = onnx::Model::load(kData + "/chain.onnx", test::cpu(), onnx::ModelOptions{false, {}});
  const Tensor x = Tensor::full({256, 1024}, 1.0, DType::F32, test::cpu());
  onnx::RunStats stats;
  stats.measure_memory = true;
  const std::vector<onnx::Value> y = m.run_values({onnx::Value::of(x)}, &stats);
  CHECK(stats.nodes == 12);
  CHECK(stats.initializer_bytes == 4);  // c, one f32
  // The input and one result, or one result and the next: 2 MiB; never the 13 MiB of them all.
  CHECK(stats.peak_bytes >= (int64_t{2} << 20));
  CHECK(stats.peak_bytes <= (int64_t{3} << 20));
  const std::vector<float> v = y[0].tensor.to_vector<float>();
  CHECK(v.front() == 7.0f);  // 1 + 12 * 0.5
  CHECK(v.back() == 7.0f);
}

TEST_CASE(".npy files: NumPy's Fortran order, uint16 and format 2.0 read as NumPy wrote them, big-endian is refused", "[onnx]") {
  const Tensor f = read_npy(kData + "/fortran.npy", test::cpu());
  CHECK(f.shape() == Shape{2, 3});
  CHECK(f.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  const Tensor u = read_npy(kData + "/u2.npy", test::cpu());
  CHECK(u.dtype() == DType::U32);
  CHECK(u.to_vector<uint32_t>() == std::vector<uint32_t>{1, 65535, 7});
  const Tensor b = read_npy(kData + "/v2.npy", test::cpu());
  CHECK(b.shape() == Shape{1, 2});
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false});
  CHECK_THROWS_WITH(read_npy(kData + "/big_endian.npy", test::cpu()), Catch::Contains("big-endian"));
  const std::string dir = scratch_dir("npy");
  std::filesystem::create_directories(dir);
  const Tensor h = Tensor::from_vector(std::vector<double>{0.25, -3.0, 1e300}, Shape{3, 1}, test::cpu());
  write_npy(dir + "/h.npy", h);
  const Tensor back = read_npy(dir + "/h.npy", test::cpu());
  CHECK(back.shape() == Shape{3, 1});
  CHECK(back.to_vector<double>() == std::vector<double>{0.25, -3.0, 1e300});
  std::ifstream raw(dir + "/h.npy", std::ios::binary);
  std::string head(10, '\0');
  raw.read(head.data(), 10);
  CHECK(head.substr(1, 5) == "NUMPY");
  CHECK(head[6] == 1);  // format 1.0
  std::filesystem::remove_all(dir);
}

TEST_CASE("wick run writes the reference's outputs as .npy and times each run, and a missing input is named", "[onnx][cli]") {
  const std::string dir = scratch_dir("cli");
  const Run r = wick_cli("run '" + kData + "/ext_mlp/model.onnx' --input x='" + kData + "/x.npy' --output '" + dir +
                         "' --repeat 3 --stats --device cpu-onednn --strict");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("output y: f32 [4, 10]") != std::string::npos);
  CHECK(r.err.find("run 3: ") != std::string::npos);
  CHECK(r.err.find("median of 3 runs") != std::string::npos);
  CHECK(r.err.find("peak memory") != std::string::npos);
  check_close(read_npy(dir + "/y.npy", test::cpu()), read_npy(kData + "/y.npy", test::cpu()), 1e-5);
  std::filesystem::remove_all(dir);
  const Run missing = wick_cli("run '" + kData + "/ext_mlp/model.onnx'");
  CHECK(missing.status == 1);
  CHECK(missing.err.find("--input x=FILE.npy  (f32 [-1, 64])") != std::string::npos);
  const Run unknown = wick_cli("run '" + kData + "/ext_mlp/model.onnx' --input x='" + kData + "/x.npy' --input z='" +
                               kData + "/x.npy'");
  CHECK(unknown.status == 1);
  CHECK(unknown.err.find("--input z: the model has no input of that name") != std::string::npos);
}

TEST_CASE("wick inspect lists a model's inputs, outputs, opsets and ops, and what each device runs", "[onnx][cli]") {
  const Run r = wick_cli("inspect '" + kData + "/inline_mlp.onnx' --device cpu-onednn");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("made by wick-fixtures") != std::string::npos);
  CHECK(r.out.find("opset imports: ai.onnx 17") != std::string::npos);
  CHECK(r.out.find("5 nodes, 4 initializers") != std::string::npos);
  CHECK(r.out.find("ops: Add x2 MatMul x2 Relu x1") != std::string::npos);
  CHECK(r.out.find("input  x: f32 [-1, 64]") != std::string::npos);
  CHECK(r.out.find("output y: f32 [-1, 10]") != std::string::npos);
  CHECK(r.out.find("on cpu-onednn:0") != std::string::npos);
  CHECK(r.out.find("runs every op on the device") != std::string::npos);
}
