// Fused ops for f32, f64, f16 and bf16: softmax and log_softmax (oneDNN softmax_v2 for f32 when it
// has an optimised implementation for the layout; f16 and bf16 in a loop in f64), layer_norm
// (oneDNN for dense f32/bf16 rows when this CPU has a bf16 kernel), rms_norm, batch_norm
// (inference) and adam_update (attention is in attention.cpp). The other loops compute in f32
// (f64 for f64) and round once on store.
#include "onednn.hpp"
#include "vector_math.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace wick::cpu {

namespace {

template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

bool is_float_dtype(wick_dtype t) {
  return t == WICK_DTYPE_F32 || t == WICK_DTYPE_F64 || t == WICK_DTYPE_F16 || t == WICK_DTYPE_BF16;
}

// Calls f(type_tag<T>) for the four float dtypes.
template <class F>
void visit_float(wick_dtype t, F&& f) {
  sdk::visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>)
      f(tag);
  });
}

// f(i) for i in [0, count), on several threads when `work` (elements touched in all) is large.
template <class F>
void parallel_for(const Context& ctx, int64_t count, int64_t work, F&& f) {
  const bool parallel = ctx.threads > 1 && count > 1 && work >= kParallelThreshold;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
  for (int64_t i = 0; i < count; ++i) f(i);
}

// Runs f(offsets) for every element of `shape` (rank entries) over N operands, in C order; on
// several threads when `work` is large. f must be thread-safe.
template <size_t N, class F>
void for_each_line(const Context& ctx, const int64_t* shape, int rank,
                   const std::array<const int64_t*, N>& strides, int64_t work, F&& f) {
  std::vector<std::array<int64_t, N>> starts;
  sdk::for_each_row<N>(shape, rank, strides, [&](const sdk::Row<N>& r) {
    for (int64_t i = 0; i < r.length; ++i) {
      std::array<int64_t, N> o;
      for (size_t k = 0; k < N; ++k) o[k] = r.offset[k] + i * r.stride[k];
      starts.push_back(o);
    }
  });
  parallel_for(ctx, static_cast<int64_t>(starts.size()), work,
               [&](int64_t i) { f(starts[static_cast<size_t>(i)]); });
}

// The elements of a strided operand of dtype T in C order, converted to C.
template <class T, class C>
std::vector<C> read_values(const wick_tensor_desc& d) {
  std::vector<C> v;
  v.reserve(static_cast<size_t>(numel_of(d)));
  const T* p = data_of<const T>(d);
  sdk::for_each_row<1>(d.shape, d.rank, {d.strides}, [&](const sdk::Row<1>& r) {
    for (int64_t i = 0; i < r.length; ++i)
      v.push_back(static_cast<C>(p[r.offset[0] + i * r.stride[0]]));
  });
  return v;
}

// ---- softmax and log_softmax --------------------------------------------------------------------

// out[i] = exp(in[i]) for i < n: on the vector kernels (vector_math.hpp) where the plugin has them.
template <class C>
void exp_run(const C* in, C* out, int64_t n) {
  if constexpr (vecmath::kAvailable) {
    vecmath::apply(vecmath::Fn::EXP, in, out, n);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
  }
}

// Softmax of one line of n values: max first (NaN wins, so a NaN line stays NaN), then exp(x -
// max).
template <class C, bool Log, class Load, class Store>
void softmax_line(int64_t n, std::vector<C>& tmp, Load load, Store store) {
  C m = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const C v = load(i);
    tmp[static_cast<size_t>(i)] = v;
    if (v > m || v != v) m = v;
  }
  for (int64_t i = 0; i < n; ++i) tmp[static_cast<size_t>(i)] -= m;
  C sum = 0;
  if constexpr (Log) {
    thread_local std::vector<C> e;
    e.resize(static_cast<size_t>(n));
    exp_run(tmp.data(), e.data(), n);
    for (int64_t i = 0; i < n; ++i) sum += e[static_cast<size_t>(i)];
    const C lse = std::log(sum);
    for (int64_t i = 0; i < n; ++i) store(i, tmp[static_cast<size_t>(i)] - lse);
  } else {
    exp_run(tmp.data(), tmp.data(), n);
    for (int64_t i = 0; i < n; ++i) sum += tmp[static_cast<size_t>(i)];
    const C inv = C(1) / sum;
    for (int64_t i = 0; i < n; ++i) store(i, tmp[static_cast<size_t>(i)] * inv);
  }
}

// Softmax computes f16 and bf16 in f64, so that rounding once gives the correctly rounded value
// (in f32 the error of exp and of the sum moves about one element in a thousand across a rounding
// boundary of bf16, more of f16); f32 and f64 compute in their own type.
template <class T>
using SoftmaxCompute = std::conditional_t<std::is_same_v<T, float>, float, double>;

// v rounded once to T. f64 -> f16/bf16 through a plain f32 would round twice (docs/ops.md casts);
// rounding to f32 by "round to odd" (an inexact result keeps its last bit set) first keeps the
// second rounding, to a format at least two bits narrower, exact.
template <class T, class C>
T round_once(C v) {
  if constexpr (std::is_same_v<T, C> || !std::is_same_v<C, double>) {
    return cast_value<T>(v);
  } else {
    float f = static_cast<float>(v);
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    if (std::isfinite(f) && static_cast<double>(f) != v && (bits & 1u) == 0) {
      bits = std::fabs(static_cast<double>(f)) < std::fabs(v) ? bits + 1u : bits - 1u;  // toward v
      std::memcpy(&f, &bits, sizeof bits);
    }
    return T(f);
  }
}

template <class T, bool Log>
void softmax_loop(const Context& ctx, const wick_tensor_desc& x, const wick_tensor_desc& y,
                  int axis) {
  using C = SoftmaxCompute<T>;
  std::vector<int64_t> lines(x.shape, x.shape + x.rank);
  const int64_t n = lines[static_cast<size_t>(axis)];
  lines[static_cast<size_t>(axis)] = 1;
  const int64_t sx = x.strides[axis], sy = y.strides[axis];
  const T* px = data_of<const T>(x);
  T* py = data_of<T>(y);
  for_each_line<2>(ctx, lines.data(), x.rank, {x.strides, y.strides}, numel_of(x),
                   [&](const std::array<int64_t, 2>& o) {
                     thread_local std::vector<C> tmp;
                     tmp.resize(static_cast<size_t>(n));
                     softmax_line<C, Log>(
                         n, tmp, [&](int64_t i) { return static_cast<C>(px[o[0] + i * sx]); },
                         [&](int64_t i, C v) { py[o[1] + i * sy] = round_once<T>(v); });
                   });
}

struct SoftmaxPlan {
  std::optional<dnnl::softmax_v2_forward> primitive;  // empty: oneDNN has only a reference loop
  dnnl::memory::desc src, dst;
};

template <bool Log>
bool softmax_onednn(Context& ctx, const wick_tensor_desc& x, const wick_tensor_desc& y, int axis) {
  // oneDNN's softmax drops NaN and gives 0 beside +inf, where docs/ops.md wants the whole line NaN
  // (as the composite gives it): lines with non-finite values take the loop. Its bf16 softmax
  // (f32 inside, but not rounded once: up to 1.4 ulp off) is not used: bf16 takes the loop too.
  if (x.dtype != WICK_DTYPE_F32 || !ctx.onednn->runs(Context::Onednn::kSoftmax, x.dtype) ||
      !plain_strides(x) || !plain_strides(y) || has_non_finite(ctx, x))
    return false;
  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  std::string key = Log ? "log_softmax" : "softmax";
  key_add(key, x);
  key_add(key, y);
  key_add(key, axis);
  SoftmaxPlan& plan = dnn.plan<SoftmaxPlan>(key, [&] {
    SoftmaxPlan p;
    p.src = dnnl_desc(x);
    p.dst = dnnl_desc(y);
    dnnl::softmax_v2_forward::primitive_desc pd(
        dnnl::softmax_v2_forward::desc(
            dnnl::prop_kind::forward_inference,
            Log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, p.src, p.dst,
            axis),
        dnn.engine);
    if (!is_reference(pd)) p.primitive = dnnl::softmax_v2_forward(pd);
    return p;
  });
  return run_src_dst(dnn, plan, data_of(x), data_of(y));
}

wick_support softmax_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1 || op.params == nullptr)
    return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  const int axis = static_cast<const wick_axis_params*>(op.params)->axis;
  if (x.dtype != y.dtype || !same_shape(x, y) || axis < 0 || axis >= x.rank)
    return WICK_SUPPORT_NO_PARAMS;
  return is_float_dtype(x.dtype) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <bool Log>
void softmax_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  const int axis = static_cast<const wick_axis_params*>(op.params)->axis;
  if (numel_of(x) == 0) return;
  if (softmax_onednn<Log>(ctx, x, y, axis)) return;
  visit_float(x.dtype,
              [&](auto tag) { softmax_loop<typename decltype(tag)::type, Log>(ctx, x, y, axis); });
}

// ---- layer_norm and rms_norm --------------------------------------------------------------------

// The normalised operands as dense rows of `width` elements: x (packed when its last axes are not
// one dense block), y (computed densely and stored when not dense), weight and bias as C vectors.
template <class T>
struct NormRows {
  Dense px, py;
  const T* x = nullptr;
  T* y = nullptr;
  int64_t rows = 0, width = 1;
  std::vector<Compute<T>> weight, bias;  // empty when absent

  NormRows(const wick_op_desc& op, int num_axes, bool has_bias) {
    const wick_tensor_desc &xd = op.inputs[0], &yd = op.outputs[0];
    for (int i = xd.rank - num_axes; i < xd.rank; ++i) width *= xd.shape[i];
    rows = width == 0 ? 0 : numel_of(xd) / width;
    if (is_dense(xd)) {
      x = data_of<const T>(xd);
    } else {
      px.load(xd, xd.dtype);
      x = data_of<const T>(px.desc);
    }
    if (is_dense(yd)) {
      y = data_of<T>(yd);
    } else {
      py.allocate(yd, yd.dtype);
      y = data_of<T>(py.desc);
    }
    if (op.num_inputs > 1) weight = read_values<T, Compute<T>>(op.inputs[1]);
    if (has_bias && op.num_inputs > 2) bias = read_values<T, Compute<T>>(op.inputs[2]);
  }
  void finish(const wick_tensor_desc& yd) {
    if (y != data_of<T>(yd)) py.store(yd);
  }
};

template <class T, bool Rms>
void norm_loop(const Context& ctx, const wick_op_desc& op) {
  using C = Compute<T>;
  const auto& p = *static_cast<const wick_norm_params*>(op.params);
  NormRows<T> n(op, p.num_axes, !Rms);
  const int64_t w = n.width;
  auto row = [&](int64_t r) {
    const T* x = n.x + r * w;
    T* y = n.y + r * w;
    // Statistics in f64: two passes, so the variance is not the difference of two large numbers.
    double mean = 0.0, var = 0.0;
    if constexpr (Rms) {
      for (int64_t i = 0; i < w; ++i)
        var += static_cast<double>(static_cast<C>(x[i])) * static_cast<C>(x[i]);
    } else {
      for (int64_t i = 0; i < w; ++i) mean += static_cast<C>(x[i]);
      mean /= static_cast<double>(w);
      for (int64_t i = 0; i < w; ++i) {
        const double d = static_cast<C>(x[i]) - mean;
        var += d * d;
      }
    }
    var /= static_cast<double>(w);
    const C rstd = static_cast<C>(1.0 / std::sqrt(var + p.epsilon));
    const C mu = static_cast<C>(mean);
    for (int64_t i = 0; i < w; ++i) {
      C v = (static_cast<C>(x[i]) - mu) * rstd;
      if (!n.weight.empty()) v *= n.weight[static_cast<size_t>(i)];
      if (!n.bias.empty()) v += n.bias[static_cast<size_t>(i)];
      y[i] = cast_value<T>(v);
    }
  };
  parallel_for(ctx, n.rows, n.rows * w, row);
  n.finish(op.outputs[0]);
}

struct LayerNormPlan {
  std::optional<dnnl::layer_normalization_forward> primitive;
  dnnl::memory::desc data, param;
};

// oneDNN layer normalisation over dense [rows, width] f32/bf16 data; false when it does not fit.
bool layer_norm_onednn(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (!ctx.onednn->runs(Context::Onednn::kLayerNorm, x.dtype) || !is_dense(x) || !is_dense(y))
    return false;
  const auto& p = *static_cast<const wick_norm_params*>(op.params);
  int64_t width = 1;
  for (int i = x.rank - p.num_axes; i < x.rank; ++i) width *= x.shape[i];
  const int64_t rows = numel_of(x) / width;
  const bool scale = op.num_inputs > 1, shift = op.num_inputs > 2;
  // oneDNN takes scale and shift as dense f32 vectors.
  std::vector<float> w, b;
  for (auto [k, v] : {std::pair{size_t(1), &w}, std::pair{size_t(2), &b}}) {
    if (op.num_inputs <= k) continue;
    if (x.dtype == WICK_DTYPE_F32)
      *v = read_values<float, float>(op.inputs[k]);
    else
      *v = read_values<sdk::bf16, float>(op.inputs[k]);
  }
  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  std::string key = "layer_norm";
  for (int64_t v : {rows, width, int64_t(x.dtype), int64_t(scale), int64_t(shift)}) key_add(key, v);
  key.append(reinterpret_cast<const char*>(&p.epsilon), sizeof p.epsilon);
  LayerNormPlan& plan = dnn.plan<LayerNormPlan>(key, [&] {
    LayerNormPlan lp;
    lp.data = dnnl::memory::desc({rows, width}, dnnl_type(x.dtype), dnnl::memory::format_tag::ab);
    lp.param =
        dnnl::memory::desc({width}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    auto flags = dnnl::normalization_flags::none;
    if (scale) flags |= dnnl::normalization_flags::use_scale;
    if (shift) flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, lp.data,
                                                static_cast<float>(p.epsilon), flags),
        dnn.engine);
    if (!is_reference(pd)) lp.primitive = dnnl::layer_normalization_forward(pd);
    return lp;
  });
  if (!plan.primitive) return false;
  dnnl::memory src(plan.data, dnn.engine, data_of(x)), dst(plan.data, dnn.engine, data_of(y));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  if (scale) args.emplace(DNNL_ARG_SCALE, dnnl::memory(plan.param, dnn.engine, w.data()));
  if (shift) args.emplace(DNNL_ARG_SHIFT, dnnl::memory(plan.param, dnn.engine, b.data()));
  plan.primitive->execute(dnn.stream(), args);
  dnn.stream().wait();
  return true;
}

// in: x, [weight], [bias] (layer_norm) or x, [weight] (rms_norm); weight and bias shaped like x's
// last num_axes axes.
template <bool Rms>
wick_support norm_supports(const wick_op_desc& op) {
  const size_t max_inputs = Rms ? 2 : 3;
  if (op.num_inputs < 1 || op.num_inputs > max_inputs || op.num_outputs != 1 ||
      op.params == nullptr)
    return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_norm_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (x.dtype != y.dtype || !same_shape(x, y) || p.num_axes < 1 || p.num_axes > x.rank ||
      !(p.epsilon >= 0))
    return WICK_SUPPORT_NO_PARAMS;
  for (size_t k = 1; k < op.num_inputs; ++k) {
    const wick_tensor_desc& v = op.inputs[k];
    if (v.dtype != x.dtype || v.rank != p.num_axes) return WICK_SUPPORT_NO_PARAMS;
    for (int i = 0; i < p.num_axes; ++i)
      if (v.shape[i] != x.shape[x.rank - p.num_axes + i]) return WICK_SUPPORT_NO_PARAMS;
  }
  return is_float_dtype(x.dtype) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <bool Rms>
void norm_execute(Context& ctx, const wick_op_desc& op) {
  if (numel_of(op.inputs[0]) == 0) return;
  if (!Rms && layer_norm_onednn(ctx, op)) return;
  visit_float(op.inputs[0].dtype,
              [&](auto tag) { norm_loop<typename decltype(tag)::type, Rms>(ctx, op); });
}

// ---- batch_norm (inference) ---------------------------------------------------------------------

wick_support batch_norm_supports(const wick_op_desc& op) {
  if (op.num_inputs < 3 || op.num_inputs > 5 || op.num_outputs != 1 || op.params == nullptr)
    return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (x.dtype != y.dtype || !same_shape(x, y) || x.rank < 2) return WICK_SUPPORT_NO_PARAMS;
  if (!(static_cast<const wick_norm_params*>(op.params)->epsilon >= 0))
    return WICK_SUPPORT_NO_PARAMS;
  for (size_t k = 1; k < op.num_inputs; ++k) {
    const wick_tensor_desc& v = op.inputs[k];
    if (v.dtype != x.dtype || v.rank != 1 || v.shape[0] != x.shape[1])
      return WICK_SUPPORT_NO_PARAMS;
  }
  return is_float_dtype(x.dtype) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <class T>
void batch_norm_loop(const Context& ctx, const wick_op_desc& op) {
  using C = Compute<T>;
  const double eps = static_cast<const wick_norm_params*>(op.params)->epsilon;
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  const int64_t n = x.shape[0], c = x.shape[1];
  auto at = [&](size_t k, int64_t i) {
    const wick_tensor_desc& d = op.inputs[k];
    return static_cast<double>(static_cast<C>(data_of<const T>(d)[i * d.strides[0]]));
  };
  // y = (x - mean) * a + b with a = weight / sqrt(var + eps).
  std::vector<C> mean(static_cast<size_t>(c)), a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    const double w = op.num_inputs > 3 ? at(3, i) : 1.0;
    mean[static_cast<size_t>(i)] = static_cast<C>(at(1, i));
    a[static_cast<size_t>(i)] = static_cast<C>(w / std::sqrt(at(2, i) + eps));
    b[static_cast<size_t>(i)] = static_cast<C>(op.num_inputs > 4 ? at(4, i) : 0.0);
  }
  const T* px = data_of<const T>(x);
  T* py = data_of<T>(y);
  auto run = [&](int64_t nc) {
    const int64_t in = nc / c, ic = nc % c;
    const C m = mean[static_cast<size_t>(ic)], s = a[static_cast<size_t>(ic)],
            t = b[static_cast<size_t>(ic)];
    const T* xs = px + in * x.strides[0] + ic * x.strides[1];
    T* ys = py + in * y.strides[0] + ic * y.strides[1];
    sdk::for_each_row<2>(
        x.shape + 2, x.rank - 2, {x.strides + 2, y.strides + 2}, [&](const sdk::Row<2>& r) {
          for (int64_t i = 0; i < r.length; ++i)
            ys[r.offset[1] + i * r.stride[1]] =
                cast_value<T>((static_cast<C>(xs[r.offset[0] + i * r.stride[0]]) - m) * s + t);
        });
  };
  parallel_for(ctx, n * c, numel_of(x), run);
}

void batch_norm_execute(Context& ctx, const wick_op_desc& op) {
  if (numel_of(op.inputs[0]) == 0) return;
  visit_float(op.inputs[0].dtype,
              [&](auto tag) { batch_norm_loop<typename decltype(tag)::type>(ctx, op); });
}

// ---- adam_update ----------------------------------------------------------------------------------

// Dense C-order operands of one shape and dtype; outputs may be the inputs p, m, v themselves (each
// element is read before it is written, at the same index).
wick_support adam_supports(const wick_op_desc& op) {
  if (op.num_inputs != 4 || op.num_outputs != 3 || op.params == nullptr) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc& p = op.inputs[0];
  for (size_t k = 0; k < 7; ++k) {
    const wick_tensor_desc& t = k < 4 ? op.inputs[k] : op.outputs[k - 4];
    if (t.dtype != p.dtype || !same_shape(t, p) || !is_dense(t)) return WICK_SUPPORT_NO_PARAMS;
  }
  return is_float_dtype(p.dtype) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

template <class T, bool Decoupled>
void adam_loop(const Context& ctx, const wick_op_desc& op) {
  using C = Compute<T>;
  const auto& a = *static_cast<const wick_optim_params*>(op.params);
  const T* p = data_of<const T>(op.inputs[0]);
  const T* g = data_of<const T>(op.inputs[1]);
  const T* m = data_of<const T>(op.inputs[2]);
  const T* v = data_of<const T>(op.inputs[3]);
  T* p_out = data_of<T>(op.outputs[0]);
  T* m_out = data_of<T>(op.outputs[1]);
  T* v_out = data_of<T>(op.outputs[2]);
  const C b1 = C(a.beta1), b2 = C(a.beta2), c1 = C(1 - a.beta1), c2 = C(1 - a.beta2), eps = C(a.eps);
  const C wd = C(a.weight_decay), decay = C(1 - a.lr * a.weight_decay);
  const C step = C(a.lr / a.bias_correction1), scale = C(1 / std::sqrt(a.bias_correction2));
  // Blocks through local arrays: the outputs may alias the inputs, so a loop over the operands
  // themselves would not vectorise; the local copies cannot alias and every loop below does.
  constexpr int64_t kBlock = 512;
  const int64_t n = numel_of(op.inputs[0]), blocks = (n + kBlock - 1) / kBlock;
  const bool parallel = ctx.threads > 1 && n >= kParallelThreshold;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t at = b * kBlock, len = std::min(kBlock, n - at);
    C w[kBlock], d[kBlock], mi[kBlock], vi[kBlock];
    for (int64_t j = 0; j < len; ++j) {
      w[j] = static_cast<C>(p[at + j]);
      d[j] = static_cast<C>(g[at + j]);
      mi[j] = static_cast<C>(m[at + j]);
      vi[j] = static_cast<C>(v[at + j]);
    }
    for (int64_t j = 0; j < len; ++j) {
      C x = w[j], e = d[j];
      if constexpr (Decoupled)
        x *= decay;
      else
        e += wd * x;
      mi[j] = b1 * mi[j] + c1 * e;
      vi[j] = b2 * vi[j] + c2 * e * e;
      w[j] = x - step * mi[j] / (std::sqrt(vi[j]) * scale + eps);
    }
    for (int64_t j = 0; j < len; ++j) {
      p_out[at + j] = static_cast<T>(w[j]);
      m_out[at + j] = static_cast<T>(mi[j]);
      v_out[at + j] = static_cast<T>(vi[j]);
    }
  }
}

void adam_execute(Context& ctx, const wick_op_desc& op) {
  const bool decoupled = (static_cast<const wick_optim_params*>(op.params)->flags & WICK_ADAM_DECOUPLED) != 0;
  visit_float(op.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    decoupled ? adam_loop<T, true>(ctx, op) : adam_loop<T, false>(ctx, op);
  });
}

}  // namespace

Kernel fused_kernel(int op) {
  switch (op) {
    case WICK_OP_SOFTMAX: return {&softmax_execute<false>, &softmax_supports};
    case WICK_OP_LOG_SOFTMAX: return {&softmax_execute<true>, &softmax_supports};
    case WICK_OP_LAYER_NORM: return {&norm_execute<false>, &norm_supports<false>};
    case WICK_OP_RMS_NORM: return {&norm_execute<true>, &norm_supports<true>};
    case WICK_OP_BATCH_NORM: return {&batch_norm_execute, &batch_norm_supports};
    case WICK_OP_ADAM_UPDATE: return {&adam_execute, &adam_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
