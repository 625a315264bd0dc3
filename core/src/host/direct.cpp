#include <wick/direct.hpp>

#include "host/loaded_plugin.hpp"
#include "tensor/storage.hpp"

#include <wick/sdk/ops.hpp>

namespace wick {

namespace {

struct Descriptors {
  std::vector<wick_tensor_desc> inputs, outputs;
  wick_op_desc op{};
};

void build(Descriptors& d, const Device& device, wick_op_code op, const void* params,
           const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  if (!device.valid()) throw Error(std::string(sdk::op_name(op)) + ": invalid device");
  auto add = [&](std::vector<wick_tensor_desc>& to, const Tensor& t, const char* role, size_t i) {
    if (!t.defined() || !(t.device() == device)) {
      throw Error(std::string(sdk::op_name(op)) + ": " + role + " " + std::to_string(i) +
                  (t.defined() ? " is on " + t.device().name() : std::string(" is undefined")) +
                  ", not on " + device.name());
    }
    to.push_back(describe_tensor(t));
  };
  for (size_t i = 0; i < inputs.size(); ++i) add(d.inputs, inputs[i], "input", i);
  for (size_t i = 0; i < outputs.size(); ++i) add(d.outputs, outputs[i], "output", i);
  d.op.struct_size = sizeof(d.op);
  d.op.op = op;
  d.op.params = params;
  d.op.inputs = d.inputs.data();
  d.op.num_inputs = d.inputs.size();
  d.op.outputs = d.outputs.data();
  d.op.num_outputs = d.outputs.size();
}

// The plugin's message for err (freed here), or empty when err is NULL.
std::string take_message(LoadedPlugin& plugin, wick_error* err) { return plugin.take_message(err); }

}  // namespace

const char* to_string(wick_support support) {
  switch (support) {
    case WICK_SUPPORT_YES: return "supported";
    case WICK_SUPPORT_NO_OP: return "op not implemented";
    case WICK_SUPPORT_NO_DTYPE: return "dtype not supported";
    case WICK_SUPPORT_NO_PARAMS: return "params or shapes not supported";
    case WICK_SUPPORT_ERROR: return "op_supports failed inside the plugin (it threw: a plugin bug)";
  }
  return "unknown answer from op_supports";
}

wick_support query_op_direct(const Device& device, wick_op_code op, const void* params,
                             const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  Descriptors d;
  build(d, device, op, params, inputs, outputs);
  LoadedPlugin& plugin = device.plugin();
  return plugin.unlocked("op_supports", [&] { return plugin.api().op_supports(device.handle(), &d.op); });
}

DirectResult run_op_direct(const Device& device, wick_op_code op, const void* params,
                           const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                           bool synchronize) {
  Descriptors d;
  build(d, device, op, params, inputs, outputs);
  LoadedPlugin& plugin = device.plugin();
  DirectResult result;
  result.support =
      plugin.unlocked("op_supports", [&] { return plugin.api().op_supports(device.handle(), &d.op); });
  if (result.support != WICK_SUPPORT_YES) {
    result.status = DirectResult::Status::Unsupported;
    result.message = to_string(result.support);
    return result;
  }
  std::string message = take_message(
      plugin, plugin.guard(device.index(), "op_execute", [&] { return plugin.api().op_execute(device.handle(), &d.op); }));
  if (message.empty() && synchronize) {
    message = take_message(plugin, plugin.guard(device.index(), "device_synchronize", [&] {
                             return plugin.api().device_synchronize(device.handle());
                           }));
    if (!message.empty()) message = "device_synchronize after the op: " + message;
  }
  if (!message.empty()) {
    result.status = DirectResult::Status::Failed;
    result.message = message;
  }
  return result;
}

}  // namespace wick
