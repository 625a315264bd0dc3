// The index kernel families of wick/gpu/kernels.hpp: sort_*, gather_* (index_select and
// gather_elements) and scatter_* (index_reduce and scatter_elements).
#include "generator.hpp"

#include <string>

namespace wick::gpu::detail {

// Sort along an axis, one work-group per line (stepping by the number of groups): the line is
// copied to the outputs with its positions, then a bitonic network over the next power of two p
// sorts (value, position) pairs in place. Every compare-exchange puts the earlier pair at the lower
// index; pairs beyond n count as after everything, so they never move and need no storage. Values
// are the input's elements bit for bit, compared in the compute type, NaN after every number
// ascending and before every number descending; equal values keep their order (stable).
void emit_sort(std::string& out, const TypeInfo& t, const char* index_type,
               const char* index_name) {
  const std::string C = t.compute, S = t.storage, IT = index_type;
  // Whether value u goes before value w (strictly).
  auto before = [&](const std::string& u, const std::string& w) {
    const std::string nu = isnan_of(t, u), nw = isnan_of(t, w);
    return "(desc ? (!" + nw + " && (" + nu + " || " + u + " > " + w + ")) : (!" + nu + " && (" +
           nw + " || " + u + " < " + w + ")))";
  };
  std::string k = "WK_KERNEL sort_" + std::string(t.name) + "_" + index_name + "(WK_G " + S +
                  "* vals, WK_G const " + S + "* x, WK_G " + IT +
                  "* idx, int desc, wk_i64 n, wk_i64 xs, wk_i64 vs, wk_i64 is, wk_args g) {\n";
  k += "  wk_i64 p = 1;\n  while (p < n) p <<= 1;\n"
       "  for (wk_i64 line = WK_GROUP; line < g.numel; line += WK_NGROUPS) {\n"
       "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&g, line, o);\n"
       "    WK_G " + S + "* v = vals + o[0];\n    WK_G " + IT + "* id = idx + o[2];\n"
       "    for (wk_i64 s = WK_LID; s < n; s += WK_LSIZE) {\n"
       "      v[s * vs] = x[o[1] + s * xs];\n      id[s * is] = (" + IT + ")s;\n    }\n"
       "    WK_BARRIER();\n"
       "    for (wk_i64 k = 2; k <= p; k <<= 1)\n      for (wk_i64 j = k >> 1; j > 0; j >>= 1) {\n"
       "        for (wk_i64 q = WK_LID; q < p / 2; q += WK_LSIZE) {\n"
       "          const wk_i64 r = q % j, i = j == k >> 1 ? q / j * k + r : q / j * 2 * j + r;\n"
       "          const wk_i64 l = j == k >> 1 ? q / j * k + k - 1 - r : i + j;\n"
       "          if (l >= n) continue;\n"
       "          const " + C + " a = " + load(t, "v", "i * vs") + ", b = " + load(t, "v", "l * vs") + ";\n"
       "          const wk_i64 ji = (wk_i64)id[i * is], jl = (wk_i64)id[l * is];\n"
       "          const int ab = " + before("a", "b") + ", ba = " + before("b", "a") + ";\n"
       "          if (ba || (!ab && jl < ji)) {\n"
       "            const " + S + " tv = v[i * vs];\n            v[i * vs] = v[l * vs];\n            v[l * vs] = tv;\n"
       "            id[i * is] = (" + IT + ")jl;\n            id[l * is] = (" + IT + ")ji;\n          }\n"
       "        }\n        WK_BARRIER();\n      }\n  }\n}\n";
  guarded(out, t, k);
}

// index_select and gather_elements move bits: one kernel per element size and index dtype.
void emit_gather(std::string& out, const char* bits, const char* it, const char* it_name) {
  const std::string T = std::string("wk_") + bits;
  out +=
      "WK_KERNEL gather_" + std::string(bits) + "_" + it_name + "(WK_G " + T +
      "* out, WK_G const " + T + "* x, WK_G const " + it +
      "* ids, WK_G wk_i64* err, wk_index g) {\n"
      "  wk_i64 numel = 1;\n  for (wk_i64 d = 0; d < g.rank; ++d) numel *= g.shape[d];\n"
      "  for (wk_i64 i = WK_GID; i < numel; i += WK_GSIZE) {\n"
      "    wk_i64 rest = i, o = g.off[0], xo = g.off[1], io = g.off[2];\n"
      "    for (wk_i64 d = g.rank - 1; d >= 0; --d) {\n      const wk_i64 q = rest % g.shape[d];\n"
      "      rest /= g.shape[d];\n      o += q * g.os[d];\n      xo += q * g.xs[d];\n      io += q "
      "* g.is[d];\n    }\n"
      "    const wk_i64 id = wk_resolve((wk_i64)ids[io], g.n, err);\n    if (id < 0) continue;\n"
      "    out[o] = x[xo + id * g.x_axis_stride];\n  }\n}\n";
}

// index_reduce and scatter_elements, one work-item per output element: out = x there, combined
// (set, add, mul, max, min) with every src element whose index points at it, in index order (so
// results are deterministic and equal the CPU plugin's sequential ones).
void emit_scatter(std::string& out, const TypeInfo& t, const char* it, const char* it_name) {
  const std::string C = t.compute, S = t.storage;
  std::string add, mul;
  if (t.dtype == WICK_DTYPE_BOOL) {
    add = "(wk_bool)(a || b)";
    mul = "(wk_bool)(a && b)";
  } else if (is_float(t.dtype)) {
    add = store(t, "(" + C + ")(" + to_compute(t, "a") + " + " + to_compute(t, "b") + ")");
    mul = store(t, "(" + C + ")(" + to_compute(t, "a") + " * " + to_compute(t, "b") + ")");
  } else {
    add = "(" + S + ")((wk_u64)(wk_i64)a + (wk_u64)(wk_i64)b)";
    mul = "(" + S + ")((wk_u64)(wk_i64)a * (wk_u64)(wk_i64)b)";
  }
  const std::string xa = to_compute(t, "a"), xb = to_compute(t, "b");
  const std::string nan_a = isnan_of(t, "ca"), nan_b = isnan_of(t, "cb");
  guarded(
      out, t,
      "WK_KERNEL scatter_" + std::string(t.name) + "_" + it_name + "(WK_G " + S +
          "* out, WK_G const " + S + "* x, WK_G const " + it + "* ids, WK_G const " + S +
          "* src, int mode, WK_G wk_i64* err, wk_index g) {\n"
          "  wk_i64 numel = 1;\n  for (wk_i64 d = 0; d < g.rank; ++d) numel *= g.shape[d];\n"
          "  for (wk_i64 i = WK_GID; i < numel; i += WK_GSIZE) {\n"
          "    wk_i64 rest = i, o = g.off[0], xo = g.off[1], io = g.off[2], so = g.off[3], at = "
          "0;\n    int inside = 1;\n"
          "    for (wk_i64 d = g.rank - 1; d >= 0; --d) {\n      const wk_i64 q = rest % "
          "g.shape[d];\n"
          "      rest /= g.shape[d];\n      o += q * g.os[d];\n      xo += q * g.xs[d];\n"
          "      if (d == g.axis) { at = q; continue; }\n      if (q >= g.limit[d]) inside = 0;\n"
          "      io += q * g.is[d];\n      so += q * g.ss[d];\n    }\n"
          "    " +
          S +
          " a = x[xo];\n    for (wk_i64 k = 0; inside && k < g.k_extent; ++k) {\n"
          "      const wk_i64 id = wk_resolve((wk_i64)ids[io + k * g.k_is], g.n, err);\n"
          "      if (id != at) continue;\n      const " +
          S +
          " b = src[so + k * g.k_ss];\n"
          "      const " +
          C + " ca = " + (is_float(t.dtype) ? xa : "(" + C + ")a") +
          ", cb = " + (is_float(t.dtype) ? xb : "(" + C + ")b") +
          ";\n"
          "      if (mode == 0) a = b;\n      else if (mode == 1) a = " +
          add + ";\n      else if (mode == 2) a = " + mul +
          ";\n"
          "      else if (!" +
          nan_a + " && (" + nan_b +
          " || (mode == 3 ? cb > ca : cb < ca))) a = b;\n    }\n"
          "    out[o] = a;\n  }\n}\n");
}

}  // namespace wick::gpu::detail
