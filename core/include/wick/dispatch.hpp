// wick/dispatch.hpp — runs one op on the device of its outputs, or on the CPU when that device's
// plugin declines it (counted, logged once per op/dtype/device, an error in strict mode). The
// Tensor API is built on it, and so are the layers above the core that run an op of the table
// directly (nn's in-place copy, optim's fused Adam step).
#pragma once

#include <wick/tensor.hpp>
#include <wick/wick_plugin.h>

#include <vector>

namespace wick {

// Outputs are pre-allocated, contiguous tensors on one device; inputs must be on that device too.
void dispatch(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs);

}  // namespace wick
