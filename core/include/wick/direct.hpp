// wick/direct.hpp — run one op on one device through its plugin, with no CPU fallback.
//
// The dispatcher (Tensor's ops) falls back to the CPU when a plugin declines an op; a conformance
// suite must see the decline instead. run_op_direct asks the device's plugin op_supports and, only
// when it says yes, op_execute, then synchronizes the device so that an asynchronous failure is
// reported here, against this op.
#pragma once

#include <wick/device.hpp>
#include <wick/tensor.hpp>
#include <wick/wick_plugin.h>

#include <string>
#include <vector>

namespace wick {

struct DirectResult {
  enum class Status {
    Ran,          // op_supports said yes and op_execute (and the synchronize after it) succeeded
    Unsupported,  // op_supports declined; `support` says why
    Failed        // op_execute or synchronize returned an error; `message` has the plugin's text
  };
  Status status = Status::Ran;
  wick_support support = WICK_SUPPORT_YES;
  std::string message;  // empty when Ran; the reason otherwise ("op not implemented", ...)
};

// "op not implemented", "dtype not supported", "params or shapes not supported".
const char* to_string(wick_support support);

// Builds the descriptors from the tensors as they are (any strides, offsets, broadcast views) and
// asks the plugin only. Every tensor must live on `device`; a tensor on another device is a
// wick::Error. Plugin exceptions that escape across the C ABI become wick::Error too.
wick_support query_op_direct(const Device& device, wick_op_code op, const void* params,
                             const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

// query_op_direct, then op_execute when supported; with `synchronize`, waits for the device.
DirectResult run_op_direct(const Device& device, wick_op_code op, const void* params,
                           const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                           bool synchronize = true);

}  // namespace wick
