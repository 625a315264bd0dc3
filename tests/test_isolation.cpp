// Isolated plugins ([plugins.NAME] isolate = true): the plugin runs in a child process, so one
// that crashes or hangs gives errors naming it while this process goes on. conf-fixture-crashy
// adds correctly, kills its process in neg and never returns from sub (conformance fixture).
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using namespace wick;

namespace {

std::unique_ptr<Runtime> runtime_with(const std::string& toml) {
  Config c = apply_config_text(default_config(), toml, "isolation.toml");
  c.plugin_paths = {WICK_CONF_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  return std::make_unique<Runtime>(c, RegistryOptions{false, false});
}

PluginInfo info_of(const std::vector<PluginInfo>& plugins, const std::string& name) {
  for (const PluginInfo& p : plugins)
    if (p.name == name) return p;
  FAIL("no plugin " << name);
  return {};
}

}  // namespace

TEST_CASE("an isolated plugin that crashes gives an error naming it; the program goes on",
          "[isolation]") {
  auto rt = runtime_with("[plugins.conf-fixture-crashy]\nisolate = true\n");
  const PluginInfo info = info_of(rt->registry().plugins(), "conf-fixture-crashy");
  REQUIRE(info.state == PluginState::Usable);
  CHECK(info.isolated);
  CHECK_THAT(info.reason, Catch::Contains("isolated in a child process"));

  const Device dev = rt->registry().find_device("conf-fixture-crashy");
  rt->set_strict(true);  // every op below runs in the plugin, none on the CPU fallback
  Tensor a = Tensor::from_vector<float>({1.5f, -2, 3, 40}, {2, 2}, dev);
  Tensor b = Tensor::from_vector<float>({0.25f, 2, -1, 2}, {2, 2}, dev);
  // Through the child: buffers, writes, the op's descriptor with a transposed view, reads.
  CHECK((a + b).to_vector<float>() == std::vector<float>{1.75f, 0, 2, 42});
  CHECK((a + b.t()).to_vector<float>() == std::vector<float>{1.75f, -3, 5, 42});

  try {
    (void)a.neg().to_vector<float>();
    FAIL("neg should have failed: the fixture's process crashes in it");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("isolated plugin 'conf-fixture-crashy' crashed"));
    CHECK_THAT(m, Catch::Contains("signal 11 (SIGSEGV"));
    CHECK_THAT(m, Catch::Contains("op_execute"));
  }
  // Later calls say the process is gone; buffers of the dead process are released quietly.
  CHECK_THROWS_WITH((a + b).to_vector<float>(), Catch::Contains("process is gone"));
  a = Tensor();
  b = Tensor();
  // This process and the other plugins carry on.
  const Device cpu = rt->registry().find_device("cpu-onednn");
  Tensor c = Tensor::from_vector<float>({1, 2}, {2}, cpu);
  CHECK((c + c).to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("an isolated plugin that hangs is killed after isolate_timeout_ms", "[isolation]") {
  auto rt = runtime_with("[plugins.conf-fixture-crashy]\nisolate = true\nisolate_timeout_ms = 300\n");
  const Device dev = rt->registry().find_device("conf-fixture-crashy");
  rt->set_strict(true);
  Tensor a = Tensor::from_vector<float>({1, 2}, {2}, dev);
  CHECK_THROWS_WITH((a - a).to_vector<float>(),
                    Catch::Contains("isolated plugin 'conf-fixture-crashy' did not answer within "
                                    "300 ms") &&
                        Catch::Contains("op_execute") && Catch::Contains("killed"));
}

TEST_CASE("isolate and isolate_timeout_ms are the host's: checked, and not passed to the plugin",
          "[isolation][config]") {
  {
    auto rt = runtime_with("[plugins.conf-fixture-crashy]\nisolate = \"yes\"\n");
    const PluginInfo info = info_of(rt->registry().plugins(), "conf-fixture-crashy");
    CHECK(info.state == PluginState::LoadFailed);
    CHECK_THAT(info.reason, Catch::Contains("[plugins.conf-fixture-crashy] isolate at "
                                            "isolation.toml:2:11 must be true or false"));
  }
  {
    auto rt = runtime_with("[plugins.conf-fixture-crashy]\nisolate_timeout_ms = -4\n");
    const PluginInfo info = info_of(rt->registry().plugins(), "conf-fixture-crashy");
    CHECK(info.state == PluginState::LoadFailed);
    CHECK_THAT(info.reason, Catch::Contains("isolate_timeout_ms at isolation.toml:2:22"));
  }
  // cpu-onednn refuses unknown options; isolate reaches the host only, so it initializes.
  auto rt = runtime_with("[plugins.cpu-onednn]\nisolate = false\nisolate_timeout_ms = 100\n");
  CHECK(info_of(rt->registry().plugins(), "cpu-onednn").state == PluginState::Usable);
  CHECK(is_host_plugin_option("isolate"));
  CHECK_FALSE(is_host_plugin_option("threads"));
}

TEST_CASE("cpu-onednn isolated runs ops with every kind of params through the child",
          "[isolation]") {
  auto rt = runtime_with("[plugins.cpu-onednn]\nisolate = true\n");
  const Device dev = rt->registry().find_device("cpu-onednn");
  REQUIRE(dev.valid());
  rt->set_strict(true);
  // Hand-worked values. x = [[[0,1,2],[3,4,5]],[[6,7,8],[9,10,11]]]
  Tensor x = Tensor::arange(0, 12, 1, DType::F32, dev).reshape({2, 2, 3});
  CHECK(x.sum({0, 2}).to_vector<float>() == std::vector<float>{0 + 1 + 2 + 6 + 7 + 8,
                                                               3 + 4 + 5 + 9 + 10 + 11});  // reduce axes
  CHECK(x.argmax(2).to_vector<int64_t>() == std::vector<int64_t>{2, 2, 2, 2});  // axis params
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, dev);
  CHECK(m.matmul(m).to_vector<float>() == std::vector<float>{7, 10, 15, 22});
  // conv: 1x1x3x3 input 1..9, 2x2 kernel of ones, stride 1, no padding: window sums.
  Tensor img = Tensor::arange(1, 10, 1, DType::F32, dev).reshape({1, 1, 3, 3});
  Tensor k = Tensor::ones({1, 1, 2, 2}, DType::F32, dev);
  CHECK(img.conv(k).to_vector<float>() == std::vector<float>{12, 16, 24, 28});
  // padding 1 on every side, stride 2: corners of the padded sums.
  CHECK(img.conv(k, {2, 2}, {1, 1}).to_vector<float>() == std::vector<float>{1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9});
  CHECK(img.max_pool2d({2, 2}, {1, 1}).to_vector<float>() == std::vector<float>{5, 6, 8, 9});  // window params
  auto [values, indices] = Tensor::from_vector<float>({3, 1, 2}, {3}, dev).sort();
  CHECK(values.to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(indices.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0});
  CHECK(rt->fallback_count() == 0);
}
