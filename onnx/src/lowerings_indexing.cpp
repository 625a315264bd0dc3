// lowerings_indexing.cpp — gathers and scatters by indices from the model: Gather, GatherElements,
// ScatterElements (and Scatter), GatherND, ScatterND, NonZero, Compress and ReverseSequence. The
// indices are read back to the host, normalised or turned into row indices there, and uploaded as
// i64 for INDEX_SELECT, GATHER_ELEMENTS, SCATTER_ELEMENTS and INDEX_REDUCE.
#include "lowerings.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace wick::onnx {

void OnnxLowering::Impl::lower_gather() {
  const Tensor x = in(0), idx = in(1);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const std::vector<int64_t> ids = index_values(x, idx, axis);
  Shape os(x.shape().begin(), x.shape().begin() + axis);
  os.insert(os.end(), idx.shape().begin(), idx.shape().end());
  os.insert(os.end(), x.shape().begin() + axis + 1, x.shape().end());
  Shape flat = x.shape();
  flat[static_cast<size_t>(axis)] = static_cast<int64_t>(ids.size());
  Tensor o = Tensor::empty(flat, x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
  out(0, o.reshape(os));
}
void OnnxLowering::Impl::lower_gather_elements() {
  const Tensor x = in(0), idx = in(1);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const Tensor ix = upload_i64(index_values(x, idx, axis), idx.shape());
  Tensor o = Tensor::empty(idx.shape(), x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  exec(WICK_OP_GATHER_ELEMENTS, &p, {x, ix}, {o});
  out(0, o);
}
void OnnxLowering::Impl::lower_scatter_elements() {
  const Tensor x = in(0), idx = in(1);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const Tensor ix = upload_i64(index_values(x, idx, axis), idx.shape());
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, reduction_mode()};
  exec(WICK_OP_SCATTER_ELEMENTS, &p, {x, ix, in(2)}, {o});
  out(0, o);
}
// The `reduction` attribute of the scatters as a WICK_REDUCE_MODE_*.
int32_t OnnxLowering::Impl::reduction_mode() const {
  const std::string red = attr_choice("reduction", "none", {"none", "add", "mul", "max", "min"});
  if (red == "none") return WICK_REDUCE_MODE_SET;
  if (red == "add") return WICK_REDUCE_MODE_ADD;
  if (red == "mul") return WICK_REDUCE_MODE_MUL;
  if (red == "max") return WICK_REDUCE_MODE_MAX;
  if (red == "min") return WICK_REDUCE_MODE_MIN;
  throw NotImportable("scatter reduction " + red);
}
// GatherND and ScatterND address the first k axes (after batch_dims) of data with index tuples:
// data viewed as [batch * prod(those k extents), rest...], each tuple becomes one row index.
std::vector<int64_t> OnnxLowering::Impl::nd_rows(const Tensor& data, const Tensor& indices,
                                                 int64_t batch_dims) {
  const Shape& d = data.shape();
  if (indices.rank() < 1 || batch_dims < 0 || batch_dims >= indices.rank())
    throw NotImportable("malformed " + n.op_type + ": batch_dims " + std::to_string(batch_dims) + " for indices of rank " +
                        std::to_string(indices.rank()));
  const int64_t k = indices.dim(indices.rank() - 1);
  const size_t b = static_cast<size_t>(batch_dims);
  if (k < 1 || k > static_cast<int64_t>(d.size()) || b + static_cast<size_t>(k) > d.size())
    throw NotImportable("ND indices deeper than data");
  int64_t sel = 1;
  for (size_t j = b; j < b + static_cast<size_t>(k); ++j) sel = checked_mul(sel, d[j]);
  const std::vector<int64_t> ids = host_ints(indices);
  const int64_t tuples = static_cast<int64_t>(ids.size()) / k;
  int64_t batch = 1;
  for (size_t j = 0; j < b; ++j) batch = checked_mul(batch, d[j]);
  const int64_t per_batch = batch > 0 ? tuples / batch : 0;
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t row = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t extent = d[b + static_cast<size_t>(j)];
      int64_t v = ids[static_cast<size_t>(t * k + j)];
      if (v < 0) v += extent;
      if (v < 0 || v >= extent) throw ExecuteFailed("GatherND/ScatterND index out of range");
      row = row * extent + v;
    }
    rows.push_back(checked_add(checked_mul(per_batch > 0 ? t / per_batch : 0, sel), row));
  }
  return rows;
}
void OnnxLowering::Impl::lower_gather_nd() {
  const Tensor data = in(0), indices = in(1);
  const int64_t b = attr_i("batch_dims", 0);
  const std::vector<int64_t> rows = nd_rows(data, indices, b);
  const int64_t k = indices.dim(indices.rank() - 1);
  Shape flat{-1};
  flat.insert(flat.end(), data.shape().begin() + b + k, data.shape().end());
  int64_t lead = 1;
  for (int64_t j = 0; j < b + k; ++j) lead = checked_mul(lead, data.dim(static_cast<int>(j)));
  flat[0] = lead;
  const Tensor src = reshape(data, flat);
  Shape sel = src.shape();
  sel[0] = static_cast<int64_t>(rows.size());
  Tensor o = Tensor::empty(sel, data.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 0, 0};
  exec(WICK_OP_INDEX_SELECT, &p, {src, upload_i64(rows, {static_cast<int64_t>(rows.size())})}, {o});
  Shape os(indices.shape().begin(), indices.shape().end() - 1);
  os.insert(os.end(), data.shape().begin() + b + k, data.shape().end());
  out(0, o.reshape(os));
}
void OnnxLowering::Impl::lower_scatter_nd() {
  const Tensor data = in(0), indices = in(1), updates = in(2);
  const std::vector<int64_t> rows = nd_rows(data, indices, 0);
  const int64_t k = indices.dim(indices.rank() - 1);
  Shape flat{1};
  for (int64_t j = 0; j < k; ++j) flat[0] = checked_mul(flat[0], data.dim(static_cast<int>(j)));
  flat.insert(flat.end(), data.shape().begin() + k, data.shape().end());
  Shape src_shape = flat;
  src_shape[0] = static_cast<int64_t>(rows.size());
  Tensor o = Tensor::empty(flat, data.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 0, reduction_mode()};
  exec(WICK_OP_INDEX_REDUCE, &p,
       {reshape(data, flat), upload_i64(rows, {static_cast<int64_t>(rows.size())}),
        reshape(updates, src_shape)},
       {o});
  out(0, o.reshape(data.shape()));
}
// NonZero: the indices of the nonzero elements, [rank, count] in row-major order (a host read:
// the output's shape depends on the values).
void OnnxLowering::Impl::lower_non_zero() {
  const Tensor x = in(0);
  const std::vector<double> v = host_doubles(x);
  const int r = std::max(x.rank(), 1);
  std::vector<std::vector<int64_t>> at(static_cast<size_t>(r));
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == 0) continue;
    int64_t rest = static_cast<int64_t>(i);
    for (int d = x.rank() - 1; d >= 0; --d) {
      at[static_cast<size_t>(d)].push_back(rest % x.dim(d));
      rest /= x.dim(d);
    }
    if (x.rank() == 0) at[0].push_back(0);
  }
  std::vector<int64_t> flat;
  for (const auto& row : at) flat.insert(flat.end(), row.begin(), row.end());
  const int64_t count = at.empty() ? 0 : static_cast<int64_t>(at[0].size());
  out(0, upload_i64(flat, {r, count}));
}
// Compress: the slices along `axis` (or the elements of the flattened input) where condition holds.
void OnnxLowering::Impl::lower_compress() {
  Tensor x = in(0);
  const std::vector<double> cond = host_doubles(in(1));
  int axis = 0;
  if (attr("axis") != nullptr) {
    axis = norm_axis(attr_i("axis", 0), x.rank());
  } else {
    x = reshape(x, {x.numel()});
  }
  std::vector<int64_t> ids;
  for (size_t i = 0; i < cond.size() && static_cast<int64_t>(i) < x.dim(axis); ++i)
    if (cond[i] != 0) ids.push_back(static_cast<int64_t>(i));
  Shape os = x.shape();
  os[static_cast<size_t>(axis)] = static_cast<int64_t>(ids.size());
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  if (!ids.empty()) exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
  out(0, o);
}
// ReverseSequence: along time_axis, the first sequence_lens[b] steps of each batch entry b reversed
// (a gather_elements with host-built positions).
void OnnxLowering::Impl::lower_reverse_sequence() {
  const Tensor x = in(0);
  const std::vector<int64_t> lens = host_ints(in(1));
  const int time = norm_axis(attr_i("time_axis", 0), x.rank());
  const int batch = norm_axis(attr_i("batch_axis", 1), x.rank());
  if (time == batch) throw NotImportable("malformed ReverseSequence: time_axis and batch_axis are the same");
  std::vector<int64_t> pos(static_cast<size_t>(host_count(static_cast<double>(x.numel()), "ReverseSequence's size")));
  std::vector<int64_t> idx(static_cast<size_t>(x.rank()), 0);
  for (size_t i = 0; i < pos.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i);
    for (int d = x.rank() - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = rest % x.dim(d);
      rest /= x.dim(d);
    }
    const int64_t t = idx[static_cast<size_t>(time)];
    const int64_t len = lens.at(static_cast<size_t>(idx[static_cast<size_t>(batch)]));
    pos[i] = t < len ? len - 1 - t : t;
  }
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), time, 0};
  exec(WICK_OP_GATHER_ELEMENTS, &p, {x, upload_i64(pos, x.shape())}, {o});
  out(0, o);
}

}  // namespace wick::onnx
