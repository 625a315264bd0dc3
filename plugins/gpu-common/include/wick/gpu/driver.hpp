// wick/gpu/driver.hpp — what the GPU plugins do alike around gpu-common's plans, whatever their
// API: gathering the operands' device handles, running a plan's launches (scratch, the index
// error report), and keeping the kernel units a device has built (a failed build remembered).
#pragma once

#include <wick/gpu/kernels.hpp>
#include <wick/sdk/plugin.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>

namespace wick::gpu {

// The operands' device handles, outputs first then inputs, as `handle_of(buffer)` gives them;
// every buffer must belong to `device` (named `label` in the error).
template <class Handle, class HandleOf>
struct OperandHandles {
  static constexpr size_t kMax = 8;
  Handle values[kMax] = {};
  const void* pointers[kMax] = {};

  OperandHandles(const wick_op_desc& op, const wick_device* device, const std::string& label,
                 HandleOf&& handle_of) {
    if (op.num_outputs + op.num_inputs > kMax)
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, "too many operands for a generated kernel");
    for (size_t k = 0; k < op.num_outputs + op.num_inputs; ++k) {
      const wick_buffer* b =
          k < op.num_outputs ? op.outputs[k].buffer : op.inputs[k - op.num_outputs].buffer;
      if (b == nullptr || b->device != device)
        throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                         "an operand's buffer belongs to another device than " + label);
      values[k] = handle_of(b);
      pointers[k] = &values[k];
    }
  }
};

// A device's way of running calls.
struct Runner {
  size_t handle_size = 0;
  // The handle of a buffer of at least `bytes` (kept by the device; the pointer stays valid
  // through the plan).
  std::function<const void*(size_t bytes)> scratch;
  std::function<void(const KernelCall&)> launch;
  // For kernels that check indices: zero the device's two-i64 error buffer, put its handle in the
  // call's error_slot, launch, and read the report (flag, bad index) back.
  std::function<void(KernelCall&, int64_t report[2])> launch_checked;
};

// Runs plan's calls in order; an index out of range is an INVALID_ARGUMENT error naming it.
void run_plan(Launch& plan, const Runner& runner);

// The kernel units a device has built (Program: its handle type, e.g. a cl_program wrapper) and
// the units that failed: the error is given again instead of building again, which would cost the
// same seconds and fail the same way. Not locked: the device's build mutex guards it.
template <class Program>
class UnitCache {
 public:
  // The program of `kernel`'s unit, built with build(unit) the first time.
  template <class Build>
  Program& program_of(const std::string& kernel, Build&& build) {
    const std::string unit = unit_of(kernel);
    if (unit.empty())
      throw sdk::Error(WICK_STATUS_INTERNAL, "kernel " + kernel + " is in no unit of the program");
    if (auto failed = errors_.find(unit); failed != errors_.end())
      throw sdk::Error(WICK_STATUS_DEVICE_ERROR, failed->second);
    auto it = programs_.find(unit);
    if (it != programs_.end()) return it->second;
    try {
      return programs_.emplace(unit, build(unit)).first->second;
    } catch (const sdk::Error& e) {
      errors_.emplace(unit, e.what());
      throw;
    }
  }
  std::unordered_map<std::string, Program>& programs() { return programs_; }

 private:
  std::unordered_map<std::string, Program> programs_;
  std::unordered_map<std::string, std::string> errors_;
};

}  // namespace wick::gpu
