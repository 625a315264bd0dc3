// reduce_common.hpp — what the reduction, scan, index and sort kernels share: the compute type of
// each dtype, NaN-aware ordering, the four combining ops, a walker over strided dims and a
// parallel-for that stays inline for small work.
#pragma once

#include "kernels.hpp"

#include <wick/sdk/ops.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace wick::cpu {

// ---- element types ----------------------------------------------------------------------------

template <class T>
constexpr bool is_half_v = std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>;

// The type arithmetic and comparisons run in: f16/bf16 widen to float, the rest are themselves.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
constexpr bool is_float_v = is_half_v<T> || std::is_floating_point_v<T>;

template <class T>
inline compute_t<T> load(T v) {
  return static_cast<compute_t<T>>(v);
}

template <class C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return v != v;
  else
    return false;
}

// NaN sorts after every number: the order of ascending sort (docs/ops.md).
template <class C>
inline bool less_nan_last(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    return !is_nan(a) && (is_nan(b) || a < b);
  else
    return a < b;
}

// The lowest and highest value of a compute type (-inf / +inf for floats, false / true for bool).
template <class C>
constexpr C lowest_of() {
  if constexpr (std::is_floating_point_v<C>)
    return -std::numeric_limits<C>::infinity();
  else
    return std::numeric_limits<C>::lowest();
}
template <class C>
constexpr C highest_of() {
  if constexpr (std::is_floating_point_v<C>)
    return std::numeric_limits<C>::infinity();
  else
    return std::numeric_limits<C>::max();
}

// ---- the combining ops -----------------------------------------------------------------------
// Each names its accumulator A for input type T, its identity, how an element enters, and the
// combination of two accumulators. Sum and product accumulate floats in f64 and integers in 64 bits
// computed unsigned, so that overflow wraps without undefined behaviour.

template <class T>
using wide_t = std::conditional_t<is_float_v<T>, double, uint64_t>;

struct SumOp {
  template <class T>
  using acc = wide_t<T>;
  template <class A>
  static A identity() {
    return A(0);
  }
  template <class A, class T>
  static A enter(T v) {
    return static_cast<A>(load(v));
  }
  template <class A>
  static A combine(A a, A b) {
    return a + b;
  }
};

struct ProdOp {
  template <class T>
  using acc = wide_t<T>;
  template <class A>
  static A identity() {
    return A(1);
  }
  template <class A, class T>
  static A enter(T v) {
    return static_cast<A>(load(v));
  }
  template <class A>
  static A combine(A a, A b) {
    return a * b;
  }
};

// Max and min: NaN wins and stays (once the accumulator is NaN, no comparison replaces it).
struct MaxOp {
  template <class T>
  using acc = compute_t<T>;
  template <class A>
  static A identity() {
    return lowest_of<A>();
  }
  template <class A, class T>
  static A enter(T v) {
    return load(v);
  }
  template <class A>
  static A combine(A a, A b) {
    return (is_nan(b) || b > a) ? b : a;
  }
};

struct MinOp {
  template <class T>
  using acc = compute_t<T>;
  template <class A>
  static A identity() {
    return highest_of<A>();
  }
  template <class A, class T>
  static A enter(T v) {
    return load(v);
  }
  template <class A>
  static A combine(A a, A b) {
    return (is_nan(b) || b < a) ? b : a;
  }
};

// Calls f(type_tag<T>, type_tag<O>) with the input and output element types of an accumulating op
// (reductions and scans): O is T, or, for an integer accumulator, the 64-bit integer output that
// widening gives. Only those pairs are instantiated; supports() accepts no others.
template <class Op, class F>
void visit_accumulating(wick_dtype in, wick_dtype out, F&& f) {
  sdk::visit_dtype(in, [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    sdk::visit_dtype(out, [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      using A = typename Op::template acc<T>;
      if constexpr (std::is_same_v<O, T> ||
                    (std::is_same_v<A, uint64_t> && sizeof(O) == 8 && !is_float_v<O>))
        f(in_tag, out_tag);
    });
  });
}

// ---- strided geometry ---------------------------------------------------------------------------

// One dimension of an op: extent, input stride and output stride (elements).
struct Dim {
  int64_t n;
  int64_t in;
  int64_t out;
};

inline int64_t count_of(const std::vector<Dim>& dims) {
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.n;
  return n;
}

// Merges adjacent dims (outer first) that walk memory as one, in both operands.
inline std::vector<Dim> merge_dims(const std::vector<Dim>& dims) {
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (d.n == 1) continue;
    if (!merged.empty() && merged.back().in == d.in * d.n && merged.back().out == d.out * d.n) {
      merged.back().n *= d.n;
      merged.back().in = d.in;
      merged.back().out = d.out;
      continue;
    }
    merged.push_back(d);
  }
  return merged;
}

// Visits the positions of a set of dims in C order from any flat index, keeping the input and
// output offsets up to date.
class Walker {
 public:
  explicit Walker(const std::vector<Dim>& dims) : dims_(dims), idx_(dims.size(), 0) {}

  void seek(int64_t flat) {
    in = out = 0;
    for (size_t d = dims_.size(); d-- > 0;) {
      idx_[d] = flat % dims_[d].n;
      flat /= dims_[d].n;
      in += idx_[d] * dims_[d].in;
      out += idx_[d] * dims_[d].out;
    }
  }
  void next() {
    for (size_t d = dims_.size(); d-- > 0;) {
      in += dims_[d].in;
      out += dims_[d].out;
      if (++idx_[d] < dims_[d].n) return;
      in -= dims_[d].n * dims_[d].in;
      out -= dims_[d].n * dims_[d].out;
      idx_[d] = 0;
    }
  }

  int64_t in = 0;
  int64_t out = 0;

 private:
  const std::vector<Dim>& dims_;
  std::vector<int64_t> idx_;
};

// Runs f(begin, end) over [0, count) split in contiguous blocks, on several threads when the
// total work (count * cost per item, in elements) is large enough to pay for a parallel region.
template <class F>
void parallel_for(const Context& ctx, int64_t count, int64_t cost_per_item, F&& f) {
  if (count <= 0) return;
  const int64_t work = count * std::max<int64_t>(cost_per_item, 1);
  if (ctx.threads <= 1 || count == 1 || work < kParallelThreshold) {
    f(int64_t(0), count);
    return;
  }
  const int64_t blocks = std::min<int64_t>(count, int64_t(ctx.threads) * 4);
#pragma omp parallel for num_threads(ctx.threads) schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) f(count * b / blocks, count * (b + 1) / blocks);
}

// Walks the lines along `axis` of a shape three operands share (C order, from any line), keeping
// each operand's offset of the line's first element. Nothing is allocated per line.
class LineWalker {
 public:
  LineWalker(const wick_tensor_desc& shape_of, int axis,
             const std::array<const int64_t*, 3>& strides)
      : first_(dims(shape_of, axis, strides[0], strides[1])),
        third_(dims(shape_of, axis, strides[2], nullptr)) {}
  LineWalker(const LineWalker&) = delete;

  int64_t count() const { return count_of(first_); }
  void seek(int64_t line) {
    a_.seek(line);
    b_.seek(line);
  }
  void next() {
    a_.next();
    b_.next();
  }
  std::array<int64_t, 3> offsets() const { return {a_.in, a_.out, b_.in}; }

 private:
  static std::vector<Dim> dims(const wick_tensor_desc& d, int axis, const int64_t* in,
                               const int64_t* out) {
    std::vector<Dim> v;
    for (int i = 0; i < d.rank; ++i)
      if (i != axis && d.shape[i] != 1) v.push_back({d.shape[i], in[i], out ? out[i] : 0});
    return v;
  }

  // Declared before the walkers, which keep references to them.
  std::vector<Dim> first_, third_;
  Walker a_{first_}, b_{third_};
};

// How many pieces to cut one long job into so that every thread gets a share.
inline int64_t split_count(const Context& ctx, int64_t jobs, int64_t elements_per_job) {
  if (ctx.threads <= 1 || jobs >= ctx.threads || jobs * elements_per_job < kParallelThreshold)
    return 1;
  const int64_t per_thread = std::max<int64_t>(1, ctx.threads / std::max<int64_t>(jobs, 1));
  return std::max<int64_t>(1, std::min(per_thread, elements_per_job / (kParallelThreshold / 8)));
}

// ---- checks shared by supports()
// ------------------------------------------------------------------

inline bool is_index_dtype(wick_dtype t) {
  return t == WICK_DTYPE_I32 || t == WICK_DTYPE_I64;
}

inline std::string shape_string(const wick_tensor_desc& d) {
  std::string s = "[";
  for (int i = 0; i < d.rank; ++i) s += (i ? ", " : "") + std::to_string(d.shape[i]);
  return s + "]";
}

// Reads an index element (i32 or i64) as int64.
inline int64_t read_index(const unsigned char* base, wick_dtype t, int64_t element) {
  if (t == WICK_DTYPE_I32) return reinterpret_cast<const int32_t*>(base)[element];
  return reinterpret_cast<const int64_t*>(base)[element];
}

// Resolves an index into [0, extent): negative ids count from the end; anything outside
// [-extent, extent) is an INVALID_ARGUMENT error naming the op, value, axis and extent.
inline int64_t resolve_index(int64_t id, int64_t extent, int axis, wick_op_code op) {
  const int64_t r = id < 0 ? id + extent : id;
  if (r < 0 || r >= extent) {
    throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                     std::string(sdk::op_name(op)) + ": index " + std::to_string(id) +
                         " is out of range for axis " + std::to_string(axis) + " of extent " +
                         std::to_string(extent) + " (valid: " + std::to_string(-extent) + " to " +
                         std::to_string(extent - 1) + ")");
  }
  return r;
}

}  // namespace wick::cpu
