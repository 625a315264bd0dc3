// A complete Wick plugin in one file: one device whose buffers are host memory, supporting
// WICK_OP_COPY for every dtype and WICK_OP_ADD for f32. Everything else the host runs on the CPU.
// Copy this file to start a plugin for your device; the SDK is header-only.
#include <wick/sdk/dtype.hpp>
#include <wick/sdk/kernel_table.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>

#include <cstring>
#include <string>

namespace {

struct HostBuffer : wick_buffer {
  std::unique_ptr<unsigned char[]> data;
};

unsigned char* base(const wick_tensor_desc& t) {
  return static_cast<HostBuffer*>(t.buffer)->data.get() + t.byte_offset;
}

class ExamplePlugin final : public wick::sdk::Plugin {
 public:
  // Called once by the host. Read options here; unknown keys are rejected by the helper.
  wick::sdk::InitResult initialize(wick::sdk::Options& options) override {
    label_ = options.get_string("label").value_or("example host memory");
    return {{&device_}, ""};
  }

  wick_device_props properties(const wick_device*) override {
    wick_device_props p{};
    p.struct_size = sizeof(p);
    p.name = label_.c_str();
    p.kind = WICK_DEVICE_KIND_OTHER;
    p.capabilities = WICK_DEVICE_CAP_HOST_MEMORY;
    return p;
  }

  wick_buffer* allocate(wick_device* device, uint64_t size) override {
    auto* b = new HostBuffer();
    b->device = device;
    b->size = size;
    b->data.reset(new unsigned char[size > 0 ? size : 1]);
    return b;
  }
  void write(wick_buffer* dst, uint64_t offset, const void* src, uint64_t size) override {
    std::memcpy(static_cast<HostBuffer*>(dst)->data.get() + offset, src, size);
  }
  void read(const wick_buffer* src, uint64_t offset, void* dst, uint64_t size) override {
    std::memcpy(dst, static_cast<const HostBuffer*>(src)->data.get() + offset, size);
  }

  // Pure and cheap: the host asks before every op and falls back to the CPU on anything but YES.
  // The kernel table checks the op table's rules (arity, params, dtypes) and the rows' dtypes.
  wick_support supports(const wick_device*, const wick_op_desc& op) override {
    return kernels().supports(op);
  }

  void execute(wick_device*, const wick_op_desc& op) override { kernels().execute(context_, op); }

 private:
  struct Context {};  // what kernels share (streams, caches, ...); nothing here

  // The plugin's kernels, one row per op: op, dtypes, function (and optionally a check of shapes
  // or params the row cannot run).
  static const wick::sdk::KernelTable<Context>& kernels() {
    static const wick::sdk::KernelTable<Context> table = [] {
      wick::sdk::KernelTable<Context> t;
      t.add({WICK_OP_COPY, wick::sdk::dtypes_of(wick::sdk::DTypeClass::ANY), &copy_strided});
      t.add({WICK_OP_ADD, wick::sdk::dtype_bit(WICK_DTYPE_F32), &add_f32});
      return t;
    }();
    return table;
  }

  static void copy_strided(Context&, const wick_op_desc& op) {
    const wick_tensor_desc &out = op.outputs[0], &in = op.inputs[0];
    const auto esize = static_cast<int64_t>(wick::sdk::dtype_size(out.dtype));
    wick::sdk::for_each_row<2>(out.shape, out.rank, {out.strides, in.strides}, [&](const wick::sdk::Row<2>& r) {
      for (int64_t i = 0; i < r.length; ++i)
        std::memcpy(base(out) + (r.offset[0] + i * r.stride[0]) * esize,
                    base(in) + (r.offset[1] + i * r.stride[1]) * esize, static_cast<size_t>(esize));
    });
  }

  // Inputs arrive broadcast to the output's shape (stride 0).
  static void add_f32(Context&, const wick_op_desc& op) {
    const wick_tensor_desc& out = op.outputs[0];
    auto* o = reinterpret_cast<float*>(base(out));
    auto* a = reinterpret_cast<const float*>(base(op.inputs[0]));
    auto* b = reinterpret_cast<const float*>(base(op.inputs[1]));
    wick::sdk::for_each_row<3>(out.shape, out.rank, {out.strides, op.inputs[0].strides, op.inputs[1].strides},
                               [&](const wick::sdk::Row<3>& r) {
                                 for (int64_t i = 0; i < r.length; ++i)
                                   o[r.offset[0] + i * r.stride[0]] =
                                       a[r.offset[1] + i * r.stride[1]] + b[r.offset[2] + i * r.stride[2]];
                               });
  }

  Context context_;
  wick_device device_;
  std::string label_;
};

}  // namespace

WICK_DEFINE_PLUGIN(ExamplePlugin, "example", "1.0.0")
