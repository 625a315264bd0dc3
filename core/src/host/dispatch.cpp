#include <wick/dispatch.hpp>

#include <wick/direct.hpp>
#include "host/dispatch_policy.hpp"
#include "host/loaded_plugin.hpp"
#include "host/log.hpp"
#include "host/nan_check.hpp"
#include "tensor/storage.hpp"

#include <wick/sdk/ops.hpp>

namespace wick {

namespace {

// The operands of one call, as the Tensor ops hand them over: pointers, so that no Tensor is
// copied (a copy costs two heap allocations, its shape and strides).
struct Operands {
  const Tensor* const* in;
  size_t num_in;
  const Tensor* const* out;
  size_t num_out;

  std::vector<Tensor> inputs() const { return std::vector<Tensor>(deref(in, num_in)); }
  std::vector<Tensor> outputs() const { return std::vector<Tensor>(deref(out, num_out)); }

 private:
  static std::vector<Tensor> deref(const Tensor* const* p, size_t n) {
    std::vector<Tensor> v;
    v.reserve(n);
    for (size_t i = 0; i < n; ++i) v.push_back(*p[i]);
    return v;
  }
};

// "f32", or "f32->i64" for ops whose output dtype differs from the input's.
std::string dtype_label(const Operands& ops) {
  const DType out = ops.out[0]->dtype();
  if (ops.num_in == 0 || ops.in[0]->dtype() == out) return dtype_name(out);
  return std::string(dtype_name(ops.in[0]->dtype())) + "->" + dtype_name(out);
}

void run_op(wick_op_code op, const void* params, const Operands& ops) {
  const char* name = sdk::op_name(op);
  if (ops.num_out == 0) throw Error(std::string(name) + ": no output tensor");
  const Device device = ops.out[0]->device();
  auto check_device = [&](const Tensor& t, const char* role, size_t i) {
    if (!(t.device() == device)) {
      throw Error(std::string(name) + ": " + role + " " + std::to_string(i) + " is on " +
                  t.device().name() + " but the op runs on " + device.name() +
                  "; move it first with .to(device)");
    }
  };
  // Inputs then outputs in one allocation.
  std::vector<wick_tensor_desc> descs;
  descs.reserve(ops.num_in + ops.num_out);
  for (size_t i = 0; i < ops.num_in; ++i) {
    check_device(*ops.in[i], "input", i);
    descs.push_back(describe_tensor(*ops.in[i]));
  }
  for (size_t i = 0; i < ops.num_out; ++i) {
    check_device(*ops.out[i], "output", i);
    descs.push_back(describe_tensor(*ops.out[i]));
  }
  wick_op_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.op = op;
  desc.params = params;
  desc.inputs = descs.data();
  desc.num_inputs = ops.num_in;
  desc.outputs = descs.data() + ops.num_in;
  desc.num_outputs = ops.num_out;
  // The op table's shape (arity, params struct, dtype rules): a core bug, never a plugin's answer.
  if (const wick_support s = sdk::check_signature(desc); s != WICK_SUPPORT_YES) {
    throw Error(std::string("internal error: the core built a call of '") + name + "' (" +
                dtype_label(ops) + ", " + std::to_string(ops.num_in) + " inputs, " +
                std::to_string(ops.num_out) + " outputs) that the op table rejects (" +
                to_string(s) + ")");
  }

  LoadedPlugin& plugin = device.plugin();
  const wick_support support =
      plugin.unlocked("op_supports", [&] { return plugin.api().op_supports(device.handle(), &desc); });
  if (support == WICK_SUPPORT_YES) {
    wick_error* err =
        plugin.guard(device.index(), "op_execute", [&] { return plugin.api().op_execute(device.handle(), &desc); });
    // The message only on failure: building it costs a fifth of a small op's whole overhead.
    if (err != nullptr) {
      plugin.check(err, std::string("failed to run ") + name + " (" + dtype_label(ops) + ") on " +
                            device.name());
    }
    return;
  }
  const std::string dtype = dtype_label(ops);

  // Per-op fallback: the CPU runs it, with the copies done there.
  run_declined_op(op, params, ops.inputs(), ops.outputs(),
                  FallbackRecord{name, dtype, device.name(), plugin.name(), to_string(support), 0});
}

void dispatch_operands(wick_op_code op, const void* params, const Operands& ops) {
  // With every NaN check off, this load is all the check costs.
  if (!DispatchPolicy::nan_check_wanted() || detail::inside_checked_op()) {
    run_op(op, params, ops);
    return;
  }
  const std::vector<Tensor> inputs = ops.inputs(), outputs = ops.outputs();
  const detail::OpCheck check(inputs, outputs);
  {
    const detail::CheckedOpScope inside;  // a CPU fallback's own ops are part of this one
    run_op(op, params, ops);
  }
  check.finish(op, params, inputs, outputs);
}

// Pointers to the elements of v.
std::vector<const Tensor*> pointers(const std::vector<Tensor>& v) {
  std::vector<const Tensor*> p;
  p.reserve(v.size());
  for (const Tensor& t : v) p.push_back(&t);
  return p;
}

}  // namespace

void dispatch(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs) {
  const std::vector<const Tensor*> in = pointers(inputs), out = pointers(outputs);
  dispatch_operands(op, params, Operands{in.data(), in.size(), out.data(), out.size()});
}

void dispatch(wick_op_code op, const void* params, std::initializer_list<const Tensor*> inputs,
              const Tensor& output) {
  const Tensor* out = &output;
  dispatch_operands(op, params, Operands{inputs.begin(), inputs.size(), &out, 1});
}

}  // namespace wick
