// Window reductions (WICK_OP_WINDOW_SUM/PROD/MAX/MIN) and the select-and-scatter of max-pool
// backward (WICK_OP_WINDOW_SCATTER_MAX/MIN), any rank, every numeric dtype.
//
// window_max and window_scatter_max of f32 [N, C, H, W] with 2x2 windows of stride 2 (the usual
// max pooling) run the vector kernels where the ISA has them (AVX-512: vecmath::Kernels, NaN
// handled as the loops handle it, no copy, no workspace). Other f32 pooling shapes (windows over
// 1-3 axes after [N, C], never wholly in padding) run oneDNN's max pooling and its backward when the input is finite
// (oneDNN 2.6.3 returns the largest number of a window that holds a NaN, and docs/ops.md says max
// propagates NaN) and oneDNN has JIT code for them on this CPU's ISA (onednn_pooling_preferred);
// elsewhere the plugin's loops, with the last axis as the vector dimension. window_max of bf16 and
// of shapes the [N, C, H, W] loop does not take runs oneDNN on any ISA.
#include "nn.hpp"
#include "onednn.hpp"
#include "vector_math.hpp"

#include <wick/sdk/op_shapes.hpp>

#include <cmath>
#include <limits>

namespace wick::cpu {

namespace {

template <class T>
inline constexpr bool is_half = std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>;
// Arithmetic type: f32 for the 16-bit floats, T itself otherwise.
template <class T>
using Compute = std::conditional_t<is_half<T>, float, T>;

struct WindowGeometry {
  int rank = 0;
  std::vector<int64_t> in, out, window, stride, lo, hi, dil;
};

// The geometry of the op; `result` is the tensor shaped like the window output (out[0] of a
// reduction, in[1] of a scatter). A 0-d operand is seen as one element of rank 1.
std::optional<WindowGeometry> window_geometry(const wick_op_desc& op,
                                              const wick_tensor_desc& operand,
                                              const wick_tensor_desc& result) {
  if (op.params == nullptr) return std::nullopt;
  const auto& p = *static_cast<const wick_window_params*>(op.params);
  if (p.rank != operand.rank || result.rank != operand.rank) return std::nullopt;
  if (p.rank > 0 && (p.window == nullptr || p.strides == nullptr || p.padding_lo == nullptr ||
                     p.padding_hi == nullptr || p.dilations == nullptr))
    return std::nullopt;
  WindowGeometry g;
  g.rank = std::max(p.rank, 1);
  for (int i = 0; i < p.rank; ++i) {
    if (p.window[i] < 1 || p.strides[i] < 1 || p.dilations[i] < 1) return std::nullopt;
    g.in.push_back(operand.shape[i]);
    g.window.push_back(p.window[i]);
    g.stride.push_back(p.strides[i]);
    g.lo.push_back(p.padding_lo[i]);
    g.hi.push_back(p.padding_hi[i]);
    g.dil.push_back(p.dilations[i]);
    g.out.push_back(sdk::window_out_extent(operand.shape[i], p.window[i], p.strides[i],
                                           p.padding_lo[i], p.padding_hi[i], p.dilations[i]));
    if (result.shape[i] != g.out.back()) return std::nullopt;
  }
  if (p.rank == 0) {
    g.in = g.out = g.window = g.stride = g.dil = {1};
    g.lo = g.hi = {0};
  }
  return g;
}

// Strides of a descriptor, with the rank-1 view of a 0-d tensor.
std::vector<int64_t> strides_of(const wick_tensor_desc& d) {
  if (d.rank == 0) return {1};
  return std::vector<int64_t>(d.strides, d.strides + d.rank);
}

// ---- reductions ---------------------------------------------------------------------------------

enum class Reduce { Sum, Prod, Max, Min };

template <class T, Reduce R>
struct Combine {
  // Sums and products of integers wrap: computed in uint64_t, narrowed on store. bool is a byte
  // (std::vector<bool> has no data()).
  using A =
      std::conditional_t<(R == Reduce::Sum || R == Reduce::Prod) && std::is_integral_v<T>, uint64_t,
                         std::conditional_t<std::is_same_v<T, bool>, unsigned char, Compute<T>>>;
  static A identity() {
    if constexpr (R == Reduce::Sum) return A(0);
    if constexpr (R == Reduce::Prod) return A(1);
    if constexpr (R == Reduce::Max) {
      if constexpr (std::numeric_limits<A>::has_infinity)
        return -std::numeric_limits<A>::infinity();
      else
        return std::numeric_limits<A>::lowest();
    }
    if constexpr (R == Reduce::Min) {
      if constexpr (std::numeric_limits<A>::has_infinity)
        return std::numeric_limits<A>::infinity();
      else
        return std::numeric_limits<A>::max();
    }
  }
  static A apply(A acc, A v) {
    if constexpr (R == Reduce::Sum) return acc + v;
    if constexpr (R == Reduce::Prod) return acc * v;
    // NaN propagates: once acc is NaN nothing replaces it.
    if constexpr (R == Reduce::Max) return (v > acc || v != v) ? v : acc;
    if constexpr (R == Reduce::Min) return (v < acc || v != v) ? v : acc;
  }
};

template <class T, Reduce R>
void window_reduce(const Context& ctx, const WindowGeometry& g, const wick_tensor_desc& x,
                   const wick_tensor_desc& y) {
  using C = Combine<T, R>;
  using A = typename C::A;
  const T* px = data_of<const T>(x);
  T* py = data_of<T>(y);
  const std::vector<int64_t> xs = strides_of(x), ys = strides_of(y);
  const size_t last = static_cast<size_t>(g.rank - 1);
  // Output rows: every index of the axes before the last.
  int64_t rows = 1;
  for (size_t i = 0; i < last; ++i) rows *= g.out[i];
  const int64_t width = g.out[last];
  auto row = [&](int64_t r, std::vector<A>& acc, std::vector<int64_t>& pos,
                 std::vector<int64_t>& tap) {
    int64_t rest = r, yoff = 0;
    for (size_t i = last; i-- > 0;) {
      pos[i] = rest % g.out[i];
      rest /= g.out[i];
      yoff += pos[i] * ys[i];
    }
    std::fill(acc.begin(), acc.end(), C::identity());
    std::fill(tap.begin(), tap.end(), 0);
    do {
      int64_t xoff = 0;
      bool real = true;
      for (size_t i = 0; i < last && real; ++i) {
        const int64_t v = pos[i] * g.stride[i] - g.lo[i] + tap[i] * g.dil[i];
        real = v >= 0 && v < g.in[i];
        xoff += v * xs[i];
      }
      if (!real) continue;
      for (int64_t k = 0; k < g.window[last]; ++k) {
        // Output columns j whose input column j * s - lo + k * d lies inside the operand.
        const int64_t shift = k * g.dil[last] - g.lo[last];
        const int64_t s = g.stride[last];
        int64_t j0 = shift >= 0 ? 0 : (-shift + s - 1) / s;
        int64_t j1 = g.in[last] - 1 - shift < 0 ? -1 : (g.in[last] - 1 - shift) / s;
        j1 = std::min(j1, width - 1);
        const T* src = px + xoff + shift * xs[last];
        const int64_t step = s * xs[last];
        A* a = acc.data();
        if (step == 1) {
          for (int64_t j = j0; j <= j1; ++j)
            a[j] = C::apply(a[j], static_cast<A>(static_cast<Compute<T>>(src[j])));
        } else {
          for (int64_t j = j0; j <= j1; ++j)
            a[j] = C::apply(a[j], static_cast<A>(static_cast<Compute<T>>(src[j * step])));
        }
      }
    } while (next_index(tap, g.window, last));
    for (int64_t j = 0; j < width; ++j)
      py[yoff + j * ys[last]] = cast_value<T>(acc[static_cast<size_t>(j)]);
  };
  int64_t taps = 1;
  for (int64_t w : g.window) taps *= w;
  const bool parallel = ctx.threads > 1 && rows > 1 && rows * width * taps >= kParallelThreshold;
#pragma omp parallel num_threads(ctx.threads) if (parallel)
  {
    std::vector<A> acc(static_cast<size_t>(width));
    std::vector<int64_t> pos(last + 1, 0), tap(last + 1, 0);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(r, acc, pos, tap);
  }
}

template <int Code>
wick_support window_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (x.dtype != y.dtype) return WICK_SUPPORT_NO_PARAMS;
  if (!window_geometry(op, x, y)) return WICK_SUPPORT_NO_PARAMS;
  if (sdk::dtype_size(x.dtype) == 0) return WICK_SUPPORT_NO_DTYPE;
  // bool has max (any) and min (all); its sums and products go through an integer on the host.
  if (x.dtype == WICK_DTYPE_BOOL && (Code == WICK_OP_WINDOW_SUM || Code == WICK_OP_WINDOW_PROD))
    return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

// ---- oneDNN max pooling ---------------------------------------------------------------------

// Whether oneDNN's max pooling (forward and backward) beats the plugin's loops on this CPU: decided
// once per process by the ISA oneDNN dispatches to (after ONEDNN_MAX_CPU_ISA). On plain NCHW
// memory oneDNN 2.6.3 has JIT kernels from AVX-512 on; below, only its "simple_nchw" loop. Medians
// at one thread (Xeon, AVX-512), forward / backward in ms, loop -> oneDNN:
//   2x2 s2, 128x16x28x28 (the CNN's first pool)    1.2-1.9 -> 0.57    5.3-5.9 -> 1.5
//   2x2 s2, 128x32x14x14 (its second)              1.4-2.0 -> 0.31    2.7-2.9 -> 0.66-0.81
//   3x3 s2 p1, 16x64x112x112                       12.6-21 -> 7.6-9.6   155-164 -> 20
// (2x2 windows of stride 2 now take the AVX-512 vector kernels first: max_pool_2x2_vector, whose
// numbers are in docs/benchmarks.md) and with ONEDNN_MAX_CPU_ISA=AVX2 (simple_nchw), loop -> oneDNN:
//   1.2 -> 15.7 / 5.3 -> 26;   1.4 -> 9.7 / 2.7 -> 12.9;   12.2 -> 199 / 167 -> 257.
bool onednn_pooling_preferred() {
  static const bool preferred = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx512_core:
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx: return true;
      default: return false;
    }
  }();
  return preferred;
}

struct PoolPlan {
  std::optional<dnnl::pooling_v2_forward> primitive;  // empty: only a reference implementation
  dnnl::memory::desc src, dst;
  // Whether the primitive is JIT code: oneDNN's "simple_nchw" loop, which it offers for plain
  // layouts its JIT kernels decline (odd extents, overlapping windows), is slower than ours.
  bool jit = false;
};

// [N, C, spatial...] with windows over 1-3 spatial axes only, none of them wholly in padding (where
// oneDNN's answer is not -inf).
bool pooling_fits(const WindowGeometry& g) {
  const int r = g.rank;
  if (r < 3 || r > 5) return false;
  for (int i = 0; i < 2; ++i)
    if (g.window[i] != 1 || g.stride[i] != 1 || g.lo[i] != 0 || g.hi[i] != 0) return false;
  for (int i = 2; i < r; ++i) {
    const int64_t span = (g.window[i] - 1) * g.dil[i] + 1;
    if (g.lo[i] < 0 || g.hi[i] < 0 || g.lo[i] >= span || g.hi[i] >= span) return false;
  }
  return true;
}

// The cache key of a pooling plan: its name, the operands and the geometry.
std::string pool_key(const char* name, const WindowGeometry& g,
                     std::initializer_list<const wick_tensor_desc*> operands) {
  std::string key = name;
  for (const wick_tensor_desc* d : operands) key_add(key, *d);
  for (const auto* v : {&g.window, &g.stride, &g.lo, &g.hi, &g.dil})
    for (int64_t e : *v) key_add(key, e);
  return key;
}

// oneDNN's window of max pooling over the spatial axes of g (pooling_fits).
struct PoolWindow {
  dnnl::memory::dims kernel, strides, dil, lo, hi;
  explicit PoolWindow(const WindowGeometry& g) {
    for (size_t i = 2; i < static_cast<size_t>(g.rank); ++i) {
      kernel.push_back(g.window[i]);
      strides.push_back(g.stride[i]);
      dil.push_back(g.dil[i] - 1);  // oneDNN counts the gaps
      lo.push_back(g.lo[i]);
      hi.push_back(g.hi[i]);
    }
  }
  dnnl::pooling_v2_forward::desc forward(dnnl::prop_kind prop, const dnnl::memory::desc& src,
                                         const dnnl::memory::desc& dst) const {
    return {prop, dnnl::algorithm::pooling_max, src, dst, strides, kernel, dil, lo, hi};
  }
  dnnl::pooling_v2_backward::desc backward(const dnnl::memory::desc& diff_src,
                                           const dnnl::memory::desc& diff_dst) const {
    return {dnnl::algorithm::pooling_max, diff_src, diff_dst, strides, kernel, dil, lo, hi};
  }
};

// jit_only: false where the plugin has only its general loop, which even simple_nchw beats.
bool max_pool_onednn(Context& ctx, const WindowGeometry& g, const wick_tensor_desc& x,
                     const wick_tensor_desc& y, bool jit_only) {
  if (!ctx.onednn->runs(Context::Onednn::kPooling, x.dtype) || !pooling_fits(g) ||
      !plain_strides(x) || !plain_strides(y) || has_non_finite(ctx, x))
    return false;
  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  PoolPlan& plan = dnn.plan<PoolPlan>(pool_key("max_pool", g, {&x, &y}), [&] {
    PoolPlan p;
    p.src = dnnl_desc(x);
    p.dst = dnnl_desc(y);
    dnnl::pooling_v2_forward::primitive_desc pd(
        PoolWindow(g).forward(dnnl::prop_kind::forward_inference, p.src, p.dst), dnn.engine);
    if (!is_reference(pd)) p.primitive = dnnl::pooling_v2_forward(pd);
    p.jit = is_jit(pd);
    return p;
  });
  if (jit_only && !plan.jit) return false;
  return run_src_dst(dnn, plan, data_of(x), data_of(y));
}

// Max-pool backward on oneDNN: the training forward finds each window's maximum (its workspace
// holds the winning tap: the first largest, as window_scatter's), the backward primitive adds the
// source values there.
struct PoolGradPlan {
  std::optional<dnnl::pooling_v2_forward> forward;  // empty: no JIT code for one of the two
  std::optional<dnnl::pooling_v2_backward> backward;
  dnnl::memory::desc src, dst, diff_dst, diff_src, workspace;
};

PoolGradPlan make_pool_grad_plan(Context::Onednn& dnn, const WindowGeometry& g,
                                 const wick_tensor_desc& x, const wick_tensor_desc& source,
                                 const wick_tensor_desc& y) {
  PoolGradPlan p;
  p.src = dnnl_desc(x);
  p.diff_dst = dnnl_desc(source);
  p.diff_src = dnnl_desc(y);
  // The training forward's own output, dense: only its workspace is wanted.
  dnnl::memory::dims dims = p.diff_dst.dims(), dense(dims.size());
  dnnl::memory::dim n = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    dense[i] = n;
    n *= dims[i];
  }
  p.dst = dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dense);
  const PoolWindow w(g);
  const dnnl::pooling_v2_forward::primitive_desc fwd(
      w.forward(dnnl::prop_kind::forward_training, p.src, p.dst), dnn.engine);
  const dnnl::pooling_v2_backward::primitive_desc bwd(w.backward(p.diff_src, p.diff_dst),
                                                      dnn.engine, fwd);
  if (!is_jit(fwd) || !is_jit(bwd)) return p;
  p.workspace = fwd.workspace_desc();
  p.forward = dnnl::pooling_v2_forward(fwd);
  p.backward = dnnl::pooling_v2_backward(bwd);
  return p;
}

// window_scatter_max of f32 on oneDNN where pooling_fits, the operand is finite and init is 0;
// false where the caller must run its loop.
bool max_pool_grad_onednn(Context& ctx, const WindowGeometry& g, const wick_op_desc& op) {
  const auto& params = *static_cast<const wick_window_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &source = op.inputs[1], &y = op.outputs[0];
  if (x.dtype != WICK_DTYPE_F32 || params.init_value != 0.0 || !pooling_fits(g) ||
      !plain_strides(x) || !plain_strides(source) || !plain_strides(y) || has_non_finite(ctx, x))
    return false;
  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  const PoolGradPlan& plan = dnn.plan<PoolGradPlan>(
      pool_key("max_pool_grad", g, {&x, &source, &y}),
      [&] { return make_pool_grad_plan(dnn, g, x, source, y); });
  if (!plan.forward) return false;
  dnnl::memory src(plan.src, dnn.engine, data_of(x)), dst(plan.dst, dnn.engine);
  dnnl::memory workspace(plan.workspace, dnn.engine);
  dnnl::memory diff_dst(plan.diff_dst, dnn.engine, data_of(source));
  dnnl::memory diff_src(plan.diff_src, dnn.engine, data_of(y));
  plan.forward->execute(dnn.stream(), {{DNNL_ARG_SRC, src},
                                       {DNNL_ARG_DST, dst},
                                       {DNNL_ARG_WORKSPACE, workspace}});
  plan.backward->execute(dnn.stream(), {{DNNL_ARG_DIFF_DST, diff_dst},
                                        {DNNL_ARG_DIFF_SRC, diff_src},
                                        {DNNL_ARG_WORKSPACE, workspace}});
  dnn.stream().wait();
  return true;
}

// Max and min pooling of f32/f64 [N, C, H, W] with windows over H and W only, rows contiguous:
// planes in parallel, each output row taking the extremum of its window rows. Below AVX-512
// oneDNN's pooling on this plain layout is its non-JIT "simple_nchw" (8-15x slower), and the
// general loop is slower still.
// Padded positions are skipped (they hold the identity); NaN propagates as in Combine.
template <class T, Reduce R>
bool window_reduce_2d(const Context& ctx, const WindowGeometry& g, const wick_tensor_desc& x,
                      const wick_tensor_desc& y) {
  if constexpr (!std::is_floating_point_v<T> || (R != Reduce::Max && R != Reduce::Min)) {
    return false;
  } else {
    if (g.rank != 4) return false;
    for (size_t i = 0; i < 2; ++i)
      if (g.window[i] != 1 || g.stride[i] != 1 || g.lo[i] != 0 || g.hi[i] != 0 || g.dil[i] != 1) return false;
    const std::vector<int64_t> xs = strides_of(x), ys = strides_of(y);
    if (xs[3] != 1 || ys[3] != 1) return false;
    const T* px = data_of<const T>(x);
    T* py = data_of<T>(y);
    const int64_t channels = g.in[1], h = g.in[2], w = g.in[3], oh = g.out[2], ow = g.out[3];
    const int64_t kh = g.window[2], kw = g.window[3], sh = g.stride[2], sw = g.stride[3];
    const int64_t dh = g.dil[2], dw = g.dil[3], lh = g.lo[2], lw = g.lo[3];
    const int64_t planes = g.in[0] * channels;
    const bool parallel = ctx.threads > 1 && planes > 1 && planes * h * w >= kParallelThreshold;
    const T identity = R == Reduce::Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t n = plane / channels, c = plane % channels;
      const T* xp = px + n * xs[0] + c * xs[1];
      T* yp = py + n * ys[0] + c * ys[1];
      for (int64_t i = 0; i < oh; ++i) {
        T* out = yp + i * ys[2];
        for (int64_t j = 0; j < ow; ++j) out[j] = identity;
        for (int64_t ki = 0; ki < kh; ++ki) {
          const int64_t r = i * sh - lh + ki * dh;
          if (r < 0 || r >= h) continue;
          const T* in = xp + r * xs[2];
          for (int64_t kj = 0; kj < kw; ++kj) {
            const int64_t off = kj * dw - lw;
            // Columns j whose tap lands inside the row: 0 <= j * sw + off < w.
            const int64_t j0 = off >= 0 ? 0 : (-off + sw - 1) / sw;
            const int64_t j1 = std::min(ow, w - off <= 0 ? 0 : (w - off + sw - 1) / sw);
            for (int64_t j = j0; j < j1; ++j) {
              const T v = in[j * sw + off];
              const T a = out[j];
              if constexpr (R == Reduce::Max)
                out[j] = (v > a || v != v) && a == a ? v : a;
              else
                out[j] = (v < a || v != v) && a == a ? v : a;
            }
          }
        }
      }
    }
    return true;
  }
}

// 2x2 windows of stride 2 over H and W of [N, C, H, W], without padding, dilation or a window
// past the edge, on f32 operands whose rows are contiguous: the vector kernels' case.
bool tiles_2x2(const WindowGeometry& g, std::initializer_list<const wick_tensor_desc*> operands) {
  if (g.rank != 4) return false;
  for (size_t i = 0; i < 4; ++i) {
    const int64_t k = i < 2 ? 1 : 2;
    if (g.window[i] != k || g.stride[i] != k || g.dil[i] != 1 || g.lo[i] != 0 || g.out[i] * k > g.in[i])
      return false;
  }
  for (const wick_tensor_desc* d : operands)
    if (d->dtype != WICK_DTYPE_F32 || d->strides[3] != 1) return false;  // rank 4, as g's
  return true;
}

// fn(n, c) for each [H, W] plane of an [N, C, H, W] operand, in parallel where it is large enough.
template <class F>
void for_each_plane(const Context& ctx, const WindowGeometry& g, F fn) {
  const int64_t channels = g.in[1], planes = g.in[0] * channels;
  const bool parallel = ctx.threads > 1 && planes > 1 && planes * g.in[2] * g.in[3] >= kParallelThreshold;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
  for (int64_t plane = 0; plane < planes; ++plane) fn(plane / channels, plane % channels);
}

// window_max of tiles_2x2 on the vector kernels, planes in parallel; false where they do not run.
bool max_pool_2x2_vector(const Context& ctx, const WindowGeometry& g, const wick_tensor_desc& x,
                         const wick_tensor_desc& y) {
#ifdef WICK_CPU_VECTOR_MATH
  const auto pool = vecmath::active_kernels().max_pool_2x2;
  if (pool == nullptr || !tiles_2x2(g, {&x, &y})) return false;
  const std::vector<int64_t> xs = strides_of(x), ys = strides_of(y);
  const float* px = data_of<const float>(x);
  float* py = data_of<float>(y);
  for_each_plane(ctx, g, [&](int64_t n, int64_t c) {
    pool(px + n * xs[0] + c * xs[1], xs[2], py + n * ys[0] + c * ys[1], ys[2], g.out[2], g.out[3]);
  });
  return true;
#else
  (void)ctx, (void)g, (void)x, (void)y;
  return false;
#endif
}

// window_scatter_max of tiles_2x2 on the vector kernels; false where they do not run.
bool max_pool_2x2_grad_vector(const Context& ctx, const WindowGeometry& g, const wick_op_desc& op) {
#ifdef WICK_CPU_VECTOR_MATH
  const auto grad = vecmath::active_kernels().max_pool_2x2_grad;
  const wick_tensor_desc &x = op.inputs[0], &src = op.inputs[1], &y = op.outputs[0];
  if (grad == nullptr || !tiles_2x2(g, {&x, &src, &y})) return false;
  const auto& p = *static_cast<const wick_window_params*>(op.params);
  const float fill = cast_value<float>(static_cast<double>(p.init_value));
  const std::vector<int64_t> xs = strides_of(x), ss = strides_of(src), ys = strides_of(y);
  const float* px = data_of<const float>(x);
  const float* ps = data_of<const float>(src);
  float* py = data_of<float>(y);
  for_each_plane(ctx, g, [&](int64_t n, int64_t c) {
    grad(px + n * xs[0] + c * xs[1], xs[2], ps + n * ss[0] + c * ss[1], ss[2], py + n * ys[0] + c * ys[1],
         ys[2], g.in[2], g.in[3], g.out[2], g.out[3], fill);
  });
  return true;
#else
  (void)ctx, (void)g, (void)op;
  return false;
#endif
}

template <int Code>
void window_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (numel_of(y) == 0) return;
  const WindowGeometry g = *window_geometry(op, x, y);
  if (Code == WICK_OP_WINDOW_MAX && max_pool_2x2_vector(ctx, g, x, y)) return;
  if (Code == WICK_OP_WINDOW_MAX && onednn_pooling_preferred() &&
      max_pool_onednn(ctx, g, x, y, true))
    return;
  bool done = false;
  sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Code == WICK_OP_WINDOW_MAX) done = window_reduce_2d<T, Reduce::Max>(ctx, g, x, y);
    if constexpr (Code == WICK_OP_WINDOW_MIN) done = window_reduce_2d<T, Reduce::Min>(ctx, g, x, y);
  });
  if (done) return;
  if (Code == WICK_OP_WINDOW_MAX && max_pool_onednn(ctx, g, x, y, false)) return;
  sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Code == WICK_OP_WINDOW_MAX) window_reduce<T, Reduce::Max>(ctx, g, x, y);
    if constexpr (Code == WICK_OP_WINDOW_MIN) window_reduce<T, Reduce::Min>(ctx, g, x, y);
    if constexpr (!std::is_same_v<T, bool>) {
      if constexpr (Code == WICK_OP_WINDOW_SUM) window_reduce<T, Reduce::Sum>(ctx, g, x, y);
      if constexpr (Code == WICK_OP_WINDOW_PROD) window_reduce<T, Reduce::Prod>(ctx, g, x, y);
    }
  });
}

// ---- select and scatter -------------------------------------------------------------------------

// For each window (each source element), the first maximum (minimum) among the operand's own
// elements is selected — padding never is, and a window wholly in padding selects nothing — and
// the source value is added there. A NaN counts as the maximum (minimum), as in window_max.
template <class T, bool Max>
void window_scatter(const WindowGeometry& g, const wick_op_desc& op) {
  const auto& p = *static_cast<const wick_window_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &src = op.inputs[1], &y = op.outputs[0];
  using C = Compute<T>;
  using A = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
  const T* px = data_of<const T>(x);
  const T* ps = data_of<const T>(src);
  T* py = data_of<T>(y);
  const std::vector<int64_t> xs = strides_of(x), ss = strides_of(src), ys = strides_of(y);
  const size_t r = static_cast<size_t>(g.rank);
  // Accumulate in a dense buffer indexed like the operand; round once on store.
  std::vector<int64_t> dense(r);
  int64_t n = 1;
  for (size_t i = r; i-- > 0;) {
    dense[i] = n;
    n *= g.in[i];
  }
  A init;
  if constexpr (std::is_integral_v<T>)
    init = static_cast<A>(cast_value<int64_t>(p.init_value));
  else
    init = static_cast<A>(p.init_value);
  std::vector<A> acc(static_cast<size_t>(n), init);
  if (numel_of(src) > 0 && n > 0) {
    std::vector<int64_t> pos(r, 0), tap(r, 0);
    do {
      int64_t best = -1;
      C best_value{};
      std::fill(tap.begin(), tap.end(), 0);
      do {
        int64_t xoff = 0, doff = 0;
        bool real = true;
        for (size_t i = 0; i < r && real; ++i) {
          const int64_t v = pos[i] * g.stride[i] - g.lo[i] + tap[i] * g.dil[i];
          real = v >= 0 && v < g.in[i];
          xoff += v * xs[i];
          doff += v * dense[i];
        }
        if (!real) continue;
        const C v = static_cast<C>(px[xoff]);
        const bool better = Max ? v > best_value : v < best_value;
        if (best < 0 || better || (v != v && best_value == best_value)) {
          best = doff;
          best_value = v;
        }
      } while (next_index(tap, g.window, r));
      if (best >= 0) {
        int64_t soff = 0;
        for (size_t i = 0; i < r; ++i) soff += pos[i] * ss[i];
        acc[static_cast<size_t>(best)] += static_cast<A>(static_cast<C>(ps[soff]));
      }
    } while (next_index(pos, g.out, r));
  }
  std::vector<int64_t> idx(r, 0);
  int64_t k = 0;
  do {
    int64_t yoff = 0;
    for (size_t i = 0; i < r; ++i) yoff += idx[i] * ys[i];
    py[yoff] = cast_value<T>(acc[static_cast<size_t>(k++)]);
  } while (next_index(idx, g.in, r));
}

// One plane of a 2x2, stride-2 select-and-scatter: the window's taps a b / c d in that order; the
// first extremum wins (the first NaN, when there is one), as in the general loop. Written with
// selects only, so that the compiler vectorises the columns.
template <class T, bool Max>
void scatter_2x2(const T* x, int64_t xrow, const T* src, int64_t srow, int64_t scol, T* y, int64_t yrow,
                 int64_t h, int64_t w, int64_t oh, int64_t ow, T fill) {
  for (int64_t r = 0; r < h; ++r)
    for (int64_t q = 0; q < w; ++q) y[r * yrow + q] = fill;
  for (int64_t i = 0; i < oh; ++i) {
    const T* x0 = x + 2 * i * xrow;
    const T* x1 = x0 + xrow;
    T* y0 = y + 2 * i * yrow;
    T* y1 = y0 + yrow;
    const T* s = src + i * srow;
    for (int64_t j = 0; j < ow; ++j) {
      const T a = x0[2 * j], b = x0[2 * j + 1], c = x1[2 * j], d = x1[2 * j + 1];
      const T ab = Max ? (b > a ? b : a) : (b < a ? b : a);
      const T cd = Max ? (d > c ? d : c) : (d < c ? d : c);
      const T m = Max ? (cd > ab ? cd : ab) : (cd < ab ? cd : ab);
      const bool na = a != a, nb = b != b, nc = c != c, nd = d != d;
      const bool any_nan = na | nb | nc | nd;
      const bool wa = any_nan ? na : a == m;
      const bool wb = !wa & (any_nan ? nb : b == m);
      const bool wc = !wa & !wb & (any_nan ? nc : c == m);
      const bool wd = !wa & !wb & !wc;
      const T v = static_cast<T>(fill + s[j * scol]);
      y0[2 * j] = wa ? v : fill;
      y0[2 * j + 1] = wb ? v : fill;
      y1[2 * j] = wc ? v : fill;
      y1[2 * j + 1] = wd ? v : fill;
    }
  }
}

// One [H, W] plane of a select-and-scatter whose kh x kw windows tile it (window_scatter_2d's
// case without overlap or padding, unit column strides): y filled, then each window's first
// extremum, found branch-free, set to init plus its source value. The general form of scatter_2x2.
template <class T, bool Max, class A>
void scatter_tiled(const WindowGeometry& g, const T* xp, const std::vector<int64_t>& xs,
                   const T* sp, const std::vector<int64_t>& ss, T* yp,
                   const std::vector<int64_t>& ys, A init, T fill) {
  using C = Compute<T>;
  const int64_t h = g.in[2], w = g.in[3], oh = g.out[2], ow = g.out[3];
  const int64_t kh = g.window[2], kw = g.window[3];
  for (int64_t r = 0; r < h; ++r)
    for (int64_t q = 0; q < w; ++q) yp[r * ys[2] + q] = fill;
  for (int64_t i = 0; i < oh; ++i) {
    for (int64_t j = 0; j < ow; ++j) {
      int64_t best_r = i * kh, best_q = j * kw;
      C best_value = static_cast<C>(xp[best_r * xs[2] + best_q]);
      for (int64_t ki = 0; ki < kh; ++ki) {
        const T* row = xp + (i * kh + ki) * xs[2] + j * kw;
        for (int64_t kj = 0; kj < kw; ++kj) {
          // Branch-free (selects, not jumps): which tap wins is data, and unpredictable.
          const C v = static_cast<C>(row[kj]);
          const bool take = (Max ? v > best_value : v < best_value) | ((v != v) & (best_value == best_value));
          const int64_t t = take;
          best_r += t * (i * kh + ki - best_r);
          best_q += t * (j * kw + kj - best_q);
          best_value = take ? v : best_value;
        }
      }
      yp[best_r * ys[2] + best_q] = cast_value<T>(init + static_cast<A>(static_cast<C>(sp[i * ss[2] + j * ss[3]])));
    }
  }
}

// One [H, W] plane of a select-and-scatter with any windows over H and W: the source values are
// added up in `acc` (h * w, indexed like the plane), then rounded once on store.
template <class T, bool Max, class A>
void scatter_accumulated(const WindowGeometry& g, const T* xp, const std::vector<int64_t>& xs,
                         const T* sp, const std::vector<int64_t>& ss, T* yp,
                         const std::vector<int64_t>& ys, A init, std::vector<A>& acc) {
  using C = Compute<T>;
  const int64_t h = g.in[2], w = g.in[3], oh = g.out[2], ow = g.out[3];
  std::fill(acc.begin(), acc.end(), init);
  for (int64_t i = 0; i < oh; ++i) {
    for (int64_t j = 0; j < ow; ++j) {
      int64_t best = -1;
      C best_value{};
      for (int64_t ki = 0; ki < g.window[2]; ++ki) {
        const int64_t r = i * g.stride[2] - g.lo[2] + ki * g.dil[2];
        if (r < 0 || r >= h) continue;
        for (int64_t kj = 0; kj < g.window[3]; ++kj) {
          const int64_t q = j * g.stride[3] - g.lo[3] + kj * g.dil[3];
          if (q < 0 || q >= w) continue;
          const C v = static_cast<C>(xp[r * xs[2] + q * xs[3]]);
          const bool better = Max ? v > best_value : v < best_value;
          if (best < 0 || better || (v != v && best_value == best_value)) {
            best = r * w + q;
            best_value = v;
          }
        }
      }
      if (best >= 0) acc[static_cast<size_t>(best)] += static_cast<A>(static_cast<C>(sp[i * ss[2] + j * ss[3]]));
    }
  }
  for (int64_t r = 0; r < h; ++r)
    for (int64_t q = 0; q < w; ++q) yp[r * ys[2] + q * ys[3]] = cast_value<T>(acc[static_cast<size_t>(r * w + q)]);
}

// The common case of max-pool backward: [N, C, H, W] with windows over H and W only. Planes run in
// parallel (each writes only its own output plane), with the operand's rows read directly; the
// same selection and rounding as the general loop above.
template <class T, bool Max>
bool window_scatter_2d(Context& ctx, const WindowGeometry& g, const wick_op_desc& op) {
  if (g.rank != 4) return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.window[i] != 1 || g.stride[i] != 1 || g.lo[i] != 0 || g.hi[i] != 0 || g.dil[i] != 1) return false;
  const auto& p = *static_cast<const wick_window_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &src = op.inputs[1], &y = op.outputs[0];
  using A = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
  const T* px = data_of<const T>(x);
  const T* ps = data_of<const T>(src);
  T* py = data_of<T>(y);
  const std::vector<int64_t> xs = strides_of(x), ss = strides_of(src), ys = strides_of(y);
  A init;
  if constexpr (std::is_integral_v<T>)
    init = static_cast<A>(cast_value<int64_t>(p.init_value));
  else
    init = static_cast<A>(p.init_value);
  const int64_t channels = g.in[1], h = g.in[2], w = g.in[3], oh = g.out[2], ow = g.out[3];
  const int64_t planes = g.in[0] * channels;
  const bool parallel = ctx.threads > 1 && planes > 1 && planes * h * w >= kParallelThreshold;
  // Windows that tile the plane without overlap or padding (2x2 pooling with stride 2): each
  // position receives at most one source value, so it is written directly, with no accumulator.
  const int64_t kh = g.window[2], kw = g.window[3];
  if (g.stride[2] == kh && g.stride[3] == kw && g.dil[2] == 1 && g.dil[3] == 1 && g.lo[2] == 0 &&
      g.lo[3] == 0 && oh * kh <= h && ow * kw <= w && xs[3] == 1 && ys[3] == 1) {
    const T fill = cast_value<T>(init);
    if constexpr (std::is_floating_point_v<T>) {
      if (kh == 2 && kw == 2) {  // the usual 2x2 pooling: vectorised, no index tracking
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
        for (int64_t plane = 0; plane < planes; ++plane) {
          const int64_t n = plane / channels, c = plane % channels;
          scatter_2x2<T, Max>(px + n * xs[0] + c * xs[1], xs[2], ps + n * ss[0] + c * ss[1], ss[2], ss[3],
                              py + n * ys[0] + c * ys[1], ys[2], h, w, oh, ow, fill);
        }
        return true;
      }
    }
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t n = plane / channels, c = plane % channels;
      const T* xp = px + n * xs[0] + c * xs[1];
      const T* sp = ps + n * ss[0] + c * ss[1];
      T* yp = py + n * ys[0] + c * ys[1];
      scatter_tiled<T, Max>(g, xp, xs, sp, ss, yp, ys, init, fill);
    }
    return true;
  }
#pragma omp parallel num_threads(ctx.threads) if (parallel)
  {
    std::vector<A> acc(static_cast<size_t>(h * w));
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t n = plane / channels, c = plane % channels;
      const T* xp = px + n * xs[0] + c * xs[1];
      const T* sp = ps + n * ss[0] + c * ss[1];
      T* yp = py + n * ys[0] + c * ys[1];
      scatter_accumulated<T, Max>(g, xp, xs, sp, ss, yp, ys, init, acc);
    }
  }
  return true;
}

wick_support scatter_supports(const wick_op_desc& op) {
  if (op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &src = op.inputs[1], &y = op.outputs[0];
  if (x.dtype != y.dtype || src.dtype != y.dtype || !same_shape(x, y))
    return WICK_SUPPORT_NO_PARAMS;
  if (!window_geometry(op, x, src)) return WICK_SUPPORT_NO_PARAMS;
  if (x.dtype == WICK_DTYPE_BOOL || sdk::dtype_size(x.dtype) == 0) return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

template <bool Max>
void scatter_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &y = op.outputs[0];
  if (numel_of(y) == 0) return;
  const WindowGeometry g = *window_geometry(op, x, op.inputs[1]);
  if (Max && max_pool_2x2_grad_vector(ctx, g, op)) return;
  if (Max && onednn_pooling_preferred() && max_pool_grad_onednn(ctx, g, op)) return;
  sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if (!window_scatter_2d<T, Max>(ctx, g, op)) window_scatter<T, Max>(g, op);
    }
  });
}

}  // namespace

Kernel window_kernel(int op) {
  switch (op) {
    case WICK_OP_WINDOW_SUM:
      return {&window_execute<WICK_OP_WINDOW_SUM>, &window_supports<WICK_OP_WINDOW_SUM>};
    case WICK_OP_WINDOW_PROD:
      return {&window_execute<WICK_OP_WINDOW_PROD>, &window_supports<WICK_OP_WINDOW_PROD>};
    case WICK_OP_WINDOW_MAX:
      return {&window_execute<WICK_OP_WINDOW_MAX>, &window_supports<WICK_OP_WINDOW_MAX>};
    case WICK_OP_WINDOW_MIN:
      return {&window_execute<WICK_OP_WINDOW_MIN>, &window_supports<WICK_OP_WINDOW_MIN>};
    case WICK_OP_WINDOW_SCATTER_MAX: return {&scatter_execute<true>, &scatter_supports};
    case WICK_OP_WINDOW_SCATTER_MIN: return {&scatter_execute<false>, &scatter_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
