// The host trusts nothing an isolated plugin's child sends. A hostile wick-plugin-host
// (tests/fixtures/hostile_plugin_host.cpp, named by WICK_PLUGIN_HOST) relays the real call server
// but breaks the wire protocol at one call: huge length fields, short, truncated or extra replies,
// garbage, a death in the middle of a reply, absurd counts. Each time the call fails with an error
// naming the plugin, the call and what was wrong; nothing crashes, nothing large is allocated, and
// the next call restarts the plugin in a child that behaves (WICK_TEST_HOSTILE_ONCE).
#include "isolation_test_support.hpp"

#include <chrono>
#include <string>
#include <vector>

using namespace wick;
using namespace wick::test;
using Catch::Contains;

namespace {

// The hostile host for one test: misbehaving as `spec` says, in its first process only.
struct Hostile {
  explicit Hostile(const std::string& spec)
      : host("WICK_PLUGIN_HOST", WICK_HOSTILE_PLUGIN_HOST),
        how("WICK_TEST_HOSTILE", spec),
        once("hostile-once"),
        once_env("WICK_TEST_HOSTILE_ONCE", once.path()) {}
  ScopedEnv host;
  ScopedEnv how;
  ScratchFile once;
  ScopedEnv once_env;
};

// conf-fixture-crashy isolated, with a deadline, so that a host that waits for bytes that never
// come fails the test instead of hanging it.
std::unique_ptr<Runtime> hostile_runtime() {
  return isolated_runtime(
      "[plugins.conf-fixture-crashy]\nisolate = true\nisolate_timeout_ms = 5000\n"
      "isolate_restart_backoff_ms = 0\n");
}

Device crashy(Runtime& rt) {
  rt.set_strict(true);
  const Device d = rt.registry().find_device("conf-fixture-crashy");
  REQUIRE(d.valid());
  return d;
}

// After the hostile call: a new child serves, and new tensors work.
void recovers(const Device& dev) {
  const Tensor b = Tensor::from_vector<float>({3, 4}, {2}, dev);
  CHECK((b + b).to_vector<float>() == std::vector<float>{6, 8});
}

const std::string kBroke = "isolated plugin 'conf-fixture-crashy' broke the wire protocol (";

// The peak memory of this process after a runtime like the tests' own has loaded every plugin (a
// first one maps libraries and their data, tens of MB) and gone; a 4 GiB allocation would add
// 4 GiB to it.
uint64_t peak_after_warm_up() {
  (void)plugin_info(*isolated_runtime(""), "cpu-onednn");
  return peak_rss_bytes();
}
constexpr uint64_t kSmall = uint64_t(256) << 20;

}  // namespace

TEST_CASE("a reply whose length field says 4 GiB is refused at once, before anything is allocated",
          "[isolation][hostile]") {
  const uint64_t peak_before = peak_after_warm_up();
  const Hostile hostile("huge-length:buffer_read");
  auto rt = hostile_runtime();
  const Device dev = crashy(*rt);
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, dev);
  const auto t = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(a.to_vector<float>(),
                    Contains(kBroke + "a reply of 4294967296 bytes, at most") &&
                        Contains("in buffer_read") && Contains("its process was killed"));
  CHECK(peak_rss_bytes() - peak_before < kSmall);
  // Refused on reading the length, not after the 5 s deadline.
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count() < 4.0);
  recovers(dev);
}

TEST_CASE("a hello whose length field says 4 GiB fails the plugin's loading with the reason",
          "[isolation][hostile]") {
  const uint64_t peak_before = peak_after_warm_up();
  const Hostile hostile("huge-length:hello");
  auto rt = hostile_runtime();
  const PluginInfo info = plugin_info(*rt, "conf-fixture-crashy");
  CHECK(info.state == PluginState::LoadFailed);
  CHECK_THAT(info.reason, Contains("sent a hello of 4294967296 bytes"));
  CHECK(peak_rss_bytes() - peak_before < kSmall);
}

TEST_CASE("short, truncated, extra and garbage replies are protocol errors naming the call",
          "[isolation][hostile]") {
  SECTION("a reply too short for its sequence number") {
    const Hostile hostile("short:buffer_allocate");
    auto rt = hostile_runtime();
    const Device dev = crashy(*rt);
    CHECK_THROWS_WITH(Tensor::from_vector<float>({1, 2}, {2}, dev),
                      Contains(kBroke + "a field of 8 bytes where 6 are left)") &&
                          Contains("in buffer_allocate"));
    recovers(dev);
  }
  SECTION("a read reply with fewer bytes than asked for") {
    const Hostile hostile("truncated:buffer_read");
    auto rt = hostile_runtime();
    const Device dev = crashy(*rt);
    const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, dev);
    CHECK_THROWS_WITH(
        a.to_vector<float>(),
        Contains(kBroke + "a read of 16 bytes answered with 12)") && Contains("in buffer_read"));
    recovers(dev);
  }
  SECTION("a reply sent twice") {
    const Hostile hostile("extra:buffer_write");
    auto rt = hostile_runtime();
    const Device dev = crashy(*rt);
    const Tensor a = Tensor::from_vector<float>({1, 2}, {2}, dev);  // the first reply is right
    // The second is found before the next request goes, or as the answer to it: never as data.
    CHECK_THROWS_WITH(a.to_vector<float>(),
                      Contains(kBroke) && (Contains("bytes nobody asked for, after its reply to "
                                                    "buffer_write") ||
                                           Contains("the reply to request")));
    recovers(dev);
  }
  SECTION("a framed message of noise") {
    const Hostile hostile("garbage:op_execute");
    auto rt = hostile_runtime();
    const Device dev = crashy(*rt);
    const Tensor a = Tensor::from_vector<float>({1, 2}, {2}, dev);
    CHECK_THROWS_WITH((a + a).to_vector<float>(), Contains(kBroke) && Contains("in op_execute"));
    recovers(dev);
  }
  SECTION("noise without a frame") {
    const Hostile hostile("noise:buffer_read");
    auto rt = hostile_runtime();
    const Device dev = crashy(*rt);
    const Tensor a = Tensor::from_vector<float>({1, 2}, {2}, dev);
    CHECK_THROWS_WITH(a.to_vector<float>(),
                      Contains(kBroke + "a reply of") && Contains("in buffer_read"));
    recovers(dev);
  }
}

TEST_CASE("a child that dies in the middle of a reply fails that call, and the next one restarts it",
          "[isolation][hostile]") {
  const Hostile hostile("die:buffer_read");
  auto rt = hostile_runtime();
  const Device dev = crashy(*rt);
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, dev);
  CHECK_THROWS_WITH(
      a.to_vector<float>(),
      Contains("isolated plugin 'conf-fixture-crashy' crashed: its process was killed "
               "by signal 9 (SIGKILL") &&
          Contains("in buffer_read") && Contains("restart 1 of 3"));
  recovers(dev);
  CHECK_THROWS_WITH(a.to_vector<float>(), Contains("is lost"));
}

TEST_CASE(
    "absurd counts and string lengths from the child fail its initialize, never an allocation",
    "[isolation][hostile]") {
  const uint64_t peak_before = peak_after_warm_up();
  SECTION("2^40 devices") {
    const Hostile hostile("many-devices:initialize");
    auto rt = hostile_runtime();
    const PluginInfo info = plugin_info(*rt, "conf-fixture-crashy");
    CHECK(info.state == PluginState::Failed);
    CHECK_THAT(info.reason, Contains(kBroke + "1099511627776 devices, at most 1024)") &&
                                Contains("in initialize"));
  }
  SECTION("a device name of 2^60 bytes") {
    const Hostile hostile("huge-string:device_get_props");
    auto rt = hostile_runtime();
    const PluginInfo info = plugin_info(*rt, "conf-fixture-crashy");
    CHECK(info.state == PluginState::Failed);
    CHECK_THAT(info.reason, Contains(kBroke + "a field of 1152921504606846976 bytes") &&
                                Contains("in device_get_props"));
  }
  CHECK(peak_rss_bytes() - peak_before < kSmall);
}
