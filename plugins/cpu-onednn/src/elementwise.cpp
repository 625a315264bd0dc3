// Elementwise kernels: strided copy, fill, cast and the broadcasting binary arithmetic.
#include "kernels.hpp"

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

// ---- binary arithmetic --------------------------------------------------------------------------

// Integer arithmetic wraps (computed unsigned, so no undefined behaviour); integer division
// truncates toward zero and x / 0 is 0 (docs/ops.md).
template <class T>
struct Arith {
  using U = std::make_unsigned_t<T>;
  static T add(T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }
  static T sub(T a, T b) { return static_cast<T>(static_cast<U>(a) - static_cast<U>(b)); }
  static T mul(T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); }
  static T div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(U(0) - static_cast<U>(a));  // MIN / -1 wraps to MIN
    }
    return static_cast<T>(a / b);
  }
};

template <class T, class Op>
void binary_rows(const Context& ctx, const wick_op_desc& op, Op f) {
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  const T* pa = data_of<const T>(a);
  const T* pb = data_of<const T>(b);
  T* po = data_of<T>(out);
  parallel_rows<3>(ctx, out, {out.strides, a.strides, b.strides}, [&](const sdk::Row<3>& r) {
    T* o = po + r.offset[0];
    const T* x = pa + r.offset[1];
    const T* y = pb + r.offset[2];
    // The common cases get loops the compiler can vectorise.
    if (r.stride[0] == 1 && r.stride[1] == 1 && r.stride[2] == 1) {
      for (int64_t i = 0; i < r.length; ++i) o[i] = f(x[i], y[i]);
    } else if (r.stride[0] == 1 && r.stride[1] == 1 && r.stride[2] == 0) {
      const T c = *y;
      for (int64_t i = 0; i < r.length; ++i) o[i] = f(x[i], c);
    } else {
      for (int64_t i = 0; i < r.length; ++i)
        o[i * r.stride[0]] = f(x[i * r.stride[1]], y[i * r.stride[2]]);
    }
  });
}

// f16/bf16 are computed in f32 and rounded once on store.
template <class H, class Op>
void binary_half(const Context& ctx, const wick_op_desc& op, Op f) {
  binary_rows<H>(ctx, op, [f](H a, H b) { return H(f(static_cast<float>(a), static_cast<float>(b))); });
}

template <int Code>
wick_support binary_supports(const wick_op_desc& op) {
  if (op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype t = op.outputs[0].dtype;
  if (op.inputs[0].dtype != t || op.inputs[1].dtype != t) return WICK_SUPPORT_NO_PARAMS;
  if (!same_shape(op.inputs[0], op.outputs[0]) || !same_shape(op.inputs[1], op.outputs[0]))
    return WICK_SUPPORT_NO_PARAMS;
  // bool: add is logical or, mul is logical and; sub and div have no bool meaning.
  if (t == WICK_DTYPE_BOOL) return (Code == WICK_OP_ADD || Code == WICK_OP_MUL) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
  return sdk::dtype_size(t) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <int Code>
void binary_execute(Context& ctx, const wick_op_desc& op) {
  const wick_dtype t = op.outputs[0].dtype;
  if (t == WICK_DTYPE_BOOL) {
    if constexpr (Code == WICK_OP_ADD) binary_rows<bool>(ctx, op, [](bool a, bool b) { return a || b; });
    if constexpr (Code == WICK_OP_MUL) binary_rows<bool>(ctx, op, [](bool a, bool b) { return a && b; });
    return;
  }
  sdk::visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return;  // handled above
    } else if constexpr (std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>) {
      if constexpr (Code == WICK_OP_ADD) binary_half<T>(ctx, op, [](float a, float b) { return a + b; });
      if constexpr (Code == WICK_OP_SUB) binary_half<T>(ctx, op, [](float a, float b) { return a - b; });
      if constexpr (Code == WICK_OP_MUL) binary_half<T>(ctx, op, [](float a, float b) { return a * b; });
      if constexpr (Code == WICK_OP_DIV) binary_half<T>(ctx, op, [](float a, float b) { return a / b; });
    } else if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Code == WICK_OP_ADD) binary_rows<T>(ctx, op, [](T a, T b) { return a + b; });
      if constexpr (Code == WICK_OP_SUB) binary_rows<T>(ctx, op, [](T a, T b) { return a - b; });
      if constexpr (Code == WICK_OP_MUL) binary_rows<T>(ctx, op, [](T a, T b) { return a * b; });
      if constexpr (Code == WICK_OP_DIV) binary_rows<T>(ctx, op, [](T a, T b) { return a / b; });
    } else {
      if constexpr (Code == WICK_OP_ADD) binary_rows<T>(ctx, op, &Arith<T>::add);
      if constexpr (Code == WICK_OP_SUB) binary_rows<T>(ctx, op, &Arith<T>::sub);
      if constexpr (Code == WICK_OP_MUL) binary_rows<T>(ctx, op, &Arith<T>::mul);
      if constexpr (Code == WICK_OP_DIV) binary_rows<T>(ctx, op, &Arith<T>::div);
    }
  });
}

}  // namespace

void register_elementwise(KernelTable& table) {
  table[WICK_OP_COPY] = {&copy_supports, &copy_execute};
  table[WICK_OP_FILL] = {&fill_supports, &fill_execute};
  table[WICK_OP_CAST] = {&cast_supports, &cast_execute};
  table[WICK_OP_ADD] = {&binary_supports<WICK_OP_ADD>, &binary_execute<WICK_OP_ADD>};
  table[WICK_OP_SUB] = {&binary_supports<WICK_OP_SUB>, &binary_execute<WICK_OP_SUB>};
  table[WICK_OP_MUL] = {&binary_supports<WICK_OP_MUL>, &binary_execute<WICK_OP_MUL>};
  table[WICK_OP_DIV] = {&binary_supports<WICK_OP_DIV>, &binary_execute<WICK_OP_DIV>};
}

}  // namespace wick::cpu
