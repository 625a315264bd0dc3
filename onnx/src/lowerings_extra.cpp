// lowerings_extra.cpp — ops added to the importer for the ONNX node tests' coverage: CumProd,
// LpNormalization, LpPool, GroupNormalization, CenterCropPad and TensorScatter.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>

namespace wick::onnx {

// CumProd (opset 26): as CumSum, reverse and exclusive (an exclusive product starts at 1).
void OnnxLowering::Impl::lower_cumprod() {
  const Tensor x = in(0);
  const int axis = norm_axis(host_ints(in(1)).at(0), x.rank());
  const int32_t flags = (attr_i("reverse", 0) ? 1 : 0) | (attr_i("exclusive", 0) ? 2 : 0);
  const wick_axis_params p{sizeof(wick_axis_params), axis, flags};
  out(0, op1(WICK_OP_CUMPROD, x, &p));
}

// LpNormalization: x / ||x||_p along axis (p 1: the sum of |x|, p 2: the root of the sum of
// squares); a line whose norm is 0 gives 0 (the reference's where(norm == 0, 0, x / norm)).
void OnnxLowering::Impl::lower_lp_normalization() {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", -1), x.rank());
  const int64_t p = attr_i("p", 2);
  if (p != 1 && p != 2) refuse_attr(*attr("p"), "is not 1 or 2");
  Tensor norm = reduce(WICK_OP_REDUCE_SUM, op1(p == 1 ? WICK_OP_ABS : WICK_OP_SQR, x), {axis}, true);
  if (p == 2) norm = op1(WICK_OP_SQRT, norm);
  const Tensor zero = op2(WICK_OP_EQ, norm, scalar(0, x.dtype()), DType::Bool);
  out(0, where(zero, scalar(0, x.dtype()), op2(WICK_OP_DIV, x, norm)));
}

// LpPool (opset 11 on): (the window sum of |x|^p)^(1/p); padding adds nothing to the sum (the
// node tests' data, padded ones included, is this sum).
void OnnxLowering::Impl::lower_lp_pool() {
  const Tensor x = in(0);
  const int64_t p = attr_i("p", 2);
  if (p < 1) refuse_attr(*attr("p"), "is not a positive integer");
  const std::vector<int64_t> kernel = attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  if (kernel.empty()) throw NotImportable(node_context() + ": kernel_shape is missing");
  const Window w = window(x, kernel, attr_i("ceil_mode", 0) != 0);
  const Tensor a = op1(WICK_OP_ABS, x);
  const wick_unary_params up{sizeof(wick_unary_params), static_cast<double>(p), 0, 0};
  const wick_unary_params root{sizeof(wick_unary_params), 1.0 / static_cast<double>(p), 0, 0};
  const Tensor powered = p == 1 ? a : p == 2 ? op1(WICK_OP_SQR, a) : op1(WICK_OP_POWF, a, &up);
  const Tensor s = window_op(WICK_OP_WINDOW_SUM, powered, w, 0.0);
  out(0, p == 1 ? s : p == 2 ? op1(WICK_OP_SQRT, s) : op1(WICK_OP_POWF, s, &root));
}

// GroupNormalization (opset 21): x [N, C, ...] normalised over each group of C / num_groups
// channels and the spatial axes (biased variance, epsilon), computed in f32 (stash_type 1), then
// scale and bias per channel.
void OnnxLowering::Impl::lower_group_norm() {
  const Tensor x = in(0), scale = in(1), bias = in(2);
  const int64_t groups = attr_i("num_groups", 0);
  const double eps = attr_f("epsilon", 1e-5f);
  if (attr_i("stash_type", 1) != 1) refuse_attr(*attr("stash_type"), "is not implemented by the importer (only 1)");
  if (x.rank() < 2 || groups < 1 || x.dim(1) % groups != 0)
    throw NotImportable(node_context() + ": num_groups does not divide the channels");
  const int64_t N = x.dim(0), C = x.dim(1);
  if (scale.numel() != C || bias.numel() != C || scale.dtype() != x.dtype() || bias.dtype() != x.dtype())
    throw NotImportable(node_context() + ": scale and bias must have one value per channel in X's dtype");
  if (x.numel() == 0) return out(0, x);
  const Tensor g = reshape(cast(x, DType::F32), {N, groups, x.numel() / (N * groups)});
  const double count = static_cast<double>(g.dim(2));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, g, {2}, true), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, g, mean);
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), {2}, true), 1.0 / count, eps);
  const Tensor normed = cast(reshape(op2(WICK_OP_MUL, centred, op1(WICK_OP_RSQRT, var)), x.shape()), x.dtype());
  Shape per(static_cast<size_t>(x.rank()), 1);
  per[1] = C;
  out(0, op2(WICK_OP_ADD, op2(WICK_OP_MUL, normed, reshape(scale, per)), reshape(bias, per)));
}

// CenterCropPad (opset 18): each listed axis cropped or zero-padded to its target about the
// centre (an odd difference leaves the extra element at the end).
void OnnxLowering::Impl::lower_center_crop_pad() {
  const Tensor x = in(0);
  const std::vector<int64_t> target = host_ints(in(1));
  std::vector<int64_t> axes = attr_ints("axes").value_or(std::vector<int64_t>{});
  if (axes.empty())
    for (int a = 0; a < x.rank(); ++a) axes.push_back(a);
  if (axes.size() != target.size()) throw NotImportable(node_context() + ": shape has not one value per axis");
  Tensor cropped = x;
  Shape os = x.shape();
  std::vector<int64_t> at(static_cast<size_t>(x.rank()), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = norm_axis(axes[i], x.rank());
    const int64_t dim = x.dim(a), want = target[i];
    if (want < 0) throw NotImportable(node_context() + ": a negative target size");
    if (want < dim) cropped = cropped.narrow(a, (dim - want) / 2, want);
    if (want > dim) at[static_cast<size_t>(a)] = (want - dim) / 2;
    os[static_cast<size_t>(a)] = want;
  }
  Tensor o = filled(os, x.dtype(), 0);
  Tensor inner = o;
  for (int a = 0; a < x.rank(); ++a) inner = inner.narrow(a, at[static_cast<size_t>(a)], cropped.dim(a));
  if (cropped.numel() > 0) exec(WICK_OP_COPY, nullptr, {cropped}, {inner});
  out(0, o);
}

// TensorScatter (opset 24): past_cache with update written along `axis` from write_indices[b]
// (default 0) in each batch b; "circular" wraps the positions around the cache's length,
// "linear" must fit.
void OnnxLowering::Impl::lower_tensor_scatter() {
  const Tensor past = in(0), update = in(1);
  const bool circular = attr_choice("mode", "linear", {"linear", "circular"}) == "circular";
  const int axis = norm_axis(attr_i("axis", -2), past.rank());
  if (axis == 0 || past.rank() != update.rank() || past.dtype() != update.dtype())
    throw NotImportable(node_context() + ": axis 0, or update not of past_cache's rank and dtype");
  for (int i = 0; i < past.rank(); ++i)
    if (i != axis ? past.dim(i) != update.dim(i) : past.dim(i) < update.dim(i))
      throw NotImportable(node_context() + ": update's shape does not fit past_cache's");
  const int64_t B = past.dim(0), max_len = past.dim(axis), len = update.dim(axis);
  std::vector<int64_t> idx = has_in(2) ? host_ints(in(2)) : std::vector<int64_t>(static_cast<size_t>(B), 0);
  if (static_cast<int64_t>(idx.size()) != B) throw NotImportable(node_context() + ": write_indices has not one value per batch");
  Tensor o = Tensor::empty(past.shape(), past.dtype(), dev());
  exec(WICK_OP_COPY, nullptr, {past}, {o});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = idx[static_cast<size_t>(b)];
    if (start < 0 || (!circular && start + len > max_len) || (circular && start >= max_len && len > 0))
      throw NotImportable(node_context() + ": write index " + std::to_string(start) + " out of the cache");
    const Tensor ub = update.narrow(0, b, 1), ob = o.narrow(0, b, 1);
    const int64_t first = std::min(len, max_len - start);  // before a circular wrap
    if (first > 0) exec(WICK_OP_COPY, nullptr, {ub.narrow(axis, 0, first)}, {ob.narrow(axis, start, first)});
    for (int64_t done = first; done < len;) {  // circular: the rest from position 0, wrapping again
      const int64_t step = std::min(len - done, max_len);
      exec(WICK_OP_COPY, nullptr, {ub.narrow(axis, done, step)}, {ob.narrow(axis, 0, step)});
      done += step;
    }
  }
  out(0, o);
}

}  // namespace wick::onnx
