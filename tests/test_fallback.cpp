// Fallback routing: fixture-good supports only copy, fill (f32, i32) and add (f32); everything
// else must run on the CPU with the copies done by the core, counted, and refused in strict mode.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace wick;

TEST_CASE("start-up fallback walks the priority list to the first usable device", "[fallback]") {
  auto rt = test::fixture_runtime(false, {"fixture-zero-devices", "fixture-good", "cpu"});
  CHECK(rt->default_device().name() == "fixture-good:0");
  REQUIRE(rt->selection().skipped.size() == 1);
  CHECK_THAT(rt->selection().skipped[0], Catch::Contains("fixture-zero-devices") &&
                                             Catch::Contains("no fixture hardware present"));
  CHECK_THAT(rt->selection().reason, Catch::Contains("priority 2 of 3"));
}

TEST_CASE("the CPU is the last resort when nothing in the list is usable", "[fallback]") {
  auto rt = test::fixture_runtime(false, {"fixture-init-error"});
  CHECK(rt->default_device().kind() == DeviceKind::CPU);
  CHECK_THAT(rt->selection().reason, Catch::Contains("last resort"));
}

TEST_CASE("strict mode refuses a start-up fallback, naming the device and why",
          "[fallback][strict]") {
  CHECK_THROWS_WITH(test::fixture_runtime(true, {"fixture-zero-devices", "fixture-good"}),
                    Catch::Contains("strict mode") && Catch::Contains("fixture-zero-devices") &&
                        Catch::Contains("no fixture hardware present"));
}

TEST_CASE("an unknown device name is a config error with a suggestion", "[fallback][config]") {
  CHECK_THROWS_AS(test::fixture_runtime(false, {"fixture-god"}), ConfigError);
  CHECK_THROWS_WITH(test::fixture_runtime(false, {"fixture-god"}),
                    Catch::Contains("unknown device 'fixture-god'") &&
                        Catch::Contains("did you mean 'fixture-good'"));
}

TEST_CASE(
    "supported ops run on the device, unsupported ones fall back and are counted once per key",
    "[fallback]") {
  auto rt = test::fixture_runtime(false, {"fixture-good"});
  const Device dev = rt->default_device();
  REQUIRE(dev.name() == "fixture-good:0");
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, dev);
  Tensor b = Tensor::from_vector<float>({10, 20}, {2}, dev);

  Tensor sum = a + b;  // add f32: supported
  CHECK(sum.device() == dev);
  CHECK(sum.to_vector<float>() == std::vector<float>{11, 22, 13, 24});
  CHECK(rt->fallback_count() == 0);

  Tensor prod = a * b;  // mul: not implemented by the fixture
  CHECK(prod.device() == dev);
  CHECK(prod.to_vector<float>() == std::vector<float>{10, 40, 30, 80});
  (void)(a * a);
  Tensor mm = a.matmul(a);  // [[1*1+2*3, 1*2+2*4], [3*1+4*3, 3*2+4*4]]
  CHECK(mm.device() == dev);
  CHECK(mm.to_vector<float>() == std::vector<float>{7, 10, 15, 22});
  Tensor d =
      Tensor::from_vector<double>({1.5, 2.5}, dev) + Tensor::from_vector<double>({1, 1}, dev);
  CHECK(d.to_vector<double>() == std::vector<double>{2.5, 3.5});
  Tensor c = a.to(DType::I32);  // cast: not implemented
  CHECK(c.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4});

  const auto records = rt->fallbacks();
  auto find = [&](const std::string& op, const std::string& dtype) -> const FallbackRecord* {
    for (const FallbackRecord& r : records)
      if (r.op == op && r.dtype == dtype) return &r;
    return nullptr;
  };
  REQUIRE(find("mul", "f32") != nullptr);
  CHECK(find("mul", "f32")->count == 2);
  CHECK(find("mul", "f32")->device == "fixture-good:0");
  CHECK(find("mul", "f32")->plugin == "fixture-good");
  CHECK(find("mul", "f32")->reason == "op not implemented");
  REQUIRE(find("add", "f64") != nullptr);
  CHECK(find("add", "f64")->reason == "dtype not supported");
  REQUIRE(find("matmul", "f32") != nullptr);
  REQUIRE(find("cast", "f32->i32") != nullptr);
  CHECK(find("add", "f32") == nullptr);
  CHECK(rt->fallback_count() == 5);
  rt->reset_fallbacks();
  CHECK(rt->fallback_count() == 0);
}

TEST_CASE("strict mode turns a per-op fallback into an error naming op, dtype, device, plugin",
          "[fallback][strict]") {
  auto rt = test::fixture_runtime(true, {"fixture-good"});
  const Device dev = rt->default_device();
  Tensor a = Tensor::from_vector<float>({1, 2}, dev);
  CHECK((a + a).to_vector<float>() == std::vector<float>{2, 4});  // supported: fine
  CHECK_THROWS_WITH(
      a * a, Catch::Contains("strict mode") && Catch::Contains("op 'mul'") &&
                 Catch::Contains("(f32)") && Catch::Contains("plugin 'fixture-good'") &&
                 Catch::Contains("device fixture-good:0") && Catch::Contains("op not implemented"));
  CHECK(rt->fallback_count() == 0);
  // The API layer can lift strictness at run time.
  rt->set_strict(false);
  CHECK((a * a).to_vector<float>() == std::vector<float>{1, 4});
}

TEST_CASE("ops on tensors from two devices are refused with both names", "[fallback]") {
  auto rt = test::fixture_runtime(false, {"fixture-good"});
  Tensor a = Tensor::from_vector<float>({1, 2}, rt->default_device());
  Tensor b = Tensor::from_vector<float>({1, 2}, rt->cpu_device());
  CHECK_THROWS_WITH(a + b,
                    Catch::Contains("different devices") && Catch::Contains("fixture-good:0"));
  CHECK((a.to(rt->cpu_device()) + b).to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("each runtime counts and rules the fallbacks of the devices its registry loaded",
          "[fallback][strict]") {
  auto lenient = test::fixture_runtime(false, {"fixture-good"});
  // A second fixture-good for a strict runtime: a copy of the library, since one mapping of a
  // plugin initializes once per process.
  const fs::path dir =
      fs::temp_directory_path() / ("wick-test-fallback-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(WICK_FIXTURE_DIR) / "libwick-fixture-good.so", dir / "copy.so",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir / "fixture-good.wick-plugin.toml")
      << "name = \"fixture-good\"\nlibrary = \"copy.so\"\nabi_major = " << WICK_ABI_MAJOR << "\n";
  Config c = default_config();
  c.plugin_paths = {dir.string()};
  c.priority = {DeviceEntry{"fixture-good", {}}};
  c.strict = true;
  c.log_level = "error";
  auto strict = std::make_unique<Runtime>(c, RegistryOptions{false, false});
  fs::remove_all(dir);

  Tensor a = Tensor::from_vector<float>({1, 2}, lenient->default_device());
  Tensor b = Tensor::from_vector<float>({1, 2}, strict->default_device());
  CHECK((a * a).to_vector<float>() == std::vector<float>{1, 4});
  CHECK_THROWS_WITH(b * b, Catch::Contains("strict mode") && Catch::Contains("op 'mul'"));
  CHECK(lenient->fallback_count() == 1);
  CHECK(strict->fallback_count() == 0);
}
TEST_CASE("a device of a PluginRegistry outside any runtime has no CPU fallback", "[fallback]") {
  Config c = default_config();
  c.plugin_paths = {WICK_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  const PluginRegistry registry(c, RegistryOptions{false, false});
  const Device dev = registry.find_device("fixture-good");
  REQUIRE(dev.valid());
  Tensor a = Tensor::from_vector<float>({1, 2}, dev);
  CHECK((a + a).to_vector<float>() == std::vector<float>{2, 4});  // supported: runs on the device
  CHECK_THROWS_WITH(a * a, Catch::Contains("op 'mul' (f32) is not supported by plugin "
                                           "'fixture-good'") &&
                               Catch::Contains("no CPU fallback"));
}

TEST_CASE("a vendor's CPU-kind plugin first in the search path and the priority list falls back to "
          "the first-party CPU plugin, not to itself",
          "[fallback]") {
  // The vendor's directory comes before the build's plugins in the search path.
  Config c = default_config();
  c.plugin_paths = {WICK_VENDOR_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.priority = {DeviceEntry{"fixture-vendor-cpu", SourceLocation{"test", 0, 0}}};
  c.log_level = "error";
  auto rt = std::make_unique<Runtime>(c, RegistryOptions{false, false});
  const Device dev = rt->default_device();
  REQUIRE(dev.name() == "fixture-vendor-cpu:0");
  CHECK(dev.kind() == DeviceKind::CPU);
  CHECK(rt->cpu_device().plugin_name() == "cpu-onednn");
  CHECK_THAT(rt->registry().cpu_device_reason(), Catch::Contains("first-party CPU plugin"));
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, dev);
  Tensor mm = a.matmul(a);  // declined by the fixture: runs on cpu-onednn
  CHECK(mm.device() == dev);
  CHECK(mm.to_vector<float>() == std::vector<float>{7, 10, 15, 22});
  REQUIRE(rt->fallbacks().size() == 1);
  CHECK(rt->fallbacks()[0].op == "matmul");
}

TEST_CASE("[devices] fallback names the CPU device fallbacks run on, and a bad one says why",
          "[fallback][config]") {
  auto runtime = [](const std::string& fallback) {
    Config c = default_config();
    c.plugin_paths = {WICK_VENDOR_FIXTURE_DIR, WICK_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
    c.priority = {DeviceEntry{"fixture-good", SourceLocation{"test", 0, 0}}};
    c.fallback = fallback;
    c.fallback_where = SourceLocation{"wick.toml", 2, 12};
    c.log_level = "error";
    return std::make_unique<Runtime>(c, RegistryOptions{false, false});
  };
  {
    auto rt = runtime("fixture-vendor-cpu");
    CHECK(rt->cpu_device().name() == "fixture-vendor-cpu:0");
    CHECK_THAT(rt->registry().cpu_device_reason(),
               Catch::Contains("configured: [devices] fallback at wick.toml:2:12"));
  }
  {
    auto rt = runtime("fixture-good");  // a device of kind other
    CHECK_THROWS_WITH(rt->registry().cpu_device(),
                      Catch::Contains("wick.toml:2:12") && Catch::Contains("not cpu"));
  }
  {
    auto rt = runtime("no-such-plugin");
    CHECK_THAT(rt->registry().cpu_device_reason(),
               Catch::Contains("no plugin named 'no-such-plugin'"));
  }
  const Config parsed = apply_config_text(default_config(), "[devices]\nfallback = \"cpu-onednn\"\n", "f.toml");
  CHECK(parsed.fallback == "cpu-onednn");
  CHECK(parsed.fallback_where.to_string() == "f.toml:2:12");
  CHECK_THROWS_WITH(apply_config_text(default_config(), "[devices]\nfallback = 3\n", "f.toml"),
                    Catch::Contains("f.toml:2:12") && Catch::Contains("devices.fallback"));
}
