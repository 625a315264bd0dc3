// wick/sdk/elementwise.hpp — shared by device plugins whose kernels take StridedArgs: validating an
// elementwise op's geometry (what op_supports may look at), building the kernel arguments with
// every reachable element checked to lie inside its buffer and the dimensions collapsed, and the
// bytes of a FILL value.
#pragma once

#include <wick/sdk/dtype.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>
#include <wick/sdk/strided_args.hpp>
#include <wick/wick_plugin.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

namespace wick::sdk {

// Why an op cannot run: the support code op_supports answers, and a reason for op_execute's error.
struct Verdict {
  wick_support support = WICK_SUPPORT_YES;
  std::string reason;
  bool ok() const { return support == WICK_SUPPORT_YES; }
};

namespace detail {
// The host may be older than this plugin: a descriptor must at least hold the 1.0 fields.
constexpr size_t kTensorDescMinSize = offsetof(wick_tensor_desc, strides) + sizeof(const int64_t*);

inline Verdict reject(wick_support support, std::string reason) { return Verdict{support, std::move(reason)}; }

inline std::string describe(const wick_tensor_desc& t) {
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (int32_t d = 0; d < t.rank; ++d) s += (d > 0 ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

inline Verdict check_tensor(const wick_tensor_desc& t, const char* role) {
  if (t.struct_size < kTensorDescMinSize)
    return detail::reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": tensor descriptor too small");
  const size_t element_size = dtype_size(t.dtype);
  if (element_size == 0)
    return detail::reject(WICK_SUPPORT_NO_DTYPE, std::string(role) + ": unknown dtype " + std::to_string(t.dtype));
  if (t.rank < 0 || t.rank > kMaxRank)
    return detail::reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": rank " + std::to_string(t.rank) +
                                              " (this plugin handles rank 0.." +
                                              std::to_string(kMaxRank) + ")");
  if (t.rank > 0 && (t.shape == nullptr || t.strides == nullptr))
    return detail::reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": NULL shape or strides");
  for (int32_t d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0)
      return detail::reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": negative extent in " + describe(t));
  }
  // Kernels index typed pointers, so element [0, ..., 0] must be element-aligned.
  if (t.byte_offset % element_size != 0)
    return detail::reject(WICK_SUPPORT_NO_PARAMS, std::string(role) + ": byte offset " +
                                              std::to_string(t.byte_offset) +
                                              " is not a multiple of the element size");
  return {};
}

// [lowest, highest] element offset a strided view reaches (numel > 0).
inline void reach(const wick_tensor_desc& t, int64_t& lowest, int64_t& highest) {
  lowest = highest = static_cast<int64_t>(t.byte_offset / dtype_size(t.dtype));
  for (int32_t d = 0; d < t.rank; ++d) {
    const int64_t span = (t.shape[d] - 1) * t.strides[d];
    (span < 0 ? lowest : highest) += span;
  }
}

}  // namespace detail

inline Verdict check_elementwise_geometry(const wick_op_desc& op, size_t num_inputs) {
  if (op.num_outputs != 1 || op.outputs == nullptr)
    return detail::reject(WICK_SUPPORT_NO_PARAMS, "expected 1 output, got " + std::to_string(op.num_outputs));
  if (op.num_inputs != num_inputs || (num_inputs > 0 && op.inputs == nullptr))
    return detail::reject(WICK_SUPPORT_NO_PARAMS, "expected " + std::to_string(num_inputs) + " inputs, got " +
                                              std::to_string(op.num_inputs));
  const wick_tensor_desc& out = op.outputs[0];
  if (Verdict v = detail::check_tensor(out, "output"); !v.ok()) return v;
  for (size_t i = 0; i < num_inputs; ++i) {
    const wick_tensor_desc& in = op.inputs[i];
    const std::string role = "input " + std::to_string(i);
    if (Verdict v = detail::check_tensor(in, role.c_str()); !v.ok()) return v;
    if (in.dtype != out.dtype)
      return detail::reject(WICK_SUPPORT_NO_DTYPE, role + " is " + dtype_name(in.dtype) + " but the output is " +
                                               dtype_name(out.dtype));
    bool same_shape = in.rank == out.rank;
    for (int32_t d = 0; same_shape && d < out.rank; ++d) same_shape = in.shape[d] == out.shape[d];
    if (!same_shape)
      return detail::reject(WICK_SUPPORT_NO_PARAMS, role + " " + detail::describe(in) + " is not broadcast to the output " +
                                                detail::describe(out));
  }
  return {};
}

namespace detail {
// Throws naming `role` unless every element `t` can reach lies inside its buffer.
inline void check_inside(const wick_tensor_desc& t, const std::string& role) {
  if (t.buffer == nullptr) throw Error(WICK_STATUS_INVALID_ARGUMENT, role + " has no buffer");
  int64_t lowest = 0;
  int64_t highest = 0;
  reach(t, lowest, highest);
  const auto element_size = static_cast<int64_t>(dtype_size(t.dtype));
  if (lowest < 0 || static_cast<uint64_t>((highest + 1) * element_size) > t.buffer->size)
    throw Error(WICK_STATUS_INVALID_ARGUMENT,
                role + " " + describe(t) + " reaches elements [" + std::to_string(lowest) + ", " +
                    std::to_string(highest) + "] outside its buffer of " + std::to_string(t.buffer->size) +
                    " bytes");
}
}  // namespace detail

// Every operand of `op`, whatever its shape (reductions, matmul, conv, index ops), lies inside its
// buffer; empty operands reach nothing. An error naming the operand otherwise.
inline void check_operands_inside(const wick_op_desc& op) {
  for (uint32_t k = 0; k < op.num_outputs; ++k) {
    const wick_tensor_desc& t = op.outputs[k];
    if (shape_numel(t.shape, t.rank) != 0) detail::check_inside(t, "output " + std::to_string(k));
  }
  for (uint32_t k = 0; k < op.num_inputs; ++k) {
    const wick_tensor_desc& t = op.inputs[k];
    if (shape_numel(t.shape, t.rank) != 0) detail::check_inside(t, "input " + std::to_string(k));
  }
}

// For elementwise-shaped ops: every input has the output's rank (broadcast, stride 0 allowed).
inline StridedArgs make_strided_args(const wick_op_desc& op) {
  const wick_tensor_desc& out = op.outputs[0];
  const size_t operands = 1 + op.num_inputs;
  auto operand = [&](size_t k) -> const wick_tensor_desc& { return k == 0 ? out : op.inputs[k - 1]; };

  StridedArgs args{};
  args.numel = shape_numel(out.shape, out.rank);
  if (args.numel == 0) return args;

  for (size_t k = 0; k < operands; ++k) {
    const wick_tensor_desc& t = operand(k);
    if (t.rank != out.rank)
      throw Error(WICK_STATUS_INVALID_ARGUMENT, "operand " + detail::describe(t) +
                                                    " is not broadcast to the output " + detail::describe(out));
    detail::check_inside(t, k == 0 ? "output" : "input");
    args.offsets[k] = static_cast<int64_t>(t.byte_offset) / static_cast<int64_t>(dtype_size(t.dtype));
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

// The bytes of one element holding a FILL value: floats from float_value (f16 and bf16 via f32;
// rounding twice is exact here because f32 carries more than 2p+2 bits of either), integers
// truncated from int_value, bool true when either value is non-zero (as the CPU plugin does: the
// host's full() sets int_value to the truncated float, so 0.5 must still give true).
inline std::array<unsigned char, 8> fill_pattern(wick_dtype dtype, const wick_fill_params& params) {
  std::array<unsigned char, 8> bytes{};
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value{};
    if constexpr (std::is_same_v<T, bool>) {
      value = params.int_value != 0 || params.float_value != 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      value = static_cast<T>(params.int_value);
    } else if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(params.float_value);
    } else {
      value = T(static_cast<float>(params.float_value));
    }
    static_assert(sizeof(T) <= sizeof(bytes));
    std::memcpy(bytes.data(), &value, sizeof(T));
  });
  return bytes;
}

}  // namespace wick::sdk
