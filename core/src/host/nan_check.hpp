// nan_check.hpp — the NaN check of the dispatcher (core internal; Runtime::check_nan,
// docs/config.md [debug] check_nan).
#pragma once

#include <wick/wick_plugin.h>
#include <wick/tensor.hpp>

#include <vector>

namespace wick::detail {

// The check of one op, when some runtime has the check on: made before the op runs, finished
// after it. finish throws wick::Error naming the op, its operands' shapes and dtypes, the device
// and the wick::ModuleScope path when a runtime with the check on governs the op's device
// (DispatchPolicy::nan_check_on), an output holds a NaN or Inf, and every input and floating-point
// parameter was finite. An input that shares memory with an output (an in-place op) is tested
// before the op, which overwrites it; the others after. The tests are ops themselves; they (and
// the ops of a CPU fallback inside the op) are not checked again.
class OpCheck {
 public:
  OpCheck(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
  void finish(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs) const;

 private:
  bool active_ = false;
  std::vector<signed char> before_;  // per input: 1 finite, 0 not, -1 to test after the op
};

// Whether the calling thread is inside an op's dispatch (or the check of one): an op run by it
// is part of that op and is not checked on its own.
bool inside_checked_op();

// Marks the calling thread as inside an op's dispatch while it lives.
class CheckedOpScope {
 public:
  CheckedOpScope();
  ~CheckedOpScope();
  CheckedOpScope(const CheckedOpScope&) = delete;
  CheckedOpScope& operator=(const CheckedOpScope&) = delete;
};

}  // namespace wick::detail
