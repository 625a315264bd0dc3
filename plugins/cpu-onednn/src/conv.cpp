// N-d convolution (WICK_OP_CONV), its two gradients (WICK_OP_CONV_GRAD_INPUT, _WEIGHT) and the fused
// convolution with bias and ReLU (WICK_OP_CONV_BIAS, _RELU: f32 on oneDNN only, with its bias
// argument, then the ReLU in place; anything else is declined for the host's composite). f32 and
// bf16 with 1-3 spatial dims and no input dilation run through oneDNN (the forward, backward-data
// and backward-weights primitives): formats chosen by oneDNN (`any`), user layouts reordered only
// when they differ, plans and their scratch buffers cached per geometry. f16 is converted to f32
// for oneDNN (2.6 has no f16 convolution on CPU), and so is bf16 where this CPU's oneDNN has no
// bf16 kernel. Everything else — f64, integers, input dilation (transposed convolution), negative
// padding, more spatial dims — runs a reference loop that accumulates in f64 or wrapping 64-bit
// integers.
#include "nn.hpp"

#include "onednn.hpp"

#include <wick/sdk/op_shapes.hpp>
#include <wick/sdk/op_table.hpp>

#include <array>
#include <unordered_map>

namespace wick::cpu {

namespace {

struct ConvGeometry {
  int r = 0;  // spatial rank
  int64_t n = 0, c = 0, o = 0, groups = 1;
  std::vector<int64_t> in, k, out, stride, lo, hi, dil, idil;
};

// The three operands of a convolution whichever op reads or writes them: the input x
// [N, C, spatial...], the weight w [O, C / groups, kernel...] and the output y [N, O, out...].
struct ConvOperands {
  const wick_tensor_desc *x, *w, *y;
};
ConvOperands conv_operands(const wick_op_desc& op) {
  switch (op.op) {
    case WICK_OP_CONV_GRAD_INPUT: return {&op.outputs[0], &op.inputs[1], &op.inputs[0]};
    case WICK_OP_CONV_GRAD_WEIGHT: return {&op.inputs[0], &op.outputs[0], &op.inputs[1]};
    default: return {&op.inputs[0], &op.inputs[1], &op.outputs[0]};
  }
}

constexpr bool fused(int op) { return op == WICK_OP_CONV_BIAS || op == WICK_OP_CONV_BIAS_RELU; }
constexpr bool forward(int op) { return op == WICK_OP_CONV || fused(op); }

std::optional<ConvGeometry> conv_geometry(const wick_op_desc& op) {
  if (op.num_inputs != (fused(op.op) ? 3 : 2) || op.num_outputs != 1 || op.params == nullptr)
    return std::nullopt;
  const auto& p = *static_cast<const wick_conv_params*>(op.params);
  const ConvOperands d = conv_operands(op);
  const wick_tensor_desc &x = *d.x, &w = *d.w, &y = *d.y;
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

bool onednn_fits(const ConvGeometry& g) {
  if (g.r > 3) return false;
  for (int i = 0; i < g.r; ++i)
    if (g.idil[i] != 1 || g.lo[i] < 0 || g.hi[i] < 0) return false;
  return true;
}

wick_support conv_supports(const wick_op_desc& op) {
  const std::optional<ConvGeometry> g = conv_geometry(op);
  if (!g) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype t = op.outputs[0].dtype;
  for (size_t i = 0; i < op.num_inputs; ++i)
    if (op.inputs[i].dtype != t) return WICK_SUPPORT_NO_PARAMS;
  if (t == WICK_DTYPE_BOOL || sdk::dtype_size(t) == 0) return WICK_SUPPORT_NO_DTYPE;
  if (!fused(op.op)) return WICK_SUPPORT_YES;
  // The fused ops only where one oneDNN primitive runs them: the host composes the rest.
  const wick_tensor_desc& b = op.inputs[2];
  if (b.rank != 1 || b.shape[0] != g->o) return WICK_SUPPORT_NO_PARAMS;
  if (t != WICK_DTYPE_F32) return WICK_SUPPORT_NO_DTYPE;
  if (!onednn_fits(*g) || numel_of(op.inputs[0]) == 0 || numel_of(op.inputs[1]) == 0)
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

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

// Operands of this many bytes or fewer are reordered on one thread (a 3x3 kernel of 64 x 64
// channels is 147 KB: about 30 us of work, less than a busy machine's wait for a second thread).
constexpr size_t kSmallReorder = size_t(1) << 20;

// The operands of a convolution primitive in the order the op has them: in[0], in[1], out[0].
using ConvDescs = std::array<const wick_tensor_desc*, 3>;

// A oneDNN convolution primitive (forward, backward data or backward weights) with its three
// operands as Wick lays them out (`user`) and as the primitive wants them (`chosen`): a reorder
// and its (oneDNN-allocated, aligned) scratch only where the two differ, kept with the plan so that
// big buffers are not allocated and faulted in on every call.
struct ConvPlan {
  dnnl::primitive primitive;
  std::array<int, 3> args{};  // DNNL_ARG_* of in[0], in[1], out[0]
  std::array<dnnl::memory::desc, 3> user, chosen;
  std::array<std::optional<dnnl::reorder>, 3> reorders;
  std::array<std::optional<dnnl::memory>, 3> scratch;
  std::optional<dnnl::memory::desc> bias;  // the fused ops' in[2], read in place
};

// The user layouts of an op's operands; the weight (or its gradient) at `weight` seen per group.
void set_user_descs(ConvPlan& p, const ConvDescs& d, size_t weight, int64_t groups) {
  for (size_t i = 0; i < 3; ++i)
    p.user[i] = i == weight ? weight_desc(*d[i], groups) : dnnl_desc(*d[i]);
}

// The primitive, its arguments and the layouts it chose; then a reorder for each operand whose
// layout differs from the user's (into the chosen one for inputs, out of it for the output).
void set_primitive(const Context::Onednn& dnn, ConvPlan& p, dnnl::primitive primitive,
                   std::array<int, 3> args, std::array<dnnl::memory::desc, 3> chosen) {
  p.primitive = std::move(primitive);
  p.args = args;
  p.chosen = std::move(chosen);
  for (size_t i = 0; i < 3; ++i) {
    if (p.user[i] == p.chosen[i]) continue;
    const bool out = i == 2;
    p.reorders[i] = dnnl::reorder(dnnl::reorder::primitive_desc(
        dnn.engine, out ? p.chosen[i] : p.user[i], dnn.engine, out ? p.user[i] : p.chosen[i]));
    p.scratch[i] = dnnl::memory(p.chosen[i], dnn.engine);
  }
}

dnnl::memory::desc any_format(const dnnl::memory::desc& d) {
  return dnnl::memory::desc(d.dims(), d.data_type(), dnnl::memory::format_tag::any);
}

// The geometry as oneDNN takes it.
struct ConvDims {
  dnnl::memory::dims strides, dil, lo, hi;
  explicit ConvDims(const ConvGeometry& g)
      : strides(g.stride.begin(), g.stride.end()),
        lo(g.lo.begin(), g.lo.end()),
        hi(g.hi.begin(), g.hi.end()) {
    for (int64_t d : g.dil) dil.push_back(d - 1);  // oneDNN counts the gaps
  }
};

dnnl::convolution_forward::primitive_desc forward_pd(
    const Context::Onednn& dnn, const ConvDims& c, dnnl::prop_kind prop,
    const dnnl::memory::desc& src, const dnnl::memory::desc& wei, const dnnl::memory::desc& dst,
    const dnnl::memory::desc* bias = nullptr) {
  const auto alg = dnnl::algorithm::convolution_direct;
  return dnnl::convolution_forward::primitive_desc(
      bias != nullptr ? dnnl::convolution_forward::desc(prop, alg, src, wei, *bias, dst, c.strides,
                                                        c.dil, c.lo, c.hi)
                      : dnnl::convolution_forward::desc(prop, alg, src, wei, dst, c.strides, c.dil,
                                                        c.lo, c.hi),
      dnn.engine);
}

// WICK_OP_CONV: x, w -> y; WICK_OP_CONV_BIAS (_RELU): x, w, b -> y, the bias a primitive argument
// (the ReLU is conv_onednn's pass after it).
ConvPlan make_forward_plan(const Context::Onednn& dnn, const ConvGeometry& g,
                           const ConvDescs& d, const wick_tensor_desc* bias) {
  ConvPlan p;
  set_user_descs(p, d, 1, g.groups);
  if (bias != nullptr) p.bias = dnnl_desc(*bias);
  const ConvDims c(g);
  auto make_pd = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
    return forward_pd(dnn, c, dnnl::prop_kind::forward_inference, src, any_format(p.user[1]), dst,
                      p.bias ? &*p.bias : nullptr);
  };
  dnnl::convolution_forward::primitive_desc pd =
      make_pd(any_format(p.user[0]), any_format(p.user[2]));
  // Channels-last data: a direct JIT kernel on the user's layout, where oneDNN has one, saves the
  // two reorders per call that its preferred blocked layout costs (on AVX2, nChw8c).
  if (channels_last(*d[0]) && pd.src_desc() != p.user[0]) {
    try {
      auto user = make_pd(p.user[0], p.user[2]);
      if (std::string(user.impl_info_str()).rfind("jit:", 0) == 0) pd = user;
    } catch (const dnnl::error&) {
      // no kernel for the user's layout: keep the reorders
    }
  }
  set_primitive(dnn, p, dnnl::convolution_forward(pd),
                {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                {pd.src_desc(), pd.weights_desc(), pd.dst_desc()});
  return p;
}

// WICK_OP_CONV_GRAD_INPUT: dy, w -> dx, on the backward-data primitive (hinted by the forward
// training primitive of the same geometry, as oneDNN requires).
ConvPlan make_grad_input_plan(const Context::Onednn& dnn, const ConvGeometry& g,
                              const ConvDescs& d) {
  ConvPlan p;
  set_user_descs(p, d, 1, g.groups);
  const ConvDims c(g);
  const dnnl::memory::desc dy = any_format(p.user[0]), w = any_format(p.user[1]),
                           dx = any_format(p.user[2]);
  const auto hint = forward_pd(dnn, c, dnnl::prop_kind::forward_training, dx, w, dy);
  const dnnl::convolution_backward_data::primitive_desc pd(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, dx, w, dy,
                                            c.strides, c.dil, c.lo, c.hi),
      dnn.engine, hint);
  set_primitive(dnn, p, dnnl::convolution_backward_data(pd),
                {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                {pd.diff_dst_desc(), pd.weights_desc(), pd.diff_src_desc()});
  return p;
}

// WICK_OP_CONV_GRAD_WEIGHT: x, dy -> dw, on the backward-weights primitive.
ConvPlan make_grad_weight_plan(const Context::Onednn& dnn, const ConvGeometry& g,
                               const ConvDescs& d) {
  ConvPlan p;
  set_user_descs(p, d, 2, g.groups);
  const ConvDims c(g);
  const dnnl::memory::desc x = any_format(p.user[0]), dy = any_format(p.user[1]),
                           dw = any_format(p.user[2]);
  const auto hint = forward_pd(dnn, c, dnnl::prop_kind::forward_training, x, dw, dy);
  const dnnl::convolution_backward_weights::primitive_desc pd(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, x, dw, dy,
                                               c.strides, c.dil, c.lo, c.hi),
      dnn.engine, hint);
  set_primitive(dnn, p, dnnl::convolution_backward_weights(pd),
                {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
                {pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc()});
  return p;
}

ConvPlan make_plan(const Context::Onednn& dnn, int op, const ConvGeometry& g, const ConvDescs& d,
                   const wick_tensor_desc* bias) {
  switch (op) {
    case WICK_OP_CONV_GRAD_INPUT: return make_grad_input_plan(dnn, g, d);
    case WICK_OP_CONV_GRAD_WEIGHT: return make_grad_weight_plan(dnn, g, d);
    default: return make_forward_plan(dnn, g, d, bias);
  }
}

// A forward convolution's weight in the layout its primitive chose, kept while the weight is
// unchanged (derived_from_weight): a model's convolutions reorder no weight per call.
struct ConvPackedWeight : DerivedFromWeight {
  dnnl::memory packed;
};

// The weight of a forward plan that reorders it, packed once, or nullptr (the plan reorders it on
// each call): a weight in a buffer of its own, seen again unchanged.
// Takes the plan by value (its primitives are shared handles): making the packed copy may evict
// the cached plan itself.
std::optional<dnnl::memory> packed_weight(Context::Onednn& dnn, ConvPlan plan,
                                          const std::string& key, const wick_tensor_desc& w) {
  if (!plan.reorders[1]) return std::nullopt;
  const uint64_t gen = write_generation(w.buffer);
  if (gen == 0) return std::nullopt;
  auto key_of = [&](const char* prefix) -> const std::string& {
    thread_local std::string k;
    k.assign(prefix).append(key);
    key_add(k, static_cast<int64_t>(reinterpret_cast<uintptr_t>(w.buffer)));
    key_add(k, static_cast<int64_t>(w.byte_offset));
    return k;
  };
  ConvPackedWeight* p = derived_from_weight<ConvPackedWeight>(
      dnn, w.buffer, gen, "packed-convw:", "seen-convw:", key_of, plan.chosen[1].get_size(), [&] {
        ConvPackedWeight made;
        made.packed = dnnl::memory(plan.chosen[1], dnn.engine);
        return made;
      });
  if (p == nullptr) return std::nullopt;
  if (p->generation != gen) {
    dnnl::memory user(plan.user[1], dnn.engine, data_of(w));
    plan.reorders[1]->execute(dnn.stream(), user, p->packed);
    dnn.stream().wait();
    p->generation = gen;
  }
  return p->packed;
}

// Runs a plan on operands oneDNN can read in place (no negative or broadcast strides); `weight`,
// when given, is in[1] already in the layout the primitive chose; `bias` the fused ops' in[2].
void run_plan(Context::Onednn& dnn, ConvPlan& plan, const ConvDescs& d, const dnnl::memory* weight,
              const wick_tensor_desc* bias) {
  std::unordered_map<int, dnnl::memory> args;
  if (plan.bias) args[DNNL_ARG_BIAS] = dnnl::memory(*plan.bias, dnn.engine, data_of(*bias));
  std::array<dnnl::memory, 3> user;
  for (size_t i = 0; i < 3; ++i) {
    user[i] = dnnl::memory(plan.user[i], dnn.engine, data_of(*d[i]));
    args[plan.args[i]] = i == 1 && weight != nullptr ? *weight : plan.scratch[i].value_or(user[i]);
  }
  auto reorder = [&](size_t i) {
    auto run = [&] {
      if (i < 2)
        plan.reorders[i]->execute(dnn.stream(), user[i], *plan.scratch[i]);
      else
        plan.reorders[i]->execute(dnn.stream(), *plan.scratch[i], user[i]);
    };
    if (plan.chosen[i].get_size() <= kSmallReorder)
      dnn.single_threaded(run);
    else
      run();
  };
  for (size_t i = 0; i < 2; ++i)
    if (plan.reorders[i] && !(i == 1 && weight != nullptr)) reorder(i);
  plan.primitive.execute(dnn.stream(), args);
  if (plan.reorders[2]) reorder(2);
  dnn.stream().wait();
}

void conv_onednn(Context& ctx, int op, const ConvGeometry& g, const wick_tensor_desc& a,
                 const wick_tensor_desc& b, const wick_tensor_desc& out,
                 const wick_tensor_desc* bias = nullptr) {
  // Operands with negative or broadcast strides are packed first; a bias is read dense.
  std::array<Dense, 3> packed;
  Dense dense_bias;
  if (bias != nullptr && bias->shape[0] > 1 && bias->strides[0] != 1) {
    dense_bias.load(*bias, bias->dtype);
    bias = &dense_bias.desc;
  }
  ConvDescs d{&a, &b, &out};
  for (size_t i = 0; i < 3; ++i) {
    if (plain_strides(*d[i])) continue;
    if (i < 2)
      packed[i].load(*d[i], d[i]->dtype);
    else
      packed[i].allocate(*d[i], d[i]->dtype);
    d[i] = &packed[i].desc;
  }
  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  std::string key = sdk::op_name(op);
  for (const wick_tensor_desc* t : d) key_add(key, *t);
  key_add(key, g.groups);
  for (const auto* v : {&g.stride, &g.lo, &g.hi, &g.dil})
    for (int64_t e : *v) key_add(key, e);
  auto make = [&] { return make_plan(dnn, op, g, d, bias); };
  // Only a forward weight in its own buffer (not a scratch copy) can be recognised again.
  std::optional<dnnl::memory> weight;
  if (forward(op) && d[1] == &b) weight = packed_weight(dnn, dnn.plan<ConvPlan>(key, make), key, b);
  run_plan(dnn, dnn.plan<ConvPlan>(key, make), d, weight ? &*weight : nullptr, bias);
  // The ReLU in place, while the output is fresh. Not oneDNN's ReLU post-op: that makes NaN 0,
  // where max(0, NaN) is NaN (docs/ops.md), and keeping it exact took a scan of the input that
  // cost more than the post-op saved (ResNet-50, docs/onnx.md).
  if (op == WICK_OP_CONV_BIAS_RELU) relu_keeping_nan_f32(ctx, *d[2]);
  if (d[2] != &out) packed[2].store(out);
}

template <class T>
using RefAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

// Runs plane(p) for every p < planes, on the context's threads when the work is large.
template <class F>
void for_planes(const Context& ctx, int64_t planes, int64_t work_per_plane, F&& plane) {
  if (ctx.threads > 1 && planes > 1 && planes * work_per_plane >= (int64_t(1) << 16)) {
#pragma omp parallel for num_threads(ctx.threads) schedule(dynamic)
    for (int64_t p = 0; p < planes; ++p) plane(p);
  } else {
    for (int64_t p = 0; p < planes; ++p) plane(p);
  }
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t e : v) p *= e;
  return p;
}

template <class T>
void conv_reference(const Context& ctx, const ConvGeometry& g, const wick_tensor_desc& x,
                    const wick_tensor_desc& w, const wick_tensor_desc& y) {
  using A = RefAcc<T>;
  const T* px = data_of<const T>(x);
  const T* pw = data_of<const T>(w);
  T* py = data_of<T>(y);
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t positions = product(g.out), taps = product(g.k);
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
  for_planes(ctx, g.n * g.o, positions * taps * cg, plane);
}

// dx[n, c, i] = sum of dy[n, o, j] w[o, c - group start, t] over the o of c's group and the
// (tap t, output j) pairs that read input i: j s - lo + t dil = i idil.
template <class T>
void conv_grad_input_reference(const Context& ctx, const ConvGeometry& g,
                               const wick_tensor_desc& dy, const wick_tensor_desc& w,
                               const wick_tensor_desc& dx) {
  using A = RefAcc<T>;
  const T* py = data_of<const T>(dy);
  const T* pw = data_of<const T>(w);
  T* px = data_of<T>(dx);
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t positions = product(g.in), taps = product(g.k);
  auto plane = [&](int64_t nc) {
    const int64_t n = nc / g.c, c = nc % g.c, grp = c / cg;
    std::vector<int64_t> pos(static_cast<size_t>(g.r), 0), tap(static_cast<size_t>(g.r), 0);
    for (int64_t q = 0; q < positions; ++q, next_index(pos, g.in, pos.size())) {
      A acc = A(0);
      std::fill(tap.begin(), tap.end(), 0);
      for (int64_t t = 0; t < taps; ++t, next_index(tap, g.k, tap.size())) {
        int64_t yoff = n * dy.strides[0], woff = (c - grp * cg) * w.strides[1];
        bool real = true;
        for (size_t i = 0; i < static_cast<size_t>(g.r) && real; ++i) {
          const int64_t v = pos[i] * g.idil[i] + g.lo[i] - tap[i] * g.dil[i];
          if (v < 0 || v % g.stride[i] != 0 || v / g.stride[i] >= g.out[i]) real = false;
          yoff += v / g.stride[i] * dy.strides[2 + i];
          woff += tap[i] * w.strides[2 + i];
        }
        if (!real) continue;
        for (int64_t o = grp * og; o < (grp + 1) * og; ++o)
          acc += static_cast<A>(py[yoff + o * dy.strides[1]]) *
                 static_cast<A>(pw[woff + o * w.strides[0]]);
      }
      int64_t xoff = n * dx.strides[0] + c * dx.strides[1];
      for (size_t i = 0; i < static_cast<size_t>(g.r); ++i) xoff += pos[i] * dx.strides[2 + i];
      px[xoff] = cast_value<T>(acc);
    }
  };
  for_planes(ctx, g.n * g.c, positions * taps * og, plane);
}

// dw[o, c, t] = sum over n and the outputs j of dy[n, o, j] x[n, group start + c, i] where the
// tap reads input i: j s - lo + t dil = i idil.
template <class T>
void conv_grad_weight_reference(const Context& ctx, const ConvGeometry& g,
                                const wick_tensor_desc& x, const wick_tensor_desc& dy,
                                const wick_tensor_desc& dw) {
  using A = RefAcc<T>;
  const T* px = data_of<const T>(x);
  const T* py = data_of<const T>(dy);
  T* pw = data_of<T>(dw);
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  const int64_t positions = product(g.out), taps = product(g.k);
  auto plane = [&](int64_t oc) {
    const int64_t o = oc / cg, c = oc % cg, xc = o / og * cg + c;
    std::vector<int64_t> pos(static_cast<size_t>(g.r), 0), tap(static_cast<size_t>(g.r), 0);
    for (int64_t t = 0; t < taps; ++t, next_index(tap, g.k, tap.size())) {
      A acc = A(0);
      for (int64_t n = 0; n < g.n; ++n) {
        std::fill(pos.begin(), pos.end(), 0);
        for (int64_t q = 0; q < positions; ++q, next_index(pos, g.out, pos.size())) {
          int64_t xoff = n * x.strides[0] + xc * x.strides[1];
          int64_t yoff = n * dy.strides[0] + o * dy.strides[1];
          bool real = true;
          for (size_t i = 0; i < static_cast<size_t>(g.r) && real; ++i) {
            const int64_t v = pos[i] * g.stride[i] - g.lo[i] + tap[i] * g.dil[i];
            if (v < 0 || v % g.idil[i] != 0 || v / g.idil[i] >= g.in[i]) real = false;
            xoff += v / g.idil[i] * x.strides[2 + i];
            yoff += pos[i] * dy.strides[2 + i];
          }
          if (real) acc += static_cast<A>(px[xoff]) * static_cast<A>(py[yoff]);
        }
      }
      int64_t woff = o * dw.strides[0] + c * dw.strides[1];
      for (size_t i = 0; i < static_cast<size_t>(g.r); ++i) woff += tap[i] * dw.strides[2 + i];
      pw[woff] = cast_value<T>(acc);
    }
  };
  for_planes(ctx, g.o * cg, taps * g.n * positions, plane);
}

template <int Op>
void reference_of(const Context& ctx, const ConvGeometry& g, const wick_tensor_desc& a,
                  const wick_tensor_desc& b, const wick_tensor_desc& out) {
  sdk::visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!sdk::op_defined_for<Op, T>()) {
      return;
    } else if constexpr (Op == WICK_OP_CONV_GRAD_INPUT) {
      conv_grad_input_reference<T>(ctx, g, a, b, out);
    } else if constexpr (Op == WICK_OP_CONV_GRAD_WEIGHT) {
      conv_grad_weight_reference<T>(ctx, g, a, b, out);
    } else {
      conv_reference<T>(ctx, g, a, b, out);
    }
  });
}

// Every convolution op: oneDNN where it fits, else the reference loop. An empty input (no batch,
// no channels, an output the window does not reach) leaves nothing to sum: the loops write zeros.
template <int Op>
void conv_execute(Context& ctx, const wick_op_desc& op) {
  const ConvGeometry g = *conv_geometry(op);
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  if (numel_of(out) == 0) return;
  const wick_dtype t = out.dtype;
  if constexpr (fused(Op)) {
    return conv_onednn(ctx, Op, g, a, b, out, &op.inputs[2]);  // conv_supports: oneDNN runs it
  }
  if (numel_of(a) > 0 && numel_of(b) > 0 && onednn_fits(g)) {
    if (ctx.onednn->runs(Context::Onednn::kConv, t)) return conv_onednn(ctx, Op, g, a, b, out);
    // f16, and bf16 where this CPU's oneDNN has no bf16 kernel: in f32, rounded once on store.
    if (t == WICK_DTYPE_F16 || t == WICK_DTYPE_BF16) {
      Dense fa, fb, fo;
      fa.load(a, WICK_DTYPE_F32);
      fb.load(b, WICK_DTYPE_F32);
      fo.allocate(out, WICK_DTYPE_F32);
      conv_onednn(ctx, Op, g, fa.desc, fb.desc, fo.desc);
      fo.store(out);
      return;
    }
  }
  reference_of<Op>(ctx, g, a, b, out);
}

}  // namespace

Kernel conv_kernel(int op) {
  switch (op) {
    case WICK_OP_CONV: return {&conv_execute<WICK_OP_CONV>, &conv_supports};
    case WICK_OP_CONV_GRAD_INPUT: return {&conv_execute<WICK_OP_CONV_GRAD_INPUT>, &conv_supports};
    case WICK_OP_CONV_GRAD_WEIGHT: return {&conv_execute<WICK_OP_CONV_GRAD_WEIGHT>, &conv_supports};
    case WICK_OP_CONV_BIAS: return {&conv_execute<WICK_OP_CONV_BIAS>, &conv_supports};
    case WICK_OP_CONV_BIAS_RELU: return {&conv_execute<WICK_OP_CONV_BIAS_RELU>, &conv_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
