// Creation kernels: iota (floats and integers) and the counter-based random numbers (floats), with
// the Philox stream every plugin shares (wick/sdk/philox.hpp, docs/ops.md "Random numbers").
#include "elementwise_loops.hpp"

#include <wick/sdk/philox.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace wick::cpu {

namespace {

// Walks the output with a second, virtual operand whose offset is the element's index: the C-order
// flat index (contiguous strides), or the index along one axis (stride 1 there, 0 elsewhere).
template <class F>
void for_each_index(const Context& ctx, const wick_tensor_desc& out, int axis, F f) {
  std::vector<int64_t> index_strides(static_cast<size_t>(out.rank), 0);
  if (axis < 0) {
    int64_t s = 1;
    for (int i = out.rank; i-- > 0;) {
      index_strides[static_cast<size_t>(i)] = s;
      s *= out.shape[i];
    }
  } else {
    index_strides[static_cast<size_t>(axis)] = 1;
  }
  parallel_rows<2>(ctx, out, {out.strides, index_strides.data()}, [&](const sdk::Row<2>& r) {
    for (int64_t i = 0; i < r.length; ++i) f(r.offset[0] + i * r.stride[0], r.offset[1] + i * r.stride[1]);
  });
}

// ---- iota ---------------------------------------------------------------------------------------

wick_support iota_supports(const wick_op_desc& op) {
  if (op.num_inputs != 0 || op.num_outputs != 1 || op.params == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_iota_params*>(op.params);
  if (p.struct_size < sizeof(wick_iota_params)) return WICK_SUPPORT_NO_PARAMS;
  if (p.axis < -1 || p.axis >= op.outputs[0].rank) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype t = op.outputs[0].dtype;
  return is_float_dtype(t) || is_int_dtype(t) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

void iota_execute(Context& ctx, const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_iota_params*>(op.params);
  const wick_tensor_desc& out = op.outputs[0];
  sdk::visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = data_of<T>(out);
    if constexpr (is_float_v<T>) {
      // start + step * k in double, rounded once (f16/bf16 through f32, as every cast).
      for_each_index(ctx, out, p.axis, [&](int64_t at, int64_t k) {
        dst[at] = cast_value<T>(p.float_start + p.float_step * static_cast<double>(k));
      });
    } else if constexpr (is_int_v<T>) {
      // Wraps modulo 2^bits, like all integer arithmetic.
      const auto start = static_cast<uint64_t>(p.int_start), step = static_cast<uint64_t>(p.int_step);
      for_each_index(ctx, out, p.axis, [&](int64_t at, int64_t k) {
        dst[at] = static_cast<T>(start + step * static_cast<uint64_t>(k));
      });
    }
  });
}

// ---- random numbers -----------------------------------------------------------------------------

// The largest T below v (v finite); for f16/bf16 one step of the bit pattern.
template <class T>
T next_below(T v) {
  if constexpr (is_half_v<T>) {
    T r = v;
    if ((v.bits & 0x7fffu) == 0) r.bits = 0x8001u;        // +-0 -> the negative smallest subnormal
    else if (v.bits & 0x8000u) r.bits = static_cast<uint16_t>(v.bits + 1u);  // more negative
    else r.bits = static_cast<uint16_t>(v.bits - 1u);
    return r;
  } else {
    return std::nextafter(v, -std::numeric_limits<T>::infinity());
  }
}

wick_support rng_supports(const wick_op_desc& op) {
  if (op.num_inputs != 0 || op.num_outputs != 1 || op.params == nullptr) return WICK_SUPPORT_NO_PARAMS;
  if (static_cast<const wick_rng_params*>(op.params)->struct_size < sizeof(wick_rng_params))
    return WICK_SUPPORT_NO_PARAMS;
  return is_float_dtype(op.outputs[0].dtype) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <bool Normal>
void rng_execute(Context& ctx, const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_rng_params*>(op.params);
  const wick_tensor_desc& out = op.outputs[0];
  sdk::visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_float_v<T>) {
      T* dst = data_of<T>(out);
      const double a = p.a, b = p.b;
      for_each_index(ctx, out, -1, [&](int64_t at, int64_t i) {
        const sdk::PhiloxBlock w = sdk::philox_for_element(p.seed, p.offset, static_cast<uint64_t>(i));
        if constexpr (Normal) {
          dst[at] = cast_value<T>(a + b * sdk::philox_normal(w));
        } else {
          const double u = std::is_same_v<T, double> ? sdk::philox_uniform53(w) : sdk::philox_uniform24(w);
          T v = cast_value<T>(a + (b - a) * u);
          // Rounding may reach b; the interval stays half-open.
          if (a < b && static_cast<double>(static_cast<compute_t<T>>(v)) >= b) v = next_below(v);
          dst[at] = v;
        }
      });
    }
  });
}

}  // namespace

Kernel creation_kernel(int op) {
  switch (op) {
    case WICK_OP_IOTA: return {&iota_execute, &iota_supports};
    case WICK_OP_RNG_UNIFORM: return {&rng_execute<false>, &rng_supports};
    case WICK_OP_RNG_NORMAL: return {&rng_execute<true>, &rng_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
