// Memory limits: a tensor beyond the process's address-space limit (RLIMIT_AS, `ulimit -v`) is a
// wick::Error naming its size on every device, never an abort (PoCL's "device" memory is host
// memory, and PoCL asserts when it cannot map a buffer), and the process works on; the OpenCL
// buffer pool's bound ([plugins.opencl] pool_mb). Every runtime starts in a child process (see
// in_child): PoCL's threads do not survive fork.
#include "address_limit.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace wick;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::unique_ptr<Runtime> runtime_with(
    std::vector<std::pair<std::string, OptionValue>> opencl = {}) {
  Config c = default_config();
  c.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  c.plugin_options["opencl"].values = std::move(opencl);
  return std::make_unique<Runtime>(c, RegistryOptions{false, false});
}

// The plugin's first device, or why there is none: "unavailable: ..." when the plugin was not
// built or found no device (a skip), anything else a failure.
std::string device_of(Runtime& rt, const std::string& plugin, Device& device) {
  const auto info = rt.registry().find(plugin);
  if (info == nullptr || info->state == PluginState::NotFound)
    return "unavailable: the " + plugin + " plugin was not built";
  if (info->state == PluginState::Unavailable) return "unavailable: " + info->reason;
  if (info->state != PluginState::Usable)
    return plugin + " is " + to_string(info->state) + ": " + info->reason;
  if (plugin == "opencl" && info->reason.find("Portable Computing Language") == std::string::npos)
    return "unavailable: the OpenCL device is not PoCL, whose memory is the host's (" +
           info->reason + ")";
  device = rt.registry().find_device(plugin);
  return device.valid() ? "" : plugin + " has no device";
}

// A small op on `d`: "10" when the device still computes.
std::string small_sum(const Device& d, const Device& cpu) {
  std::ostringstream s;
  s << (Tensor::arange(0, 4, 1, DType::F32, d) + 1.0).sum().to(cpu).item<float>();
  return s.str();
}

// `plugin`'s device in a new runtime, then an address space that may grow by only `headroom`: ""
// or why not (as device_of). The kernels the tests run are built first: PoCL compiles a kernel on
// its first use, and LLVM maps a few hundred MB to do it.
std::string start_limited(std::unique_ptr<Runtime>& rt, const std::string& plugin,
                          uint64_t headroom, Device& d) {
  rt = runtime_with();
  if (std::string why = device_of(*rt, plugin, d); !why.empty()) return why;
  small_sum(d, rt->cpu_device());
  Tensor::zeros({int64_t{1} << 20}, DType::U8, d).sum().to(rt->cpu_device());
  return test::limit_address_space(headroom) ? "" : "setrlimit failed";
}

// Skips (visibly) where the plugin genuinely cannot run here; true when it did.
bool ran(const std::string& plugin, const std::string& got) {
  if (got.rfind("unavailable: ", 0) != 0) return true;
  WARN("skipped " << plugin << ": " << got);
  return false;
}

}  // namespace

TEST_CASE(
    "a tensor larger than the address space left is a wick::Error naming its size on cpu and "
    "opencl, and the device computes afterwards",
    "[memory][opencl]") {
  if (test::kSanitized) {
    WARN("skipped: RLIMIT_AS cannot bound a sanitizer's address space");
    return;
  }
  // The case: the address-space limit leaves 1.5 GiB, the tensor wants 1.8 (below PoCL's
  // CL_DEVICE_MAX_MEM_ALLOC_SIZE, so the plugin's older checks let it through).
  const int64_t bytes = static_cast<int64_t>(1843 * kMiB);
  for (const char* plugin : {"cpu-onednn", "opencl"}) {
    INFO(plugin);
    const std::string got = test::in_child([&] {
      std::unique_ptr<Runtime> rt;
      Device d;
      if (std::string why = start_limited(rt, plugin, 1536 * kMiB, d); !why.empty()) return why;
      std::string error = "no error";
      try {
        // zeros, not empty: writing it is where PoCL maps the buffer, and aborted.
        const Tensor t = Tensor::zeros({bytes}, DType::U8, d);
        error = "allocated " + std::to_string(t.numel()) + " bytes";
      } catch (const Error& e) {
        error = std::string("error: ") + e.what();
      }
      return error + "; then " + small_sum(d, rt->cpu_device());
    });
    if (!ran(plugin, got)) continue;
    CHECK_THAT(got, Catch::StartsWith("error: ") && Catch::Contains(std::to_string(bytes)) &&
                        Catch::EndsWith("; then 10"));
    if (std::string(plugin) == "opencl")
      CHECK_THAT(got, Catch::Contains("RLIMIT_AS") && Catch::Contains("opencl"));
  }
}

TEST_CASE(
    "opencl counts the buffers it has handed out but PoCL has not yet mapped against the "
    "address-space limit",
    "[memory][opencl]") {
  if (test::kSanitized) {
    WARN("skipped: RLIMIT_AS cannot bound a sanitizer's address space");
    return;
  }
  // 768 MiB held untouched (PoCL maps a buffer on its first use) and 1 GiB more do not fit in
  // 1.5 GiB; the 1 GiB alone does once the first is gone.
  const int64_t first = static_cast<int64_t>(768 * kMiB),
                second = static_cast<int64_t>(1024 * kMiB);
  const std::string got = test::in_child([&] {
    std::unique_ptr<Runtime> rt;
    Device d;
    if (std::string why = start_limited(rt, "opencl", 1536 * kMiB, d); !why.empty()) return why;
    std::string out;
    {
      const Tensor held = Tensor::empty({first}, DType::U8, d);
      try {
        const Tensor more = Tensor::zeros({second}, DType::U8, d);
        out = "second allocated";
      } catch (const Error& e) {
        out = std::string("second: error: ") + e.what();
      }
      // Reading the held tensor (where PoCL maps it, if it has not yet) works: it was counted.
      const int64_t sum = held.sum().to(rt->cpu_device()).to(DType::I64).item<int64_t>();
      out += sum >= 0 && sum <= 255 * first ? "; held is readable"
                                            : "; held sums to " + std::to_string(sum);
    }
    const Tensor alone = Tensor::zeros({second}, DType::U8, d);
    return out + "; alone " + std::to_string(alone.numel()) + "; then " +
           small_sum(d, rt->cpu_device());
  });
  if (!ran("opencl", got)) return;
  CHECK_THAT(got, Catch::StartsWith("second: error: ") && Catch::Contains(std::to_string(second)) &&
                      Catch::Contains("RLIMIT_AS"));
  CHECK_THAT(got,
             Catch::EndsWith("; held is readable; alone " + std::to_string(second) + "; then 10"));
}

TEST_CASE("the opencl option pool_mb refuses a value that is not a size in MiB, naming the option",
          "[memory][opencl][config]") {
  for (const auto& bad : std::vector<std::pair<OptionValue, std::string>>{
           {int64_t{-1}, "option 'pool_mb' must be a size in MiB >= 0, got -1"},
           {std::string("64"), "option 'pool_mb' must be an integer"}}) {
    // Named references, not a structured binding: clang 14 (the sanitizer builds) cannot capture
    // a binding in a lambda.
    const OptionValue& value = bad.first;
    const std::string& why = bad.second;
    const std::string got = test::in_child([&] {
      auto rt = runtime_with({{"pool_mb", value}});
      const auto info = rt->registry().find("opencl");
      if (info == nullptr || info->state == PluginState::NotFound)
        return std::string("unavailable: the opencl plugin was not built");
      return std::string(to_string(info->state)) + ": " + info->reason;
    });
    if (!ran("opencl", got)) return;
    CHECK_THAT(got, Catch::StartsWith(to_string(PluginState::Failed)) && Catch::Contains(why));
  }
}

TEST_CASE(
    "the opencl option pool_mb bounds the bytes of freed buffers kept for reuse, and 0 keeps none",
    "[memory][opencl][config]") {
  // Observable on PoCL, whose buffers are host memory: a freed buffer the pool keeps stays mapped,
  // one it does not is unmapped once the queue has run.
  const auto unmapped_after_free = [](std::optional<int64_t> pool_mb, int64_t tensor_mb) {
    return test::in_child([=] {
      std::vector<std::pair<std::string, OptionValue>> options;
      if (pool_mb) options.emplace_back("pool_mb", *pool_mb);
      auto rt = runtime_with(options);
      Device d;
      if (std::string why = device_of(*rt, "opencl", d); !why.empty()) return why;
      const int64_t bytes = tensor_mb * static_cast<int64_t>(kMiB);
      uint64_t before = 0;
      std::string sum;
      {
        const Tensor t = Tensor::full({bytes}, 1.0, DType::U8, d);
        sum = std::to_string(t.sum().to(DType::I64).to(rt->cpu_device()).item<int64_t>());
        before = test::mapped_bytes();
      }
      d.synchronize();
      // PoCL unmaps a released buffer on its own thread, a moment after the queue has drained.
      const auto unmapped = [&] {
        const uint64_t after = test::mapped_bytes();
        return before > after && before - after >= static_cast<uint64_t>(bytes);
      };
      for (int waited_ms = 0; waited_ms < 2000 && !unmapped(); waited_ms += 10) ::usleep(10000);
      return std::string(unmapped() ? "unmapped" : "kept") + ", sum " + sum;
    });
  };
  const std::string sum64 = ", sum " + std::to_string(64 * kMiB);
  const std::string by_default = unmapped_after_free(std::nullopt, 64);
  if (!ran("opencl", by_default)) return;
  if (test::kSanitized) {
    // Its allocator keeps freed memory mapped (ASan's quarantine): only the results are checked.
    WARN("a sanitizer's allocator hides what the pool keeps: results checked only");
    for (const std::optional<int64_t> mb :
         std::initializer_list<std::optional<int64_t>>{std::nullopt, 0})
      CHECK_THAT(unmapped_after_free(mb, 64), Catch::EndsWith(sum64));
    return;
  }
  CHECK(by_default == "kept" + sum64);
  CHECK(unmapped_after_free(0, 64) == "unmapped" + sum64);
  CHECK(unmapped_after_free(32, 64) == "unmapped" + sum64);
  CHECK(unmapped_after_free(128, 64) == "kept" + sum64);
}
