// The core's composites of the fused ops (core/src/tensor/ops_nn.cpp) on a device whose plugin has no
// fused kernels. A binary of its own: the fixture runtime loads the built cpu-onednn plugin as its
// fallback CPU, which a process can initialise only once.
#include "ops_nn_fixtures.hpp"

#include <set>

using namespace wick;
using namespace wick::test::nn;

TEST_CASE("fused ops compose from smaller ops on a device without them", "[nn][fused][composite]") {
  // fixture-good runs only copy, fill and f32 add: the fused ops are composed by the core, and each
  // smaller op falls back to the CPU on its own; the fused ops themselves never do.
  auto rt = test::fixture_runtime(false, {"fixture-good"});
  const Device dev = rt->default_device();
  REQUIRE(dev.name() == "fixture-good:0");
  for (const json& c : fixture("fused.json")["cases"]) {
    for (DType t : {DType::F32, DType::BF16}) {
      INFO(label(c, t));
      const Tensor y = run_fused(c, t, dev);
      CHECK(y.device() == dev);
      CHECK(mismatches(y, c["out"], fused_tolerance(t)) == "");
    }
  }
  std::set<std::string> ops;
  for (const FallbackRecord& r : rt->fallbacks()) ops.insert(r.op);
  for (const char* fused :
       {"softmax", "log_softmax", "layer_norm", "rms_norm", "batch_norm", "attention"})
    CHECK(ops.count(fused) == 0);
  CHECK(ops.count("exp") == 1);
}

TEST_CASE("fused ops run on the OpenCL device without a CPU fallback of the fused op",
          "[nn][fused][composite][opencl]") {
  // Whatever the OpenCL plugin implements itself, a fused op it lacks is composed on the OpenCL
  // device: the fallback record may name small ops, never the fused one.
  auto rt = test::fixture_runtime(false, {"opencl", "cpu"});
  const Device dev = rt->registry().find_device("opencl");
  if (!dev.valid()) {
    WARN("no OpenCL device in this build or on this machine: nothing to check");
    return;
  }
  for (const json& c : fixture("fused.json")["cases"]) {
    INFO(label(c, DType::F32));
    const Tensor y = run_fused(c, DType::F32, dev);
    CHECK(y.device() == dev);
    CHECK(mismatches(y, c["out"], fused_tolerance(DType::F32)) == "");
  }
  for (const FallbackRecord& r : rt->fallbacks()) {
    for (const char* fused :
         {"softmax", "log_softmax", "layer_norm", "rms_norm", "batch_norm", "attention"})
      CHECK(r.op != fused);
  }
  // The OpenCL plugin runs the whole op set: nothing falls back.
  CHECK(rt->fallbacks().empty());
}
