// Reductions (sum, prod, max, min over any set of axes) and arg-reductions (argmax, argmin along
// one axis). Outputs keep the input's rank, reduced axes at extent 1.
//
// Two loop shapes cover the layouts that matter: "per output" reduces one contiguous (or strided)
// row per output element, with 8 independent lanes so the compiler vectorises it and a pairwise
// split that keeps the rounding error of long float sums small; "columns" serves reductions over
// an outer axis, adding whole contiguous rows of the input into a block of accumulators. Both
// split across threads, and cut a single long reduction into pieces when there are fewer outputs
// than threads. oneDNN's reduction primitive is not used: it accumulates f32 in f32 (NumPy's
// pairwise sum is more exact) and has no f64 or 64-bit integer support; these loops run at memory
// bandwidth already.
#include "reduce_common.hpp"

#include <algorithm>
#include <memory>

namespace wick::cpu {

namespace {

// ---- plans --------------------------------------------------------------------------------------

// A reduction seen as kept dims (one output each) and reduced dims, with negative input strides
// flipped (so every input stride is >= 0) and dims ordered outer to inner by input stride.
struct Plan {
  std::vector<Dim> kept;
  std::vector<Dim> reduced;  // never empty: {1, 0, 0} when nothing is reduced
  int64_t in_base = 0;
  int64_t out_base = 0;
};

Plan make_plan(const wick_tensor_desc& in, const wick_tensor_desc& out,
               const std::vector<bool>& reduced) {
  Plan p;
  for (int i = 0; i < in.rank; ++i) {
    const int64_t n = in.shape[i];
    if (n == 1) continue;
    int64_t s = in.strides[i];
    int64_t o = reduced[static_cast<size_t>(i)] ? 0 : out.strides[i];
    if (s < 0) {
      p.in_base += (n - 1) * s;
      p.out_base += (n - 1) * o;
      s = -s;
      o = -o;
    }
    (reduced[static_cast<size_t>(i)] ? p.reduced : p.kept).push_back({n, s, o});
  }
  auto by_stride = [](const Dim& a, const Dim& b) { return a.in > b.in; };
  std::stable_sort(p.kept.begin(), p.kept.end(), by_stride);
  std::stable_sort(p.reduced.begin(), p.reduced.end(), by_stride);
  p.kept = merge_dims(p.kept);
  p.reduced = merge_dims(p.reduced);
  if (p.reduced.empty()) p.reduced.push_back({1, 0, 0});
  return p;
}

// ---- row reductions -----------------------------------------------------------------------------

constexpr int64_t kLanes = 8;
constexpr int64_t kPairwiseBlock = 4096;  // long enough that the split costs nothing

// A contiguous f32 sum: blocks of 128 elements add up in eight f32 lanes of 16 elements (as fast
// as the plain f32 loop), and the block sums add up in f64. The error is a few ulps of one block's
// magnitude and does not grow with the length, unlike NumPy's pairwise f32 sum (log n levels).
constexpr int64_t kF32Block = 128;

inline double sum_f32_blocks(const float* x, int64_t n) {
  double total = 0.0;
  int64_t i = 0;
  for (; i + kF32Block <= n; i += kF32Block) {
    float lane[kLanes] = {};
    for (int64_t k = 0; k < kF32Block; k += kLanes)
      for (int64_t j = 0; j < kLanes; ++j) lane[j] += x[i + k + j];
    double block = 0.0;
    for (float l : lane) block += static_cast<double>(l);
    total += block;
  }
  for (; i < n; ++i) total += static_cast<double>(x[i]);
  return total;
}

template <class Op, class A, class T>
A reduce_row(const T* x, int64_t n, int64_t stride) {
  if constexpr (std::is_same_v<Op, SumOp> && std::is_same_v<T, float>) {
    if (stride == 1) return sum_f32_blocks(x, n);
  }
  if (stride != 1 || n < 2 * kLanes) {
    A acc = Op::template identity<A>();
    for (int64_t i = 0; i < n; ++i) acc = Op::combine(acc, Op::template enter<A>(x[i * stride]));
    return acc;
  }
  if (n > kPairwiseBlock) {
    const int64_t half = (n / 2) / kLanes * kLanes;
    return Op::combine(reduce_row<Op, A>(x, half, 1), reduce_row<Op, A>(x + half, n - half, 1));
  }
  A lane[kLanes];
  for (A& l : lane) l = Op::template identity<A>();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j)
      lane[j] = Op::combine(lane[j], Op::template enter<A>(x[i + j]));
  }
  A acc = Op::combine(Op::combine(Op::combine(lane[0], lane[1]), Op::combine(lane[2], lane[3])),
                      Op::combine(Op::combine(lane[4], lane[5]), Op::combine(lane[6], lane[7])));
  for (; i < n; ++i) acc = Op::combine(acc, Op::template enter<A>(x[i]));
  return acc;
}

// Reduces the positions [begin, end) (C order over the reduced dims) from a base pointer. Made
// once per block of work: it owns the walker over the outer reduced dims, so that reducing one
// output allocates nothing.
template <class Op, class A, class T>
class RangeReducer {
 public:
  explicit RangeReducer(const std::vector<Dim>& reduced)
      : inner_(reduced.back()), outer_(reduced.begin(), reduced.end() - 1), rows_(outer_) {}
  RangeReducer(const RangeReducer&) = delete;

  A operator()(const T* base, int64_t begin, int64_t end) {
    if (outer_.empty()) return reduce_row<Op, A>(base + begin * inner_.in, end - begin, inner_.in);
    rows_.seek(begin / inner_.n);
    int64_t col = begin % inner_.n;
    A acc = Op::template identity<A>();
    while (begin < end) {
      const int64_t len = std::min(inner_.n - col, end - begin);
      acc = Op::combine(acc, reduce_row<Op, A>(base + rows_.in + col * inner_.in, len, inner_.in));
      begin += len;
      col = 0;
      rows_.next();
    }
    return acc;
  }

 private:
  Dim inner_;
  std::vector<Dim> outer_;
  Walker rows_;
};

// ---- the two loop shapes
// --------------------------------------------------------------------------

template <class Op, class T, class O>
void reduce_per_output(const Context& ctx, const Plan& p, const T* src, O* dst) {
  using A = typename Op::template acc<T>;
  const int64_t n_out = count_of(p.kept), n_red = count_of(p.reduced);
  const int64_t pieces = split_count(ctx, n_out, n_red);
  if (pieces == 1) {
    parallel_for(ctx, n_out, n_red, [&](int64_t begin, int64_t end) {
      RangeReducer<Op, A, T> reduce(p.reduced);
      Walker k(p.kept);
      k.seek(begin);
      for (int64_t o = begin; o < end; ++o, k.next())
        dst[k.out] = cast_value<O>(reduce(src + k.in, 0, n_red));
    });
    return;
  }
  // Few outputs, long reductions: every output is cut into pieces reduced on their own threads.
  const std::unique_ptr<A[]> partial(
      new A[static_cast<size_t>(n_out * pieces)]);  // not vector<bool>
  parallel_for(ctx, n_out * pieces, n_red / pieces, [&](int64_t begin, int64_t end) {
    RangeReducer<Op, A, T> reduce(p.reduced);
    Walker k(p.kept);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / pieces, piece = t % pieces;
      k.seek(o);
      partial[static_cast<size_t>(t)] =
          reduce(src + k.in, n_red * piece / pieces, n_red * (piece + 1) / pieces);
    }
  });
  Walker k(p.kept);
  for (int64_t o = 0; o < n_out; ++o, k.next()) {
    A acc = partial[static_cast<size_t>(o * pieces)];
    for (int64_t piece = 1; piece < pieces; ++piece)
      acc = Op::combine(acc, partial[static_cast<size_t>(o * pieces + piece)]);
    dst[k.out] = cast_value<O>(acc);
  }
}

constexpr int64_t kColumns = 512;

// The innermost kept dim is contiguous in the input: accumulate blocks of kColumns outputs at once,
// walking the reduced positions in the outer loop.
template <class Op, class T, class O>
void reduce_columns(const Context& ctx, const Plan& p, const T* src, O* dst) {
  using A = typename Op::template acc<T>;
  const Dim cols = p.kept.back();
  const std::vector<Dim> outer(p.kept.begin(), p.kept.end() - 1);
  const int64_t blocks = (cols.n + kColumns - 1) / kColumns;
  const int64_t items = count_of(outer) * blocks, n_red = count_of(p.reduced);
  const int64_t pieces = split_count(ctx, items, n_red * std::min(cols.n, kColumns));
  const std::unique_ptr<A[]> partial(
      new A[pieces > 1 ? static_cast<size_t>(items * pieces * kColumns) : 0]);
  parallel_for(
      ctx, items * pieces, n_red * std::min(cols.n, kColumns) / pieces,
      [&](int64_t begin, int64_t end) {
        Walker k(outer);
        Walker r(p.reduced);
        A acc[kColumns];
        for (int64_t t = begin; t < end; ++t) {
          const int64_t item = t / pieces, piece = t % pieces;
          const int64_t c0 = (item % blocks) * kColumns, width = std::min(kColumns, cols.n - c0);
          k.seek(item / blocks);
          const T* base = src + k.in + c0;
          for (int64_t j = 0; j < width; ++j) acc[j] = Op::template identity<A>();
          const int64_t r_begin = n_red * piece / pieces, r_end = n_red * (piece + 1) / pieces;
          r.seek(r_begin);
          if constexpr (std::is_same_v<Op, SumOp> && std::is_same_v<T, float>) {
            // As sum_f32_blocks: f32 partial sums of up to 16 rows, added into the f64 ones.
            float part[kColumns];
            for (int64_t pos = r_begin; pos < r_end;) {
              const int64_t rows = std::min<int64_t>(16, r_end - pos);
              std::fill(part, part + width, 0.0f);
              for (int64_t q = 0; q < rows; ++q, ++pos, r.next()) {
                const float* x = base + r.in;
                for (int64_t j = 0; j < width; ++j) part[j] += x[j];
              }
              for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<double>(part[j]);
            }
          } else {
            for (int64_t pos = r_begin; pos < r_end; ++pos, r.next()) {
              const T* x = base + r.in;
              for (int64_t j = 0; j < width; ++j)
                acc[j] = Op::combine(acc[j], Op::template enter<A>(x[j]));
            }
          }
          if (pieces == 1) {
            O* d = dst + k.out + c0 * cols.out;
            for (int64_t j = 0; j < width; ++j) d[j * cols.out] = cast_value<O>(acc[j]);
          } else {
            std::copy(acc, acc + width, partial.get() + t * kColumns);
          }
        }
      });
  if (pieces == 1) return;
  Walker k(outer);
  for (int64_t item = 0; item < items; ++item) {
    const int64_t c0 = (item % blocks) * kColumns, width = std::min(kColumns, cols.n - c0);
    k.seek(item / blocks);
    for (int64_t j = 0; j < width; ++j) {
      A acc = partial[static_cast<size_t>(item * pieces * kColumns + j)];
      for (int64_t piece = 1; piece < pieces; ++piece)
        acc =
            Op::combine(acc, partial[static_cast<size_t>((item * pieces + piece) * kColumns + j)]);
      dst[k.out + (c0 + j) * cols.out] = cast_value<O>(acc);
    }
  }
}

// ---- reduce_* -----------------------------------------------------------------------------------

std::vector<bool> reduced_axes(const wick_tensor_desc& in, const wick_reduce_params& p) {
  std::vector<bool> reduced(static_cast<size_t>(in.rank), false);
  for (int k = 0; k < p.num_axes; ++k) reduced[static_cast<size_t>(p.axes[k])] = true;
  return reduced;
}

template <int Code>
wick_support reduce_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1 || op.params == nullptr)
    return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_reduce_params*>(op.params);
  if (p.struct_size < sizeof(wick_reduce_params) || p.num_axes < 0 ||
      (p.num_axes > 0 && p.axes == nullptr))
    return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  if (in.rank != out.rank) return WICK_SUPPORT_NO_PARAMS;
  std::vector<bool> reduced(static_cast<size_t>(in.rank), false);
  for (int k = 0; k < p.num_axes; ++k) {
    if (p.axes[k] < 0 || p.axes[k] >= in.rank || reduced[static_cast<size_t>(p.axes[k])])
      return WICK_SUPPORT_NO_PARAMS;
    reduced[static_cast<size_t>(p.axes[k])] = true;
  }
  for (int i = 0; i < in.rank; ++i)
    if (out.shape[i] != (reduced[static_cast<size_t>(i)] ? 1 : in.shape[i]))
      return WICK_SUPPORT_NO_PARAMS;
  // The output dtype (the input's, or its 64-bit widening for sums and products) is the op
  // table's rule, checked before this (sdk::check_signature).
  return WICK_SUPPORT_YES;
}

template <class Op>
void reduce_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  const auto& params = *static_cast<const wick_reduce_params*>(op.params);
  if (numel_of(out) == 0) return;
  const Plan p = make_plan(in, out, reduced_axes(in, params));
  visit_accumulating<Op>(in.dtype, out.dtype, [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using O = typename decltype(out_tag)::type;
    using A = typename Op::template acc<T>;
    const T* src = data_of<const T>(in) + p.in_base;
    O* dst = data_of<O>(out) + p.out_base;
    if (numel_of(in) == 0) {  // an empty reduced axis: the identity (-inf / lowest for max)
      Walker k(p.kept);
      for (int64_t o = 0, n = count_of(p.kept); o < n; ++o, k.next())
        dst[k.out] = cast_value<O>(Op::template identity<A>());
      return;
    }
    const Dim& inner = p.reduced.back();
    if (!p.kept.empty() && p.kept.back().in == 1 && inner.in != 1 && p.kept.back().n >= kLanes)
      reduce_columns<Op>(ctx, p, src, dst);
    else
      reduce_per_output<Op>(ctx, p, src, dst);
  });
}

// ---- argmax / argmin ----------------------------------------------------------------------------

template <bool Max, class C>
bool better(C v, C best) {
  if constexpr (Max)
    return v > best;
  else
    return v < best;
}

// The best element of x[begin..end) along a stride: the first NaN wins outright (NaN is not equal
// to NaN, so the tie flag does not apply to it); equal values keep the first, or the last. Two
// passes: the extreme value (a vectorised reduction), then a search for where it is.
template <bool Max, class T>
std::pair<compute_t<T>, int64_t> arg_scan(const T* x, int64_t stride, int64_t begin, int64_t end,
                                          bool last) {
  using C = compute_t<T>;
  using Op = std::conditional_t<Max, MaxOp, MinOp>;
  const C best = reduce_row<Op, C>(x + begin * stride, end - begin, stride);
  if (is_nan(best)) {
    for (int64_t i = begin; i < end; ++i)
      if (is_nan(load(x[i * stride]))) return {best, i};
  }
  if (last) {
    for (int64_t i = end; i-- > begin;)
      if (load(x[i * stride]) == best) return {best, i};
  } else {
    for (int64_t i = begin; i < end; ++i)
      if (load(x[i * stride]) == best) return {best, i};
  }
  return {best, begin};  // not reached: best is one of the elements
}

wick_support arg_supports(const wick_op_desc& op) {
  if (op.num_inputs != 1 || op.num_outputs != 1 || op.params == nullptr)
    return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  if (p.struct_size < sizeof(wick_axis_params) || in.rank != out.rank || p.axis < 0 ||
      p.axis >= in.rank || (p.flag != 0 && p.flag != 1))
    return WICK_SUPPORT_NO_PARAMS;
  for (int i = 0; i < in.rank; ++i)
    if (out.shape[i] != (i == p.axis ? 1 : in.shape[i])) return WICK_SUPPORT_NO_PARAMS;
  return sdk::dtype_size(in.dtype) != 0 && is_index_dtype(out.dtype) ? WICK_SUPPORT_YES
                                                                     : WICK_SUPPORT_NO_DTYPE;
}

template <bool Max>
void arg_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  const auto& params = *static_cast<const wick_axis_params*>(op.params);
  if (numel_of(out) == 0) return;
  const Dim axis{in.shape[params.axis], in.strides[params.axis], 0};
  if (axis.n == 0) {
    throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT, std::string(Max ? "argmax" : "argmin") +
                                                       ": axis " + std::to_string(params.axis) +
                                                       " of shape " + shape_string(in) +
                                                       " is empty; there is no element to pick");
  }
  // Plan the kept dims only (the axis at extent 1 drops out): the axis keeps its direction, so
  // that "first" means first.
  std::vector<int64_t> kept_shape(in.shape, in.shape + in.rank);
  kept_shape[static_cast<size_t>(params.axis)] = 1;
  wick_tensor_desc kept_in = in;
  kept_in.shape = kept_shape.data();
  const Plan p = make_plan(kept_in, out, std::vector<bool>(static_cast<size_t>(in.rank), false));
  const bool last = params.flag == 1;
  sdk::visit_dtype(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* src = data_of<const T>(in) + p.in_base;
    const int64_t n_out = count_of(p.kept);
    auto store = [&](int64_t out_offset, int64_t index) {
      if (out.dtype == WICK_DTYPE_I32)
        data_of<int32_t>(out)[p.out_base + out_offset] = static_cast<int32_t>(index);
      else
        data_of<int64_t>(out)[p.out_base + out_offset] = index;
    };
    const int64_t pieces = split_count(ctx, n_out, axis.n);
    if (pieces == 1) {
      parallel_for(ctx, n_out, axis.n, [&](int64_t begin, int64_t end) {
        Walker k(p.kept);
        k.seek(begin);
        for (int64_t o = begin; o < end; ++o, k.next())
          store(k.out, arg_scan<Max>(src + k.in, axis.in, 0, axis.n, last).second);
      });
      return;
    }
    std::vector<std::pair<C, int64_t>> partial(static_cast<size_t>(n_out * pieces));
    parallel_for(ctx, n_out * pieces, axis.n / pieces, [&](int64_t begin, int64_t end) {
      Walker k(p.kept);
      for (int64_t t = begin; t < end; ++t) {
        k.seek(t / pieces);
        const int64_t piece = t % pieces;
        partial[static_cast<size_t>(t)] = arg_scan<Max>(
            src + k.in, axis.in, axis.n * piece / pieces, axis.n * (piece + 1) / pieces, last);
      }
    });
    Walker k(p.kept);
    for (int64_t o = 0; o < n_out; ++o, k.next()) {
      auto best = partial[static_cast<size_t>(o * pieces)];
      for (int64_t piece = 1; piece < pieces; ++piece) {
        const auto& r = partial[static_cast<size_t>(o * pieces + piece)];
        if (is_nan(best.first)) break;
        if (is_nan(r.first) || better<Max>(r.first, best.first) || (last && r.first == best.first))
          best = r;
      }
      store(k.out, best.second);
    }
  });
}

}  // namespace

Kernel reduce_kernel(int op) {
  switch (op) {
    case WICK_OP_REDUCE_SUM: return {&reduce_execute<SumOp>, &reduce_supports<WICK_OP_REDUCE_SUM>};
    case WICK_OP_REDUCE_PROD:
      return {&reduce_execute<ProdOp>, &reduce_supports<WICK_OP_REDUCE_PROD>};
    case WICK_OP_REDUCE_MAX: return {&reduce_execute<MaxOp>, &reduce_supports<WICK_OP_REDUCE_MAX>};
    case WICK_OP_REDUCE_MIN: return {&reduce_execute<MinOp>, &reduce_supports<WICK_OP_REDUCE_MIN>};
    case WICK_OP_ARGMAX: return {&arg_execute<true>, &arg_supports};
    case WICK_OP_ARGMIN: return {&arg_execute<false>, &arg_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
