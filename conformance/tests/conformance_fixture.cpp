// conformance_fixture.cpp — the one source of the conformance suite's fixture plugins, each
// compiled with one CONF_FIXTURE_<VARIANT> definition:
//
//   CONF_FIXTURE_CRASHY   a host-memory device running copy, fill and add correctly (f32, any
//                         strides); neg kills the process with SIGSEGV; sub never returns
//   CONF_FIXTURE_DECLINE  the same device, but op_supports declines every op
//   CONF_FIXTURE_OOB      the same device, but add also writes the 4 floats after its output (an
//                         out-of-bounds write that stays inside the buffer the host gave it)
//   CONF_FIXTURE_SUPPORTS_THROWS  the same device, but op_supports throws when asked about neg
//   CONF_FIXTURE_SHORT_WRITE  the same device, but buffer_write copies only the first half of
//                         the bytes it is given (and says it succeeded)
//   CONF_FIXTURE_LEAKY    the same device, but buffer_free keeps every buffer; with option
//                         report_free_memory = true it plays a device with memory of its own (no
//                         HOST_MEMORY capability) and reports 1 GiB of memory and what is left
//   CONF_FIXTURE_SLOW_FILL  the same device, but fill of a 0-d output takes 3 s
//   CONF_FIXTURE_BAD_PROPS  the same device, with one property wrong by option garbage: "kind"
//                         (kind 42), "caps" (an undefined capability bit), "free" (free memory
//                         above the total) or "manifest" (kind gpu; the manifest says other)
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#ifndef CONF_FIXTURE_NAME
#error "CONF_FIXTURE_NAME must name the fixture plugin"
#endif

namespace {

struct HostDevice final : wick_device {};
struct HostBuffer final : wick_buffer {
  std::unique_ptr<unsigned char[]> bytes;
};

float* at(const wick_tensor_desc& t, int64_t index) {
  return reinterpret_cast<float*>(static_cast<HostBuffer*>(t.buffer)->bytes.get() + t.byte_offset) + index;
}

constexpr uint64_t kGiB = uint64_t{1} << 30;

class FixturePlugin final : public wick::sdk::Plugin {
 public:
  wick::sdk::InitResult initialize([[maybe_unused]] wick::sdk::Options& options) override {
#ifdef CONF_FIXTURE_LEAKY
    report_free_ = options.get_bool("report_free_memory").value_or(false);
#endif
#ifdef CONF_FIXTURE_BAD_PROPS
    garbage_ = options.get_string("garbage").value_or("");
#endif
    return {{&device_}, ""};
  }
  wick_device_props properties(const wick_device* /*device*/) override {
    wick_device_props p{};
    p.name = "conformance fixture (" CONF_FIXTURE_NAME ")";
    p.kind = WICK_DEVICE_KIND_OTHER;
    p.capabilities = WICK_DEVICE_CAP_HOST_MEMORY;
    if (report_free_) {
      p.memory_bytes = kGiB;
      p.capabilities = 0;
    }
    if (garbage_ == "kind") p.kind = static_cast<wick_device_kind>(42);
    if (garbage_ == "caps") p.capabilities |= uint64_t{1} << 40;
    if (garbage_ == "free") p.memory_bytes = 1000;
    if (garbage_ == "manifest") p.kind = WICK_DEVICE_KIND_GPU;
    return p;
  }
  std::optional<uint64_t> free_memory(const wick_device* /*device*/) override {
    if (garbage_ == "free") return 2000;
    if (report_free_) return kGiB - std::min(kGiB, kept_bytes_.load());
    return std::nullopt;
  }
  wick_buffer* allocate(wick_device* device, uint64_t size) override {
    auto b = std::make_unique<HostBuffer>();
    b->device = device;
    b->size = size;
    b->bytes.reset(new unsigned char[size == 0 ? 1 : size]);
    kept_bytes_ += size;
    return b.release();
  }
#ifdef CONF_FIXTURE_LEAKY
  void free(wick_buffer* /*buffer*/) noexcept override {}  // the leak the check must see
#else
  void free(wick_buffer* buffer) noexcept override {
    kept_bytes_ -= buffer->size;
    delete buffer;
  }
#endif
  void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) override {
#ifdef CONF_FIXTURE_SHORT_WRITE
    size /= 2;  // the short write the check must name as such
#endif
    std::memcpy(static_cast<HostBuffer*>(dst)->bytes.get() + offset, src, size);
  }
  void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) override {
    std::memcpy(dst, static_cast<const HostBuffer*>(src)->bytes.get() + offset, size);
  }

  wick_support supports(const wick_device* /*device*/, const wick_op_desc& op) override {
#ifdef CONF_FIXTURE_DECLINE
    (void)op;
    return WICK_SUPPORT_NO_OP;
#else
#ifdef CONF_FIXTURE_SUPPORTS_THROWS
    if (op.op == WICK_OP_NEG) throw std::runtime_error("fixture: supports() has a bug for neg");
#endif
    const size_t ins = op.op == WICK_OP_FILL ? 0 : op.op == WICK_OP_ADD || op.op == WICK_OP_SUB ? 2 : 1;
    switch (op.op) {
      case WICK_OP_COPY: case WICK_OP_FILL: case WICK_OP_ADD: case WICK_OP_SUB: case WICK_OP_NEG: break;
      default: return WICK_SUPPORT_NO_OP;
    }
    if (op.num_inputs != ins || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
    for (size_t i = 0; i < op.num_inputs; ++i) {
      if (op.inputs[i].dtype != WICK_DTYPE_F32) return WICK_SUPPORT_NO_DTYPE;
    }
    return op.outputs[0].dtype == WICK_DTYPE_F32 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
#endif
  }

  void execute(wick_device* /*device*/, const wick_op_desc& op) override {
    const wick_tensor_desc& out = op.outputs[0];
    if (op.op == WICK_OP_NEG) std::raise(SIGSEGV);  // the crash the suite must survive
#ifdef CONF_FIXTURE_OOB
    if (op.op == WICK_OP_ADD) {  // a contiguous output's end, and 4 floats beyond it
      int64_t n = 1;
      for (int d = 0; d < out.rank; ++d) n *= out.shape[d];
      const uint64_t end = out.byte_offset + static_cast<uint64_t>(n) * sizeof(float);
      if (end + 4 * sizeof(float) <= out.buffer->size)
        for (int k = 0; k < 4; ++k) *at(out, n + k) = 12345.0f;
    }
#endif
    if (op.op == WICK_OP_SUB) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the hang it must survive
    }
#ifdef CONF_FIXTURE_SLOW_FILL
    if (op.op == WICK_OP_FILL && out.rank == 0) std::this_thread::sleep_for(std::chrono::seconds(3));
#endif
    if (op.op == WICK_OP_FILL) {
      const float v = static_cast<float>(static_cast<const wick_fill_params*>(op.params)->float_value);
      wick::sdk::for_each_row<1>(out.shape, out.rank, {out.strides}, [&](const auto& r) {
        for (int64_t i = 0; i < r.length; ++i) *at(out, r.offset[0] + i * r.stride[0]) = v;
      });
    } else if (op.op == WICK_OP_COPY) {
      const wick_tensor_desc& a = op.inputs[0];
      wick::sdk::for_each_row<2>(out.shape, out.rank, {out.strides, a.strides}, [&](const auto& r) {
        for (int64_t i = 0; i < r.length; ++i)
          *at(out, r.offset[0] + i * r.stride[0]) = *at(a, r.offset[1] + i * r.stride[1]);
      });
    } else {
      const wick_tensor_desc& a = op.inputs[0];
      const wick_tensor_desc& b = op.inputs[1];
      wick::sdk::for_each_row<3>(out.shape, out.rank, {out.strides, a.strides, b.strides}, [&](const auto& r) {
        for (int64_t i = 0; i < r.length; ++i)
          *at(out, r.offset[0] + i * r.stride[0]) = *at(a, r.offset[1] + i * r.stride[1]) + *at(b, r.offset[2] + i * r.stride[2]);
      });
    }
  }

 private:
  HostDevice device_;
  bool report_free_ = false;
  std::string garbage_;
  std::atomic<uint64_t> kept_bytes_{0};  // allocated and not yet freed
};

}  // namespace

WICK_DEFINE_PLUGIN(FixturePlugin, CONF_FIXTURE_NAME, "0.1.0")
