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

// "f32", or "f32->i64" for ops whose output dtype differs from the input's.
std::string dtype_label(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  const DType out = outputs.front().dtype();
  if (inputs.empty() || inputs.front().dtype() == out) return dtype_name(out);
  return std::string(dtype_name(inputs.front().dtype())) + "->" + dtype_name(out);
}

void run_op(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs) {
  const char* name = sdk::op_name(op);
  if (outputs.empty()) throw Error(std::string(name) + ": no output tensor");
  const Device device = outputs.front().device();
  auto check_device = [&](const Tensor& t, const char* role, size_t i) {
    if (!(t.device() == device)) {
      throw Error(std::string(name) + ": " + role + " " + std::to_string(i) + " is on " +
                  t.device().name() + " but the op runs on " + device.name() +
                  "; move it first with .to(device)");
    }
  };
  // Inputs then outputs in one allocation.
  std::vector<wick_tensor_desc> descs;
  descs.reserve(inputs.size() + outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_device(inputs[i], "input", i);
    descs.push_back(describe_tensor(inputs[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_device(outputs[i], "output", i);
    descs.push_back(describe_tensor(outputs[i]));
  }
  wick_op_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.op = op;
  desc.params = params;
  desc.inputs = descs.data();
  desc.num_inputs = inputs.size();
  desc.outputs = descs.data() + inputs.size();
  desc.num_outputs = outputs.size();
  // The op table's shape (arity, params struct, dtype rules): a core bug, never a plugin's answer.
  if (const wick_support s = sdk::check_signature(desc); s != WICK_SUPPORT_YES) {
    throw Error(std::string("internal error: the core built a call of '") + name + "' (" +
                dtype_label(inputs, outputs) + ", " + std::to_string(inputs.size()) + " inputs, " +
                std::to_string(outputs.size()) + " outputs) that the op table rejects (" +
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
      plugin.check(err, std::string("failed to run ") + name + " (" + dtype_label(inputs, outputs) +
                            ") on " + device.name());
    }
    return;
  }
  const std::string dtype = dtype_label(inputs, outputs);

  // Per-op fallback: the CPU runs it, with the copies done there.
  run_declined_op(op, params, inputs, outputs,
                  FallbackRecord{name, dtype, device.name(), plugin.name(), to_string(support), 0});
}

}  // namespace

void dispatch(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs) {
  // With every NaN check off, this load is all the check costs.
  if (!DispatchPolicy::nan_check_wanted() || detail::inside_checked_op()) {
    run_op(op, params, inputs, outputs);
    return;
  }
  const detail::OpCheck check(inputs, outputs);
  {
    const detail::CheckedOpScope inside;  // a CPU fallback's own ops are part of this one
    run_op(op, params, inputs, outputs);
  }
  check.finish(op, params, inputs, outputs);
}

}  // namespace wick
