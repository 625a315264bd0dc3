// ops_reduce.cpp — reductions, arg-reductions and scans of the Tensor API (see tensor.hpp).
// Result dtypes follow NumPy (docs/ops/reduce-index.md): sum, prod, cumsum and cumprod return
// floats in their dtype and integers and bool as i64 / u64; max, min, cummax and cummin keep the
// dtype; mean returns floats in their dtype and integers and bool as f64; all and any return bool;
// argmax and argmin return i64.
#include <wick/dispatch.hpp>
#include "tensor/autograd_rules.hpp"
#include "tensor/ops_common.hpp"
#include <wick/shape.hpp>

#include <numeric>

namespace wick {

using namespace detail;

namespace {

// The 64-bit type integers and bool accumulate and return in sums and products (docs/ops.md).
DType widened(DType t) {
  if (is_float(t)) return t;
  return is_unsigned(t) ? DType::U64 : DType::I64;
}

std::vector<int> every_axis(int rank) {
  std::vector<int> all(static_cast<size_t>(rank));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// Reduces x over axes with `op` into a new tensor of out_dtype (x must already be in the dtype
// the plugin expects for that output).
Tensor reduce(wick_op_code op, const char* name, const Tensor& x, const std::vector<int>& axes,
              bool keepdim, DType out_dtype, bool needs_elements) {
  require_defined(x, name);
  const std::vector<int32_t> norm = normalize_axes(axes, x.rank(), name);
  if (needs_elements) {
    for (int32_t a : norm) {
      if (x.shape()[static_cast<size_t>(a)] == 0) {
        throw Error(std::string(name) + ": axis " + std::to_string(a) + " of shape " +
                    shape_to_string(x.shape()) + " is empty, and " + name +
                    " has no identity to return for it (as NumPy: reduce a "
                    "non-empty axis, or use sum / prod / all / any)");
      }
    }
  }
  Shape kept = x.shape();
  for (int32_t a : norm) kept[static_cast<size_t>(a)] = 1;
  Tensor out = Tensor::empty(kept, out_dtype, x.device());
  if (out.numel() > 0) {
    wick_reduce_params p{};
    p.struct_size = sizeof(p);
    p.axes = norm.data();
    p.num_axes = static_cast<int32_t>(norm.size());
    dispatch(op, &p, {x}, {out});
  }
  return keepdim ? out : out.reshape(drop_axes(x.shape(), norm));
}

// A 0-d tensor has one axis for arg-reductions, scans and sort (axis 0 or -1), as in PyTorch.
int scalar_safe_axis(const Tensor& x, int axis, const char* name) {
  return normalize_axis(axis, std::max(x.rank(), 1), name);
}
Tensor as_vector_if_scalar(const Tensor& x) {
  return x.rank() == 0 ? x.reshape({1}) : x;
}

Tensor arg_reduce(wick_op_code op, const char* name, const Tensor& x, int axis, bool keepdim,
                  bool last) {
  require_defined(x, name);
  const int a = scalar_safe_axis(x, axis, name);
  const Tensor v = as_vector_if_scalar(x);
  if (v.shape()[static_cast<size_t>(a)] == 0) {
    throw Error(std::string(name) + ": axis " + std::to_string(a) + " of shape " +
                shape_to_string(x.shape()) + " is empty; there is no element to pick");
  }
  Shape kept = v.shape();
  kept[static_cast<size_t>(a)] = 1;
  Tensor out = Tensor::empty(kept, DType::I64, x.device());
  if (out.numel() > 0) {
    wick_axis_params p{};
    p.struct_size = sizeof(p);
    p.axis = a;
    p.flag = last ? 1 : 0;
    dispatch(op, &p, {v}, {out});
  }
  if (x.rank() == 0) return out.reshape({});
  return keepdim ? out : out.squeeze(a);
}

Tensor scan(wick_op_code op, const char* name, const Tensor& x, int axis, bool reverse,
            bool exclusive, DType out_dtype) {
  require_defined(x, name);
  const int a = scalar_safe_axis(x, axis, name);
  const Tensor v = as_vector_if_scalar(x);
  Tensor out = Tensor::empty(v.shape(), out_dtype, x.device());
  if (out.numel() > 0) {
    wick_axis_params p{};
    p.struct_size = sizeof(p);
    p.axis = a;
    p.flag = (reverse ? 1 : 0) | (exclusive ? 2 : 0);
    dispatch(op, &p, {v}, {out});
  }
  return x.rank() == 0 ? out.reshape({}) : out;
}

}  // namespace

// ---- reductions ---------------------------------------------------------------------------------

Tensor Tensor::sum(const std::vector<int>& axes, bool keepdim) const {
  if (grad::needs(*this)) return grad::sum(*this, axes, keepdim);
  return reduce(WICK_OP_REDUCE_SUM, "sum", *this, axes, keepdim, widened(dtype_), false);
}

Tensor Tensor::sum() const {
  return sum(every_axis(rank()), false);
}

Tensor Tensor::prod(const std::vector<int>& axes, bool keepdim) const {
  if (grad::needs(*this)) return grad::prod(*this, axes, keepdim);
  return reduce(WICK_OP_REDUCE_PROD, "prod", *this, axes, keepdim, widened(dtype_), false);
}

Tensor Tensor::max(const std::vector<int>& axes, bool keepdim) const {
  if (grad::needs(*this)) return grad::extreme(*this, axes, keepdim, true);
  return reduce(WICK_OP_REDUCE_MAX, "max", *this, axes, keepdim, dtype_, true);
}

Tensor Tensor::min(const std::vector<int>& axes, bool keepdim) const {
  if (grad::needs(*this)) return grad::extreme(*this, axes, keepdim, false);
  return reduce(WICK_OP_REDUCE_MIN, "min", *this, axes, keepdim, dtype_, true);
}

Tensor Tensor::mean(const std::vector<int>& axes, bool keepdim) const {
  if (grad::needs(*this)) return grad::mean(*this, axes, keepdim);
  require_defined(*this, "mean");
  // NumPy: integers and bool average in f64; f16 and bf16 in f32, returned in their own dtype.
  const DType work = !is_float(dtype_)                                 ? DType::F64
                     : (dtype_ == DType::F16 || dtype_ == DType::BF16) ? DType::F32
                                                                       : dtype_;
  const DType result = is_float(dtype_) ? dtype_ : DType::F64;
  double count = 1;
  for (int32_t a : normalize_axes(axes, rank(), "mean"))
    count *= static_cast<double>(shape_[static_cast<size_t>(a)]);
  const Tensor total = reduce(WICK_OP_REDUCE_SUM, "mean", to(work), axes, keepdim, work, false);
  // An empty reduction is 0 / 0 = NaN, as in NumPy.
  return total.div(scalar_tensor(count, work, device())).to(result);
}

Tensor Tensor::all(const std::vector<int>& axes, bool keepdim) const {
  require_defined(*this, "all");
  // bool min is "and"; over an empty axis it is its identity, true.
  return reduce(WICK_OP_REDUCE_MIN, "all", to(DType::Bool), axes, keepdim, DType::Bool, false);
}

Tensor Tensor::any(const std::vector<int>& axes, bool keepdim) const {
  require_defined(*this, "any");
  return reduce(WICK_OP_REDUCE_MAX, "any", to(DType::Bool), axes, keepdim, DType::Bool, false);
}

// ---- arg-reductions -----------------------------------------------------------------------------

Tensor Tensor::argmax(int axis, bool keepdim, bool last) const {
  return arg_reduce(WICK_OP_ARGMAX, "argmax", *this, axis, keepdim, last);
}

Tensor Tensor::argmin(int axis, bool keepdim, bool last) const {
  return arg_reduce(WICK_OP_ARGMIN, "argmin", *this, axis, keepdim, last);
}

// ---- scans --------------------------------------------------------------------------------------

Tensor Tensor::cumsum(int axis, bool reverse, bool exclusive) const {
  if (grad::needs(*this)) return grad::cumsum(*this, axis, reverse, exclusive);
  return scan(WICK_OP_CUMSUM, "cumsum", *this, axis, reverse, exclusive, widened(dtype_));
}

Tensor Tensor::cumprod(int axis, bool reverse, bool exclusive) const {
  if (grad::needs(*this)) return grad::cumprod(*this, axis, reverse, exclusive);
  return scan(WICK_OP_CUMPROD, "cumprod", *this, axis, reverse, exclusive, widened(dtype_));
}

Tensor Tensor::cummax(int axis, bool reverse) const {
  if (grad::needs(*this)) return grad::cumextreme(*this, axis, reverse, true);
  return scan(WICK_OP_CUMMAX, "cummax", *this, axis, reverse, false, dtype_);
}

Tensor Tensor::cummin(int axis, bool reverse) const {
  if (grad::needs(*this)) return grad::cumextreme(*this, axis, reverse, false);
  return scan(WICK_OP_CUMMIN, "cummin", *this, axis, reverse, false, dtype_);
}

}  // namespace wick
