// test_loader.cpp — plugin discovery, loading and probing against the fixture plugins of
// tests/fixtures: every way a plugin can fail ends in a documented state with a reason that names
// the cause, and the process goes on.
#include "test_support.hpp"

#include <wick/wick_plugin.h>
#include <wick/config.hpp>
#include <wick/device.hpp>
#include <wick/registry.hpp>
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::Matches;
using wick::PluginState;
using wick::test::ScopedEnv;

namespace {

const std::string kFixtureDir = WICK_FIXTURE_DIR;

std::string fixture_library(const std::string& name) {
  return (fs::path(kFixtureDir) / ("libwick-" + name + ".so")).string();
}
std::string fixture_manifest(const std::string& name) {
  return (fs::path(kFixtureDir) / (name + ".wick-plugin.toml")).string();
}

// Only the directories a test names: no WICK_PLUGIN_PATH, no install directory.
constexpr wick::RegistryOptions kIsolated{.use_environment = false, .use_install_dir = false};

wick::Config config_with_paths(std::vector<std::string> paths) {
  wick::Config cfg = wick::default_config();
  cfg.plugin_paths = std::move(paths);
  return cfg;
}

wick::Config fixture_config() {
  return config_with_paths({kFixtureDir});
}

wick::PluginInfo info_of(const wick::PluginRegistry& registry, const std::string& name) {
  std::unique_ptr<wick::PluginInfo> info = registry.find(name);
  INFO("plugin " << name);
  REQUIRE(info != nullptr);
  return *info;
}

// Checks a plugin's state and that its reason contains each of `words`; returns its info.
wick::PluginInfo check_state(const wick::PluginRegistry& registry, const std::string& name,
                             PluginState state, const std::vector<std::string>& words) {
  const wick::PluginInfo info = info_of(registry, name);
  INFO(name << ": " << wick::to_string(info.state) << ": " << info.reason);
  CHECK(info.state == state);
  for (const std::string& word : words) CHECK_THAT(info.reason, Contains(word));
  return info;
}

bool has_fixture_plugin(const wick::PluginRegistry& registry) {
  for (const wick::PluginInfo& p : registry.plugins()) {
    if (p.name.rfind("fixture-", 0) == 0) return true;
  }
  return false;
}

// A whole word: the number must not be part of a longer number.
std::string word_regex(const std::string& word) {
  return ".*\\b" + word + "\\b.*";
}

// Changes the current directory for one scope.
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old_); }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;

 private:
  fs::path old_;
};

// A fresh directory under /tmp, removed with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("wick-test-loader-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

  // Writes <dir>/<name>.wick-plugin.toml for plugin `name` whose library is `library`.
  std::string write_manifest(const std::string& name, const std::string& library) const {
    const fs::path file = path_ / (name + ".wick-plugin.toml");
    std::ofstream out(file);
    out << "name = \"" << name << "\"\nlibrary = \"" << library
        << "\"\nabi_major = " << WICK_ABI_MAJOR << "\ndevice_kinds = [\"other\"]\n";
    return file.string();
  }

 private:
  fs::path path_;
};

// A device whose plugin has neither the 1.5 nor the 1.7 host-memory slot: from_host_memory
// copies (writable or not) and the copy has no address.
void check_host_memory_is_copied(const wick::Device& d) {
  auto memory = std::shared_ptr<float[]>(new float[8]{1, 2, 3, 4, 5, 6, 7, 8});
  wick::HostMemoryOptions writable;
  writable.writable = true;
  const wick::Tensor copy =
      wick::Tensor::from_host_memory(memory, memory.get(), {8}, wick::DType::F32, d, writable);
  CHECK_FALSE(copy.is_host_view());
  CHECK(copy.host_data() == nullptr);
  CHECK_FALSE(
      wick::Tensor::from_host_memory(memory, memory.get(), 32, {8}, wick::DType::F32, d).is_host_view());
}

}  // namespace

TEST_CASE("The registry constructs in the presence of every broken fixture, each in its state",
          "[loader]") {
  std::unique_ptr<wick::PluginRegistry> registry;
  REQUIRE_NOTHROW(registry = std::make_unique<wick::PluginRegistry>(fixture_config(), kIsolated));

  const std::vector<std::pair<std::string, PluginState>> expected = {
      {"fixture-good", PluginState::Usable},
      {"fixture-old-minor", PluginState::Usable},
      {"fixture-new-minor", PluginState::Usable},
      {"fixture-no-entry", PluginState::LoadFailed},
      {"fixture-not-a-plugin", PluginState::LoadFailed},
      {"fixture-missing-dep", PluginState::LoadFailed},
      {"fixture-bad-manifest", PluginState::LoadFailed},
      {"fixture-no-library-key", PluginState::LoadFailed},
      {"fixture-missing-library", PluginState::LoadFailed},
      {"fixture-wrong-major", PluginState::Incompatible},
      {"fixture-manifest-major", PluginState::Incompatible},
      {"fixture-init-error", PluginState::Failed},
      {"fixture-throws", PluginState::Failed},
      {"fixture-zero-devices", PluginState::Unavailable},
      {"fixture-null-message", PluginState::Failed},
      {"fixture-null-name", PluginState::Failed},
  };
  for (const auto& [name, state] : expected) {
    const wick::PluginInfo info = info_of(*registry, name);
    INFO(name << ": " << wick::to_string(info.state) << ": " << info.reason);
    CHECK(info.state == state);
    CHECK_FALSE(info.reason.empty());
    CHECK(info.manifest_path == fixture_manifest(name));
  }

  // Only the three usable fixtures contribute devices, one each.
  std::vector<std::string> device_names;
  for (const wick::Device& d : registry->devices()) {
    if (d.plugin_name().rfind("fixture-", 0) == 0) device_names.push_back(d.name());
  }
  std::sort(device_names.begin(), device_names.end());
  CHECK(device_names ==
        std::vector<std::string>{"fixture-good:0", "fixture-new-minor:0", "fixture-old-minor:0"});
}

TEST_CASE("A healthy plugin is usable with one device of kind Other", "[loader]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);
  const wick::PluginInfo info = info_of(registry, "fixture-good");
  INFO(info.reason);
  REQUIRE(info.state == PluginState::Usable);
  CHECK(info.library_path == fixture_library("fixture-good"));
  CHECK(info.version == "0.1.0");
  CHECK(info.abi_major == WICK_ABI_MAJOR);
  CHECK(info.abi_minor == WICK_ABI_MINOR);
  CHECK(info.device_kinds == std::vector<std::string>{"other"});
  REQUIRE(info.devices.size() == 1);
  CHECK(info.devices[0].name == "fixture-good:0");
  CHECK(info.devices[0].description == "fixture host memory");
  CHECK(info.devices[0].kind == wick::DeviceKind::Other);
  CHECK((info.devices[0].capabilities & WICK_DEVICE_CAP_HOST_MEMORY) != 0);

  SECTION("find_device by plugin name") {
    const wick::Device d = registry.find_device("fixture-good");
    REQUIRE(d.valid());
    CHECK(d.kind() == wick::DeviceKind::Other);
    CHECK(d.name() == "fixture-good:0");
    CHECK(d.plugin_name() == "fixture-good");
    CHECK(d.index() == 0);
    CHECK(d.description() == "fixture host memory");
    CHECK_NOTHROW(d.synchronize());
    check_host_memory_is_copied(d);
  }
  SECTION("find_device by plugin:index") {
    CHECK(registry.find_device("fixture-good:0") == registry.find_device("fixture-good"));
    CHECK_FALSE(registry.find_device("fixture-good:1").valid());
  }
  SECTION("find_device by kind finds some device of that kind") {
    const wick::Device d = registry.find_device("other");
    REQUIRE(d.valid());
    CHECK(d.kind() == wick::DeviceKind::Other);
  }
  SECTION("plugins that are not usable have no device") {
    for (const char* name : {"fixture-init-error", "fixture-throws", "fixture-zero-devices",
                             "fixture-no-entry", "fixture-wrong-major"}) {
      INFO(name);
      CHECK_FALSE(registry.find_device(name).valid());
      CHECK(info_of(registry, name).devices.empty());
    }
  }
}

TEST_CASE("A 1.0 plugin with a short table is usable and its later slots are never called",
          "[loader][abi]") {
  const std::string library = fixture_library("fixture-old-minor");
  {
    const wick::PluginRegistry registry(fixture_config(), kIsolated);
    const wick::PluginInfo info = info_of(registry, "fixture-old-minor");
    INFO(info.reason);
    CHECK(info.state == PluginState::Usable);
    CHECK(info.abi_major == WICK_ABI_MAJOR);
    CHECK(info.abi_minor == 0);
    CHECK(info.devices.size() == 1);
    const wick::Device d = registry.find_device("fixture-old-minor");
    REQUIRE(d.valid());
    CHECK(d.description() == "fixture host memory");
    CHECK_NOTHROW(d.synchronize());
    check_host_memory_is_copied(d);
    CHECK_FALSE(wick::Tensor::zeros({4}, wick::DType::F32, d).native_memory().has_value());
  }
  // The registry loaded the library (plugins without WICK_PLUGIN_FLAG_UNLOADABLE stay mapped), so
  // RTLD_NOLOAD finds it; its counter says whether the host called beyond the table's size.
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  REQUIRE(handle != nullptr);
  auto calls = reinterpret_cast<int (*)()>(::dlsym(handle, "wick_fixture_out_of_size_calls"));
  REQUIRE(calls != nullptr);
  CHECK(calls() == 0);
  ::dlclose(handle);
}

TEST_CASE("A plugin from a later minor with a bigger table is usable", "[loader][abi]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);
  const wick::PluginInfo info = info_of(registry, "fixture-new-minor");
  INFO(info.reason);
  CHECK(info.state == PluginState::Usable);
  CHECK(info.abi_major == WICK_ABI_MAJOR);
  CHECK(info.abi_minor == WICK_ABI_MINOR + 5);
  CHECK(info.devices.size() == 1);
  CHECK(registry.find_device("fixture-new-minor").valid());
}

TEST_CASE("Load failures say why, naming the file and the loader's message", "[loader]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);

  SECTION("a library without the entry symbol is not a Wick plugin") {
    check_state(
        registry, "fixture-no-entry", PluginState::LoadFailed,
        {WICK_PLUGIN_ENTRY_SYMBOL, "not a Wick plugin", fixture_library("fixture-no-entry")});
  }
  SECTION("a file that is not a shared library at all, with glibc's own words for it") {
    check_state(registry, "fixture-not-a-plugin", PluginState::LoadFailed,
                {fixture_library("fixture-garbage"), "not an ELF file"});
  }
  SECTION("a library whose dependency is missing names the dependency") {
    check_state(registry, "fixture-missing-dep", PluginState::LoadFailed,
                {"libfixture-dep.so", "cannot open shared object file",
                 fixture_library("fixture-missing-dep")});
  }
  SECTION("a manifest with a syntax error names the manifest and the line") {
    // The unterminated string is on line 3.
    check_state(registry, "fixture-bad-manifest", PluginState::LoadFailed,
                {fixture_manifest("fixture-bad-manifest") + ":3"});
  }
  SECTION("a manifest without a library key names the manifest and the key") {
    check_state(registry, "fixture-no-library-key", PluginState::LoadFailed,
                {fixture_manifest("fixture-no-library-key"), "library"});
  }
  SECTION("a manifest whose library does not exist names the library path") {
    const wick::PluginInfo info =
        check_state(registry, "fixture-missing-library", PluginState::LoadFailed,
                    {fixture_library("fixture-missing-library")});
    CHECK(info.library_path == fixture_library("fixture-missing-library"));
  }
}

TEST_CASE("A different ABI major is refused, naming both majors", "[loader][abi]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);
  const std::string theirs = std::to_string(WICK_ABI_MAJOR + 1);
  const std::string ours = std::to_string(WICK_ABI_MAJOR);

  SECTION("declared by the plugin's table") {
    const wick::PluginInfo info =
        check_state(registry, "fixture-wrong-major", PluginState::Incompatible,
                    {"ABI", fixture_library("fixture-wrong-major")});
    CHECK(info.abi_major == WICK_ABI_MAJOR + 1);
    CHECK_THAT(info.reason, Matches(word_regex(theirs)) && Matches(word_regex(ours)));
  }
  SECTION("declared by the manifest, before the library is loaded") {
    // The manifest's library does not exist: a host that loaded before checking would say
    // LoadFailed.
    const wick::PluginInfo info =
        check_state(registry, "fixture-manifest-major", PluginState::Incompatible,
                    {"ABI", fixture_manifest("fixture-manifest-major")});
    CHECK_THAT(info.reason, Matches(word_regex(theirs)) && Matches(word_regex(ours)));
  }
}

TEST_CASE("Initialize errors and exceptions leave the plugin Failed with its message", "[loader]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);

  SECTION("an error object returned by initialize") {
    check_state(registry, "fixture-init-error", PluginState::Failed,
                {"fixture: probe failed on purpose"});
  }
  SECTION("a C++ exception thrown across the C ABI") {
    check_state(registry, "fixture-throws", PluginState::Failed,
                {"fixture: thrown across the ABI"});
  }
}

TEST_CASE("NULL strings from a plugin are refused by name and never a std::logic_error", "[loader]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);
  SECTION("an error whose message is NULL") {
    const wick::PluginInfo info = check_state(registry, "fixture-null-message", PluginState::Failed,
                                              {"fixture-null-message", "initialize failed", "(no message)"});
    CHECK_THAT(info.reason, !Contains("basic_string"));
  }
  SECTION("device_get_props giving a NULL device name") {
    const wick::PluginInfo info = check_state(registry, "fixture-null-name", PluginState::Failed,
                                              {"fixture-null-name", "device_get_props(0) gave a NULL name"});
    CHECK(info.devices.empty());
    CHECK_FALSE(registry.find_device("fixture-null-name").valid());
  }
}

TEST_CASE("Zero devices is a quiet Unavailable with the plugin's message", "[loader]") {
  const wick::PluginRegistry registry(fixture_config(), kIsolated);
  const wick::PluginInfo info = check_state(
      registry, "fixture-zero-devices", PluginState::Unavailable, {"no fixture hardware present"});
  CHECK(info.devices.empty());
}

TEST_CASE("Plugin options reach initialize, and the plugin rejects unknown keys", "[loader]") {
  wick::Config cfg = fixture_config();

  SECTION("a known option") {
    cfg.plugin_options["fixture-good"].values = {{"label", std::string("from the test")}};
    const wick::PluginRegistry registry(cfg, kIsolated);
    const wick::PluginInfo info = info_of(registry, "fixture-good");
    INFO(info.reason);
    CHECK(info.state == PluginState::Usable);
  }
  SECTION("an unknown option fails the plugin, naming the key") {
    cfg.plugin_options["fixture-good"].values = {{"colour", std::string("blue")}};
    const wick::PluginRegistry registry(cfg, kIsolated);
    check_state(registry, "fixture-good", PluginState::Failed, {"colour"});
    CHECK_FALSE(registry.find_device("fixture-good").valid());
  }
  SECTION("an option of the wrong type fails the plugin, naming the key") {
    cfg.plugin_options["fixture-good"].values = {{"label", int64_t{7}}};
    const wick::PluginRegistry registry(cfg, kIsolated);
    check_state(registry, "fixture-good", PluginState::Failed, {"label"});
  }
}

TEST_CASE("A priority entry naming a plugin that was not found shows NotFound", "[loader]") {
  wick::Config cfg = fixture_config();
  cfg.priority = {wick::DeviceEntry{"fixture-nowhere", {}}, wick::DeviceEntry{"fixture-good", {}}};
  const wick::PluginRegistry registry(cfg, kIsolated);

  const std::vector<wick::PluginInfo> all = registry.plugins();
  auto it = std::find_if(all.begin(), all.end(),
                         [](const wick::PluginInfo& p) { return p.name == "fixture-nowhere"; });
  REQUIRE(it != all.end());
  CHECK(it->state == PluginState::NotFound);
  CHECK(it->manifest_path.empty());
  CHECK(it->devices.empty());
  CHECK_FALSE(registry.find_device("fixture-nowhere").valid());
  // plugins() is sorted by name.
  CHECK(std::is_sorted(
      all.begin(), all.end(),
      [](const wick::PluginInfo& a, const wick::PluginInfo& b) { return a.name < b.name; }));
}

TEST_CASE("load() adds one plugin from an explicit path", "[loader]") {
  wick::PluginRegistry registry(config_with_paths({}), kIsolated);
  REQUIRE(registry.find("fixture-good") == nullptr);
  REQUIRE_FALSE(registry.find_device("fixture-good").valid());

  SECTION("from its manifest") {
    const wick::PluginInfo info = registry.load(fixture_manifest("fixture-good"));
    INFO(info.reason);
    CHECK(info.name == "fixture-good");
    CHECK(info.state == PluginState::Usable);
    CHECK(info.manifest_path == fixture_manifest("fixture-good"));
    CHECK(info.library_path == fixture_library("fixture-good"));
    REQUIRE(registry.find("fixture-good") != nullptr);
    CHECK(registry.find("fixture-good")->state == PluginState::Usable);
    const wick::Device d = registry.find_device("fixture-good");
    REQUIRE(d.valid());
    CHECK(d.kind() == wick::DeviceKind::Other);
    CHECK(registry.devices().size() == 1);
  }
  SECTION("from its library") {
    const wick::PluginInfo info = registry.load(fixture_library("fixture-good"));
    INFO(info.reason);
    CHECK(info.name == "fixture-good");
    CHECK(info.state == PluginState::Usable);
    CHECK(registry.find_device("fixture-good").valid());
  }
  SECTION("a broken plugin ends in its state instead of throwing") {
    wick::PluginInfo info;
    REQUIRE_NOTHROW(info = registry.load(fixture_manifest("fixture-no-entry")));
    CHECK(info.state == PluginState::LoadFailed);
    CHECK_THAT(info.reason, Contains("not a Wick plugin"));
    REQUIRE_NOTHROW(info = registry.load(fixture_manifest("fixture-throws")));
    CHECK(info.state == PluginState::Failed);
    CHECK(registry.devices().empty());
  }
}

TEST_CASE("The first manifest found for a name wins, in search order", "[loader][search]") {
  // Two directories with a manifest each for fixture-good: `a`'s points at the real library,
  // `b`'s at one that does not exist, so the state tells which manifest was used.
  const TempDir a;
  const TempDir b;
  const std::string good = a.write_manifest("fixture-good", fixture_library("fixture-good"));
  const std::string broken =
      b.write_manifest("fixture-good", (b.path() / "libwick-fixture-good.so").string());

  SECTION("config paths, in their order") {
    const wick::PluginRegistry ab(config_with_paths({a.str(), b.str()}), kIsolated);
    const wick::PluginInfo first = info_of(ab, "fixture-good");
    CHECK(first.manifest_path == good);
    CHECK(first.state == PluginState::Usable);
    const auto dirs = ab.search_directories();
    REQUIRE(dirs.size() == 2);
    CHECK(dirs[0].first == a.str());
    CHECK(dirs[1].first == b.str());
  }
  SECTION("config paths, reversed") {
    const wick::PluginRegistry ba(config_with_paths({b.str(), a.str()}), kIsolated);
    const wick::PluginInfo first = info_of(ba, "fixture-good");
    CHECK(first.manifest_path == broken);
    CHECK(first.state == PluginState::LoadFailed);
    CHECK_FALSE(ba.find_device("fixture-good").valid());
  }
  SECTION("the same directory given twice is harmless") {
    const wick::PluginRegistry aa(config_with_paths({a.str(), a.str()}), kIsolated);
    const wick::PluginInfo first = info_of(aa, "fixture-good");
    CHECK(first.manifest_path == good);
    CHECK(first.state == PluginState::Usable);
    CHECK(aa.devices().size() == 1);
  }
  SECTION("config paths come before WICK_PLUGIN_PATH") {
    const ScopedEnv env("WICK_PLUGIN_PATH", b.str());
    const wick::PluginRegistry registry(config_with_paths({a.str()}),
                                        {.use_environment = true, .use_install_dir = false});
    CHECK(info_of(registry, "fixture-good").manifest_path == good);
    const auto dirs = registry.search_directories();
    REQUIRE(dirs.size() == 2);
    CHECK(dirs[0].first == a.str());
    CHECK(dirs[1].first == b.str());
  }
  SECTION("WICK_PLUGIN_PATH entries, in their order") {
    const ScopedEnv env("WICK_PLUGIN_PATH", b.str() + ":" + a.str());
    const wick::PluginRegistry registry(config_with_paths({}),
                                        {.use_environment = true, .use_install_dir = false});
    CHECK(info_of(registry, "fixture-good").manifest_path == broken);
  }
}

TEST_CASE("WICK_PLUGIN_PATH is searched only when the environment is used", "[loader][search]") {
  const ScopedEnv env("WICK_PLUGIN_PATH", "/nonexistent/wick/plugins:" + kFixtureDir);

  SECTION("use_environment = true") {
    const wick::PluginRegistry registry(config_with_paths({}),
                                        {.use_environment = true, .use_install_dir = false});
    const wick::PluginInfo info = info_of(registry, "fixture-good");
    CHECK(info.state == PluginState::Usable);
    CHECK(info.manifest_path == fixture_manifest("fixture-good"));
    CHECK(registry.find_device("fixture-good").valid());
  }
  SECTION("use_environment = false") {
    const wick::PluginRegistry registry(config_with_paths({}), kIsolated);
    CHECK_FALSE(has_fixture_plugin(registry));
    CHECK(registry.search_directories().empty());
  }
}

TEST_CASE("The current directory is never searched", "[loader][search]") {
  const ScopedCwd cwd(kFixtureDir);

  SECTION("no directories at all") {
    const wick::PluginRegistry registry(config_with_paths({}), kIsolated);
    CHECK_FALSE(has_fixture_plugin(registry));
    CHECK(registry.devices().empty());
  }
  SECTION("a relative directory in the config does not mean the current directory") {
    const wick::PluginRegistry registry(config_with_paths({"."}), kIsolated);
    CHECK_FALSE(has_fixture_plugin(registry));
  }
  SECTION("empty and relative WICK_PLUGIN_PATH entries do not mean the current directory") {
    // An empty entry in a PATH-like variable traditionally means ".": not here.
    const ScopedEnv env("WICK_PLUGIN_PATH", ":.::./");
    const wick::PluginRegistry registry(config_with_paths({}),
                                        {.use_environment = true, .use_install_dir = false});
    CHECK_FALSE(has_fixture_plugin(registry));
  }
}

TEST_CASE("The CPU device is chosen by kind and host memory, not by plugin name or search order",
          "[loader][cpu]") {
  // opencl is found first (its manifest in `first`, ahead of the build directory). On PoCL its
  // device is of kind CPU, but its buffers are not host memory: cpu-onednn's device is chosen.
  const std::string built = WICK_PLUGIN_BUILD_DIR;
  const std::string opencl = (fs::path(built) / "libwick-opencl.so").string();
  if (!fs::exists(opencl)) {
    WARN("the opencl plugin was not built; the search-order half of this test is not run");
  }
  const TempDir first;
  if (fs::exists(opencl)) first.write_manifest("opencl", opencl);
  const wick::PluginRegistry registry(config_with_paths({first.str(), built}), kIsolated);

  const wick::Device cpu = registry.cpu_device();
  CHECK(cpu.kind() == wick::DeviceKind::CPU);
  CHECK((cpu.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) != 0);
  CHECK(registry.find_device("cpu") == cpu);
  const wick::Device cl = registry.find_device("opencl");
  if (cl.valid() && (cl.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) == 0) CHECK_FALSE(cl == cpu);
}

TEST_CASE("Without a CPU device, cpu_device() says so and names no plugin", "[loader][cpu]") {
  // The fixtures' devices are all of kind "other".
  const wick::PluginRegistry registry(fixture_config(), kIsolated);
  CHECK_FALSE(registry.find_device("cpu").valid());
  CHECK_THROWS_WITH(registry.cpu_device(), Contains("no usable CPU device") &&
                                               Contains("kind cpu") && Contains("wick devices") &&
                                               !Contains("onednn"));
}

TEST_CASE("A priority entry the built-in default names is no typo when its plugin is missing",
          "[loader][select]") {
  wick::Config cfg = fixture_config();
  cfg.priority = {wick::DeviceEntry{"cuda", {}}, wick::DeviceEntry{"fixture-good", {}}};
  const wick::PluginRegistry registry(cfg, kIsolated);
  const wick::Selection selection = wick::select_device(registry, cfg);
  CHECK(selection.device.name() == "fixture-good:0");
  REQUIRE(selection.skipped.size() == 1);
  CHECK_THAT(selection.skipped[0], Contains("cuda") && Contains("not found"));
}

TEST_CASE("An unknown priority entry lists the plugins found, the default's names and the kinds",
          "[loader][select]") {
  wick::Config cfg = fixture_config();
  cfg.priority = {wick::DeviceEntry{"fixture-god", {"t.toml", 3, 13}}};
  const wick::PluginRegistry registry(cfg, kIsolated);
  CHECK_THROWS_AS(wick::select_device(registry, cfg), wick::ConfigError);
  CHECK_THROWS_WITH(
      wick::select_device(registry, cfg),
      Contains("t.toml:3:13: unknown device 'fixture-god'; did you mean 'fixture-good'?") &&
          Contains("plugins found in the search path [") && Contains("]: fixture-") &&
          Contains("fixture-good") &&
          Contains("named by the built-in default: cuda, opencl") &&
          Contains("or a kind: cpu, gpu, accelerator, other)"));
}

TEST_CASE("a plugin whose initialize hangs costs a selection that does not need it nothing, and a "
          "listing at most the probe deadline",
          "[loader][deadline]") {
  using clock = std::chrono::steady_clock;
  wick::Config cfg = wick::default_config();
  cfg.plugin_paths = {WICK_SLOW_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};  // the slow one searched first
  cfg.priority = {wick::DeviceEntry{"cpu-onednn", {}}};
  cfg.probe_timeout_ms = 400;
  cfg.log_level = "error";
  {
    const auto t0 = clock::now();
    wick::Runtime rt(cfg, kIsolated);
    const wick::Tensor a = wick::Tensor::from_vector<float>({1, 2}, {2}, rt.default_device());
    CHECK((a + a).to_vector<float>() == std::vector<float>{2, 4});
    CHECK(rt.default_device().plugin_name() == "cpu-onednn");
    // The fixture sleeps 10 s in initialize; nothing here needed it, so nothing waited for it.
    CHECK(clock::now() - t0 < std::chrono::seconds(5));
  }
  {
    const auto t0 = clock::now();
    const wick::PluginRegistry registry(cfg, kIsolated);
    const auto slow = registry.find("fixture-slow-init");  // listing it means probing it
    REQUIRE(slow != nullptr);
    CHECK(slow->state == wick::PluginState::Failed);
    CHECK_THAT(slow->reason, Contains("initialize did not return within 400 ms"));
    CHECK(clock::now() - t0 < std::chrono::seconds(5));
  }
  const wick::Config parsed =
      wick::apply_config_text(wick::default_config(), "[plugins]\nprobe_timeout_ms = 250\n", "f.toml");
  CHECK(parsed.probe_timeout_ms == 250);
  CHECK_THROWS_WITH(wick::apply_config_text(wick::default_config(), "[plugins]\nprobe_timeout_ms = 0\n", "f.toml"),
                    Contains("f.toml:2:20") && Contains("probe_timeout_ms"));
}

TEST_CASE("a FIFO, a truncated library or a 50,000-deep key cannot hang or crash discovery",
          "[loader][hostile]") {
  const fs::path dir = fs::temp_directory_path() / ("wick-hostile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A FIFO named like a manifest: reading it would block forever.
  REQUIRE(::mkfifo((dir / "fifo.wick-plugin.toml").c_str(), 0600) == 0);
  // A plugin library cut short: dlopen would map past the end of the file and fault.
  {
    std::ifstream in(std::string(WICK_FIXTURE_DIR) + "/libwick-fixture-good.so", std::ios::binary);
    std::vector<char> head(8192);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(dir / "libwick-truncated.so", std::ios::binary).write(head.data(), in.gcount());
    std::ofstream(dir / "truncated.wick-plugin.toml")
        << "name = \"truncated\"\nlibrary = \"libwick-truncated.so\"\nabi_major = 1\n";
  }
  // A manifest whose key is nested 50,000 levels deep (the TOML parser would recurse that deep).
  {
    std::string key = "a";
    for (int i = 0; i < 50000; ++i) key += ".a";
    std::ofstream(dir / "deep.wick-plugin.toml") << key << " = 1\n";
  }
  wick::Config cfg = wick::default_config();
  cfg.plugin_paths = {dir.string()};
  cfg.priority = {wick::DeviceEntry{"cpu", {}}};
  const wick::PluginRegistry registry(cfg, kIsolated);
  std::map<std::string, wick::PluginInfo> by_name;
  for (const wick::PluginInfo& p : registry.plugins()) by_name[p.name] = p;
  CHECK(by_name["fifo"].state == wick::PluginState::LoadFailed);
  CHECK_THAT(by_name["fifo"].reason, Contains("not a regular file"));
  CHECK(by_name["truncated"].state == wick::PluginState::LoadFailed);
  CHECK_THAT(by_name["truncated"].reason, Contains("is truncated"));
  CHECK(by_name["deep"].state == wick::PluginState::LoadFailed);
  CHECK_THAT(by_name["deep"].reason, Contains("nested deeper than 64 levels"));
  // The same for configs: a FIFO as the config file, a deep key in config text.
  CHECK_THROWS_WITH(wick::apply_config_file(wick::default_config(), (dir / "fifo.wick-plugin.toml").string()),
                    Contains("not a regular file"));
  std::string deep = "[devices]\nx";
  for (int i = 0; i < 50000; ++i) deep += ".x";
  CHECK_THROWS_WITH(wick::apply_config_text(wick::default_config(), deep + " = 1\n", "deep.toml"),
                    Contains("deep.toml:2:") && Contains("nested deeper than 64 levels"));
  fs::remove_all(dir);
}

TEST_CASE("plugins in a directory every user may write are refused unless the config allows them",
          "[loader][hostile]") {
  const fs::path dir = fs::temp_directory_path() / ("wick-ww-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"libwick-fixture-good.so", "fixture-good.wick-plugin.toml"})
    fs::copy_file(fs::path(WICK_FIXTURE_DIR) / f, dir / f);
  fs::permissions(dir, fs::perms::all);  // 0777
  wick::Config cfg = wick::default_config();
  cfg.plugin_paths = {dir.string()};
  cfg.priority = {wick::DeviceEntry{"cpu", {}}};
  {
    const wick::PluginRegistry registry(cfg, kIsolated);
    const auto info = registry.find("fixture-good");
    REQUIRE(info != nullptr);
    CHECK(info->state == wick::PluginState::LoadFailed);
    CHECK_THAT(info->reason, Contains("writable by every user (mode 0777)") &&
                                 Contains("allow_world_writable"));
  }
  cfg.allow_world_writable = true;
  {
    const wick::PluginRegistry registry(cfg, kIsolated);
    CHECK(registry.find("fixture-good")->state == wick::PluginState::Usable);
  }
  CHECK(wick::apply_config_text(wick::default_config(), "[plugins]\nallow_world_writable = true\n", "f")
            .allow_world_writable);
  fs::remove_all(dir);
}

TEST_CASE("a plugin that crashes the process in ordinary use is named on stderr",
          "[loader][crash]") {
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: an op the fixture answers with SIGSEGV
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    wick::Config cfg = wick::default_config();
    cfg.plugin_paths = {WICK_CONF_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
    cfg.priority = {wick::DeviceEntry{"conf-fixture-crashy", {}}};
    cfg.log_level = "error";
    wick::Runtime rt(cfg, kIsolated);
    const wick::Tensor x = wick::Tensor::from_vector<float>({1, 2}, {2}, rt.default_device());
    (void)(-x);
    ::_exit(0);  // not reached
  }
  ::close(pipefd[1]);
  int status = 0;
  const std::string err = wick::test::drain_child(pipefd[0], pid, status);
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGSEGV);
  CHECK_THAT(err, Contains("wick: plugin 'conf-fixture-crashy' crashed with signal 11 (SEGV) in "
                           "op_execute"));
}

TEST_CASE("two runtimes of one process share a plugin initialized with the same options, and a "
          "third with other options is refused naming both",
          "[loader][shared]") {
  wick::Config cfg = wick::default_config();
  cfg.plugin_paths = {WICK_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  cfg.priority = {wick::DeviceEntry{"fixture-good", {}}};
  cfg.plugin_options["fixture-good"].values = {{"label", std::string("a")}};
  cfg.log_level = "error";
  wick::Runtime first(cfg, kIsolated);
  wick::Runtime second(cfg, kIsolated);  // the SDK used to answer "initialize called twice"
  REQUIRE(first.default_device().plugin_name() == "fixture-good");
  REQUIRE(second.default_device().plugin_name() == "fixture-good");
  const auto info = second.registry().find("fixture-good");
  REQUIRE(info != nullptr);
  CHECK(info->state == wick::PluginState::Usable);
  CHECK_THAT(info->reason, Contains("label: a") && Contains("shared with another runtime"));
  // One device, one set of buffers: a tensor made through one runtime works through the other.
  const wick::Tensor x = wick::Tensor::from_vector<float>({1, 2, 3}, {3}, first.default_device());
  const wick::Tensor y = wick::Tensor::full({3}, 10.0, wick::DType::F32, second.default_device());
  CHECK((x + y).to_vector<float>() == std::vector<float>{11, 12, 13});

  wick::Config other = cfg;
  other.plugin_options["fixture-good"].values = {{"label", std::string("b")}};
  const wick::PluginRegistry third(other, kIsolated);
  const auto refused = third.find("fixture-good");
  REQUIRE(refused != nullptr);
  CHECK(refused->state == wick::PluginState::Failed);
  CHECK_THAT(refused->reason, Contains("already initialized in this process") &&
                                  Contains("{label=\"a\"}") && Contains("{label=\"b\"}"));
}
