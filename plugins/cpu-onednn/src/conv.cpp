// N-d convolution (WICK_OP_CONV). f32 and bf16 with 1-3 spatial dims and no input dilation run
// through oneDNN: formats chosen by oneDNN (`any`), user layouts reordered only when they differ,
// plans and their scratch buffers cached per geometry. f16 is converted to f32 for oneDNN (2.6
// has no f16 convolution on CPU), and so is bf16 where this CPU's oneDNN has no bf16 kernel.
// Everything else — f64, integers, input dilation (transposed convolution), negative padding, more
// spatial dims — runs a reference loop that accumulates in f64 or wrapping 64-bit integers.
#include "nn.hpp"

#include "onednn.hpp"

#include <wick/sdk/op_shapes.hpp>

namespace wick::cpu {

namespace {

struct ConvGeometry {
  int r = 0;  // spatial rank
  int64_t n = 0, c = 0, o = 0, groups = 1;
  std::vector<int64_t> in, k, out, stride, lo, hi, dil, idil;
};

std::optional<ConvGeometry> conv_geometry(const wick_op_desc& op) {
  if (op.num_inputs != 2 || op.num_outputs != 1 || op.params == nullptr) return std::nullopt;
  const auto& p = *static_cast<const wick_conv_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  ConvGeometry g;
  g.r = p.spatial_rank;
  if (g.r < 1 || x.rank != g.r + 2 || w.rank != g.r + 2 || y.rank != g.r + 2) return std::nullopt;
  if (p.groups < 1 || p.strides == nullptr || p.padding_lo == nullptr || p.padding_hi == nullptr ||
      p.dilations == nullptr)
    return std::nullopt;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.o = w.shape[0];
  g.groups = p.groups;
  if (g.o % g.groups != 0 || w.shape[1] * g.groups != g.c) return std::nullopt;
  if (y.shape[0] != g.n || y.shape[1] != g.o) return std::nullopt;
  for (int i = 0; i < g.r; ++i) {
    const int64_t idil = p.input_dilations != nullptr ? p.input_dilations[i] : 1;
    if (p.strides[i] < 1 || p.dilations[i] < 1 || idil < 1 || w.shape[2 + i] < 1)
      return std::nullopt;
    g.in.push_back(x.shape[2 + i]);
    g.k.push_back(w.shape[2 + i]);
    g.stride.push_back(p.strides[i]);
    g.lo.push_back(p.padding_lo[i]);
    g.hi.push_back(p.padding_hi[i]);
    g.dil.push_back(p.dilations[i]);
    g.idil.push_back(idil);
    g.out.push_back(sdk::window_out_extent(g.in.back(), g.k.back(), g.stride.back(), g.lo.back(),
                                           g.hi.back(), g.dil.back(), idil));
    if (y.shape[2 + i] != g.out.back()) return std::nullopt;
  }
  return g;
}

wick_support conv_supports(const wick_op_desc& op) {
  if (!conv_geometry(op)) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype t = op.outputs[0].dtype;
  if (op.inputs[0].dtype != t || op.inputs[1].dtype != t) return WICK_SUPPORT_NO_PARAMS;
  if (t == WICK_DTYPE_BOOL || sdk::dtype_size(t) == 0) return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

bool onednn_fits(const ConvGeometry& g) {
  if (g.r > 3) return false;
  for (int i = 0; i < g.r; ++i)
    if (g.idil[i] != 1 || g.lo[i] < 0 || g.hi[i] < 0) return false;
  return true;
}

// Weights below this many bytes are reordered on one thread (a 3x3 kernel of 64 x 64 channels is
// 147 KB: about 30 us of work).
constexpr size_t kSmallReorder = size_t(1) << 20;

struct ConvPlan {
  dnnl::convolution_forward conv;
  dnnl::memory::desc src_user, wei_user, dst_user;  // the operands as Wick lays them out
  dnnl::memory::desc src, wei, dst;                 // the layouts oneDNN chose
  // Reorders and their (oneDNN-allocated, aligned) scratch only where the layouts differ; kept with
  // the plan so that big buffers are not allocated and faulted in on every call.
  std::optional<dnnl::reorder> src_reorder, wei_reorder, dst_reorder;
  std::optional<dnnl::memory> src_scratch, wei_scratch, dst_scratch;
};

dnnl::memory::desc weight_desc(const wick_tensor_desc& w, int64_t groups) {
  if (groups == 1) return dnnl_desc(w);
  // [O, C/G, k...] seen as [G, O/G, C/G, k...].
  dnnl::memory::dims dims{groups, w.shape[0] / groups},
      strides{w.strides[0] * (w.shape[0] / groups), w.strides[0]};
  for (int i = 1; i < w.rank; ++i) {
    dims.push_back(w.shape[i]);
    strides.push_back(w.strides[i]);
  }
  return dnnl::memory::desc(dims, dnnl_type(w.dtype), strides);
}

// Whether x [N, C, spatial...] is stored channels-last: C the fastest axis, dense.
bool channels_last(const wick_tensor_desc& x) {
  if (x.rank < 3 || x.strides[1] != 1) return false;
  int64_t expected = x.shape[1];
  for (int i = x.rank - 1; i >= 2; --i) {
    if (x.shape[i] != 1 && x.strides[i] != expected) return false;
    expected *= x.shape[i];
  }
  return x.shape[0] == 1 || x.strides[0] == expected;
}

// The convolution primitive in the layouts oneDNN prefers (`any`), and a reorder (with its scratch)
// for each operand whose layout differs from the user's.
ConvPlan make_conv_plan(const Context::Onednn& dnn, const ConvGeometry& g,
                        const wick_tensor_desc& x, const wick_tensor_desc& w,
                        const wick_tensor_desc& y) {
  ConvPlan p;
  p.src_user = dnnl_desc(x);
  p.wei_user = weight_desc(w, g.groups);
  p.dst_user = dnnl_desc(y);
  auto any = [](const dnnl::memory::desc& d) {
    return dnnl::memory::desc(d.dims(), d.data_type(), dnnl::memory::format_tag::any);
  };
  dnnl::memory::dims strides(g.stride.begin(), g.stride.end()), lo(g.lo.begin(), g.lo.end()),
      hi(g.hi.begin(), g.hi.end()), dil;
  for (int64_t d : g.dil) dil.push_back(d - 1);  // oneDNN counts the gaps
  auto make_pd = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, src, any(p.wei_user),
                                        dst, strides, dil, lo, hi),
        dnn.engine);
  };
  dnnl::convolution_forward::primitive_desc pd = make_pd(any(p.src_user), any(p.dst_user));
  // Channels-last data: a direct JIT kernel on the user's layout, where oneDNN has one, saves the
  // two reorders per call that its preferred blocked layout costs (on AVX2, nChw8c).
  if (channels_last(x) && pd.src_desc() != p.src_user) {
    try {
      auto user = make_pd(p.src_user, p.dst_user);
      if (std::string(user.impl_info_str()).rfind("jit:", 0) == 0) pd = user;
    } catch (const dnnl::error&) {
      // no kernel for the user's layout: keep the reorders
    }
  }
  p.src = pd.src_desc();
  p.wei = pd.weights_desc();
  p.dst = pd.dst_desc();
  p.conv = dnnl::convolution_forward(pd);
  auto reorder = [&](const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                     const dnnl::memory::desc& scratch, std::optional<dnnl::reorder>& r,
                     std::optional<dnnl::memory>& m) {
    if (from == to) return;
    r = dnnl::reorder(dnnl::reorder::primitive_desc(dnn.engine, from, dnn.engine, to));
    m = dnnl::memory(scratch, dnn.engine);
  };
  reorder(p.src_user, p.src, p.src, p.src_reorder, p.src_scratch);
  reorder(p.wei_user, p.wei, p.wei, p.wei_reorder, p.wei_scratch);
  reorder(p.dst, p.dst_user, p.dst, p.dst_reorder, p.dst_scratch);
  return p;
}

void conv_onednn(Context& ctx, const ConvGeometry& g, const wick_tensor_desc& x_in,
                 const wick_tensor_desc& w_in, const wick_tensor_desc& y_in) {
  Dense px, pw, py;
  const wick_tensor_desc* x = &x_in;
  const wick_tensor_desc* w = &w_in;
  const wick_tensor_desc* y = &y_in;
  if (!plain_strides(*x)) {
    px.load(*x, x->dtype);
    x = &px.desc;
  }
  if (!plain_strides(*w)) {
    pw.load(*w, w->dtype);
    w = &pw.desc;
  }
  if (!plain_strides(*y)) {
    py.allocate(*y, y->dtype);
    y = &py.desc;
  }
  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  std::string key = "conv";
  key_add(key, *x);
  key_add(key, *w);
  key_add(key, *y);
  key_add(key, g.groups);
  for (const auto* v : {&g.stride, &g.lo, &g.hi, &g.dil})
    for (int64_t e : *v) key_add(key, e);
  ConvPlan& plan = dnn.plan<ConvPlan>(key, [&] { return make_conv_plan(dnn, g, *x, *w, *y); });
  dnnl::memory src_user(plan.src_user, dnn.engine, data_of(*x));
  dnnl::memory wei_user(plan.wei_user, dnn.engine, data_of(*w));
  dnnl::memory dst_user(plan.dst_user, dnn.engine, data_of(*y));
  dnnl::memory src = plan.src_scratch.value_or(src_user), wei = plan.wei_scratch.value_or(wei_user),
               dst = plan.dst_scratch.value_or(dst_user);
  if (plan.src_reorder) plan.src_reorder->execute(dnn.stream(), src_user, src);
  if (plan.wei_reorder) {
    auto reorder = [&] { plan.wei_reorder->execute(dnn.stream(), wei_user, wei); };
    if (plan.wei.get_size() < kSmallReorder)
      dnn.single_threaded(reorder);
    else
      reorder();
  }
  plan.conv.execute(dnn.stream(),
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  if (plan.dst_reorder) plan.dst_reorder->execute(dnn.stream(), dst, dst_user);
  dnn.stream().wait();
  if (y != &y_in) py.store(y_in);
}

template <class T>
using RefAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T>
void conv_reference(const Context& ctx, const ConvGeometry& g, const wick_tensor_desc& x,
                    const wick_tensor_desc& w, const wick_tensor_desc& y) {
  using A = RefAcc<T>;
  const T* px = data_of<const T>(x);
  const T* pw = data_of<const T>(w);
  T* py = data_of<T>(y);
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  int64_t positions = 1, taps = 1;
  for (int i = 0; i < g.r; ++i) {
    positions *= g.out[static_cast<size_t>(i)];
    taps *= g.k[static_cast<size_t>(i)];
  }
  const int64_t planes = g.n * g.o;
  auto plane = [&](int64_t np) {
    const int64_t n = np / g.o, o = np % g.o, grp = o / og;
    std::vector<int64_t> pos(static_cast<size_t>(g.r), 0), tap(static_cast<size_t>(g.r), 0);
    for (int64_t q = 0; q < positions; ++q, next_index(pos, g.out, pos.size())) {
      A acc = A(0);
      std::fill(tap.begin(), tap.end(), 0);
      for (int64_t t = 0; t < taps; ++t, next_index(tap, g.k, tap.size())) {
        // The input element under this tap, if it is a real one (not padding, not a dilation hole).
        int64_t xoff = n * x.strides[0] + grp * cg * x.strides[1];
        int64_t woff = o * w.strides[0];
        bool real = true;
        for (size_t i = 0; i < static_cast<size_t>(g.r) && real; ++i) {
          const int64_t v = pos[i] * g.stride[i] - g.lo[i] + tap[i] * g.dil[i];
          if (v < 0 || v % g.idil[i] != 0 || v / g.idil[i] >= g.in[i]) real = false;
          xoff += v / g.idil[i] * x.strides[2 + i];
          woff += tap[i] * w.strides[2 + i];
        }
        if (!real) continue;
        for (int64_t c = 0; c < cg; ++c)
          acc += static_cast<A>(px[xoff + c * x.strides[1]]) *
                 static_cast<A>(pw[woff + c * w.strides[1]]);
      }
      int64_t yoff = n * y.strides[0] + o * y.strides[1];
      for (size_t i = 0; i < static_cast<size_t>(g.r); ++i) yoff += pos[i] * y.strides[2 + i];
      py[yoff] = cast_value<T>(acc);
    }
  };
  if (ctx.threads > 1 && planes > 1 && planes * positions * taps * cg >= (int64_t(1) << 16)) {
#pragma omp parallel for num_threads(ctx.threads) schedule(dynamic)
    for (int64_t np = 0; np < planes; ++np) plane(np);
  } else {
    for (int64_t np = 0; np < planes; ++np) plane(np);
  }
}

void conv_execute(Context& ctx, const wick_op_desc& op) {
  const ConvGeometry g = *conv_geometry(op);
  const wick_tensor_desc &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  if (numel_of(y) == 0) return;
  const wick_dtype t = y.dtype;
  if (g.c > 0 && numel_of(x) > 0 && onednn_fits(g)) {
    if (ctx.onednn->runs(Context::Onednn::kConv, t)) return conv_onednn(ctx, g, x, w, y);
    // f16, and bf16 where this CPU's oneDNN has no bf16 kernel: in f32, rounded once on store.
    if (t == WICK_DTYPE_F16 || t == WICK_DTYPE_BF16) {
      Dense fx, fw, fy;
      fx.load(x, WICK_DTYPE_F32);
      fw.load(w, WICK_DTYPE_F32);
      fy.allocate(y, WICK_DTYPE_F32);
      conv_onednn(ctx, g, fx.desc, fw.desc, fy.desc);
      fy.store(y);
      return;
    }
  }
  sdk::visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) conv_reference<T>(ctx, g, x, w, y);
  });
}

}  // namespace

Kernel conv_kernel(int op) {
  switch (op) {
    case WICK_OP_CONV: return {&conv_execute, &conv_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
