// How the host calls a plugin from threads (issue 21): one lock per device, not per plugin; no lock
// for a device that declares WICK_DEVICE_CAP_CONCURRENT; op_supports never waits for an op. The
// fixture-threads plugin (tests/fixtures/fixture_threads.cpp) counts the calls in flight; each of
// its FILLs waits up to 300 ms for company, so the counts do not depend on timing.
#include "test_support.hpp"

#include <wick/direct.hpp>
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using wick::Device;
using wick::DType;
using wick::Tensor;

struct Counts {
  int device0 = 0, device1 = 0, plugin = 0;
  bool supports_while_executing = false;
};

// The fixture's counters since the last call (and resets them).
Counts take_counts() {
  const std::string lib = std::string(WICK_THREADS_FIXTURE_DIR) + "/libwick-fixture-threads.so";
  void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD);  // the copy the runtime loaded
  REQUIRE(handle != nullptr);
  using Stats = void (*)(int*, int);
  auto stats = reinterpret_cast<Stats>(::dlsym(handle, "fixture_threads_stats"));
  REQUIRE(stats != nullptr);
  int out[4] = {};
  stats(out, 1);
  ::dlclose(handle);
  return {out[0], out[1], out[2], out[3] != 0};
}

// A runtime over the fixture; `concurrent` is the device index it declares concurrent (-1: none).
std::unique_ptr<wick::Runtime> threads_runtime(int64_t concurrent) {
  wick::Config c = wick::default_config();
  c.plugin_paths = {WICK_THREADS_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.priority = {wick::DeviceEntry{"fixture-threads", {}}};
  c.plugin_options["fixture-threads"].values = {{"concurrent", concurrent}};
  c.log_level = "error";
  return std::make_unique<wick::Runtime>(c, wick::RegistryOptions{false, false});
}

// Runs `calls` FILLs on each device of `devices` (one thread per entry) and checks the values.
void fill_from_threads(const std::vector<Device>& devices, int calls) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < devices.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < calls; ++i) {
        const double value = static_cast<double>(t * 100 + static_cast<size_t>(i));
        const Tensor x = Tensor::full({4}, value, DType::F32, devices[t]);
        if (x.to_vector<float>() != std::vector<float>(4, static_cast<float>(value))) ++wrong;
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(wrong == 0);
}

}  // namespace

// One Runtime for the whole file: the SDK's plugin instance is a singleton per library, so a
// second Runtime over the same fixture could not initialize it again while the first lives.
TEST_CASE("calls on one device are serialised, calls on two devices of one plugin overlap, and "
          "op_supports never waits for an op",
          "[concurrency]") {
  auto rt = threads_runtime(-1);
  const Device d0 = rt->registry().find_device("fixture-threads:0");
  const Device d1 = rt->registry().find_device("fixture-threads:1");
  REQUIRE(d0.valid());
  REQUIRE(d1.valid());
  take_counts();

  SECTION("two threads on two devices: both devices busy at once, each device one call at a time") {
    fill_from_threads({d0, d1}, 3);
    const Counts c = take_counts();
    CHECK(c.device0 == 1);
    CHECK(c.device1 == 1);
    CHECK(c.plugin == 2);  // one lock per plugin (the old host) never lets this reach 2
  }
  SECTION("three threads on one device that did not declare itself concurrent: one at a time") {
    fill_from_threads({d0, d0, d0}, 2);
    const Counts c = take_counts();
    CHECK(c.device0 == 1);
    CHECK(c.plugin == 1);
  }
  SECTION("op_supports is answered while an op runs on the same device") {
    const Tensor out = Tensor::empty({4}, DType::F32, d0);  // allocated before the op starts
    std::thread op([&] { (void)Tensor::full({4}, 1.0, DType::F32, d0); });
    // The op waits 300 ms for company that never comes; ask meanwhile (a host that held the
    // device's lock across op_supports would answer only after the op).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    wick_fill_params p{sizeof(wick_fill_params), 2.0, 0};
    CHECK(wick::query_op_direct(d0, WICK_OP_FILL, &p, {}, {out}) == WICK_SUPPORT_YES);
    op.join();
    CHECK(take_counts().supports_while_executing);
  }
}

TEST_CASE("a device that declares WICK_DEVICE_CAP_CONCURRENT takes calls from several threads at "
          "once, and its sibling stays serialised",
          "[concurrency]") {
  // The first test case's runtime is gone: the plugin was shut down and can start again.
  auto rt = threads_runtime(0);
  const Device d0 = rt->registry().find_device("fixture-threads:0");
  const Device d1 = rt->registry().find_device("fixture-threads:1");
  REQUIRE((d0.valid() && d1.valid()));
  CHECK((d0.capabilities() & WICK_DEVICE_CAP_CONCURRENT) != 0);
  CHECK((d1.capabilities() & WICK_DEVICE_CAP_CONCURRENT) == 0);
  take_counts();
  fill_from_threads({d0, d0, d0}, 3);
  CHECK(take_counts().device0 >= 2);
  fill_from_threads({d1, d1, d1}, 2);
  CHECK(take_counts().device1 == 1);
}

TEST_CASE("cpu-onednn declares its device concurrent, and eight threads running matmuls, softmax "
          "and convolutions on it at once get the single-threaded results",
          "[concurrency][cpu]") {
  const Device cpu = wick::test::cpu();
  CHECK((cpu.capabilities() & WICK_DEVICE_CAP_CONCURRENT) != 0);
  // Reference values from one thread first, then the same work from eight at once.
  auto work = [&](uint64_t seed) {
    const Tensor a = Tensor::rand({48, 64}, -1.0, 1.0, DType::F32, cpu, seed);
    const Tensor b = Tensor::rand({64, 32}, -1.0, 1.0, DType::F32, cpu, seed + 1);
    const Tensor x = Tensor::rand({2, 3, 12, 12}, -1.0, 1.0, DType::F32, cpu, seed + 2);
    const Tensor w = Tensor::rand({4, 3, 3, 3}, -1.0, 1.0, DType::F32, cpu, seed + 3);
    std::vector<float> out = a.matmul(b).softmax(-1).to_vector<float>();
    const std::vector<float> y = x.conv(w).to_vector<float>();
    out.insert(out.end(), y.begin(), y.end());
    return out;
  };
  std::vector<std::vector<float>> want;
  for (uint64_t t = 0; t < 8; ++t) want.push_back(work(10 * t));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i)
        if (work(10 * t) != want[t]) ++wrong;
    });
  for (std::thread& th : threads) th.join();
  CHECK(wrong == 0);
}
