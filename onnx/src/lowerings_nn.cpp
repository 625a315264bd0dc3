// lowerings_nn.cpp — neural-network layers: Conv (one CONV, or CONV_BIAS / CONV_BIAS_RELU with a bias
// or as the optimiser's FusedConv) and ConvTranspose, LRN, the
// pools (MaxPool without its Indices, which is lowerings_spatial.cpp's; AveragePool and the global
// pools), the normalisations (InstanceNormalization, LayerNormalization,
// MeanVarianceNormalization, BatchNormalization), the losses (NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss) and Dropout.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace wick::onnx {

// A [C] vector shaped [1, C, 1, ...] against a rank-`rank` tensor (bias, scale per channel).
Tensor OnnxLowering::Impl::per_channel(const Tensor& v, int rank) {
  if (rank < 2) throw NotImportable("malformed " + n.op_type + ": a per-channel value for a rank-" + std::to_string(rank) + " tensor");
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = v.numel();
  return reshape(v, s);
}
void OnnxLowering::Impl::lower_conv() {
  out(0, conv(in(0), in(1), has_in(2) ? std::optional<Tensor>(in(2)) : std::nullopt));
}
// Wick's Conv followed by Relu (FusedConv in kFusedDomain, made by the graph optimiser): Conv's
// attributes and `activation`, which must be "Relu".
void OnnxLowering::Impl::lower_fused_conv() {
  attr_choice("activation", "", {"Relu"});
  out(0, conv(in(0), in(1), has_in(2) ? std::optional<Tensor>(in(2)) : std::nullopt, true));
}
// kernel_shape, where given, must be the weights' spatial extents (the lowering takes those).
void OnnxLowering::Impl::check_kernel_shape(const std::vector<int64_t>& k) const {
  if (const onnx::AttributeProto* a = attr("kernel_shape"); a != nullptr && a->ints != k)
    refuse_attr(*a, "differs from the weights' spatial extents " + shape_to_string(k) + " (a malformed node)");
}
Tensor OnnxLowering::Impl::conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                                bool relu) {
  const int64_t groups = attr_i("group", 1);
  if (w.rank() < 2 || x.rank() != w.rank() || groups < 1 || w.dim(0) % groups != 0 ||
      x.dim(1) != checked_mul(w.dim(1), groups))
    throw NotImportable("malformed " + n.op_type + ": weights " + shape_to_string(w.shape()) + " in " +
                        std::to_string(groups) + " groups for an input " + shape_to_string(x.shape()));
  std::vector<int64_t> k(w.shape().begin() + 2, w.shape().end());
  check_kernel_shape(k);
  const Window win = window(x, k, false);
  const size_t r = k.size();
  std::vector<int64_t> idil(r, 1);
  Shape os{x.dim(0), w.dim(0)};
  for (size_t i = 0; i < r; ++i) {
    const int64_t span = x.shape()[2 + i] + win.lo[i] + win.hi[i] - ((k[i] - 1) * win.dil[i] + 1);
    os.push_back(span / win.strides[i] + 1);
  }
  const wick_conv_params p{sizeof(wick_conv_params),
                           static_cast<int32_t>(r),
                           win.strides.data(),
                           win.lo.data(),
                           win.hi.data(),
                           win.dil.data(),
                           idil.data(),
                           groups};
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  // Bias and ReLU inside the convolution where the device has the fused op (floats).
  if ((bias || relu) && is_float(x.dtype()) && w.dtype() == x.dtype()) {
    const Tensor b = bias ? *bias : filled({w.dim(0)}, x.dtype(), 0);
    if (b.dtype() == x.dtype() && b.shape() == Shape{w.dim(0)} &&
        try_fused(relu ? WICK_OP_CONV_BIAS_RELU : WICK_OP_CONV_BIAS, &p, {x, w, b}, {o}))
      return o;
  }
  exec(WICK_OP_CONV, &p, {x, w}, {o});
  const Tensor y = bias ? op2(WICK_OP_ADD, o, per_channel(*bias, o.rank())) : o;
  return relu ? op1(WICK_OP_RELU, y) : y;
}

// ConvTranspose as a convolution: the input dilated by the strides, padded by
// dilation * (kernel - 1) - pads (plus output_padding at the end), and the weights [C, O/g, k...]
// turned into [O, C/g, k...] with their spatial axes reversed.
void OnnxLowering::Impl::lower_conv_transpose() {
  const std::string auto_pad = attr_choice("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  const Tensor x = in(0), w = in(1);
  const int64_t groups = attr_i("group", 1);
  if (w.rank() < 2 || x.rank() != w.rank() || groups < 1 || w.dim(0) % groups != 0 || x.dim(1) != w.dim(0))
    throw NotImportable("malformed ConvTranspose: weights " + shape_to_string(w.shape()) + " in " +
                        std::to_string(groups) + " groups for an input " + shape_to_string(x.shape()));
  const size_t r = static_cast<size_t>(w.rank() - 2);
  const int64_t cin = w.dim(0), og = w.dim(1);
  std::vector<int64_t> k(w.shape().begin() + 2, w.shape().end());
  check_kernel_shape(k);
  auto ints = [&](const char* name, int64_t dflt, size_t count) {
    std::vector<int64_t> v = attr_ints(name).value_or(std::vector<int64_t>(count, dflt));
    if (v.size() != count) throw NotImportable(std::string("ConvTranspose ") + name + " length");
    return v;
  };
  const std::vector<int64_t> strides = ints("strides", 1, r), dil = ints("dilations", 1, r),
                             outpad = ints("output_padding", 0, r);
  std::vector<int64_t> pads = ints("pads", 0, 2 * r);
  // Bounds the products below (each factor at most 2^30); the sums are checked.
  const int64_t big = int64_t{1} << 30;
  auto in_range = [&](int64_t v, int64_t lo) { return v >= lo && v <= big; };
  for (size_t i = 0; i < r; ++i) {
    if (!in_range(strides[i], 1) || !in_range(dil[i], 1) || !in_range(outpad[i], 0) || !in_range(k[i], 0) ||
        !in_range(x.dim(static_cast<int>(2 + i)), 0) || !in_range(pads[i], -big) || !in_range(pads[r + i], -big))
      throw NotImportable("malformed ConvTranspose: strides, dilations, pads or output_padding out of range");
  }
  // An explicit output_shape, or SAME auto_pad (output = input * stride), sets the pads: the
  // total split in half, the odd one at the end for SAME_UPPER, at the start otherwise.
  std::vector<int64_t> want = attr_ints("output_shape").value_or(std::vector<int64_t>{});
  if (want.size() == r + 2) want.erase(want.begin(), want.begin() + 2);
  if (want.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t i = 0; i < r; ++i) want.push_back(x.dim(static_cast<int>(2 + i)) * strides[i]);
  if (auto_pad == "VALID") pads.assign(2 * r, 0);
  if (!want.empty()) {
    if (want.size() != r) throw NotImportable("ConvTranspose output_shape length");
    for (size_t i = 0; i < r; ++i) {
      if (want[i] < 0 || want[i] > big * big)
        throw NotImportable("malformed ConvTranspose: output_shape " + shape_to_string(want));
      const int64_t total = checked_add(strides[i] * (x.dim(static_cast<int>(2 + i)) - 1) + outpad[i] +
                                            (k[i] - 1) * dil[i] + 1,
                                        -want[i]);
      const bool upper = auto_pad == "SAME_UPPER";
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2)
      pads[i] = upper ? half : total - half;
      pads[i + r] = upper ? total - half : half;
    }
  }
  // Weights: [g, C/g, O/g, k...] -> [g, O/g, C/g, k...] -> [O, C/g, k...], spatial axes flipped.
  Shape gw{groups, cin / groups, og};
  gw.insert(gw.end(), k.begin(), k.end());
  std::vector<int> perm(gw.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[1], perm[2]);
  Tensor wt = reshape(w, gw).permute(perm);
  for (size_t i = 0; i < r; ++i) wt = wt.flip(static_cast<int>(3 + i));
  Shape ws{checked_mul(groups, og), cin / groups};
  ws.insert(ws.end(), k.begin(), k.end());
  wt = reshape(g.contiguous(wt), ws);
  std::vector<int64_t> lo(r), hi(r), one(r, 1);
  Shape os{x.dim(0), checked_mul(groups, og)};
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = dil[i] * (k[i] - 1);
    lo[i] = checked_add(full, -pads[i]);
    hi[i] = checked_add(checked_add(full, -pads[i + r]), outpad[i]);
    if (lo[i] < 0 || hi[i] < 0) throw NotImportable("ConvTranspose pads beyond the kernel");
    os.push_back(checked_add(checked_add((x.dim(static_cast<int>(2 + i)) - 1) * strides[i] + 1 - full, lo[i]), hi[i]));
  }
  const wick_conv_params p{sizeof(wick_conv_params), static_cast<int32_t>(r), one.data(), lo.data(),
                           hi.data(), dil.data(), strides.data(), groups};
  Tensor o = Tensor::empty(os, x.dtype(), dev());
  exec(WICK_OP_CONV, &p, {x, wt}, {o});
  out(0, has_in(2) ? op2(WICK_OP_ADD, o, per_channel(in(2), o.rank())) : o);
}

// LRN: x / (bias + alpha / size * (sum of x^2 over the `size` channels around c))^beta, the channel
// window from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), zero beyond the edges.
void OnnxLowering::Impl::lower_lrn() {
  const Tensor x = in(0);
  const int64_t size = attr_i("size", 1);
  const double alpha = attr_f("alpha", 1e-4f), beta = attr_f("beta", 0.75f), bias = attr_f("bias", 1.0f);
  if (size < 1 || x.rank() < 2) throw NotImportable("malformed LRN: size " + std::to_string(size) + " for rank " + std::to_string(x.rank()));
  // The channels summed are those of [c - lo, c + hi] that exist: a window reaching further than the
  // channels on either side sums the same as one reaching just past them.
  const int64_t c = x.dim(1), lo = std::min((size - 1) / 2, c), hi = std::min(size - 1 - (size - 1) / 2, c);
  // One device add per channel of the window, each over the whole input.
  if (lo + hi + 1 > max_loop_steps())
    throw NotImportable("LRN over " + std::to_string(lo + hi + 1) + " channels (one device pass each)" +
                        limit_hint("max_loop_steps"));
  const Tensor sq = op2(WICK_OP_MUL, x, x);
  Shape padded = x.shape();
  padded[1] = c + lo + hi;
  Tensor z = filled(padded, x.dtype(), 0);
  exec(WICK_OP_COPY, nullptr, {sq}, {z.slice(1, lo, lo + c, 1)});
  Tensor sum = z.slice(1, 0, c, 1);
  for (int64_t j = 1; j < lo + hi + 1; ++j) sum = op2(WICK_OP_ADD, sum, z.slice(1, j, j + c, 1));
  const Tensor base = affine(sum, alpha / static_cast<double>(size), bias);
  out(0, op2(WICK_OP_DIV, x, op2(WICK_OP_POW, base, scalar(beta, x.dtype()))));
}
// InstanceNormalization: layer_norm over the spatial axes of each (n, c), then scale and bias per
// channel.
void OnnxLowering::Impl::lower_instance_norm() {
  const Tensor x = in(0);
  if (x.rank() < 3) throw NotImportable("InstanceNormalization of rank < 3");
  const wick_norm_params p{sizeof(wick_norm_params), x.rank() - 2, attr_f("epsilon", 1e-5f)};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_LAYER_NORM, &p, {x}, {o});
  out(0, op2(WICK_OP_ADD, op2(WICK_OP_MUL, o, per_channel(in(1), x.rank())),
             per_channel(in(2), x.rank())));
}

// The window of MaxPool and AveragePool.
OnnxLowering::Impl::Window OnnxLowering::Impl::pool_window() {
  const Tensor x = in(0);
  const std::vector<int64_t> k = attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  return window(x, k, attr_i("ceil_mode", 0) != 0);
}
void OnnxLowering::Impl::lower_max_pool() {
  const Window w = pool_window();
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return max_pool_with_indices(w);
  out(0, window_op(WICK_OP_WINDOW_MAX, in(0), w, -INFINITY));
}
void OnnxLowering::Impl::lower_average_pool() {
  const Window w = pool_window();
  const Tensor x = in(0);
  const Tensor sum = window_op(WICK_OP_WINDOW_SUM, x, w, 0);
  if (attr_i("count_include_pad", 0) != 0) {
    // Divide by the elements of each window inside the input and the model's pads, not those of
    // the padding ceil_mode adds: ones over the explicitly padded extent, windowed with only that.
    Shape padded = x.shape();
    Window inner = w;
    for (size_t i = 0; i < w.kernel.size(); ++i) {
      padded[2 + i] = checked_add(padded[2 + i], w.hi[i] - w.ceil_extra[i] + w.lo[i]);
      inner.lo[i] = 0;
      inner.hi[i] = w.ceil_extra[i];
    }
    return out(0, op2(WICK_OP_DIV, sum, window_op(WICK_OP_WINDOW_SUM, filled(padded, x.dtype(), 1.0), inner, 0)));
  }
  // Divide by the number of real (unpadded) elements in each window.
  const Tensor ones = filled(x.shape(), x.dtype(), 1.0);
  out(0, op2(WICK_OP_DIV, sum, window_op(WICK_OP_WINDOW_SUM, ones, w, 0)));
}
void OnnxLowering::Impl::global_pool(bool max) {
  const Tensor x = in(0);
  std::vector<int32_t> axes;
  for (int i = 2; i < x.rank(); ++i) axes.push_back(i);
  const Tensor y = reduce(max ? WICK_OP_REDUCE_MAX : WICK_OP_REDUCE_SUM, x, axes, true);
  out(0, max ? y : affine(y, 1.0 / static_cast<double>(reduced_count(x, axes)), 0));
}
void OnnxLowering::Impl::lower_layer_norm() {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", -1), x.rank());
  const float eps = attr_f("epsilon", 1e-5f);
  const wick_norm_params p{sizeof(wick_norm_params), x.rank() - axis, eps};
  std::vector<Tensor> ins{x, in(1)};
  if (has_in(2)) ins.push_back(in(2));
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_LAYER_NORM, &p, ins, {o});
  out(0, o);
  const bool stats = (n.outputs.size() > 1 && !n.outputs[1].empty()) ||
                     (n.outputs.size() > 2 && !n.outputs[2].empty());
  if (!stats) return;
  // Mean and InvStdDev (the training outputs), over the normalised axes kept as 1, in the stash
  // type (f32 unless stash_type says otherwise), as the reference computes them.
  if (attr_i("stash_type", 1) != 1) throw NotImportable("LayerNormalization stash_type other than f32");
  const Tensor xf = x.dtype() == DType::F32 ? x : cast(x, DType::F32);
  std::vector<int32_t> axes;
  for (int a = axis; a < x.rank(); ++a) axes.push_back(a);
  const double count = static_cast<double>(reduced_count(xf, axes));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, xf, axes, true), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, xf, mean);
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), axes, true),
                            1.0 / count, 0);
  out(1, mean);
  out(2, op1(WICK_OP_RSQRT, affine(var, 1, eps)));
}
// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default 0, 2, 3), no epsilon
// beyond the reference's 1e-9.
void OnnxLowering::Impl::lower_mean_variance_normalization() {
  const Tensor x = in(0);
  std::vector<int64_t> a64 = attr_ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  std::vector<int32_t> axes;
  for (int64_t a : a64) axes.push_back(norm_axis(a, x.rank()));
  const double count = static_cast<double>(reduced_count(x, axes));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, x, axes, true), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, x, mean);
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), axes, true),
                            1.0 / count, 0);
  out(0, op2(WICK_OP_DIV, centred, affine(op1(WICK_OP_SQRT, var), 1, 1e-9)));
}
// BatchNormalization before opset 14: training mode is the presence of the extra outputs (and
// before 9, spatial = 0 normalises per element).
void OnnxLowering::Impl::lower_batch_norm_inference() {
  if (n.outputs.size() > 1) throw NotImportable("BatchNormalization training outputs");
  if (attr_i("spatial", 1) == 0) throw NotImportable("BatchNormalization spatial = 0");
  // Before opset 7, is_test (default 0: training, the batch's own statistics) selects the mode;
  // only test mode is lowered here.
  if (opset() < 7 && attr_i("is_test", 0) == 0)
    throw NotImportable(node_context() + ": is_test = 0 (training mode) is not implemented by the importer before opset 7");
  (void)attr_f("momentum", 0.9f);  // the running statistics' update: training only
  batch_norm_inference();
}
// From opset 14 the training_mode attribute selects training.
void OnnxLowering::Impl::lower_batch_norm() {
  if (attr_i("training_mode", 0) != 0) return batch_norm_training();
  if (n.outputs.size() > 1) throw NotImportable("BatchNormalization running statistics outside training mode");
  (void)attr_f("momentum", 0.9f);  // the running statistics' update: training only
  batch_norm_inference();
}
// Training mode: normalised with the batch's own mean and (biased) variance over every axis but
// the channels; the running statistics out are input * momentum + batch * (1 - momentum).
void OnnxLowering::Impl::batch_norm_training() {
  const Tensor x = in(0);
  std::vector<int32_t> axes{0};
  for (int a = 2; a < x.rank(); ++a) axes.push_back(a);
  const double count = static_cast<double>(reduced_count(x, axes));
  const Tensor mean = affine(reduce(WICK_OP_REDUCE_SUM, x, axes, false), 1.0 / count, 0);
  const Tensor centred = op2(WICK_OP_SUB, x, per_channel(mean, x.rank()));
  const Tensor var = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, centred, centred), axes, false),
                            1.0 / count, 0);
  const wick_norm_params p{sizeof(wick_norm_params), 0, attr_f("epsilon", 1e-5f)};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_BATCH_NORM, &p, {x, mean, var, in(1), in(2)}, {o});
  out(0, o);
  const double momentum = attr_f("momentum", 0.9f);
  out(1, op2(WICK_OP_ADD, affine(in(3), momentum, 0), affine(mean, 1 - momentum, 0)));
  out(2, op2(WICK_OP_ADD, affine(in(4), momentum, 0), affine(var, 1 - momentum, 0)));
}
void OnnxLowering::Impl::batch_norm_inference() {
  const Tensor x = in(0);
  const wick_norm_params p{sizeof(wick_norm_params), 0, attr_f("epsilon", 1e-5f)};
  Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
  exec(WICK_OP_BATCH_NORM, &p, {x, in(3), in(4), in(1), in(2)}, {o});
  out(0, o);
}
void OnnxLowering::Impl::loss(bool softmax_first) {
  const Tensor logp = softmax_first ? softmax(in(0), 1, true) : in(0);
  const std::optional<Tensor> w = has_in(2) ? std::optional<Tensor>(in(2)) : std::nullopt;
  const int64_t ignore = attr_i("ignore_index", std::numeric_limits<int64_t>::min());
  out(0, nll(logp, in(1), w, ignore, attr_choice("reduction", "mean", {"none", "sum", "mean"})));
  if (softmax_first) out(1, logp);
}
// From opset 12 the ratio (default 0.5) and training_mode are inputs. Training mode with ratio 0
// drops nothing: the identity, as in inference, and a mask of all true.
void OnnxLowering::Impl::lower_dropout() {
  const bool training = has_in(2) && host_scalar(in(2)) != 0;
  const double ratio = has_in(1) ? host_scalar(in(1)) : 0.5;
  dropout(training && ratio != 0, true);
}
void OnnxLowering::Impl::dropout(bool training, bool mask_bool) {
  if (training) throw NotImportable("Dropout in training mode with a nonzero ratio (random)");
  // Outside training mode the ratio and the seed change nothing: Dropout is the identity.
  (void)attr("ratio");
  (void)attr("seed");
  out(0, in(0));
  if (n.outputs.size() > 1) out(1, filled(in(0).shape(), mask_bool ? DType::Bool : in(0).dtype(), 1.0));
}

}  // namespace wick::onnx
