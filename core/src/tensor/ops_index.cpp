// ops_index.cpp — indexing, sorting and joining of the Tensor API (see tensor.hpp).
// Indices are i32 or i64 tensors on the same device; negative indices count from the end (ONNX);
// out-of-range indices are errors raised by the device naming the index, the axis and its extent
// (docs/ops/reduce-index.md). cat, stack and topk are composites: views and copies only.
#include <wick/dispatch.hpp>
#include "tensor/autograd_rules.hpp"
#include "tensor/ops_common.hpp"
#include <wick/shape.hpp>

namespace wick {

using namespace detail;

namespace {

void require_index_tensor(const Tensor& x, const Tensor& ids, const char* name) {
  require_defined(x, name);
  require_defined(ids, name);
  require_same_device(x, ids, name);
  if (ids.dtype() != DType::I32 && ids.dtype() != DType::I64) {
    throw Error(std::string(name) + ": indices must be i32 or i64, got " + dtype_name(ids.dtype()) +
                "; convert them with .to(DType::I64)");
  }
}

int reduce_mode(const std::string& mode, const char* name) {
  if (mode == "set") return WICK_REDUCE_MODE_SET;
  if (mode == "add") return WICK_REDUCE_MODE_ADD;
  if (mode == "mul") return WICK_REDUCE_MODE_MUL;
  if (mode == "max") return WICK_REDUCE_MODE_MAX;
  if (mode == "min") return WICK_REDUCE_MODE_MIN;
  throw Error(std::string(name) + ": unknown mode '" + mode + "' (valid: set, add, mul, max, min)");
}

wick_axis_params axis_params(int axis, int flag) {
  return {sizeof(wick_axis_params), axis, flag};
}

// gather and scatter: ids has x's rank and no extent larger than x's off the axis.
void require_fits(const Tensor& x, const Tensor& ids, int axis, const char* name) {
  bool fits = ids.rank() == x.rank();
  for (int i = 0; fits && i < x.rank(); ++i)
    fits = i == axis || ids.shape()[static_cast<size_t>(i)] <= x.shape()[static_cast<size_t>(i)];
  if (!fits) {
    throw Error(std::string(name) + ": indices of shape " + shape_to_string(ids.shape()) +
                " do not fit a tensor of shape " + shape_to_string(x.shape()) + " along axis " +
                std::to_string(axis) + " (same rank, and no larger extent on any other axis)");
  }
}

}  // namespace

// ---- index_select, index_reduce -----------------------------------------------------------------

Tensor Tensor::index_select(const Tensor& ids, int axis) const {
  if (grad::needs(*this)) return grad::index_select(*this, ids, axis);
  require_index_tensor(*this, ids, "index_select");
  const int a = normalize_axis(axis, rank(), "index_select");
  Shape shape(shape_.begin(), shape_.begin() + a);
  shape.insert(shape.end(), ids.shape().begin(), ids.shape().end());
  shape.insert(shape.end(), shape_.begin() + a + 1, shape_.end());
  Tensor out = empty(shape, dtype_, device());
  const wick_axis_params p = axis_params(a, 0);
  if (out.numel() > 0) dispatch(WICK_OP_INDEX_SELECT, &p, {*this, ids}, {out});
  return out;
}

Tensor Tensor::index_reduce(int axis, const Tensor& ids, const Tensor& src,
                            const std::string& mode) const {
  if (grad::needs({this, &src})) return grad::index_reduce(*this, axis, ids, src, mode);
  require_index_tensor(*this, ids, "index_reduce");
  require_defined(src, "index_reduce");
  require_same_device(*this, src, "index_reduce");
  const int a = normalize_axis(axis, rank(), "index_reduce");
  const int m = reduce_mode(mode, "index_reduce");
  if (ids.rank() != 1) {
    throw Error("index_reduce: indices must be 1-D, got shape " + shape_to_string(ids.shape()));
  }
  Shape want = shape_;
  want[static_cast<size_t>(a)] = ids.dim(0);
  if (src.shape() != want) {
    throw Error("index_reduce: src has shape " + shape_to_string(src.shape()) +
                "; for a tensor of shape " + shape_to_string(shape_) + " and " +
                std::to_string(ids.dim(0)) + " indices along axis " + std::to_string(a) +
                " it must be " + shape_to_string(want));
  }
  Tensor out = empty(shape_, dtype_, device());
  const wick_axis_params p = axis_params(a, m);
  if (out.numel() > 0) dispatch(WICK_OP_INDEX_REDUCE, &p, {*this, ids, src.to(dtype_)}, {out});
  return out;
}

Tensor Tensor::index_add(int axis, const Tensor& ids, const Tensor& src) const {
  return index_reduce(axis, ids, src, "add");
}

// ---- gather, scatter ----------------------------------------------------------------------------

Tensor Tensor::gather(int axis, const Tensor& ids) const {
  if (grad::needs(*this)) return grad::gather(*this, axis, ids);
  require_index_tensor(*this, ids, "gather");
  const int a = normalize_axis(axis, rank(), "gather");
  require_fits(*this, ids, a, "gather");
  Tensor out = empty(ids.shape(), dtype_, device());
  const wick_axis_params p = axis_params(a, 0);
  if (out.numel() > 0) dispatch(WICK_OP_GATHER_ELEMENTS, &p, {*this, ids}, {out});
  return out;
}

Tensor Tensor::scatter(int axis, const Tensor& ids, const Tensor& src,
                       const std::string& mode) const {
  if (grad::needs({this, &src})) return grad::scatter(*this, axis, ids, src, mode);
  require_index_tensor(*this, ids, "scatter");
  require_defined(src, "scatter");
  require_same_device(*this, src, "scatter");
  const int a = normalize_axis(axis, rank(), "scatter");
  const int m = reduce_mode(mode, "scatter");
  require_fits(*this, ids, a, "scatter");
  Shape merged;
  try {
    merged = broadcast_shapes(src.shape(), ids.shape(), "scatter");
  } catch (const Error&) {
    merged.clear();
  }
  if (merged != ids.shape()) {
    throw Error("scatter: src of shape " + shape_to_string(src.shape()) +
                " does not broadcast to the indices' shape " + shape_to_string(ids.shape()));
  }
  Tensor out = empty(shape_, dtype_, device());
  const wick_axis_params p = axis_params(a, m);
  if (out.numel() > 0)
    dispatch(WICK_OP_SCATTER_ELEMENTS, &p, {*this, ids, src.to(dtype_).broadcast_to(ids.shape())},
             {out});
  return out;
}

// ---- sorting ------------------------------------------------------------------------------------

std::pair<Tensor, Tensor> Tensor::sort(int axis, bool descending, bool stable) const {
  if (grad::needs(*this)) return grad::sort(*this, axis, descending, stable);
  require_defined(*this, "sort");
  // A 0-d tensor sorts like a one-element vector.
  const int a = normalize_axis(axis, std::max(rank(), 1), "sort");
  const Tensor x = rank() == 0 ? reshape({1}) : *this;
  Tensor values = empty(x.shape(), dtype_, device());
  Tensor indices = empty(x.shape(), DType::I64, device());
  if (x.numel() > 0) {
    wick_sort_params p{};
    p.struct_size = sizeof(p);
    p.axis = a;
    p.descending = descending ? 1 : 0;
    p.stable = stable ? 1 : 0;
    dispatch(WICK_OP_SORT, &p, {x}, {values, indices});
  }
  if (rank() == 0) return {values.reshape({}), indices.reshape({})};
  return {values, indices};
}

Tensor Tensor::argsort(int axis, bool descending) const {
  return sort(axis, descending, true).second;
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int axis, bool largest) const {
  require_defined(*this, "topk");
  const int a = normalize_axis(axis, std::max(rank(), 1), "topk");
  const int64_t n = rank() == 0 ? 1 : shape_[static_cast<size_t>(a)];
  if (k < 0 || k > n) {
    throw Error("topk: k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) +
                "] for axis " + std::to_string(a) + " of shape " + shape_to_string(shape_));
  }
  // A stable sort: among equal values the lower index comes first. NaN counts as the largest.
  auto [values, indices] = sort(axis, largest, true);
  if (rank() == 0) return {values, indices};
  return {values.narrow(a, 0, k).contiguous(), indices.narrow(a, 0, k).contiguous()};
}

// ---- joining ------------------------------------------------------------------------------------

Tensor Tensor::cat(const std::vector<Tensor>& tensors, int axis) {
  if (grad::needs_any(tensors)) return grad::cat(tensors, axis);
  if (tensors.empty()) throw Error("cat: no tensors given");
  for (const Tensor& t : tensors) require_defined(t, "cat");
  const Tensor& first = tensors.front();
  if (first.rank() == 0)
    throw Error("cat: 0-d tensors have no axis to concatenate along; use stack");
  const int a = normalize_axis(axis, first.rank(), "cat");
  DType dtype = first.dtype();
  Shape shape = first.shape();
  shape[static_cast<size_t>(a)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    require_same_device(first, t, "cat");
    bool fits = t.rank() == first.rank();
    for (int d = 0; fits && d < first.rank(); ++d)
      fits = d == a || t.shape()[static_cast<size_t>(d)] == first.shape()[static_cast<size_t>(d)];
    if (!fits) {
      throw Error("cat: tensor " + std::to_string(i) + " has shape " + shape_to_string(t.shape()) +
                  ", which does not match tensor 0's " + shape_to_string(first.shape()) +
                  " off axis " + std::to_string(a));
    }
    dtype = promote_types(dtype, t.dtype());
    shape[static_cast<size_t>(a)] += t.shape()[static_cast<size_t>(a)];
  }
  // Each input is copied into its slice of one output (a strided view, written in place).
  Tensor out = empty(shape, dtype, first.device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const int64_t len = t.shape()[static_cast<size_t>(a)];
    if (t.numel() > 0) dispatch(WICK_OP_COPY, nullptr, {t.to(dtype)}, {out.narrow(a, offset, len)});
    offset += len;
  }
  return out;
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw Error("stack: no tensors given");
  for (const Tensor& t : tensors) require_defined(t, "stack");
  const int a = normalize_axis(axis, tensors.front().rank() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != tensors.front().shape()) {
      throw Error("stack: tensor " + std::to_string(i) + " has shape " +
                  shape_to_string(tensors[i].shape()) + ", tensor 0 has " +
                  shape_to_string(tensors.front().shape()) + "; all must be equal");
    }
    expanded.push_back(tensors[i].unsqueeze(a));
  }
  return cat(expanded, a);
}

}  // namespace wick
