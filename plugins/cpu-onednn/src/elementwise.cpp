// Elementwise kernels: strided copy, fill, cast and where; the binary ops live in binary.cpp.
#include "elementwise_loops.hpp"

#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/ops.hpp>

#include <cstring>

namespace wick::cpu {

namespace {

// ---- copy ---------------------------------------------------------------------------------------

wick_support copy_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  if (in.dtype != out.dtype || !same_shape(in, out)) return WICK_SUPPORT_NO_PARAMS;
  return sdk::dtype_size(in.dtype) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <class T>
void copy_rows(const Context& ctx, const wick_tensor_desc& in, const wick_tensor_desc& out) {
  const T* src = data_of<const T>(in);
  T* dst = data_of<T>(out);
  parallel_rows<2>(ctx, out, {out.strides, in.strides}, [&](const sdk::Row<2>& r) {
    T* d = dst + r.offset[0];
    const T* s = src + r.offset[1];
    if (r.stride[0] == 1 && r.stride[1] == 1) {
      std::memcpy(d, s, static_cast<size_t>(r.length) * sizeof(T));
      return;
    }
    for (int64_t i = 0; i < r.length; ++i) d[i * r.stride[0]] = s[i * r.stride[1]];
  });
}

void copy_execute(Context& ctx, const wick_op_desc& op) {
  // Only the element size matters to a copy.
  switch (sdk::dtype_size(op.inputs[0].dtype)) {
    case 1: return copy_rows<uint8_t>(ctx, op.inputs[0], op.outputs[0]);
    case 2: return copy_rows<uint16_t>(ctx, op.inputs[0], op.outputs[0]);
    case 4: return copy_rows<uint32_t>(ctx, op.inputs[0], op.outputs[0]);
    default: return copy_rows<uint64_t>(ctx, op.inputs[0], op.outputs[0]);
  }
}

// ---- fill ---------------------------------------------------------------------------------------

wick_support fill_supports(const wick_op_desc& op) {
  if (op.num_inputs != 0 || op.num_outputs != 1 || op.params == nullptr) return WICK_SUPPORT_NO_PARAMS;
  return sdk::dtype_size(op.outputs[0].dtype) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <class T>
void fill_rows(const Context& ctx, const wick_tensor_desc& out, const unsigned char* pattern) {
  T value;
  std::memcpy(&value, pattern, sizeof(T));
  T* dst = data_of<T>(out);
  parallel_rows<1>(ctx, out, {out.strides}, [&](const sdk::Row<1>& r) {
    T* d = dst + r.offset[0];
    for (int64_t i = 0; i < r.length; ++i) d[i * r.stride[0]] = value;
  });
}

void fill_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc& out = op.outputs[0];
  // The value's bytes, as every plugin computes them; then only the element size matters.
  const auto pattern = sdk::fill_pattern(out.dtype, *static_cast<const wick_fill_params*>(op.params));
  switch (sdk::dtype_size(out.dtype)) {
    case 1: return fill_rows<uint8_t>(ctx, out, pattern.data());
    case 2: return fill_rows<uint16_t>(ctx, out, pattern.data());
    case 4: return fill_rows<uint32_t>(ctx, out, pattern.data());
    default: return fill_rows<uint64_t>(ctx, out, pattern.data());
  }
}

// ---- cast ---------------------------------------------------------------------------------------

wick_support cast_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1 || !same_shape(op.inputs[0], op.outputs[0]))
    return WICK_SUPPORT_NO_PARAMS;
  const bool ok = sdk::dtype_size(op.inputs[0].dtype) != 0 && sdk::dtype_size(op.outputs[0].dtype) != 0;
  return ok ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

void cast_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  sdk::visit_dtype(in.dtype, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    sdk::visit_dtype(out.dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* src = data_of<const From>(in);
      To* dst = data_of<To>(out);
      parallel_rows<2>(ctx, out, {out.strides, in.strides}, [&](const sdk::Row<2>& r) {
        To* d = dst + r.offset[0];
        const From* s = src + r.offset[1];
        for (int64_t i = 0; i < r.length; ++i) d[i * r.stride[0]] = cast_value<To>(s[i * r.stride[1]]);
      });
    });
  });
}

// ---- where ---------------------------------------------------------------------------------------

wick_support where_supports(const wick_op_desc& op) {
  if (op.num_inputs != 3 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &cond = op.inputs[0], &out = op.outputs[0];
  if (cond.dtype != WICK_DTYPE_BOOL) return WICK_SUPPORT_NO_DTYPE;
  if (!same_shape(cond, out)) return WICK_SUPPORT_NO_PARAMS;
  for (size_t i = 1; i < 3; ++i) {
    if (op.inputs[i].dtype != out.dtype) return WICK_SUPPORT_NO_DTYPE;
    if (!same_shape(op.inputs[i], out)) return WICK_SUPPORT_NO_PARAMS;
  }
  return sdk::dtype_size(out.dtype) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <class T>
void where_rows(const Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &cond = op.inputs[0], &a = op.inputs[1], &b = op.inputs[2], &out = op.outputs[0];
  const bool* pc = data_of<const bool>(cond);
  const T* pa = data_of<const T>(a);
  const T* pb = data_of<const T>(b);
  T* po = data_of<T>(out);
  parallel_rows<4>(ctx, out, {out.strides, cond.strides, a.strides, b.strides}, [&](const sdk::Row<4>& r) {
    T* o = po + r.offset[0];
    const bool* c = pc + r.offset[1];
    const T* x = pa + r.offset[2];
    const T* y = pb + r.offset[3];
    if (r.stride[0] == 1 && r.stride[1] == 1 && r.stride[2] == 1 && r.stride[3] == 1) {
      for (int64_t i = 0; i < r.length; ++i) o[i] = c[i] ? x[i] : y[i];
    } else {
      for (int64_t i = 0; i < r.length; ++i)
        o[i * r.stride[0]] = c[i * r.stride[1]] ? x[i * r.stride[2]] : y[i * r.stride[3]];
    }
  });
}

void where_execute(Context& ctx, const wick_op_desc& op) {
  // Only the element size matters to a selection.
  switch (sdk::dtype_size(op.outputs[0].dtype)) {
    case 1: return where_rows<uint8_t>(ctx, op);
    case 2: return where_rows<uint16_t>(ctx, op);
    case 4: return where_rows<uint32_t>(ctx, op);
    default: return where_rows<uint64_t>(ctx, op);
  }
}

}  // namespace

Kernel elementwise_kernel(int op) {
  switch (op) {
    case WICK_OP_COPY: return {&copy_execute, &copy_supports};
    case WICK_OP_FILL: return {&fill_execute, &fill_supports};
    case WICK_OP_CAST: return {&cast_execute, &cast_supports};
    case WICK_OP_WHERE: return {&where_execute, &where_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
