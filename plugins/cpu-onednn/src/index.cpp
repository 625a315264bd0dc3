// Indexing: index_select, index_reduce, gather_elements and scatter_elements along one axis.
//
// Indices are i32 or i64; negative ones count from the end (ONNX), anything outside [-n, n) is an
// INVALID_ARGUMENT error naming the op, the index, the axis and its extent. Every index is checked
// before any output is written, and before any thread starts (an exception must not leave an
// OpenMP region). Updates with repeated indices apply in index order, so "set" keeps the last.
#include "reduce_common.hpp"

#include <algorithm>
#include <cstring>

namespace wick::cpu {

namespace {

// ---- shared pieces ------------------------------------------------------------------------------

bool same_view(const wick_tensor_desc& a, const wick_tensor_desc& b) {
  if (a.buffer != b.buffer || a.byte_offset != b.byte_offset || !same_shape(a, b)) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != 1 && a.strides[i] != b.strides[i]) return false;
  return true;
}

// out := in (same shape and dtype); nothing to do when they are the same view.
void copy_into(const Context& ctx, const wick_tensor_desc& in, const wick_tensor_desc& out) {
  if (same_view(in, out)) return;
  const size_t size = sdk::dtype_size(in.dtype);
  const unsigned char* src = data_of<const unsigned char>(in);
  unsigned char* dst = data_of<unsigned char>(out);
  parallel_rows<2>(ctx, out, {out.strides, in.strides}, [&](const sdk::Row<2>& r) {
    for (int64_t i = 0; i < r.length; ++i)
      std::memcpy(dst + (r.offset[0] + i * r.stride[0]) * static_cast<int64_t>(size),
                  src + (r.offset[1] + i * r.stride[1]) * static_cast<int64_t>(size), size);
  });
}

// Every index of ids, in C order, resolved into [0, extent).
std::vector<int64_t> resolve_all(const wick_tensor_desc& ids, int64_t extent, int axis,
                                 wick_op_code op) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(numel_of(ids)));
  const auto* base = data_of<const unsigned char>(ids);
  sdk::for_each_row<1>(ids.shape, ids.rank, {ids.strides}, [&](const sdk::Row<1>& r) {
    for (int64_t i = 0; i < r.length; ++i)
      out.push_back(resolve_index(read_index(base, ids.dtype, r.offset[0] + i * r.stride[0]),
                                  extent, axis, op));
  });
  return out;
}

// Checks every index of ids against extent without keeping them.
void check_all(const wick_tensor_desc& ids, int64_t extent, int axis, wick_op_code op) {
  const auto* base = data_of<const unsigned char>(ids);
  sdk::for_each_row<1>(ids.shape, ids.rank, {ids.strides}, [&](const sdk::Row<1>& r) {
    for (int64_t i = 0; i < r.length; ++i)
      resolve_index(read_index(base, ids.dtype, r.offset[0] + i * r.stride[0]), extent, axis, op);
  });
}

// a combined with b by a WICK_REDUCE_MODE_*: integers wrap, floats compute in f32 or wider and
// round once, bool adds as "or" and multiplies as "and", max and min let NaN win.
template <int Mode, class T>
T combine_mode(T a, T b) {
  if constexpr (Mode == WICK_REDUCE_MODE_SET) {
    return b;
  } else if constexpr (Mode == WICK_REDUCE_MODE_MAX || Mode == WICK_REDUCE_MODE_MIN) {
    // The winner is returned as stored, so -0.0 and NaN payloads survive.
    const compute_t<T> x = load(a), y = load(b);
    const bool better = Mode == WICK_REDUCE_MODE_MAX ? y > x : y < x;
    return !is_nan(x) && (is_nan(y) || better) ? b : a;
  } else if constexpr (std::is_same_v<T, bool>) {
    return Mode == WICK_REDUCE_MODE_ADD ? (a || b) : (a && b);
  } else if constexpr (is_float_v<T>) {
    const compute_t<T> r = Mode == WICK_REDUCE_MODE_ADD ? load(a) + load(b) : load(a) * load(b);
    return T(r);
  } else {
    const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
    return static_cast<T>(Mode == WICK_REDUCE_MODE_ADD ? x + y : x * y);
  }
}

// Calls f with the dtype's C++ type and the mode as a compile-time constant.
template <class F>
void visit_mode(wick_dtype t, int mode, F&& f) {
  sdk::visit_dtype(t, [&](auto tag) {
    switch (mode) {
      case WICK_REDUCE_MODE_SET: return f(tag, std::integral_constant<int, WICK_REDUCE_MODE_SET>{});
      case WICK_REDUCE_MODE_ADD: return f(tag, std::integral_constant<int, WICK_REDUCE_MODE_ADD>{});
      case WICK_REDUCE_MODE_MUL: return f(tag, std::integral_constant<int, WICK_REDUCE_MODE_MUL>{});
      case WICK_REDUCE_MODE_MAX: return f(tag, std::integral_constant<int, WICK_REDUCE_MODE_MAX>{});
      default: return f(tag, std::integral_constant<int, WICK_REDUCE_MODE_MIN>{});
    }
  });
}

const wick_axis_params* axis_params(const wick_op_desc& op) {
  const auto* p = static_cast<const wick_axis_params*>(op.params);
  return p != nullptr && p->struct_size >= sizeof(wick_axis_params) ? p : nullptr;
}

// ---- index_select -------------------------------------------------------------------------------
// out = x[:axis] ++ ids.shape ++ x[axis+1:], ids of any rank (0-d removes the axis).

wick_support index_select_supports(const wick_op_desc& op) {
  const wick_axis_params* p = axis_params(op);
  if (op.num_inputs != 2 || op.num_outputs != 1 || p == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &out = op.outputs[0];
  if (p->axis < 0 || p->axis >= x.rank || out.rank != x.rank - 1 + ids.rank)
    return WICK_SUPPORT_NO_PARAMS;
  for (int i = 0; i < out.rank; ++i) {
    const int64_t want = i < p->axis              ? x.shape[i]
                         : i < p->axis + ids.rank ? ids.shape[i - p->axis]
                                                  : x.shape[i - ids.rank + 1];
    if (out.shape[i] != want) return WICK_SUPPORT_NO_PARAMS;
  }
  if (!is_index_dtype(ids.dtype) || x.dtype != out.dtype || sdk::dtype_size(x.dtype) == 0)
    return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

template <class E>
void index_select_typed(const Context& ctx, const wick_op_desc& op,
                        const std::vector<int64_t>& rows) {
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &out = op.outputs[0];
  const int axis = axis_params(op)->axis;
  // The slab copied for each index: every dim of x but the axis.
  std::vector<Dim> slab;
  for (int i = 0; i < x.rank; ++i) {
    if (i == axis) continue;
    const int o = i < axis ? i : i - 1 + ids.rank;
    slab.push_back({x.shape[i], x.strides[i], out.strides[o]});
  }
  slab = merge_dims(slab);
  const Dim inner = slab.empty() ? Dim{1, 1, 1} : slab.back();
  const std::vector<Dim> outer =
      slab.empty() ? slab : std::vector<Dim>(slab.begin(), slab.end() - 1);
  // Where each index's slab starts in out (ids dims walked in C order, like rows).
  std::vector<Dim> id_dims;
  for (int k = 0; k < ids.rank; ++k) id_dims.push_back({ids.shape[k], 0, out.strides[axis + k]});
  std::vector<int64_t> out_at(rows.size());
  Walker w(id_dims);
  for (size_t j = 0; j < rows.size(); ++j, w.next()) out_at[j] = w.out;

  const E* src = data_of<const E>(x);
  E* dst = data_of<E>(out);
  const int64_t n_outer = count_of(outer), ax_stride = x.strides[axis];
  parallel_for(ctx, static_cast<int64_t>(rows.size()) * n_outer, inner.n,
               [&](int64_t begin, int64_t end) {
                 Walker k(outer);
                 k.seek(begin % n_outer);
                 for (int64_t t = begin; t < end; ++t) {
                   const size_t j = static_cast<size_t>(t / n_outer);
                   const E* s = src + rows[j] * ax_stride + k.in;
                   E* d = dst + out_at[j] + k.out;
                   if (inner.in == 1 && inner.out == 1)
                     std::memcpy(d, s, static_cast<size_t>(inner.n) * sizeof(E));
                   else
                     for (int64_t i = 0; i < inner.n; ++i) d[i * inner.out] = s[i * inner.in];
                   k.next();
                 }
               });
}

void index_select_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1];
  const int axis = axis_params(op)->axis;
  const std::vector<int64_t> rows = resolve_all(ids, x.shape[axis], axis, WICK_OP_INDEX_SELECT);
  if (numel_of(op.outputs[0]) == 0) return;
  switch (sdk::dtype_size(x.dtype)) {
    case 1: return index_select_typed<uint8_t>(ctx, op, rows);
    case 2: return index_select_typed<uint16_t>(ctx, op, rows);
    case 4: return index_select_typed<uint32_t>(ctx, op, rows);
    default: return index_select_typed<uint64_t>(ctx, op, rows);
  }
}

// ---- index_reduce -------------------------------------------------------------------------------
// in: x, ids (1-D), src (x's shape with ids' length on the axis); out := x, then for each i in
// order, out[.., ids[i], ..] = combine(out[.., ids[i], ..], src[.., i, ..]).

wick_support index_reduce_supports(const wick_op_desc& op) {
  const wick_axis_params* p = axis_params(op);
  if (op.num_inputs != 3 || op.num_outputs != 1 || p == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &src = op.inputs[2],
                         &out = op.outputs[0];
  if (p->axis < 0 || p->axis >= x.rank || p->flag < WICK_REDUCE_MODE_SET ||
      p->flag > WICK_REDUCE_MODE_MIN || ids.rank != 1 || !same_shape(x, out) || src.rank != x.rank)
    return WICK_SUPPORT_NO_PARAMS;
  for (int i = 0; i < x.rank; ++i)
    if (src.shape[i] != (i == p->axis ? ids.shape[0] : x.shape[i])) return WICK_SUPPORT_NO_PARAMS;
  if (!is_index_dtype(ids.dtype) || x.dtype != out.dtype || src.dtype != x.dtype ||
      sdk::dtype_size(x.dtype) == 0)
    return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

constexpr int64_t kColumns = 1024;

void index_reduce_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &src = op.inputs[2],
                         &out = op.outputs[0];
  const wick_axis_params& p = *axis_params(op);
  const std::vector<int64_t> rows = resolve_all(ids, x.shape[p.axis], p.axis, WICK_OP_INDEX_REDUCE);
  copy_into(ctx, x, out);
  if (rows.empty() || numel_of(src) == 0) return;
  // Every dim but the axis; for each position, the indices are applied in order on one thread.
  std::vector<Dim> slab;
  for (int i = 0; i < x.rank; ++i)
    if (i != p.axis) slab.push_back({x.shape[i], src.strides[i], out.strides[i]});
  slab = merge_dims(slab);
  const Dim inner = slab.empty() ? Dim{1, 1, 1} : slab.back();
  const std::vector<Dim> outer =
      slab.empty() ? slab : std::vector<Dim>(slab.begin(), slab.end() - 1);
  const int64_t blocks = (inner.n + kColumns - 1) / kColumns;
  const int64_t src_ax = src.strides[p.axis], out_ax = out.strides[p.axis];
  visit_mode(x.dtype, p.flag, [&](auto tag, auto mode) {
    using T = typename decltype(tag)::type;
    const T* s = data_of<const T>(src);
    T* d = data_of<T>(out);
    parallel_for(ctx, count_of(outer) * blocks,
                 static_cast<int64_t>(rows.size()) * std::min(inner.n, kColumns),
                 [&](int64_t begin, int64_t end) {
                   Walker k(outer);
                   for (int64_t item = begin; item < end; ++item) {
                     k.seek(item / blocks);
                     const int64_t c0 = (item % blocks) * kColumns,
                                   width = std::min(kColumns, inner.n - c0);
                     for (size_t j = 0; j < rows.size(); ++j) {
                       const T* a = s + k.in + static_cast<int64_t>(j) * src_ax + c0 * inner.in;
                       T* b = d + k.out + rows[j] * out_ax + c0 * inner.out;
                       for (int64_t i = 0; i < width; ++i)
                         b[i * inner.out] =
                             combine_mode<decltype(mode)::value>(b[i * inner.out], a[i * inner.in]);
                     }
                   }
                 });
  });
}

// ---- gather_elements ----------------------------------------------------------------------------
// out[p] = x[p with its axis coordinate replaced by ids[p]]; ids has x's rank, no larger extents
// than x off the axis, and out has ids' shape.

bool fits_off_axis(const wick_tensor_desc& ids, const wick_tensor_desc& x, int axis) {
  if (ids.rank != x.rank) return false;
  for (int i = 0; i < x.rank; ++i)
    if (i != axis && ids.shape[i] > x.shape[i]) return false;
  return true;
}

wick_support gather_supports(const wick_op_desc& op) {
  const wick_axis_params* p = axis_params(op);
  if (op.num_inputs != 2 || op.num_outputs != 1 || p == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &out = op.outputs[0];
  if (p->axis < 0 || p->axis >= x.rank || !fits_off_axis(ids, x, p->axis) || !same_shape(ids, out))
    return WICK_SUPPORT_NO_PARAMS;
  if (!is_index_dtype(ids.dtype) || x.dtype != out.dtype || sdk::dtype_size(x.dtype) == 0)
    return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

template <class E>
void gather_typed(const Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &out = op.outputs[0];
  const int axis = axis_params(op)->axis;
  const int64_t extent = x.shape[axis], ax_stride = x.strides[axis];
  std::vector<int64_t> x_strides(x.strides, x.strides + x.rank);
  x_strides[static_cast<size_t>(axis)] = 0;
  const E* src = data_of<const E>(x);
  E* dst = data_of<E>(out);
  const auto* id_base = data_of<const unsigned char>(ids);
  parallel_rows<3>(
      ctx, ids, {out.strides, ids.strides, x_strides.data()}, [&](const sdk::Row<3>& r) {
        for (int64_t i = 0; i < r.length; ++i) {
          int64_t id = read_index(id_base, ids.dtype, r.offset[1] + i * r.stride[1]);
          if (id < 0) id += extent;  // checked before the loop
          dst[r.offset[0] + i * r.stride[0]] = src[r.offset[2] + i * r.stride[2] + id * ax_stride];
        }
      });
}

void gather_execute(Context& ctx, const wick_op_desc& op) {
  const int axis = axis_params(op)->axis;
  check_all(op.inputs[1], op.inputs[0].shape[axis], axis, WICK_OP_GATHER_ELEMENTS);
  if (numel_of(op.outputs[0]) == 0) return;
  switch (sdk::dtype_size(op.inputs[0].dtype)) {
    case 1: return gather_typed<uint8_t>(ctx, op);
    case 2: return gather_typed<uint16_t>(ctx, op);
    case 4: return gather_typed<uint32_t>(ctx, op);
    default: return gather_typed<uint64_t>(ctx, op);
  }
}

// ---- scatter_elements ---------------------------------------------------------------------------
// in: x, ids, src (ids' shape); out := x, then for every position p of ids in C order,
// out[p with its axis coordinate replaced by ids[p]] = combine(that, src[p]).

wick_support scatter_supports(const wick_op_desc& op) {
  const wick_axis_params* p = axis_params(op);
  if (op.num_inputs != 3 || op.num_outputs != 1 || p == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &src = op.inputs[2],
                         &out = op.outputs[0];
  if (p->axis < 0 || p->axis >= x.rank || p->flag < WICK_REDUCE_MODE_SET ||
      p->flag > WICK_REDUCE_MODE_MIN || !fits_off_axis(ids, x, p->axis) || !same_shape(ids, src) ||
      !same_shape(x, out))
    return WICK_SUPPORT_NO_PARAMS;
  if (!is_index_dtype(ids.dtype) || x.dtype != out.dtype || src.dtype != x.dtype ||
      sdk::dtype_size(x.dtype) == 0)
    return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

void scatter_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &ids = op.inputs[1], &src = op.inputs[2],
                         &out = op.outputs[0];
  const wick_axis_params& p = *axis_params(op);
  const int64_t extent = x.shape[p.axis];
  check_all(ids, extent, p.axis, WICK_OP_SCATTER_ELEMENTS);
  copy_into(ctx, x, out);
  if (numel_of(ids) == 0) return;
  // Positions that differ off the axis never write the same element, so they run in parallel;
  // along the axis the updates run in order.
  const int64_t n = ids.shape[p.axis];
  const int64_t id_ax = ids.strides[p.axis], src_ax = src.strides[p.axis],
                out_ax = out.strides[p.axis];
  const std::array<const int64_t*, 3> strides{ids.strides, src.strides, out.strides};
  const auto* id_base = data_of<const unsigned char>(ids);
  visit_mode(x.dtype, p.flag, [&](auto tag, auto mode) {
    using T = typename decltype(tag)::type;
    const T* s = data_of<const T>(src);
    T* d = data_of<T>(out);
    parallel_for(ctx, LineWalker(ids, p.axis, strides).count(), n, [&](int64_t begin, int64_t end) {
      LineWalker lines(ids, p.axis, strides);
      lines.seek(begin);
      for (int64_t l = begin; l < end; ++l, lines.next()) {
        const std::array<int64_t, 3> at = lines.offsets();
        for (int64_t k = 0; k < n; ++k) {
          int64_t id = read_index(id_base, ids.dtype, at[0] + k * id_ax);
          if (id < 0) id += extent;  // checked before any write
          T& slot = d[at[2] + id * out_ax];
          slot = combine_mode<decltype(mode)::value>(slot, s[at[1] + k * src_ax]);
        }
      }
    });
  });
}

}  // namespace

Kernel index_kernel(int op) {
  switch (op) {
    case WICK_OP_INDEX_SELECT: return {&index_select_execute, &index_select_supports};
    case WICK_OP_INDEX_REDUCE: return {&index_reduce_execute, &index_reduce_supports};
    case WICK_OP_GATHER_ELEMENTS: return {&gather_execute, &gather_supports};
    case WICK_OP_SCATTER_ELEMENTS: return {&scatter_execute, &scatter_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
