// elementwise_loops.hpp — the row loops every elementwise kernel of this plugin runs (one or two
// strided inputs, one output, each with its own element type), and their op_supports checks. Contiguous rows get plain indexed loops that the
// compiler vectorises; large work is split by parallel_rows.
#pragma once

#include "kernels.hpp"

#include <type_traits>

namespace wick::cpu {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>;

// The type arithmetic on T is done in: f32 for the 16-bit floats (rounded once on store), T itself
// otherwise.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
inline constexpr bool is_float_v = is_half_v<T> || std::is_floating_point_v<T>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Wrapping integer arithmetic (docs/ops.md, "Integers"): computed in an unsigned type at least as
// wide as unsigned int, so there is neither signed overflow nor promotion to int.
template <class T>
struct Wrap {
  using U = std::make_unsigned_t<T>;
  using W = std::common_type_t<U, unsigned>;
  static T add(T a, T b) { return static_cast<T>(W(U(a)) + W(U(b))); }
  static T sub(T a, T b) { return static_cast<T>(W(U(a)) - W(U(b))); }
  static T mul(T a, T b) { return static_cast<T>(W(U(a)) * W(U(b))); }
  static T neg(T a) { return static_cast<T>(W(0) - W(U(a))); }
};

// Dtype classes for op_supports.
inline bool is_float_dtype(wick_dtype t) { return sdk::dtype_is_float(t); }
inline bool is_int_dtype(wick_dtype t) {
  return sdk::dtype_size(t) != 0 && !sdk::dtype_is_float(t) && t != WICK_DTYPE_BOOL;
}

// Checks the geometry of an elementwise op: `inputs` inputs and one output, all of the output's
// shape, inputs of dtype `in` (a comparison's inputs differ from its bool output).
inline wick_support check_elementwise(const wick_op_desc& op, size_t inputs, wick_dtype in) {
  if (op.num_inputs != inputs || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  for (size_t i = 0; i < inputs; ++i) {
    if (op.inputs[i].dtype != in) return WICK_SUPPORT_NO_DTYPE;
    if (!same_shape(op.inputs[i], op.outputs[0])) return WICK_SUPPORT_NO_PARAMS;
  }
  return sdk::dtype_size(in) != 0 && sdk::dtype_size(op.outputs[0].dtype) != 0 ? WICK_SUPPORT_YES
                                                                                : WICK_SUPPORT_NO_DTYPE;
}

// out[i] = f(in[i]).
template <class Out, class In, class F>
void map_unary(const Context& ctx, const wick_tensor_desc& in, const wick_tensor_desc& out, F f) {
  const In* pi = data_of<const In>(in);
  Out* po = data_of<Out>(out);
  parallel_rows<2>(ctx, out, {out.strides, in.strides}, [&](const sdk::Row<2>& r) {
    Out* o = po + r.offset[0];
    const In* x = pi + r.offset[1];
    if (r.stride[0] == 1 && r.stride[1] == 1) {
      for (int64_t i = 0; i < r.length; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < r.length; ++i) o[i * r.stride[0]] = f(x[i * r.stride[1]]);
    }
  });
}

// out[i] = f(a[i], b[i]); the inputs arrive broadcast (stride 0) to the output's shape.
template <class Out, class In, class F>
void map_binary(const Context& ctx, const wick_op_desc& op, F f) {
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  const In* pa = data_of<const In>(a);
  const In* pb = data_of<const In>(b);
  Out* po = data_of<Out>(out);
  parallel_rows<3>(ctx, out, {out.strides, a.strides, b.strides}, [&](const sdk::Row<3>& r) {
    Out* o = po + r.offset[0];
    const In* x = pa + r.offset[1];
    const In* y = pb + r.offset[2];
    // The common cases get loops the compiler can vectorise.
    if (r.stride[0] == 1 && r.stride[1] == 1 && r.stride[2] == 1) {
      for (int64_t i = 0; i < r.length; ++i) o[i] = f(x[i], y[i]);
    } else if (r.stride[0] == 1 && r.stride[1] == 1 && r.stride[2] == 0) {
      const In c = *y;
      for (int64_t i = 0; i < r.length; ++i) o[i] = f(x[i], c);
    } else if (r.stride[0] == 1 && r.stride[1] == 0 && r.stride[2] == 1) {
      const In c = *x;
      for (int64_t i = 0; i < r.length; ++i) o[i] = f(c, y[i]);
    } else {
      for (int64_t i = 0; i < r.length; ++i) o[i * r.stride[0]] = f(x[i * r.stride[1]], y[i * r.stride[2]]);
    }
  });
}

// T -> T maps where f works on compute_t<T> (f16/bf16 go through f32 and are rounded once).
template <class T, class F>
void map_unary_same(const Context& ctx, const wick_op_desc& op, F f) {
  using C = compute_t<T>;
  map_unary<T, T>(ctx, op.inputs[0], op.outputs[0], [f](T x) { return static_cast<T>(f(static_cast<C>(x))); });
}
template <class T, class F>
void map_binary_same(const Context& ctx, const wick_op_desc& op, F f) {
  using C = compute_t<T>;
  map_binary<T, T>(ctx, op, [f](T a, T b) { return static_cast<T>(f(static_cast<C>(a), static_cast<C>(b))); });
}

}  // namespace wick::cpu
