// Isolated plugins that recover: a child process that dies (killed between calls, crashing in a
// call, too late) is replaced on the next call and initialized with the same options; the buffers
// of the dead one are lost and say so, new ones work, and isolate_restarts bounds how often.
#include "isolation_test_support.hpp"

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

using namespace wick;
using namespace wick::test;
using Catch::Contains;

namespace {

const char* const kMarkerLibrary = "libwick-fixture-shutdown-marker.so";

std::string marker_config(const std::string& marker, const std::string& extra = "") {
  return "[plugins.fixture-shutdown-marker]\nisolate = true\nlabel = \"same options\"\nmarker = "
         "\"" +
         marker + "\"\n" + extra;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE(
    "an isolated plugin killed between calls restarts on the next call: new buffers work, "
    "old ones are lost",
    "[isolation][restart]") {
  const ScratchFile marker("restart-marker");
  auto rt = isolated_runtime(marker_config(marker.path()));
  const Device dev = rt->registry().find_device("fixture-shutdown-marker");
  REQUIRE(dev.valid());
  rt->set_strict(true);  // every op below runs in the plugin
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3}, dev);
  CHECK((a + a).to_vector<float>() == std::vector<float>{2, 4, 6});
  const pid_t first = plugin_host_pid(kMarkerLibrary);
  kill_and_wait(first);

  // The buffer lived in the killed process: reading it, or using it in an op, is an error naming
  // it, never its old contents or anyone else's.
  CHECK_THROWS_WITH(a.to_vector<float>(),
                    Contains("a buffer of 12 bytes on device 0 ('fixture host memory') of isolated "
                             "plugin 'fixture-shutdown-marker' is lost") &&
                        Contains("killed by signal 9 (SIGKILL") && Contains("allocate it again"));
  CHECK_THROWS_WITH((a + a).to_vector<float>(), Contains("is lost"));
  // New buffers live in the new process, which was initialized with the same options.
  Tensor b = Tensor::from_vector<float>({5, 6}, {2}, dev);
  CHECK((b + b).to_vector<float>() == std::vector<float>{10, 12});
  const pid_t second = plugin_host_pid(kMarkerLibrary);
  CHECK(second != first);
  CHECK(marker.text() == "initialize label: same options\ninitialize label: same options\n");
  a = Tensor();  // freeing a lost buffer is quiet
  CHECK(b.to_vector<float>() == std::vector<float>{5, 6});
}

TEST_CASE(
    "a crashing isolated plugin fails the call, restarts isolate_restarts times after a "
    "growing back-off, then says the restarts are used up",
    "[isolation][restart]") {
  auto rt = isolated_runtime(
      "[plugins.conf-fixture-crashy]\nisolate = true\nisolate_restarts = 2\n"
      "isolate_restart_backoff_ms = 300\n");
  const Device dev = rt->registry().find_device("conf-fixture-crashy");
  rt->set_strict(true);
  auto crash = [&](const std::string& then) {
    const Tensor x = Tensor::from_vector<float>({1, 2}, {2}, dev);
    CHECK_THROWS_WITH(x.neg().to_vector<float>(),
                      Contains("isolated plugin 'conf-fixture-crashy' crashed") &&
                          Contains("signal 11 (SIGSEGV") && Contains("in op_execute") &&
                          Contains(then));
  };
  // Each restart waits the back-off after the death, doubled each time: 300 ms, then 600 ms.
  auto works_after = [&](double at_least_s) {
    const auto t = std::chrono::steady_clock::now();
    const Tensor y = Tensor::from_vector<float>({1, 2}, {2}, dev);
    CHECK((y + y).to_vector<float>() == std::vector<float>{2, 4});
    CHECK(seconds_since(t) >= at_least_s);
  };
  crash(
      "the next call restarts it (restart 1 of 2, [plugins.conf-fixture-crashy] isolate_restarts)");
  works_after(0.28);
  crash("restart 2 of 2");
  works_after(0.58);
  crash("no restart is left ([plugins.conf-fixture-crashy] isolate_restarts = 2)");
  CHECK_THROWS_WITH(Tensor::from_vector<float>({1}, {1}, dev),
                    Contains("isolated plugin 'conf-fixture-crashy' cannot run buffer_allocate") &&
                        Contains("all 2 restarts") && Contains("are used up") &&
                        Contains("signal 11 (SIGSEGV"));
  // The rest of the program goes on.
  const Tensor c = Tensor::from_vector<float>({1, 2}, {2}, rt->cpu_device());
  CHECK((c + c).to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("isolate_restarts = 0 never restarts a crashed isolated plugin", "[isolation][restart]") {
  auto rt =
      isolated_runtime("[plugins.conf-fixture-crashy]\nisolate = true\nisolate_restarts = 0\n");
  const Device dev = rt->registry().find_device("conf-fixture-crashy");
  rt->set_strict(true);
  const Tensor x = Tensor::from_vector<float>({1, 2}, {2}, dev);
  CHECK_THROWS_WITH(x.neg().to_vector<float>(), Contains("no restart is left"));
  CHECK_THROWS_WITH(Tensor::from_vector<float>({1}, {1}, dev), Contains("all 0 restarts"));
}

TEST_CASE("an isolated plugin killed for being late is restarted on the next call",
          "[isolation][restart]") {
  auto rt = isolated_runtime(
      "[plugins.conf-fixture-crashy]\nisolate = true\nisolate_timeout_ms = 300\n"
      "isolate_restart_backoff_ms = 0\n");
  const Device dev = rt->registry().find_device("conf-fixture-crashy");
  rt->set_strict(true);
  const Tensor a = Tensor::from_vector<float>({1, 2}, {2}, dev);
  CHECK_THROWS_WITH((a - a).to_vector<float>(),
                    Contains("did not answer within 300 ms") && Contains("restart 1 of 3"));
  const Tensor b = Tensor::from_vector<float>({3, 4}, {2}, dev);
  CHECK((b + b).to_vector<float>() == std::vector<float>{6, 8});
  CHECK_THROWS_WITH(a.to_vector<float>(), Contains("is lost"));
}

TEST_CASE("an isolated fallback CPU killed between calls comes back for new tensors",
          "[isolation][restart]") {
  auto rt = isolated_runtime("[plugins.cpu-onednn]\nisolate = true\n");
  const Device cpu = rt->cpu_device();
  REQUIRE(cpu.valid());
  REQUIRE(cpu.name().rfind("cpu-onednn", 0) == 0);
  REQUIRE(plugin_info(*rt, "cpu-onednn").isolated);
  const Tensor m = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, cpu);
  CHECK(m.matmul(m).to_vector<float>() == std::vector<float>{7, 10, 15, 22});
  kill_and_wait(plugin_host_pid("libwick-cpu-onednn.so"));

  CHECK_THROWS_WITH(m.matmul(m).to_vector<float>(), Contains("is lost"));
  const Tensor n = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, cpu);
  CHECK(n.matmul(n).to_vector<float>() == std::vector<float>{7, 10, 15, 22});
  // The crashy fixture's device declines matmul; the fallback that runs it is the restarted CPU.
  const Device crashy = rt->registry().find_device("conf-fixture-crashy");
  const Tensor k = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, crashy);
  CHECK(k.matmul(k).to_vector<float>() == std::vector<float>{7, 10, 15, 22});
}
