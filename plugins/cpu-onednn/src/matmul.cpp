// Matmul: f32 and bf16 through oneDNN (cached primitives, strided operands, batch broadcasting);
// f16, and bf16 on CPUs where oneDNN has no bf16 kernel (below AVX-512), converted to f32 for
// oneDNN (oneDNN 2.6 has no f16 matmul on CPU); the integers, beyond tiny products, through
// matmul_int.cpp's vectorised kernels; tiny products, f64 and bool through a plain loop that
// accumulates in f32 (16/32-bit floats), f64 or wrapping 64-bit integers.
#include "matmul.hpp"

#include "onednn.hpp"
#include "vector_math.hpp"

#include <atomic>
#include <optional>
#include <string>

namespace wick::cpu {

namespace {

// Below this many multiply-adds a plain one-thread loop beats oneDNN, whose per-call cost (memory
// objects, primitive lookup, stream, an OpenMP region) is 1.3 us and, from about 24^3 on, where it
// splits the work across threads, 7-10 us (measured on the 2-core build machine: the loop
// catches up with oneDNN between 32^3 and 48^3).
constexpr int64_t kSmallMatmul = int64_t(1) << 16;

// A matrix operand seen as [batch, rows, cols] with one stride per dim.
struct Operand3 {
  int64_t batch, rows, cols;
  int64_t s_batch, s_rows, s_cols;
};

// Collapses the leading batch dims of d into one, if the layout allows it. A batch broadcast over
// every batch dim (stride 0) becomes batch 1, which oneDNN broadcasts itself.
std::optional<Operand3> as_3d(const wick_tensor_desc& d) {
  const int nb = d.rank - 2;
  Operand3 o{1, d.shape[nb], d.shape[nb + 1], 0, d.strides[nb], d.strides[nb + 1]};
  if (o.s_rows < 0 || o.s_cols < 0) return std::nullopt;
  // Degenerate extents may carry any stride; give them one oneDNN accepts.
  if (o.rows == 1) o.s_rows = o.cols * std::max<int64_t>(o.s_cols, 1);
  if (o.cols == 1) o.s_cols = 1;
  if (o.s_rows == 0 || o.s_cols == 0) return std::nullopt;
  bool any_nonzero = false, any_zero = false;
  int64_t expected = -1;
  for (int i = nb - 1; i >= 0; --i) {
    o.batch *= d.shape[i];
    if (d.shape[i] == 1) continue;
    if (d.strides[i] == 0) {
      any_zero = true;
      continue;
    }
    any_nonzero = true;
    if (d.strides[i] < 0 || (expected >= 0 && d.strides[i] != expected)) return std::nullopt;
    if (expected < 0) o.s_batch = d.strides[i];
    expected = d.strides[i] * d.shape[i];
  }
  if (any_zero && any_nonzero) return std::nullopt;
  if (any_zero) o.batch = 1;
  if (o.batch == 1) o.s_batch = o.rows * o.cols;
  return o;
}

Operand3 dense_3d(const wick_tensor_desc& d) {
  int64_t batch = 1;
  for (int i = 0; i < d.rank - 2; ++i) batch *= d.shape[i];
  const int64_t rows = d.shape[d.rank - 2], cols = d.shape[d.rank - 1];
  return {batch, rows, cols, rows * cols, cols, 1};
}

// [batch, rows, cols], or [rows, cols] when no operand has a batch: the plain 2-D problem, for
// which oneDNN's kernel selection is the one a direct oneDNN user gets.
dnnl::memory::desc md3(const Operand3& o, wick_dtype t, bool batched = true) {
  if (!batched) return dnnl::memory::desc({o.rows, o.cols}, dnnl_type(t), {o.s_rows, o.s_cols});
  return dnnl::memory::desc({o.batch, o.rows, o.cols}, dnnl_type(t),
                            {o.s_batch, o.s_rows, o.s_cols});
}

struct MatmulPlan {
  dnnl::matmul primitive;
  // The strided layout had only oneDNN's reference implementation: pack every operand dense.
  bool dense = false;
};

// ---- prepacked weights (derived_from_weight, onednn.hpp) --------------------------------------

struct PackedWeights : DerivedFromWeight {
  dnnl::matmul primitive;  // empty where oneDNN offers only its reference kernel
  // Whether oneDNN prefers another layout than b's own; where it does not, the plan still saves
  // the per-call descriptor and memory-object work, and b is read in place.
  bool packed = false;
  dnnl::reorder pack;                    // plain b -> packed
  dnnl::memory plain_b, packed_b, a, c;  // plain_b, a and c get the call's data handles
};

// Executes a matmul primitive through the C call: no std::unordered_map of arguments per call.
void execute_matmul(Context::Onednn& dnn, const dnnl::matmul& primitive, const dnnl::memory& a,
                    const dnnl::memory& b, const dnnl::memory& c) {
  const dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, a.get()}, {DNNL_ARG_WEIGHTS, b.get()}, {DNNL_ARG_DST, c.get()}};
  dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), dnn.stream().get(), 3, args),
                          "could not execute a matmul primitive");
  dnn.stream().wait();
}

// The key of b's packed copy for this problem: the shapes and strides of all three operands, the
// dtypes, and b's buffer and byte offset. Reuses the calling thread's string (no allocation).
const std::string& packed_key(const char* prefix, const Operand3& a3, const Operand3& b3,
                              const Operand3& c3, const wick_tensor_desc& a,
                              const wick_tensor_desc& b, const wick_tensor_desc& c) {
  thread_local std::string key;
  key.assign(prefix);
  for (const Operand3* o : {&a3, &b3, &c3})
    for (int64_t v : {o->batch, o->rows, o->cols, o->s_batch, o->s_rows, o->s_cols})
      key_add(key, v);
  for (wick_dtype t : {a.dtype, c.dtype}) key_add(key, t);
  key_add(key, static_cast<int64_t>(reinterpret_cast<uintptr_t>(b.buffer)));
  key_add(key, static_cast<int64_t>(b.byte_offset));
  return key;
}

// Makes b's packed copy (or notes that b's own layout is oneDNN's choice), or an empty primitive
// where oneDNN offers only its reference kernel for these strides.
PackedWeights make_packed(Context::Onednn& dnn, const Operand3& a3, const Operand3& b3,
                          const Operand3& c3, const wick_tensor_desc& a, const wick_tensor_desc& b,
                          const wick_tensor_desc& c, bool batched) {
  PackedWeights p;
  const dnnl::memory::desc b_plain = md3(b3, b.dtype, batched);
  const dnnl::memory::desc b_any =
      batched ? dnnl::memory::desc({b3.batch, b3.rows, b3.cols}, dnnl_type(b.dtype),
                                   dnnl::memory::format_tag::any)
              : dnnl::memory::desc({b3.rows, b3.cols}, dnnl_type(b.dtype),
                                   dnnl::memory::format_tag::any);
  dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(md3(a3, a.dtype, batched), b_any, md3(c3, c.dtype, batched)), dnn.engine);
  if (is_reference(pd)) return p;
  p.primitive = dnnl::matmul(pd);
  p.plain_b = dnnl::memory(b_plain, dnn.engine, DNNL_MEMORY_NONE);
  p.packed = pd.weights_desc() != b_plain;
  if (p.packed) {
    p.packed_b = dnnl::memory(pd.weights_desc(), dnn.engine);
    p.pack = dnnl::reorder(p.plain_b, p.packed_b);
  }
  p.a = dnnl::memory(pd.src_desc(), dnn.engine, DNNL_MEMORY_NONE);
  p.c = dnnl::memory(pd.dst_desc(), dnn.engine, DNNL_MEMORY_NONE);
  return p;
}

// Runs c = a x b on b's packed copy when b has one or is seen again unchanged; false when the
// caller must run the plain plan.
bool matmul_packed(Context::Onednn& dnn, const Operand3& a3, const Operand3& b3, const Operand3& c3,
                   const wick_tensor_desc& a, const wick_tensor_desc& b, const wick_tensor_desc& c,
                   bool batched) {
  if (b3.batch != 1) return false;
  const uint64_t gen = write_generation(b.buffer);
  if (gen == 0) return false;
  const uint64_t b_bytes = static_cast<uint64_t>(b3.rows * b3.cols) * sdk::dtype_size(b.dtype);
  PackedWeights* p = derived_from_weight<PackedWeights>(
      dnn, b.buffer, gen, "mmpacked", "mmseen",
      [&](const char* prefix) -> const std::string& { return packed_key(prefix, a3, b3, c3, a, b, c); },
      b_bytes, [&] { return make_packed(dnn, a3, b3, c3, a, b, c, batched); });
  if (p == nullptr) return false;
  if (!p->primitive) return false;
  if (!p->packed) {
    p->plain_b.set_data_handle(data_of(b));
  } else if (p->generation != gen) {
    p->plain_b.set_data_handle(data_of(b));
    p->pack.execute(dnn.stream(), p->plain_b, p->packed_b);
    p->generation = gen;
  }
  p->a.set_data_handle(data_of(a));
  p->c.set_data_handle(data_of(c));
  execute_matmul(dnn, p->primitive, p->a, p->packed ? p->packed_b : p->plain_b, p->c);
  return true;
}

// One oneDNN matmul; a, b share a dtype (f32 or bf16), c is that dtype or f32.
// `whole_op`: the matmul is a whole op of the table, so b's buffer is written only between
// calls (HostBuffer::generation); a kernel running matmuls inside it may write b in between.
void matmul_onednn(Context& ctx, const wick_tensor_desc& a_in, const wick_tensor_desc& b_in,
                   const wick_tensor_desc& c_in, bool whole_op) {
  Dense pa, pb, pc;
  const wick_tensor_desc* a = &a_in;
  const wick_tensor_desc* b = &b_in;
  const wick_tensor_desc* c = &c_in;
  std::optional<Operand3> a3 = as_3d(*a), b3 = as_3d(*b), c3 = as_3d(*c);
  if (!a3) {
    pa.load(*a, a->dtype);
    a = &pa.desc;
    a3 = dense_3d(*a);
  }
  if (!b3) {
    pb.load(*b, b->dtype);
    b = &pb.desc;
    b3 = dense_3d(*b);
  }
  if (!c3) {
    pc.allocate(*c, c->dtype);
    c = &pc.desc;
    c3 = dense_3d(*c);
  }

  Context::Onednn& dnn = *ctx.onednn;
  dnn.use_configured_threads();
  const bool batched = a3->batch > 1 || b3->batch > 1 || c3->batch > 1;
  // Only b in its own buffer (not a scratch copy) can be recognised again.
  if (whole_op && b == &b_in && matmul_packed(dnn, *a3, *b3, *c3, *a, *b, *c, batched)) {
    if (c != &c_in) pc.store(c_in);
    return;
  }
  std::string key = "matmul";
  for (const Operand3* o : {&*a3, &*b3, &*c3})
    for (int64_t v : {o->batch, o->rows, o->cols, o->s_batch, o->s_rows, o->s_cols})
      key_add(key, v);
  for (wick_dtype t : {a->dtype, c->dtype}) key_add(key, t);
  MatmulPlan& plan = dnn.plan<MatmulPlan>(key, [&] {
    MatmulPlan p;
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(md3(*a3, a->dtype, batched), md3(*b3, b->dtype, batched),
                           md3(*c3, c->dtype, batched)),
        dnn.engine);
    if (is_reference(pd)) {
      p.dense = true;
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(md3(dense_3d(*a), a->dtype, batched),
                                                           md3(dense_3d(*b), b->dtype, batched),
                                                           md3(dense_3d(*c), c->dtype, batched)),
                                        dnn.engine);
    }
    p.primitive = dnnl::matmul(pd);
    return p;
  });
  if (plan.dense) {
    if (!is_dense(*a)) {
      pa.load(*a, a->dtype);
      a = &pa.desc;
    }
    if (!is_dense(*b)) {
      pb.load(*b, b->dtype);
      b = &pb.desc;
    }
    if (!is_dense(*c)) {
      pc.allocate(*c, c->dtype);
      c = &pc.desc;
    }
    a3 = dense_3d(*a);
    b3 = dense_3d(*b);
    c3 = dense_3d(*c);
  }
  dnnl::memory ma(md3(*a3, a->dtype, batched), dnn.engine, data_of(*a));
  dnnl::memory mb(md3(*b3, b->dtype, batched), dnn.engine, data_of(*b));
  dnnl::memory mc(md3(*c3, c->dtype, batched), dnn.engine, data_of(*c));
  plan.primitive.execute(dnn.stream(),
                         {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  dnn.stream().wait();
  if (c != &c_in) pc.store(c_in);
}

// x W^T for one row in f32: z[j * on] = sum_p x[p] * y[j * bn + p] for j < n. On the vector
// math's kernel where the ISA has one (AVX2, AVX-512: vector_math_kernels.inc); elsewhere four
// outputs at a time (four independent sums share each x load) in SSE2's 4 lanes. A small layer at
// batch 1 (an MLP's 256x128) spends most of its time here.
void dot_rows_f32(const float* x, const float* y, int64_t bn, float* z, int64_t on, int64_t n,
                  int64_t k) {
  if constexpr (vecmath::kAvailable) {
    if (const auto kernel = vecmath::active_kernels().dot_rows_f32)
      return kernel(x, y, bn, z, on, n, k);
  }
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float *y0 = y + j * bn, *y1 = y0 + bn, *y2 = y1 + bn, *y3 = y2 + bn;
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
#pragma omp simd reduction(+ : d0, d1, d2, d3)
    for (int64_t p = 0; p < k; ++p) {
      d0 += x[p] * y0[p];
      d1 += x[p] * y1[p];
      d2 += x[p] * y2[p];
      d3 += x[p] * y3[p];
    }
    z[j * on] = d0;
    z[(j + 1) * on] = d1;
    z[(j + 2) * on] = d2;
    z[(j + 3) * on] = d3;
  }
  for (; j < n; ++j) {
    const float* yc = y + j * bn;
    float d = 0;
#pragma omp simd reduction(+ : d)
    for (int64_t p = 0; p < k; ++p) d += x[p] * yc[p];
    z[j * on] = d;
  }
}

template <class T>
using LoopAcc = std::conditional_t<std::is_integral_v<T>, uint64_t,
                                   std::conditional_t<std::is_same_v<T, double>, double, float>>;

// out = a x b per batch element, row by row: acc[j] += a[i, p] * b[p, j] walks b along its rows,
// which the compiler vectorises when b's rows are contiguous; where b's columns are, dot products.
// Integers (and bool) accumulate in uint64_t, which wraps like the narrower type does.
template <class T>
void matmul_loop(const Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                 const wick_tensor_desc& out) {
  using A = LoopAcc<T>;
  const int nb = out.rank - 2;
  const int64_t m = out.shape[nb], n = out.shape[nb + 1], k = a.shape[nb + 1];
  const int64_t am = a.strides[nb], ak = a.strides[nb + 1];
  const int64_t bk = b.strides[nb], bn = b.strides[nb + 1];
  const int64_t om = out.strides[nb], on = out.strides[nb + 1];
  const T* pa = data_of<const T>(a);
  const T* pb = data_of<const T>(b);
  T* po = data_of<T>(out);
  // The element offsets of every batch element's three matrices.
  std::vector<std::array<int64_t, 3>> batches;
  sdk::for_each_row<3>(
      out.shape, nb, {out.strides, a.strides, b.strides}, [&](const sdk::Row<3>& r) {
        for (int64_t e = 0; e < r.length; ++e)
          batches.push_back({r.offset[0] + e * r.stride[0], r.offset[1] + e * r.stride[1],
                             r.offset[2] + e * r.stride[2]});
      });
  const int64_t rows = static_cast<int64_t>(batches.size()) * m;
  auto row = [&](int64_t r, std::vector<A>& acc) {
    const auto& off = batches[static_cast<size_t>(r / m)];
    const int64_t i = r % m;
    const T* x = pa + off[1] + i * am;
    const T* y = pb + off[2];
    T* z = po + off[0] + i * om;
    if (ak == 1 && bk == 1 && bn != 1) {
      // b's columns are contiguous (b a transposed weight, x W^T): one vectorised dot product per
      // output element. Walking b along its rows here strides by bn: 20x slower at 1x256 by
      // 256x128 (35 us against 1.6).
      if constexpr (std::is_same_v<T, float>) return dot_rows_f32(x, y, bn, z, on, n, k);
      for (int64_t j = 0; j < n; ++j) {
        const T* yc = y + j * bn;
        A dot = A(0);
#pragma omp simd reduction(+ : dot)
        for (int64_t p = 0; p < k; ++p) dot += static_cast<A>(x[p]) * static_cast<A>(yc[p]);
        z[j * on] = cast_value<T>(dot);
      }
      return;
    }
    std::fill(acc.begin(), acc.end(), A(0));
    A* s = acc.data();
    for (int64_t p = 0; p < k; ++p) {
      const A xv = static_cast<A>(x[p * ak]);
      const T* yr = y + p * bk;
      if (bn == 1) {
        for (int64_t j = 0; j < n; ++j) s[j] += xv * static_cast<A>(yr[j]);
      } else {
        for (int64_t j = 0; j < n; ++j) s[j] += xv * static_cast<A>(yr[j * bn]);
      }
    }
    for (int64_t j = 0; j < n; ++j) z[j * on] = cast_value<T>(s[j]);
  };
  const bool parallel = ctx.threads > 1 && rows > 1 && rows * n * k >= (int64_t(1) << 18);
  if (!parallel) {
    std::vector<A> acc(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) row(r, acc);
    return;
  }
#pragma omp parallel num_threads(ctx.threads)
  {
    std::vector<A> acc(static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(r, acc);
  }
}

wick_support matmul_supports(const wick_op_desc& op) {
  if (op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &c = op.outputs[0];
  if (a.dtype != c.dtype || b.dtype != c.dtype) return WICK_SUPPORT_NO_PARAMS;
  if (a.rank < 2 || a.rank != b.rank || a.rank != c.rank) return WICK_SUPPORT_NO_PARAMS;
  const int nb = c.rank - 2;
  for (int i = 0; i < nb; ++i)
    if (a.shape[i] != c.shape[i] || b.shape[i] != c.shape[i]) return WICK_SUPPORT_NO_PARAMS;
  if (a.shape[nb] != c.shape[nb] || b.shape[nb + 1] != c.shape[nb + 1] ||
      a.shape[nb + 1] != b.shape[nb])
    return WICK_SUPPORT_NO_PARAMS;
  return sdk::dtype_size(c.dtype) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

void run_matmul_as(Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                   const wick_tensor_desc& c, bool whole_op);

void matmul_execute(Context& ctx, const wick_op_desc& op) {
  run_matmul_as(ctx, op.inputs[0], op.inputs[1], op.outputs[0], true);
}

void run_matmul_as(Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                   const wick_tensor_desc& c, bool whole_op) {
  const int64_t total = numel_of(c);
  if (total == 0) return;
  const int64_t k = a.shape[a.rank - 1];
  if (k == 0) {  // empty inner dimension: the product is all zeros
    sdk::visit_dtype(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = data_of<T>(c);
      sdk::for_each_row<1>(c.shape, c.rank, {c.strides}, [&](const sdk::Row<1>& r) {
        for (int64_t i = 0; i < r.length; ++i)
          dst[r.offset[0] + i * r.stride[0]] = cast_value<T>(0);
      });
    });
    return;
  }
  const bool small = total * k <= kSmallMatmul;
  const bool onednn_type =
      c.dtype == WICK_DTYPE_F32 || c.dtype == WICK_DTYPE_BF16 || c.dtype == WICK_DTYPE_F16;
  if (!small && onednn_type) {
    if (ctx.onednn->runs(Context::Onednn::kMatmul, c.dtype))
      return matmul_onednn(ctx, a, b, c, whole_op);
    // f16, and bf16 where this CPU's oneDNN has no bf16 kernel: in f32, rounded once on store.
    Dense fa, fb, fc;
    fa.load(a, WICK_DTYPE_F32);
    fb.load(b, WICK_DTYPE_F32);
    fc.allocate(c, WICK_DTYPE_F32);
    matmul_onednn(ctx, fa.desc, fb.desc, fc.desc, false);
    fc.store(c);
    return;
  }
  if (!small && matmul_int(ctx, a, b, c)) return;
  sdk::visit_dtype(c.dtype,
                   [&](auto tag) { matmul_loop<typename decltype(tag)::type>(ctx, a, b, c); });
}

}  // namespace

void run_matmul(Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                const wick_tensor_desc& c) {
  run_matmul_as(ctx, a, b, c, false);
}

Kernel matmul_kernel(int op) {
  switch (op) {
    case WICK_OP_MATMUL: return {&matmul_execute, &matmul_supports};
    default: return {};
  }
}

}  // namespace wick::cpu
