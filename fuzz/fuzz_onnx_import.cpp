// libFuzzer entry: Wick::onnx's importer end to end — a model and its inputs read,
// every node lowered onto Wick ops and run on the cpu-onednn plugin, the outputs read back. Each
// input must end in results or in an exception (the worker turns those into a per-case SKIP,
// UNSUPPORTED or FAIL); a crash, an over-read, a division by zero or other undefined behaviour in
// the importer is a bug. Only the importer is instrumented: the core and the plugin come from the
// main build (WICK_MAIN_BUILD), so a finding points at the importer's own code.
//
// Input layout: records of [u32 little-endian length][bytes]: model.onnx, then input_0.pb,
// input_1.pb, ... (fuzz/make_onnx_seeds.py writes the seeds from the node-test folders).
#include <wick/onnx/lower.hpp>
#include <wick/onnx/proto.hpp>

#include <wick/config.hpp>
#include <wick/registry.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace onnx = wick::onnx;

#ifndef WICK_FUZZ_PLUGIN_DIR
#error "WICK_FUZZ_PLUGIN_DIR: the main build's plugin directory"
#endif

// Bounded work per input: big tensors make slow runs, not findings. A lowering that asks for more
// gets a null allocation (an error), not an out-of-memory report.
// intercept_tls_get_addr=0: with clang 14's runtime on glibc 2.36, LeakSanitizer's record of the
// dynamic TLS of a thread the plugin starts is a bogus range, and the leak check at exit crashes
// reading it ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal error") after every
// run. Without it, dynamic TLS is not scanned for pointers: a leak check that can only be stricter.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=256:intercept_tls_get_addr=0";
}

namespace {

constexpr int64_t kMaxInputElements = 1 << 16;

wick::Device& device() {
  // Never destroyed: the plugin's own statics (the SDK's instance of it) are registered for
  // destruction at exit after this function's statics, so they run first; a static registry
  // destroyed after them would shut the plugin down again (a double delete in the plugin).
  static wick::PluginRegistry* registry = nullptr;
  static wick::Device dev;
  if (!dev.valid()) {
    setenv("OMP_NUM_THREADS", "1", 0);  // one input at a time: no thread pool to wait on
    // Tight limits, not the defaults sized for real models: the largest tensor of the ONNX node
    // tests has 2^20 elements, and no node test loops 10000 times.
    onnx::set_import_limits({.max_elements = int64_t{1} << 20,
                             .max_host_elements = int64_t{1} << 22,
                             .max_loop_steps = 10000});
    wick::Config config = wick::default_config();
    config.plugin_paths = {WICK_FUZZ_PLUGIN_DIR};
    config.disabled_plugins = {"opencl", "cuda"};
    config.log_level = "off";
    registry = new wick::PluginRegistry(config, wick::RegistryOptions{.use_environment = false, .use_install_dir = false});
    dev = registry->find_device("cpu-onednn");
    if (!dev.valid()) {
      std::fprintf(stderr, "fuzz_onnx_import: cpu-onednn is not usable from %s\n", WICK_FUZZ_PLUGIN_DIR);
      std::abort();
    }
  }
  return dev;
}

std::vector<std::pair<const uint8_t*, size_t>> records(const uint8_t* data, size_t size) {
  std::vector<std::pair<const uint8_t*, size_t>> out;
  while (size >= 4) {
    uint32_t n;
    std::memcpy(&n, data, 4);
    data += 4;
    size -= 4;
    if (n > size) n = static_cast<uint32_t>(size);
    out.emplace_back(data, n);
    data += n;
    size -= n;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto recs = records(data, size);
  if (recs.empty()) return 0;
  wick::Device& dev = device();
  try {
    const onnx::ModelProto model = onnx::parse_model(recs[0].first, recs[0].second, "model.onnx");
    onnx::OnnxLowering low(dev, model.opset);
    for (const onnx::TensorProto& init : model.graph.initializers) low.set(init.name, onnx::upload_proto(init, dev));
    size_t k = 1;
    for (const onnx::ValueInfo& v : model.graph.inputs) {
      if (low.has(v.name) || k >= recs.size()) continue;
      const onnx::TensorProto t = onnx::parse_tensor(recs[k].first, recs[k].second, "input.pb");
      ++k;
      int64_t n = 1;
      for (int64_t d : t.dims) {
        if (d < 0 || d > kMaxInputElements) return 0;
        n *= d;
        if (n > kMaxInputElements) return 0;
      }
      low.set(v.name, onnx::upload_proto(t, dev));
    }
    for (const onnx::NodeProto& node : model.graph.nodes) low.run(node);
    for (const onnx::ValueInfo& v : model.graph.outputs) {
      if (!low.has(v.name)) continue;
      const wick::Tensor t = low.contiguous(low.get(v.name));
      std::vector<unsigned char> raw(static_cast<size_t>(t.numel()) * wick::dtype_size(t.dtype()));
      if (!raw.empty()) t.copy_to_host(raw.data(), raw.size());
    }
  } catch (const std::exception&) {
    // NotImportable, Declined, ExecuteFailed, ReadError, wick::Error, std::bad_alloc, ...: each a
    // per-case result in the worker.
  }
  return 0;
}
