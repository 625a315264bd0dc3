// matmul_int.cpp — MATMUL of the integer dtypes (i8 .. u64). Products and sums wrap in the output's
// width, so they are accumulated in unsigned 32-bit integers (64-bit for the 64-bit types): the
// same bits as the exact sum reduced modulo 2^width, and they vectorise (vpmulld). The operands
// are widened once into dense buffers (b once per batch element, in panels of 32 columns for the
// 32-bit kernel, which keeps each 4 x 32 block of the result in registers across the whole k);
// the 64-bit types run in tiles of kTileN columns of b against four rows of a at a time. Rows are
// split over the threads; the kernels are compiled for AVX2 and AVX-512 as well and picked when
// the plugin loads (target_clones).
#include "matmul.hpp"

#include "kernels.hpp"

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

// 32-bit products: a register-blocked kernel over b packed in panels of 32 columns
// (panel[p][0..32) = b[p, j0..j0+32)), each 4 x 32 block of the result kept in eight vectors of 16
// lanes across the whole k (GCC's vector extensions: zmm registers in the AVX-512 clone, pairs of
// ymm in the AVX2 one).
using V16 = uint32_t __attribute__((vector_size(64)));
constexpr int64_t kPanel = 32;

// (Loads and stores are memcpy in place: a helper returning a V16 would change the ABI between
// the clones.)
#define WICK_LOAD16(v, p) __builtin_memcpy(&(v), (p), sizeof(V16))
#define WICK_STORE16(p, v) __builtin_memcpy((p), &(v), sizeof(V16))

WICK_INT_CLONES void rows_u32(const uint32_t* x, const uint32_t* panels, uint32_t* z, int64_t i0,
                              int64_t i1, int64_t k, int64_t n) {
  const int64_t full = n / kPanel;
  for (int64_t jb = 0; jb < full; ++jb) {
    const uint32_t* panel = panels + jb * k * kPanel;
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) {
      V16 acc[4][2] = {};
      for (int64_t p = 0; p < k; ++p) {
        V16 y0, y1;
        WICK_LOAD16(y0, panel + p * kPanel);
        WICK_LOAD16(y1, panel + p * kPanel + 16);
        for (int r = 0; r < 4; ++r) {
          const uint32_t a = x[(i + r) * k + p];
          acc[r][0] += a * y0;
          acc[r][1] += a * y1;
        }
      }
      for (int r = 0; r < 4; ++r) {
        WICK_STORE16(z + (i + r) * n + jb * kPanel, acc[r][0]);
        WICK_STORE16(z + (i + r) * n + jb * kPanel + 16, acc[r][1]);
      }
    }
    for (; i < i1; ++i) {
      V16 acc0 = {}, acc1 = {};
      for (int64_t p = 0; p < k; ++p) {
        const uint32_t a = x[i * k + p];
        V16 y0, y1;
        WICK_LOAD16(y0, panel + p * kPanel);
        WICK_LOAD16(y1, panel + p * kPanel + 16);
        acc0 += a * y0;
        acc1 += a * y1;
      }
      WICK_STORE16(z + i * n + jb * kPanel, acc0);
      WICK_STORE16(z + i * n + jb * kPanel + 16, acc1);
    }
  }
  // The last columns (n % 32): b's own rows, from the unpacked copy after the panels.
  const int64_t j0 = full * kPanel;
  if (j0 < n) tile(x, panels + full * k * kPanel, z, i0, i1, j0, n, k, n);
}

WICK_INT_CLONES void rows_u64(const uint64_t* x, const uint64_t* y, uint64_t* z, int64_t i0,
                              int64_t i1, int64_t k, int64_t n) {
  for (int64_t j0 = 0; j0 < n; j0 += kTileN) tile(x, y, z, i0, i1, j0, std::min(n, j0 + kTileN), k, n);
}
inline void rows(const uint32_t* x, const uint32_t* y, uint32_t* z, int64_t i0, int64_t i1,
                 int64_t k, int64_t n) {
  rows_u32(x, y, z, i0, i1, k, n);
}
inline void rows(const uint64_t* x, const uint64_t* y, uint64_t* z, int64_t i0, int64_t i1,
                 int64_t k, int64_t n) {
  rows_u64(x, y, z, i0, i1, k, n);
}

// A [rows, cols] matrix of T at `base` with strides (rs, cs), widened into dense A.
template <class T, class A>
void widen(const T* base, int64_t rows, int64_t cols, int64_t rs, int64_t cs, A* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = static_cast<A>(base[r * rs + c * cs]);
}

// b [k, n] of T widened to u32 as rows_u32 reads it: full panels of kPanel columns, then b whole.
template <class T>
void pack_panels(const T* b, int64_t k, int64_t n, int64_t rs, int64_t cs, uint32_t* out) {
  const int64_t full = n / kPanel;
  for (int64_t jb = 0; jb < full; ++jb)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t c = 0; c < kPanel; ++c)
        out[(jb * k + p) * kPanel + c] = static_cast<uint32_t>(b[p * rs + (jb * kPanel + c) * cs]);
  if (full * kPanel < n) widen(b, k, n, rs, cs, out + full * k * kPanel);
}

template <class T>
void matmul_int_as(const Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                   const wick_tensor_desc& out) {
  using A = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
  const int nb = out.rank - 2;
  const int64_t m = out.shape[nb], n = out.shape[nb + 1], k = a.shape[nb + 1];
  const T* pa = data_of<const T>(a);
  const T* pb = data_of<const T>(b);
  T* po = data_of<T>(out);
  std::vector<std::array<int64_t, 3>> batches;
  sdk::for_each_row<3>(out.shape, nb, {out.strides, a.strides, b.strides}, [&](const sdk::Row<3>& r) {
    for (int64_t e = 0; e < r.length; ++e)
      batches.push_back({r.offset[0] + e * r.stride[0], r.offset[1] + e * r.stride[1],
                         r.offset[2] + e * r.stride[2]});
  });
  // u32: b as panels of kPanel columns, then (for the last n % kPanel columns) the whole of b
  // row-major, which tile() reads with b's row length n.
  const int64_t y_size = sizeof(A) == 4 ? (n / kPanel) * k * kPanel + k * n : k * n;
  std::vector<A> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(y_size)), z(static_cast<size_t>(m * n));
  const int64_t tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  const bool split = ctx.threads > 1 && tasks > 1;
  for (const auto& off : batches) {
    widen(pa + off[1], m, k, a.strides[nb], a.strides[nb + 1], x.data());
    if constexpr (sizeof(A) == 4) {
      pack_panels(pb + off[2], k, n, b.strides[nb], b.strides[nb + 1], y.data());
    } else {
      widen(pb + off[2], k, n, b.strides[nb], b.strides[nb + 1], y.data());
    }
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (split)
    for (int64_t t = 0; t < tasks; ++t)
      rows(x.data(), y.data(), z.data(), t * kRowsPerTask, std::min(m, (t + 1) * kRowsPerTask), k, n);
    T* o = po + off[0];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        o[i * out.strides[nb] + j * out.strides[nb + 1]] = static_cast<T>(z[static_cast<size_t>(i * n + j)]);
  }
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
