// matmul_int.cpp — MATMUL of the integer dtypes (i8 .. u64). Products and sums wrap in the output's
// width, so they are accumulated in unsigned lanes at least that wide — 16 bits for the 8- and
// 16-bit types (vpmullw), 32 for the 32-bit ones (vpmulld), 64 for the 64-bit ones: the same bits
// as the exact sum reduced modulo 2^width, and they vectorise. b is packed once per batch element
// into panels of two vectors' width (64 columns of 16-bit lanes, 32 of 32-bit ones), and each
// 4-row block of the result stays in registers across the whole k; the 64-bit types run in tiles
// of kTileN columns of b against four rows of a at a time. Widening, packing and the rows are
// split over the threads; 32-bit operands and results with unit column stride are read and written
// in place. The kernels are compiled for AVX2 and AVX-512 as well and picked when the plugin loads
// (target_clones).
#include "matmul.hpp"

#include "kernels.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace wick::cpu {

namespace {

constexpr int64_t kTileN = 256;
constexpr int64_t kRowsPerTask = 16;

#define WICK_INT_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))

// z[i0..i1, j0..j1] = x[i0..i1, :] y[:, j0..j1]; x [m, k], y [k, n], z [m, n] dense.
template <class A>
inline void tile(const A* __restrict x, const A* __restrict y, A* __restrict z, int64_t i0,
                 int64_t i1, int64_t j0, int64_t j1, int64_t k, int64_t n) {
  const int64_t w = j1 - j0;
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4) {
    A* __restrict z0 = z + i * n + j0;
    A* __restrict z1 = z0 + n;
    A* __restrict z2 = z1 + n;
    A* __restrict z3 = z2 + n;
    for (int64_t j = 0; j < w; ++j) z0[j] = z1[j] = z2[j] = z3[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const A a0 = x[i * k + p], a1 = x[(i + 1) * k + p], a2 = x[(i + 2) * k + p],
              a3 = x[(i + 3) * k + p];
      const A* __restrict yr = y + p * n + j0;
      for (int64_t j = 0; j < w; ++j) {
        const A v = yr[j];
        z0[j] += a0 * v;
        z1[j] += a1 * v;
        z2[j] += a2 * v;
        z3[j] += a3 * v;
      }
    }
  }
  for (; i < i1; ++i) {
    A* __restrict zr = z + i * n + j0;
    for (int64_t j = 0; j < w; ++j) zr[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const A a0 = x[i * k + p];
      const A* __restrict yr = y + p * n + j0;
      for (int64_t j = 0; j < w; ++j) zr[j] += a0 * yr[j];
    }
  }
}

// The narrow types (8 and 16 bits) need only the low 16 bits of each product and sum, so they
// accumulate in 16-bit lanes (vpmullw: twice the lanes of vpmulld, at the same cost); 32-bit types
// in 32-bit lanes. A register-blocked kernel over b packed in panels of two vectors' width
// (panel[p][0..W) = b[p, j0..j0+W)), each 4 x W block of the result kept in eight vectors across
// the whole k (GCC's vector extensions: zmm registers in the AVX-512 clones, pairs of ymm in the
// AVX2 ones).
template <class L>
struct Lanes;
template <>
struct Lanes<uint16_t> {
  using V = uint16_t __attribute__((vector_size(64)));
  static constexpr int64_t kLanes = 32, kPanel = 64;
};
template <>
struct Lanes<uint32_t> {
  using V = uint32_t __attribute__((vector_size(64)));
  static constexpr int64_t kLanes = 16, kPanel = 32;
};

// (Loads and stores are memcpy in place: a helper returning a vector would change the ABI between
// the clones.)
#define WICK_LOAD(v, p) __builtin_memcpy(&(v), (p), sizeof(v))
#define WICK_STORE(p, v) __builtin_memcpy((p), &(v), sizeof(v))

// Rows [i0, i1) of z [m, n] (row stride zs) from x [m, k] (row stride xs) and the panels. Inlined
// into each clone below, which compiles it for its ISA.
template <class L>
__attribute__((always_inline)) inline void panel_rows(const L* x, int64_t xs, const L* panels, L* z,
                                                      int64_t zs, int64_t i0, int64_t i1, int64_t k,
                                                      int64_t n) {
  using V = typename Lanes<L>::V;
  constexpr int64_t W = Lanes<L>::kPanel, H = Lanes<L>::kLanes;
  const int64_t full = n / W;
  for (int64_t jb = 0; jb < full; ++jb) {
    const L* panel = panels + jb * k * W;
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {
      V acc[4][2] = {};
      for (int64_t p = 0; p < k; ++p) {
        V y0, y1;
        WICK_LOAD(y0, panel + p * W);
        WICK_LOAD(y1, panel + p * W + H);
        for (int r = 0; r < 4; ++r) {
          const L a = x[(i + r) * xs + p];
          acc[r][0] += a * y0;
          acc[r][1] += a * y1;
        }
      }
      for (int r = 0; r < 4; ++r) {
        WICK_STORE(z + (i + r) * zs + jb * W, acc[r][0]);
        WICK_STORE(z + (i + r) * zs + jb * W + H, acc[r][1]);
      }
    }
    for (; i < i1; ++i) {
      V acc0 = {}, acc1 = {};
      for (int64_t p = 0; p < k; ++p) {
        const L a = x[i * xs + p];
        V y0, y1;
        WICK_LOAD(y0, panel + p * W);
        WICK_LOAD(y1, panel + p * W + H);
        acc0 += a * y0;
        acc1 += a * y1;
      }
      WICK_STORE(z + i * zs + jb * W, acc0);
      WICK_STORE(z + i * zs + jb * W + H, acc1);
    }
  }
  // The last columns (n % W): b's own rows, from the unpacked copy after the panels.
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = full * W; j < n; ++j) {
      unsigned sum = 0;  // (L is at most 32 bits: unsigned wraps where int would overflow)
      const L* tail = panels + full * k * W;
      for (int64_t p = 0; p < k; ++p) sum += unsigned{x[i * xs + p]} * unsigned{tail[p * n + j]};
      z[i * zs + j] = static_cast<L>(sum);
    }
}

WICK_INT_CLONES void rows_u32(const uint32_t* x, int64_t xs, const uint32_t* panels, uint32_t* z,
                              int64_t zs, int64_t i0, int64_t i1, int64_t k, int64_t n) {
  panel_rows(x, xs, panels, z, zs, i0, i1, k, n);
}
// 16-bit lanes: AVX-512BW for zmm registers (target_clones' avx512f clone would split them), so
// the clones are made by hand, each for its ISA, and picked once by the CPU (namespaces
// int_isa_avx*: tests/baseline_isa_test.sh allows their AVX registers).
using RowsU16 = void (*)(const uint16_t*, int64_t, const uint16_t*, uint16_t*, int64_t, int64_t,
                         int64_t, int64_t, int64_t);
namespace int_isa_avx512bw {
__attribute__((target("avx512f,avx512bw"))) void rows_u16(const uint16_t* x, int64_t xs, const uint16_t* panels,
                                                         uint16_t* z, int64_t zs, int64_t i0, int64_t i1,
                                                         int64_t k, int64_t n) {
  panel_rows(x, xs, panels, z, zs, i0, i1, k, n);
}
}  // namespace int_isa_avx512bw
namespace int_isa_avx2 {
__attribute__((target("avx2"))) void rows_u16(const uint16_t* x, int64_t xs, const uint16_t* panels, uint16_t* z,
                                              int64_t zs, int64_t i0, int64_t i1, int64_t k, int64_t n) {
  panel_rows(x, xs, panels, z, zs, i0, i1, k, n);
}
}  // namespace int_isa_avx2
void rows_u16_baseline(const uint16_t* x, int64_t xs, const uint16_t* panels, uint16_t* z, int64_t zs,
                       int64_t i0, int64_t i1, int64_t k, int64_t n) {
  panel_rows(x, xs, panels, z, zs, i0, i1, k, n);
}
void rows_u16(const uint16_t* x, int64_t xs, const uint16_t* panels, uint16_t* z, int64_t zs, int64_t i0,
              int64_t i1, int64_t k, int64_t n) {
  // The vector math's ISA: the CPU's, capped by ONEDNN_MAX_CPU_ISA, so that CI's capped passes
  // run the AVX2 and baseline rows too.
  static const RowsU16 picked = [] {
#ifdef WICK_CPU_VECTOR_MATH
    using vecmath::Isa;
    const Isa isa = vecmath::active_isa();
    __builtin_cpu_init();
    if (isa >= Isa::AVX512 && __builtin_cpu_supports("avx512bw")) return &int_isa_avx512bw::rows_u16;
    if (isa >= Isa::AVX2) return &int_isa_avx2::rows_u16;
#endif
    return &rows_u16_baseline;
  }();
  picked(x, xs, panels, z, zs, i0, i1, k, n);
}
WICK_INT_CLONES void rows_u64(const uint64_t* x, const uint64_t* y, uint64_t* z, int64_t i0,
                              int64_t i1, int64_t k, int64_t n) {
  for (int64_t j0 = 0; j0 < n; j0 += kTileN) tile(x, y, z, i0, i1, j0, std::min(n, j0 + kTileN), k, n);
}

// The accumulator of T: 16-bit lanes for 8- and 16-bit T, 32 for 32, 64 for 64 (products and
// sums wrap in the accumulator, whose low bits are T's).
template <class T>
using Acc = std::conditional_t<sizeof(T) <= 2, uint16_t,
                               std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;

// Rows [r0, r1) of a [rows, cols] matrix of T at `base` with strides (rs, cs), widened into the
// dense `out` (row stride cols).
template <class T, class A>
void widen_rows(const T* base, int64_t r0, int64_t r1, int64_t cols, int64_t rs, int64_t cs, A* out) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = static_cast<A>(base[r * rs + c * cs]);
}

// b [k, n] of T widened to A as panel_rows reads it: full panels of W columns, then b whole.
template <class T, class A>
void pack_panels(const T* b, int64_t k, int64_t n, int64_t rs, int64_t cs, A* out, int64_t jb) {
  constexpr int64_t W = Lanes<A>::kPanel;
  const int64_t full = n / W;
  if (jb == full) {
    widen_rows(b, 0, k, n, rs, cs, out + full * k * W);
    return;
  }
  for (int64_t p = 0; p < k; ++p)
    for (int64_t c = 0; c < W; ++c) out[(jb * k + p) * W + c] = static_cast<A>(b[p * rs + (jb * W + c) * cs]);
}

// One batch element, on the threads: x's rows widened (or read in place: 32-bit T with unit column
// stride), b packed into panels, the rows' results written (in place where the output's rows are
// dense 32-bit).
template <class T>
void matmul_one(const Context& ctx, const T* pa, const T* pb, T* po, const int64_t* as, const int64_t* bs,
                const int64_t* os, int64_t m, int64_t k, int64_t n, std::vector<Acc<T>>& x,
                std::vector<Acc<T>>& y, std::vector<Acc<T>>& z) {
  using A = Acc<T>;
  constexpr bool kSame = sizeof(A) == sizeof(T) && sizeof(A) < 8;  // read and written in place
  const bool x_in_place = kSame && as[1] == 1, z_in_place = kSame && os[1] == 1;
  const A* xp = x_in_place ? reinterpret_cast<const A*>(pa) : x.data();
  const int64_t xs = x_in_place ? as[0] : k;
  A* zp = z_in_place ? reinterpret_cast<A*>(po) : z.data();
  const int64_t zs = z_in_place ? os[0] : n;
  const int64_t tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  const bool split = ctx.threads > 1 && tasks > 1;
#pragma omp parallel num_threads(ctx.threads) if (split)
  {
    if (!x_in_place) {
#pragma omp for schedule(static)
      for (int64_t i = 0; i < m; ++i) widen_rows(pa, i, i + 1, k, as[0], as[1], x.data());
    }
    if constexpr (sizeof(A) < 8) {
      const int64_t panels = n / Lanes<A>::kPanel + 1;  // the full ones, then b whole
#pragma omp for schedule(static)
      for (int64_t jb = 0; jb < panels; ++jb) pack_panels(pb, k, n, bs[0], bs[1], y.data(), jb);
    } else {
#pragma omp for schedule(static)
      for (int64_t p = 0; p < k; ++p) widen_rows(pb, p, p + 1, n, bs[0], bs[1], y.data());
    }
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t i0 = t * kRowsPerTask, i1 = std::min(m, i0 + kRowsPerTask);
      if constexpr (sizeof(A) == 2) rows_u16(xp, xs, y.data(), zp, zs, i0, i1, k, n);
      else if constexpr (sizeof(A) == 4) rows_u32(xp, xs, y.data(), zp, zs, i0, i1, k, n);
      else rows_u64(xp, y.data(), zp, i0, i1, k, n);
      if (!z_in_place)
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < n; ++j) po[i * os[0] + j * os[1]] = static_cast<T>(z[static_cast<size_t>(i * n + j)]);
    }
  }
}

template <class T>
void matmul_int_as(const Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                   const wick_tensor_desc& out) {
  using A = Acc<T>;
  const int nb = out.rank - 2;
  const int64_t m = out.shape[nb], n = out.shape[nb + 1], k = a.shape[nb + 1];
  std::vector<std::array<int64_t, 3>> batches;
  sdk::for_each_row<3>(out.shape, nb, {out.strides, a.strides, b.strides}, [&](const sdk::Row<3>& r) {
    for (int64_t e = 0; e < r.length; ++e)
      batches.push_back({r.offset[0] + e * r.stride[0], r.offset[1] + e * r.stride[1],
                         r.offset[2] + e * r.stride[2]});
  });
  // 16 and 32 bits: b as panels, then (for the last n % W columns) the whole of b row-major.
  int64_t y_size = k * n;
  if constexpr (sizeof(A) < 8) y_size += (n / Lanes<A>::kPanel) * k * Lanes<A>::kPanel;
  std::vector<A> x, y(static_cast<size_t>(y_size)), z;
  constexpr bool kSame = sizeof(A) == sizeof(T) && sizeof(A) < 8;  // as matmul_one decides
  if (!kSame || a.strides[nb + 1] != 1) x.resize(static_cast<size_t>(m * k));
  if (!kSame || out.strides[nb + 1] != 1) z.resize(static_cast<size_t>(m * n));
  for (const auto& off : batches)
    matmul_one<T>(ctx, data_of<const T>(a) + off[1], data_of<const T>(b) + off[2], data_of<T>(out) + off[0],
                  a.strides + nb, b.strides + nb, out.strides + nb, m, k, n, x, y, z);
}

}  // namespace

bool matmul_int(const Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                const wick_tensor_desc& out) {
  switch (out.dtype) {
    case WICK_DTYPE_I8: matmul_int_as<int8_t>(ctx, a, b, out); return true;
    case WICK_DTYPE_U8: matmul_int_as<uint8_t>(ctx, a, b, out); return true;
    case WICK_DTYPE_I16: matmul_int_as<int16_t>(ctx, a, b, out); return true;
    case WICK_DTYPE_I32: matmul_int_as<int32_t>(ctx, a, b, out); return true;
    case WICK_DTYPE_U32: matmul_int_as<uint32_t>(ctx, a, b, out); return true;
    case WICK_DTYPE_I64: matmul_int_as<int64_t>(ctx, a, b, out); return true;
    case WICK_DTYPE_U64: matmul_int_as<uint64_t>(ctx, a, b, out); return true;
    default: return false;  // bool and the floats: not here
  }
}

}  // namespace wick::cpu
