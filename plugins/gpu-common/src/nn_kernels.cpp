// The nn kernel families of wick/gpu/kernels.hpp: matmul_*, window_* and window_scatter_*,
// conv_* and im2col_* (convolution as GEMM).
#include "generator.hpp"

#include <string>

namespace wick::gpu::detail {

// Matmul, register-tiled: work-item (x, y) of batch z computes rows m0 .. m0 + WK_MM_RM and columns
// n0 .. n0 + WK_MM_RN of the output from the views' strides (transposed and broadcast views need no
// copy). f32 tiles that are whole, with contiguous rows of rhs and out, run as 16-float vectors
// (broadcast a lhs element, multiply-add a row of rhs); the rest elementwise. Floats accumulate in
// their compute type (f32 for 16-bit floats), integers and bool in 64 bits, wrapping (as the CPU
// plugin does).
void emit_matmul(std::string& out, const TypeInfo& t) {
  const bool f = is_float(t.dtype);
  const std::string acc = f ? t.compute : "wk_u64", S = t.storage;
  const std::string x = "(" + acc + ")" +
                        (f ? load(t, "a", "r * xm + k * xk")
                           : std::string("(") + t.unsigned_of + ")a[r * xm + k * xk]");
  const std::string y = "(" + acc + ")" +
                        (f ? load(t, "b", "k * yk + j * yn")
                           : std::string("(") + t.unsigned_of + ")b[k * yk + j * yn]");
  const std::string result = t.dtype == WICK_DTYPE_BOOL ? "(wk_bool)(acc[r][j] != 0)"
                             : f                        ? store(t, "acc[r][j]")
                                                        : "(" + S + ")acc[r][j]";
  std::string vector_path;
  if (t.dtype == WICK_DTYPE_F32)
    vector_path =
        "    if (m0 + WK_MM_RM <= M && n0 + WK_MM_RN <= N && yn == 1 && on == 1) {\n"
        "      wk_f32x16 v[WK_MM_RM];\n"
        "      for (int r = 0; r < WK_MM_RM; ++r) v[r] = WK_X16_ZERO;\n"
        "      for (wk_i64 k = 0; k < K; ++k) {\n"
        "        const wk_f32x16 row = WK_X16_LOAD(b + k * yk);\n"
        "        for (int r = 0; r < WK_MM_RM; ++r) v[r] = WK_X16_FMA(a[r * xm + k * xk], row, v[r]);\n"
        "      }\n"
        "      for (int r = 0; r < WK_MM_RM; ++r) WK_X16_STORE(v[r], c + r * om);\n"
        "      continue;\n    }\n";
  std::string body = "WK_KERNEL matmul_" + std::string(t.name) + "(WK_G " + S + "* out, WK_G const " +
                     S + "* x, WK_G const " + S + "* y, wk_i64 M, wk_i64 N, wk_i64 K, wk_i64 xm, ";
  body +=
      "wk_i64 xk, wk_i64 yk, wk_i64 yn, wk_i64 om, wk_i64 on, wk_args batch) {\n"
      "  const wk_i64 m0 = WK_GID_Y * WK_MM_RM, n0 = WK_GID * WK_MM_RN;\n"
      "  if (m0 >= M || n0 >= N) return;\n"
      "  const int rows = M - m0 < WK_MM_RM ? (int)(M - m0) : WK_MM_RM;\n"
      "  const int cols = N - n0 < WK_MM_RN ? (int)(N - n0) : WK_MM_RN;\n"
      "  for (wk_i64 z = WK_GID_Z; z < batch.numel; z += WK_GSIZE_Z) {\n"
      "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&batch, z, o);\n"
      "    WK_G " + S + "* c = out + o[0] + m0 * om + n0 * on;\n"
      "    WK_G const " + S + "* a = x + o[1] + m0 * xm;\n"
      "    WK_G const " + S + "* b = y + o[2] + n0 * yn;\n";
  body += vector_path;
  body += "    " + acc + " acc[WK_MM_RM][WK_MM_RN];\n"
          "    for (int r = 0; r < rows; ++r)\n      for (int j = 0; j < cols; ++j) acc[r][j] = 0;\n"
          "    for (wk_i64 k = 0; k < K; ++k)\n      for (int r = 0; r < rows; ++r) {\n"
          "        const " + acc + " s = " + x + ";\n"
          "        for (int j = 0; j < cols; ++j) acc[r][j] += s * " + y + ";\n      }\n"
          "    for (int r = 0; r < rows; ++r)\n"
          "      for (int j = 0; j < cols; ++j) c[r * om + j * on] = " + result + ";\n  }\n}\n";
  guarded(out, t, body);
}

// Window reductions, one work-item per output element: the taps in odometer order (last axis
// fastest, as the CPU plugin walks them), padded positions skipped (they hold the identity). Sums
// and products of integers wrap in 64 bits; floats accumulate in the compute type.
void emit_window(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute, acc = is_float(t.dtype) ? C : "wk_u64";
  const std::string enter = is_float(t.dtype) ? "v" : "(wk_u64)(wk_i64)v";
  const std::string sum = std::to_string(WICK_OP_WINDOW_SUM),
                    prod = std::to_string(WICK_OP_WINDOW_PROD),
                    max = std::to_string(WICK_OP_WINDOW_MAX);
  guarded(
      out, t,
      "WK_KERNEL window_" + std::string(t.name) + "(WK_G " + t.storage + "* y, WK_G const " +
          t.storage +
          "* x, int op, wk_window w, wk_i64 xoff, wk_i64 yoff, wk_i64 numel) {\n"
          "  for (wk_i64 i = WK_GID; i < numel; i += WK_GSIZE) {\n    wk_i64 pos[WK_MAX_RANK];\n"
          "    wk_i64 rest = i, yo = yoff;\n    for (wk_i64 d = w.rank - 1; d >= 0; --d) {\n"
          "      pos[d] = rest % w.out[d];\n      rest /= w.out[d];\n      yo += pos[d] * "
          "w.ys[d];\n    }\n"
          "    const int arith = op == " +
          sum + " || op == " + prod +
          ";\n"
          "    " +
          acc + " s = op == " + prod + " ? (" + acc + ")1 : (" + acc +
          ")0;\n"
          "    " +
          C + " m = op == " + max + " ? " + lowest(t) + " : " + highest(t) +
          ";\n"
          "    for (wk_i64 tap = 0; tap < w.taps; ++tap) {\n      wk_i64 tr = tap, xo = xoff;\n    "
          "  int real = 1;\n"
          "      for (wk_i64 d = w.rank - 1; d >= 0; --d) {\n        const wk_i64 k = tr % "
          "w.win[d];\n"
          "        tr /= w.win[d];\n        const wk_i64 at = pos[d] * w.stride[d] - w.lo[d] + k * "
          "w.dil[d];\n"
          "        if (at < 0 || at >= w.in[d]) real = 0;\n        xo += at * w.xs[d];\n      }\n"
          "      if (!real) continue;\n      const " +
          C + " v = " + load(t, "x", "xo") +
          ";\n"
          "      if (arith) s = op == " +
          sum + " ? s + " + enter + " : s * " + enter +
          ";\n"
          "      else if (op == " +
          max +
          " ? (v > m || v != v) : (v < m || v != v)) m = v;\n    }\n"
          "    y[yo] = arith ? " +
          (is_float(t.dtype) ? store(t, "s") : std::string("(") + t.storage + ")s") + " : " +
          store(t, "m") + ";\n  }\n}\n");
}

// im2col for convolution as GEMM: col[nl][grp][c][tap][p] (contiguous) = the input element tap
// `tap` of channel c of group grp reads for output position p of batch item n0 + nl, or 0 in
// padding and between input-dilation holes. One work-item per row (nl, grp, c, tap) walks the
// output positions with an odometer (no division per element). The host then multiplies the
// weights [og, cg * taps] by each [cg * taps, P] block with matmul_<dt>.
void emit_im2col(std::string& out, const TypeInfo& t) {
  std::string k = "WK_KERNEL im2col_" + std::string(t.name) + "(WK_G " + t.storage +
                  "* col, WK_G const " + t.storage + "* x, wk_i64 n0, wk_i64 nc, wk_conv g) {\n";
  k += "  wk_i64 p_extent = 1;\n  for (wk_i64 d = 0; d < g.r; ++d) p_extent *= g.out[d];\n"
       "  const wk_i64 groups = g.o / g.og, rows = nc * groups * g.cg * g.taps;\n"
       "  for (wk_i64 row = WK_GID; row < rows; row += WK_GSIZE) {\n"
       "    wk_i64 rest = row, tap = rest % g.taps;\n    rest /= g.taps;\n"
       "    const wk_i64 c = rest % g.cg;\n    rest /= g.cg;\n"
       "    const wk_i64 grp = rest % groups, nl = rest / groups;\n"
       "    const wk_i64 xo = g.xoff + (n0 + nl) * g.xs[0] + (grp * g.cg + c) * g.xs[1];\n"
       "    wk_i64 first[WK_MAX_RANK], pos[WK_MAX_RANK];  /* per axis: v at position 0, the counter */\n"
       "    for (wk_i64 d = g.r - 1; d >= 0; --d) {\n"
       "      first[d] = (tap % g.k[d]) * g.dil[d] - g.lo[d];\n      tap /= g.k[d];\n      pos[d] = 0;\n    }\n"
       "    WK_G " + std::string(t.storage) + "* line = col + row * p_extent;\n"
       "    for (wk_i64 p = 0; p < p_extent; ++p) {\n"
       "      wk_i64 at = xo;\n      int real = 1;\n"
       "      for (wk_i64 d = 0; d < g.r; ++d) {\n"
       "        wk_i64 v = first[d] + pos[d] * g.stride[d];\n"
       "        if (g.idil[d] != 1) {  /* transposed: only multiples of the input dilation are real */\n"
       "          if (v % g.idil[d] != 0) real = 0;\n          v /= g.idil[d];\n        }\n"
       "        if (v < 0 || v >= g.in[d]) real = 0;\n"
       "        at += v * g.xs[2 + d];\n      }\n"
       "      line[p] = real ? x[at] : (" + std::string(t.storage) + ")0;\n"
       "      for (wk_i64 d = g.r - 1; d >= 0 && ++pos[d] == g.out[d]; --d) pos[d] = 0;\n"
       "    }\n  }\n}\n";
  guarded(out, t, k);
}

// Convolution, one work-item per output element: the taps in odometer order, then the group's
// channels, taps in padding or between input-dilation holes skipped; floats accumulate in the
// widest float, integers in 64 bits wrapping (as the CPU plugin's reference loop).
void emit_conv(std::string& out, const TypeInfo& t) {
  const bool f = is_float(t.dtype);
  const std::string acc = f ? "wk_wide" : "wk_u64";
  const std::string xv =
      f ? "(wk_wide)" + load(t, "x", "xo + c * g.xs[1]") : "(wk_u64)(wk_i64)x[xo + c * g.xs[1]]";
  const std::string wv =
      f ? "(wk_wide)" + load(t, "w", "wo + c * g.ws[1]") : "(wk_u64)(wk_i64)w[wo + c * g.ws[1]]";
  const std::string result =
      f ? store(t, std::string("(") + t.compute + ")acc") : std::string("(") + t.storage + ")acc";
  guarded(
      out, t,
      "WK_KERNEL conv_" + std::string(t.name) + "(WK_G " + t.storage + "* y, WK_G const " +
          t.storage + "* x, WK_G const " + t.storage +
          "* w, wk_conv g) {\n  wk_i64 numel = g.n * g.o;\n"
          "  for (wk_i64 d = 0; d < g.r; ++d) numel *= g.out[d];\n"
          "  for (wk_i64 i = WK_GID; i < numel; i += WK_GSIZE) {\n    wk_i64 pos[WK_MAX_RANK];\n   "
          " wk_i64 rest = i;\n"
          "    for (wk_i64 d = g.r - 1; d >= 0; --d) {\n      pos[d] = rest % g.out[d];\n      "
          "rest /= g.out[d];\n    }\n"
          "    const wk_i64 o = rest % g.o, n = rest / g.o, grp = o / g.og;\n    " +
          acc +
          " acc = 0;\n"
          "    for (wk_i64 tap = 0; tap < g.taps; ++tap) {\n"
          "      wk_i64 tr = tap, xo = g.xoff + n * g.xs[0] + grp * g.cg * g.xs[1], wo = g.woff + "
          "o * g.ws[0];\n"
          "      int real = 1;\n      for (wk_i64 d = g.r - 1; d >= 0; --d) {\n        const "
          "wk_i64 k = tr % g.k[d];\n"
          "        tr /= g.k[d];\n        const wk_i64 v = pos[d] * g.stride[d] - g.lo[d] + k * "
          "g.dil[d];\n"
          "        if (v < 0 || v % g.idil[d] != 0 || v / g.idil[d] >= g.in[d]) real = 0;\n"
          "        xo += (v / g.idil[d]) * g.xs[2 + d];\n        wo += k * g.ws[2 + d];\n      }\n"
          "      if (!real) continue;\n      for (wk_i64 c = 0; c < g.cg; ++c) acc += " +
          xv + " * " + wv +
          ";\n    }\n"
          "    wk_i64 yo = g.yoff + n * g.ys[0] + o * g.ys[1];\n    for (wk_i64 d = 0; d < g.r; "
          "++d) yo += pos[d] * g.ys[2 + d];\n"
          "    y[yo] = " +
          result + ";\n  }\n}\n");
}

// Window scatter (the gradient of max/min pooling), one work-item per operand position q: init,
// plus every source value whose window selects q (the first maximum / minimum, NaN winning), over
// the windows that can contain q in odometer order; floats accumulate in the widest float.
void emit_window_scatter(std::string& out, const TypeInfo& t) {
  const bool f = is_float(t.dtype);
  const std::string C = t.compute, acc = f ? "wk_wide" : "wk_u64", S = t.storage;
  const std::string sv = f ? "(wk_wide)" + load(t, "src", "so") : "(wk_u64)(wk_i64)src[so]";
  const std::string result = f ? store(t, "(" + C + ")acc") : "(" + S + ")acc";
  std::string k = "WK_KERNEL window_scatter_" + std::string(t.name) + "(WK_G " + S +
                  "* y, WK_G const " + S + "* x, ";
  k += "WK_G const " + S + "* src, int max, " + acc +
       " init, wk_window w, wk_args yg, wk_i64 xoff, wk_i64 soff, ";
  k += "wk_i64 numel) {\n";
  k += R"(  for (wk_i64 i = WK_GID; i < numel; i += WK_GSIZE) {
    wk_i64 q[WK_MAX_RANK], first[WK_MAX_RANK], count[WK_MAX_RANK];
    wk_i64 rest = i, yo = yg.offsets[0], boxes = 1;
    for (wk_i64 d = w.rank - 1; d >= 0; --d) {
      q[d] = rest % w.in[d];
      rest /= w.in[d];
      yo += q[d] * yg.strides[0][d];
      const wk_i64 top = q[d] + w.lo[d];
      wk_i64 a = top - (w.win[d] - 1) * w.dil[d];
      a = a <= 0 ? 0 : (a + w.stride[d] - 1) / w.stride[d];
      wk_i64 b = top < 0 ? -1 : top / w.stride[d];
      if (b > w.out[d] - 1) b = w.out[d] - 1;
      first[d] = a;
      count[d] = b >= a ? b - a + 1 : 0;
      boxes *= count[d];
    }
)";
  k += "    " + acc + " acc = init;\n";
  k += R"(    for (wk_i64 bx = 0; bx < boxes; ++bx) {
      wk_i64 s[WK_MAX_RANK];
      wk_i64 br = bx, so = soff;
      int covers = 1;
      for (wk_i64 d = w.rank - 1; d >= 0; --d) {
        s[d] = first[d] + br % count[d];
        br /= count[d];
        so += s[d] * w.ys[d];
        if ((q[d] + w.lo[d] - s[d] * w.stride[d]) % w.dil[d] != 0) covers = 0;
      }
      if (!covers) continue;
      wk_i64 best = -1;
)";
  k += "      " + C + " bv = 0;\n";
  k += R"(      for (wk_i64 tap = 0; tap < w.taps; ++tap) {
        /* xo: the tap's element in x; flat: its C-order index over x's extents (to compare with q) */
        wk_i64 tr = tap, xo = xoff, flat = 0, place = 1;
        int real = 1;
        for (wk_i64 d = w.rank - 1; d >= 0; --d) {
          const wk_i64 kk = tr % w.win[d];
          tr /= w.win[d];
          const wk_i64 at = s[d] * w.stride[d] - w.lo[d] + kk * w.dil[d];
          if (at < 0 || at >= w.in[d]) real = 0;
          xo += at * w.xs[d];
          flat += at * place;
          place *= w.in[d];
        }
        if (!real) continue;
)";
  k += "        const " + C + " v = " + load(t, "x", "xo") + ";\n";
  k += R"(        const int better = max ? v > bv : v < bv;
        if (best < 0 || better || (v != v && bv == bv)) {
          best = flat;
          bv = v;
        }
      }
      wk_i64 qflat = 0;
      for (wk_i64 d = 0; d < w.rank; ++d) qflat = qflat * w.in[d] + q[d];
)";
  k += "      if (best == qflat) acc += " + sv + ";\n    }\n    y[yo] = " + result + ";\n  }\n}\n";
  guarded(out, t, k);
}

}  // namespace wick::gpu::detail
