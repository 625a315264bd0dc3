// Scaled-dot-product attention, out = softmax(q kᵀ · scale + mask (+ causal)) v, for f32, f64,
// f16 and bf16 (the 16-bit floats through f32, f64 in f64).
//
// Blocked so that the scores never exist as a whole [..., L, S]: each step takes a block of
// batch elements (short sequences: many heads at once, so the matmuls stay big) or of query rows
// of one batch element (long ones), at most kScoreBlock scores, and runs scores = q_blk kᵀ
// through the matmul kernel, the row softmax in place, then out_blk = P v. A causal row block
// [i0, i1) sees keys j < i1 only: both matmuls skip the keys past it.
#include "matmul.hpp"
#include "onednn.hpp"
#include "vector_math.hpp"

#include <wick/sdk/op_shapes.hpp>

#include <cmath>
#include <exception>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wick::cpu {

namespace {

// Scores per step: 1 MiB of f32, so that a block's scores stay in cache between the matmuls
// and the softmax.
constexpr int64_t kScoreBlock = int64_t(1) << 18;
// Causal query blocks of at most this many rows, so that the blocks skip the keys past them.
constexpr int64_t kCausalRows = 128;
// The row max and sum on four SSE2 accumulators of 4 floats or 2 doubles (baseline x86-64; the
// compiler does not vectorise these reductions itself without reassociating float math).
// _mm_max(x, m) keeps m where x is NaN.
#if defined(__SSE2__)
struct F32x4 {
  using V = __m128;
  static constexpr int kWidth = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static V splat(float v) { return _mm_set1_ps(v); }
  static V max(V a, V b) { return _mm_max_ps(a, b); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
};
struct F64x2 {
  using V = __m128d;
  static constexpr int kWidth = 2;
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static V splat(double v) { return _mm_set1_pd(v); }
  static V max(V a, V b) { return _mm_max_pd(a, b); }
  static V add(V a, V b) { return _mm_add_pd(a, b); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
};

// Reduces x[0, n) with op (max or add) from `init` on four vector accumulators, then the lanes and
// the tail in order.
template <class C, bool Max>
C row_reduce(const C* x, int64_t n, C init) {
  using S = std::conditional_t<std::is_same_v<C, float>, F32x4, F64x2>;
  auto op = [](typename S::V a, typename S::V b) { return Max ? S::max(a, b) : S::add(a, b); };
  typename S::V a0 = S::splat(init), a1 = a0, a2 = a0, a3 = a0;
  constexpr int w = S::kWidth;
  int64_t j = 0;
  for (; j + 4 * w <= n; j += 4 * w) {
    a0 = op(S::load(x + j), a0);
    a1 = op(S::load(x + j + w), a1);
    a2 = op(S::load(x + j + 2 * w), a2);
    a3 = op(S::load(x + j + 3 * w), a3);
  }
  C lanes[w];
  S::store(lanes, op(op(a0, a1), op(a2, a3)));
  C r = init;
  for (; j < n; ++j) r = Max ? (x[j] > r ? x[j] : r) : r + x[j];
  for (int l = 0; l < w; ++l) r = Max ? (lanes[l] > r ? lanes[l] : r) : r + lanes[l];
  return r;
}
#else
template <class C, bool Max>
C row_reduce(const C* x, int64_t n, C init) {
  C r = init;
  for (int64_t j = 0; j < n; ++j) r = Max ? (x[j] > r ? x[j] : r) : r + x[j];
  return r;
}
#endif

template <class C>
C row_max(const C* x, int64_t n) {
  return row_reduce<C, true>(x, n, -std::numeric_limits<C>::infinity());
}

template <class C>
C row_sum(const C* x, int64_t n) {
  return row_reduce<C, false>(x, n, C(0));
}

// The first step of the softmax of one row of n scores of which the first `valid` count (the
// causal prefix): x · scale + mask - max in place, mask row at stride ms (may be null), and -inf
// past the prefix, so that one exp over the whole block (rows of 128 keys are too short to call it
// row by row) gives the unnormalised weights with 0 there. The max ignores NaN, but a NaN (or a
// +inf) makes the row's sum and so its whole output row NaN, as docs/ops.md wants. A row whose
// every score is -inf (fully masked) is left -inf: its weights are all 0, its sum 0, and its
// output row 0 (the flash-attention convention; attention_step scales it by 0, not 1 / 0).
template <class C, class M>
void shift_row(C* row, int64_t n, int64_t valid, C scale, const M* mask, int64_t ms) {
  constexpr C kMinusInf = -std::numeric_limits<C>::infinity();
  if (mask == nullptr && scale > 0) {
    // max(x · scale) = max(x) · scale: the scale joins the subtraction.
    const C m = row_max(row, valid);
    if (m == kMinusInf) {
      std::fill(row + valid, row + n, kMinusInf);  // -inf and NaN scores stay as they are
      return;
    }
    for (int64_t j = 0; j < valid; ++j) row[j] = (row[j] - m) * scale;
  } else {
    if (mask != nullptr && ms == 1) {
      for (int64_t j = 0; j < valid; ++j) row[j] = row[j] * scale + static_cast<C>(mask[j]);
    } else if (mask != nullptr) {
      for (int64_t j = 0; j < valid; ++j) row[j] = row[j] * scale + static_cast<C>(mask[j * ms]);
    } else {
      for (int64_t j = 0; j < valid; ++j) row[j] *= scale;
    }
    const C m = row_max(row, valid);
    if (m != kMinusInf)
      for (int64_t j = 0; j < valid; ++j) row[j] -= m;
  }
  std::fill(row + valid, row + n, kMinusInf);
}

// x[i] = exp(x[i]) for i < n, on the vector kernels where the plugin has them; in chunks across
// threads when n is large.
template <class C>
void exp_block(const Context& ctx, C* x, int64_t n) {
  constexpr int64_t kChunk = 8192;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const bool parallel = ctx.threads > 1 && chunks > 1 && n >= kParallelThreshold;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
  for (int64_t c = 0; c < chunks; ++c) {
    C* at = x + c * kChunk;
    const int64_t len = std::min(kChunk, n - c * kChunk);
    if constexpr (vecmath::kAvailable) {
      vecmath::apply(vecmath::Fn::EXP, at, at, len);
    } else {
      for (int64_t j = 0; j < len; ++j) at[j] = std::exp(at[j]);
    }
  }
}

// Element offsets of every batch element of `shape` (its first nb dims) under `strides`, from base.
std::vector<int64_t> batch_offsets(const int64_t* shape, int nb, const int64_t* strides,
                                   int64_t base) {
  std::vector<int64_t> at;
  sdk::for_each_row<1>(shape, nb, {strides}, [&](const sdk::Row<1>& row) {
    for (int64_t e = 0; e < row.length; ++e) at.push_back(base + row.offset[0] + e * row.stride[0]);
  });
  if (nb == 0) at.assign(1, base);
  return at;
}

// How the batch dims [0, nb) and the L query rows split into steps: dims before `cut` one index
// at a time, dim `cut` in chunks of `chunk` indices, the dims after it whole, the rows in blocks
// of `rows`. cut == -1: every batch dim whole.
struct Tiling {
  int cut = -1;
  int64_t chunk = 1, rows = 1;
};

Tiling tiling_of(const int64_t* batch, int nb, int64_t l, int64_t s, bool causal, int threads) {
  // With several threads, steps small enough for two a thread (the steps then run in parallel),
  // but not below 2^14 scores, where a step's matmul calls would cost more than they do.
  int64_t total = l * s;
  for (int d = 0; d < nb; ++d) total *= batch[d];
  const int64_t block =
      threads > 1 ? std::clamp<int64_t>(total / (2 * threads), int64_t(1) << 14, kScoreBlock)
                  : kScoreBlock;
  Tiling t;
  const int64_t slice = std::max<int64_t>(l * s, 1);
  t.rows = l;
  if (causal && l > kCausalRows) t.rows = kCausalRows;
  if (slice > block) t.rows = std::min(t.rows, std::max<int64_t>(block / s, 1));
  if (t.rows < l || nb == 0) {
    t.cut = nb - 1;
    return t;
  }
  int64_t inner = 1;  // product of the whole batch dims after the cut
  for (int d = nb - 1; d >= 0; --d) {
    if (inner * batch[d] * slice > block) {
      t.cut = d;
      t.chunk = std::max<int64_t>(block / (inner * slice), 1);
      return t;
    }
    inner *= batch[d];
  }
  return t;  // everything in one step
}

// One operand's view for a step: shape replaced, the first element moved by `offset` elements.
struct View {
  std::vector<int64_t> shape, strides;
  wick_tensor_desc desc{};

  View(const wick_tensor_desc& d)
      : shape(d.shape, d.shape + d.rank), strides(d.strides, d.strides + d.rank), desc(d) {
    desc.shape = shape.data();
    desc.strides = strides.data();
  }
  void place(const wick_tensor_desc& d, int64_t offset) {
    desc.byte_offset = d.byte_offset + static_cast<uint64_t>(
                                           offset * static_cast<int64_t>(sdk::dtype_size(d.dtype)));
  }
};

// The operands of one attention call, in the compute dtype C (mask: the op's own dtype T).
template <class C, class T>
struct Problem {
  const wick_tensor_desc *q, *k, *v, *o, *m;
  int r, nb;
  int64_t l, s;
  C scale;
  bool causal;
};

// One f32 row of n scores of which the first `valid` count (the causal prefix) made its
// unnormalised weights exp((x - max) · scale) in one pass after its max, 0 past the prefix, on the
// vector kernels; returns 1 / their sum. A row whose every score is -inf gets weights 0 and
// returns 0, as shift_row's do. Taken by rows without a mask and with a positive scale; other
// rows take softmax_rows' passes over the whole block. (A template: instantiated only where the
// plugin has the vector kernels.)
template <class C>
C softmax_row(C* row, int64_t n, int64_t valid, C scale) {
  const float m = vecmath::max_f32(row, valid);
  float sum = 0;
  if (m == -std::numeric_limits<float>::infinity()) valid = 0;
  else sum = vecmath::exp_shift_sum(row, valid, m, scale);
  std::fill(row + valid, row + n, 0.0f);
  return sum == 0.0f ? 0.0f : 1.0f / sum;
}

// The softmax of a step's `lines` rows of `keys` scores in passes over the whole block: each row
// shifted (shift_row: scale, mask, max), one exp over the block, then the rows' sums; inv gets
// 1 / each row's sum (0 for a fully masked row: any other row has a weight exp(0) = 1).
template <class C, class T, class Valid>
void softmax_rows(const Context& ctx, const Problem<C, T>& p, C* scores, int64_t lines,
                  int64_t keys, int64_t rows, const std::vector<int64_t>& mask_at, Valid valid,
                  std::vector<C>& inv) {
  const int r = p.r;
  const T* mp = p.m != nullptr ? data_of<const T>(*p.m) : nullptr;
  const int64_t n = lines * keys;
  const bool parallel = ctx.threads > 1 && lines > 1 && n >= kParallelThreshold;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t b = line / rows, i = line % rows;
    const T* mrow =
        mp != nullptr ? mp + mask_at[static_cast<size_t>(b)] + i * p.m->strides[r - 2] : nullptr;
    shift_row(scores + line * keys, keys, valid(line), p.scale, mrow,
              p.m != nullptr ? p.m->strides[r - 1] : 0);
  }
  exp_block(ctx, scores, n);
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
  for (int64_t line = 0; line < lines; ++line) {
    const C sum = row_sum(scores + line * keys, valid(line));
    inv[static_cast<size_t>(line)] = sum == C(0) ? C(0) : C(1) / sum;
  }
}

// One step: batch dims [0, nb) at `start` (dims before the cut at one index, the cut dim from
// start[cut] for `count` indices), query rows [i0, i0 + rows).
template <class C, class T>
void attention_step(Context& ctx, const Problem<C, T>& p, const std::vector<int64_t>& start,
                    int64_t count, int64_t i0, int64_t rows, const Tiling& t, Dense& scratch) {
  const int r = p.r, nb = p.nb;
  const int64_t keys = p.causal ? std::min(p.s, i0 + rows) : p.s;
  auto offset = [&](const wick_tensor_desc& d, bool has_rows) {
    int64_t off = has_rows ? i0 * d.strides[r - 2] : 0;
    for (int i = 0; i <= t.cut; ++i) off += start[static_cast<size_t>(i)] * d.strides[i];
    return off;
  };
  View q(*p.q), kt(*p.k), v(*p.v), o(*p.o), sc(*p.q);
  for (View* x : {&q, &kt, &v, &o, &sc}) {
    for (int i = 0; i < t.cut; ++i) x->shape[static_cast<size_t>(i)] = 1;
    if (t.cut >= 0) x->shape[static_cast<size_t>(t.cut)] = count;
  }
  q.shape[static_cast<size_t>(r - 2)] = o.shape[static_cast<size_t>(r - 2)] = rows;
  kt.shape[static_cast<size_t>(r - 2)] = v.shape[static_cast<size_t>(r - 2)] = keys;
  std::swap(kt.shape[static_cast<size_t>(r - 2)], kt.shape[static_cast<size_t>(r - 1)]);
  std::swap(kt.strides[static_cast<size_t>(r - 2)], kt.strides[static_cast<size_t>(r - 1)]);
  q.place(*p.q, offset(*p.q, true));
  kt.place(*p.k, offset(*p.k, false));
  v.place(*p.v, offset(*p.v, false));
  o.place(*p.o, offset(*p.o, true));
  // The scores: dense [..., rows, keys] in the scratch buffer.
  sc.shape[static_cast<size_t>(r - 2)] = rows;
  sc.shape[static_cast<size_t>(r - 1)] = keys;
  int64_t n = 1;
  for (int i = r; i-- > 0;) {
    sc.strides[static_cast<size_t>(i)] = n;
    n *= sc.shape[static_cast<size_t>(i)];
  }
  sc.desc.buffer = scratch.desc.buffer;
  sc.desc.byte_offset = 0;
  run_matmul(ctx, q.desc, kt.desc, sc.desc);

  // The mask's [rows, keys] block of every batch element of the step.
  const std::vector<int64_t> mask_at =
      p.m != nullptr ? batch_offsets(sc.shape.data(), nb, p.m->strides, offset(*p.m, true))
                     : std::vector<int64_t>{};
  C* scores = data_of<C>(sc.desc);
  const int64_t lines = n / std::max<int64_t>(keys, 1);
  const bool parallel = ctx.threads > 1 && lines > 1 && n >= kParallelThreshold;
  auto valid = [&](int64_t line) { return p.causal ? std::min(keys, i0 + line % rows + 1) : keys; };
  std::vector<C> inv(static_cast<size_t>(lines));
  constexpr bool kVectorF32 = std::is_same_v<C, float> && vecmath::kAvailable;
  if (!kVectorF32 || p.m != nullptr || !(p.scale > 0)) {
    softmax_rows(ctx, p, scores, lines, keys, rows, mask_at, valid, inv);
  } else if constexpr (kVectorF32) {
    // The output rows are scaled by 1 / their sums after P v, which is cheaper than normalising
    // the scores (Ev values a row against S).
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (parallel)
    for (int64_t line = 0; line < lines; ++line)
      inv[static_cast<size_t>(line)] = softmax_row(scores + line * keys, keys, valid(line), p.scale);
  }
  run_matmul(ctx, sc.desc, v.desc, o.desc);
  const std::vector<int64_t> out_at = batch_offsets(o.shape.data(), nb, o.strides.data(), 0);
  C* out = data_of<C>(o.desc);
  const int64_t ev = o.shape[static_cast<size_t>(r - 1)],
                so = o.strides[static_cast<size_t>(r - 1)];
  for (int64_t line = 0; line < lines; ++line) {
    C* row = out + out_at[static_cast<size_t>(line / rows)] +
             (line % rows) * o.strides[static_cast<size_t>(r - 2)];
    const C f = inv[static_cast<size_t>(line)];
    if (so == 1) {
      for (int64_t j = 0; j < ev; ++j) row[j] *= f;
    } else {
      for (int64_t j = 0; j < ev; ++j) row[j * so] *= f;
    }
  }
}

// One step of the tiling: the batch index `start` (dims before the cut at one index, the cut dim
// from start[cut] for `count` indices), query rows [i0, i0 + rows).
struct Step {
  std::vector<int64_t> start;
  int64_t count, i0, rows;
};

// Every step: the dims before the cut index by index, the cut dim in chunks, rows in blocks.
std::vector<Step> steps_of(const Tiling& t, const int64_t* batch, int nb, int64_t l) {
  int64_t outer = 1;
  for (int i = 0; i < t.cut; ++i) outer *= batch[i];
  const int64_t cut_extent = t.cut >= 0 ? batch[t.cut] : 1;
  std::vector<Step> steps;
  std::vector<int64_t> start(static_cast<size_t>(std::max(nb, 1)), 0);
  for (int64_t e = 0; e < outer; ++e) {
    for (int64_t rest = e, i = t.cut - 1; i >= 0; --i) {
      start[static_cast<size_t>(i)] = rest % batch[i];
      rest /= batch[i];
    }
    for (int64_t c0 = 0; c0 < cut_extent; c0 += t.chunk) {
      if (t.cut >= 0) start[static_cast<size_t>(t.cut)] = c0;
      for (int64_t i0 = 0; i0 < l; i0 += t.rows)
        steps.push_back({start, std::min(t.chunk, cut_extent - c0), i0, std::min(t.rows, l - i0)});
    }
  }
  return steps;
}

// A dense [n] buffer of dtype t.
void allocate_flat(Dense& d, int64_t n, wick_dtype t) {
  wick_tensor_desc like{};
  like.rank = 1;
  like.shape = &n;
  d.allocate(like, t);
}

template <class T>
void attention_run(Context& ctx, const wick_op_desc& op) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr wick_dtype ct = std::is_same_v<C, double> ? WICK_DTYPE_F64 : WICK_DTYPE_F32;
  const auto& params = *static_cast<const wick_attention_params*>(op.params);
  Problem<C, T> p{&op.inputs[0],
                  &op.inputs[1],
                  &op.inputs[2],
                  &op.outputs[0],
                  op.num_inputs == 4 ? &op.inputs[3] : nullptr,
                  op.inputs[0].rank,
                  op.inputs[0].rank - 2,
                  0,
                  0,
                  static_cast<C>(params.scale),
                  params.causal != 0};
  Dense cq, ck, cv, co;
  if (p.q->dtype != ct) {
    cq.load(*p.q, ct);
    ck.load(*p.k, ct);
    cv.load(*p.v, ct);
    co.allocate(*p.o, ct);
    p.q = &cq.desc;
    p.k = &ck.desc;
    p.v = &cv.desc;
    p.o = &co.desc;
  }
  const int r = p.r, nb = p.nb;
  p.l = p.q->shape[r - 2];
  p.s = p.k->shape[r - 2];
  const Tiling t = tiling_of(p.q->shape, nb, p.l, p.s, p.causal, ctx.threads);
  // The scratch scores of the largest step.
  int64_t step_rows = t.rows;
  if (t.cut >= 0) step_rows *= t.chunk;
  for (int i = t.cut + 1; i < nb; ++i) step_rows *= p.q->shape[i];
  const int64_t scratch_size = std::max<int64_t>(step_rows * std::max<int64_t>(p.s, 1), 1);
  const std::vector<Step> steps = steps_of(t, p.q->shape, nb, p.l);
  const int64_t n = static_cast<int64_t>(steps.size());
  auto run = [&](Context& c, int64_t i, Dense& scratch) {
    const Step& st = steps[static_cast<size_t>(i)];
    attention_step(c, p, st.start, st.count, st.i0, st.rows, t, scratch);
  };
  if (ctx.threads <= 1 || n < 2 * ctx.threads) {
    // Step after step, each spread across the threads.
    Dense scratch;
    allocate_flat(scratch, scratch_size, ct);
    for (int64_t i = 0; i < n; ++i) run(ctx, i, scratch);
  } else {
    // The steps in parallel, each on one thread: its matmuls too (oneDNN runs single-threaded
    // inside a parallel region), which splits the work better than one matmul at a time over
    // every thread. An exception may not leave the region: the first is kept and rethrown.
    std::exception_ptr failure;
#pragma omp parallel num_threads(ctx.threads)
    {
      Context one = ctx;
      one.threads = 1;
      Dense scratch;
      try {
        allocate_flat(scratch, scratch_size, ct);
      } catch (...) {
#pragma omp critical(wick_attention_failure)
        failure = std::current_exception();
      }
#pragma omp for schedule(dynamic)
      for (int64_t i = 0; i < n; ++i) {
        if (scratch.bytes == nullptr) continue;
        try {
          run(one, i, scratch);
        } catch (...) {
#pragma omp critical(wick_attention_failure)
          failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
  if (p.o != &op.outputs[0]) co.store(op.outputs[0]);
}

wick_support attention_supports(const wick_op_desc& op) {
  if (op.params == nullptr || !sdk::attention_shapes_ok(op)) return WICK_SUPPORT_NO_PARAMS;
  const wick_dtype t = op.inputs[0].dtype;
  const bool is_float =
      t == WICK_DTYPE_F32 || t == WICK_DTYPE_F64 || t == WICK_DTYPE_F16 || t == WICK_DTYPE_BF16;
  return is_float ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

void attention_execute(Context& ctx, const wick_op_desc& op) {
  if (numel_of(op.outputs[0]) == 0) return;
  switch (op.inputs[0].dtype) {
    case WICK_DTYPE_F32: return attention_run<float>(ctx, op);
    case WICK_DTYPE_F64: return attention_run<double>(ctx, op);
    case WICK_DTYPE_F16: return attention_run<sdk::f16>(ctx, op);
    case WICK_DTYPE_BF16: return attention_run<sdk::bf16>(ctx, op);
    default: return;
  }
}

}  // namespace

Kernel attention_kernel(int op) {
  if (op != WICK_OP_ATTENTION) return {};
  return {&attention_execute, &attention_supports};
}

}  // namespace wick::cpu
