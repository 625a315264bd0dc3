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

// One side of a call's operands, as its caller holds them: an array of Tensors (the vector
// overload) or of pointers to Tensors (the Tensor ops), so that neither copies a Tensor (a copy
// costs two heap allocations, its shape and strides) nor builds an array of the other kind.
struct TensorList {
  const Tensor* const* ptrs = nullptr;
  const Tensor* dense = nullptr;
  size_t size = 0;

  const Tensor& operator[](size_t i) const { return ptrs != nullptr ? *ptrs[i] : dense[i]; }
  std::vector<Tensor> copy() const {
    std::vector<Tensor> v;
    v.reserve(size);
    for (size_t i = 0; i < size; ++i) v.push_back((*this)[i]);
    return v;
  }
};

struct Operands {
  TensorList in, out;
};

// "f32", or "f32->i64" for ops whose output dtype differs from the input's.
std::string dtype_label(const Operands& ops) {
  const DType out = ops.out[0].dtype();
  if (ops.in.size == 0 || ops.in[0].dtype() == out) return dtype_name(out);
  return std::string(dtype_name(ops.in[0].dtype())) + "->" + dtype_name(out);
}

void run_op(wick_op_code op, const void* params, const Operands& ops) {
  const char* name = sdk::op_name(op);
  if (ops.out.size == 0) throw Error(std::string(name) + ": no output tensor");
  // The device where the output's storage holds it (a Device copy is an atomic increment and
  // decrement, and each operand's check would make one more).
  static const Device kNoDevice;
  const Device& device = ops.out[0].defined() ? ops.out[0].storage()->device : kNoDevice;
  auto check_device = [&](const Tensor& t, const char* role, size_t i) {
    if (!t.defined()) throw Error(std::string(name) + ": " + role + " " + std::to_string(i) + " is undefined");
    if (!(t.storage()->device == device)) {
      throw Error(std::string(name) + ": " + role + " " + std::to_string(i) + " is on " +
                  t.device().name() + " but the op runs on " + device.name() +
                  "; move it first with .to(device)");
    }
  };
  if (!device.valid()) throw Error(std::string(name) + ": the output tensor is undefined");
  // Inputs then outputs, on the stack for the usual few operands (a heap array otherwise).
  constexpr size_t kOnStack = 8;
  const size_t count = ops.in.size + ops.out.size;
  wick_tensor_desc on_stack[kOnStack];
  std::vector<wick_tensor_desc> on_heap(count > kOnStack ? count : 0);
  wick_tensor_desc* descs = count > kOnStack ? on_heap.data() : on_stack;
  for (size_t i = 0; i < ops.in.size; ++i) {
    check_device(ops.in[i], "input", i);
    descs[i] = describe_tensor(ops.in[i]);
  }
  for (size_t i = 0; i < ops.out.size; ++i) {
    check_device(ops.out[i], "output", i);
    descs[ops.in.size + i] = describe_tensor(ops.out[i]);
  }
  wick_op_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.op = op;
  desc.params = params;
  desc.inputs = descs;
  desc.num_inputs = ops.in.size;
  desc.outputs = descs + ops.in.size;
  desc.num_outputs = ops.out.size;
  // The op table's shape (arity, params struct, dtype rules): a core bug, never a plugin's answer.
  if (const wick_support s = sdk::check_signature(desc); s != WICK_SUPPORT_YES) {
    throw Error(std::string("internal error: the core built a call of '") + name + "' (" +
                dtype_label(ops) + ", " + std::to_string(ops.in.size) + " inputs, " +
                std::to_string(ops.out.size) + " outputs) that the op table rejects (" +
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
  run_declined_op(op, params, ops.in.copy(), ops.out.copy(),
                  FallbackRecord{name, dtype, device.name(), plugin.name(), to_string(support), 0});
}

void dispatch_operands(wick_op_code op, const void* params, const Operands& ops) {
  // With every NaN check off, this load is all the check costs.
  if (!DispatchPolicy::nan_check_wanted() || detail::inside_checked_op()) {
    run_op(op, params, ops);
    return;
  }
  const std::vector<Tensor> inputs = ops.in.copy(), outputs = ops.out.copy();
  const detail::OpCheck check(inputs, outputs);
  {
    const detail::CheckedOpScope inside;  // a CPU fallback's own ops are part of this one
    run_op(op, params, ops);
  }
  check.finish(op, params, inputs, outputs);
}

}  // namespace

void dispatch(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs) {
  dispatch_operands(op, params,
                    Operands{{nullptr, inputs.data(), inputs.size()}, {nullptr, outputs.data(), outputs.size()}});
}

void dispatch(wick_op_code op, const void* params, std::initializer_list<const Tensor*> inputs,
              const Tensor& output) {
  dispatch_operands(op, params, Operands{{inputs.begin(), nullptr, inputs.size()}, {nullptr, &output, 1}});
}

}  // namespace wick
