#include "strided_args.hpp"

#include <wick/sdk/dtype.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace wick::opencl {
namespace {

// The host may be older than this plugin: a descriptor must at least hold the 1.0 fields.
constexpr size_t kTensorDescMinSize = offsetof(wick_tensor_desc, strides) + sizeof(const int64_t*);

Verdict reject(wick_support support, std::string reason) { return Verdict{support, std::move(reason)}; }

std::string describe(const wick_tensor_desc& t) {
  std::string s = std::string(sdk::dtype_name(t.dtype)) + "[";
  for (int32_t d = 0; d < t.rank; ++d) s += (d > 0 ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

Verdict check_tensor(const wick_tensor_desc& t, const char* role) {
  if (t.struct_size < kTensorDescMinSize)
    return reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": tensor descriptor too small");
  const size_t element_size = sdk::dtype_size(t.dtype);
  if (element_size == 0)
    return reject(WICK_SUPPORT_NO_DTYPE, std::string(role) + ": unknown dtype " + std::to_string(t.dtype));
  if (t.rank < 0 || t.rank > kMaxRank)
    return reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": rank " + std::to_string(t.rank) +
                                              " (this plugin handles rank 0.." +
                                              std::to_string(kMaxRank) + ")");
  if (t.rank > 0 && (t.shape == nullptr || t.strides == nullptr))
    return reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": NULL shape or strides");
  for (int32_t d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0)
      return reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": negative extent in " + describe(t));
  }
  // Kernels index typed pointers, so element [0, ..., 0] must be element-aligned.
  if (t.byte_offset % element_size != 0)
    return reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": byte offset " +
                                              std::to_string(t.byte_offset) +
                                              " is not a multiple of the element size");
  return {};
}

// [lowest, highest] element offset a strided view reaches (numel > 0).
void reach(const wick_tensor_desc& t, int64_t& lowest, int64_t& highest) {
  lowest = highest = static_cast<int64_t>(t.byte_offset / sdk::dtype_size(t.dtype));
  for (int32_t d = 0; d < t.rank; ++d) {
    const int64_t span = (t.shape[d] - 1) * t.strides[d];
    (span < 0 ? lowest : highest) += span;
  }
}

}  // namespace

Verdict check_elementwise_geometry(const wick_op_desc& op, size_t num_inputs) {
  if (op.num_outputs != 1 || op.outputs == nullptr)
    return reject(WICK_SUPPORT_NO_PARAMS, "expected 1 output, got " + std::to_string(op.num_outputs));
  if (op.num_inputs != num_inputs || (num_inputs > 0 && op.inputs == nullptr))
    return reject(WICK_SUPPORT_NO_PARAMS, "expected " + std::to_string(num_inputs) + " inputs, got " +
                                              std::to_string(op.num_inputs));
  const wick_tensor_desc& out = op.outputs[0];
  if (Verdict v = check_tensor(out, "output"); !v.ok()) return v;
  for (size_t i = 0; i < num_inputs; ++i) {
    const wick_tensor_desc& in = op.inputs[i];
    const std::string role = "input " + std::to_string(i);
    if (Verdict v = check_tensor(in, role.c_str()); !v.ok()) return v;
    if (in.dtype != out.dtype)
      return reject(WICK_SUPPORT_NO_DTYPE, role + " is " + sdk::dtype_name(in.dtype) + " but the output is " +
                                               sdk::dtype_name(out.dtype));
    bool same_shape = in.rank == out.rank;
    for (int32_t d = 0; same_shape && d < out.rank; ++d) same_shape = in.shape[d] == out.shape[d];
    if (!same_shape)
      return reject(WICK_SUPPORT_NO_PARAMS, role + " " + describe(in) + " is not broadcast to the output " +
                                                describe(out));
  }
  return {};
}

StridedArgs make_strided_args(const wick_op_desc& op) {
  const wick_tensor_desc& out = op.outputs[0];
  const size_t operands = 1 + op.num_inputs;
  auto operand = [&](size_t k) -> const wick_tensor_desc& { return k == 0 ? out : op.inputs[k - 1]; };

  StridedArgs args{};
  args.numel = sdk::shape_numel(out.shape, out.rank);
  if (args.numel == 0) return args;

  for (size_t k = 0; k < operands; ++k) {
    const wick_tensor_desc& t = operand(k);
    const char* role = k == 0 ? "output" : "input";
    if (t.buffer == nullptr) throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, std::string(role) + " has no buffer");
    int64_t lowest = 0;
    int64_t highest = 0;
    reach(t, lowest, highest);
    const auto element_size = static_cast<int64_t>(sdk::dtype_size(t.dtype));
    if (lowest < 0 || static_cast<uint64_t>((highest + 1) * element_size) > t.buffer->size)
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       std::string(role) + " " + describe(t) + " reaches elements [" + std::to_string(lowest) +
                           ", " + std::to_string(highest) + "] outside its buffer of " +
                           std::to_string(t.buffer->size) + " bytes");
    args.offsets[k] = static_cast<int64_t>(t.byte_offset) / element_size;
  }

  // Collapse, outermost first: skip extent-1 axes; fold axis d into the previous kept axis when,
  // for every operand, stepping the previous axis equals stepping d across its whole extent.
  int64_t rank = 0;
  for (int32_t d = 0; d < out.rank; ++d) {
    if (out.shape[d] == 1) continue;
    bool merge = rank > 0;
    for (size_t k = 0; merge && k < operands; ++k)
      merge = args.strides[k][rank - 1] == operand(k).strides[d] * out.shape[d];
    const int64_t axis = merge ? rank - 1 : rank++;
    args.shape[axis] = merge ? args.shape[axis] * out.shape[d] : out.shape[d];
    for (size_t k = 0; k < operands; ++k) args.strides[k][axis] = operand(k).strides[d];
  }
  args.rank = rank;
  return args;
}

}  // namespace wick::opencl
