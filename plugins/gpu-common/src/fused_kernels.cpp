// The fused kernel families of wick/gpu/kernels.hpp: softmax_* (and log_softmax), norm_*
// (layer_norm and rms_norm), batch_norm_* and attention_*.
#include "generator.hpp"

#include <string>

namespace wick::gpu::detail {

// softmax / log_softmax along an axis, one work-item per line, three passes in the compute type
// (max, NaN winning; the sum of exp(x - max); the outputs), as the CPU plugin's loop.
void emit_softmax(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute;
  const std::string v = load(t, "x", "o[1] + j * xs");
  guarded(out, t,
          "WK_KERNEL softmax_" + std::string(t.name) + "(WK_G " + t.storage + "* y, WK_G const " +
              t.storage +
              "* x, int log_, wk_i64 n, wk_i64 xs, wk_i64 ys, wk_args g) {\n  WK_FOR_EACH(g) {\n"
              "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&g, i, o);\n    " +
              C + " m = -(" + C +
              ")WK_INF_F;\n"
              "    for (wk_i64 j = 0; j < n; ++j) {\n      const " +
              C + " v = " + v +
              ";\n      if (v > m || v != v) m = v;\n    }\n"
              "    " +
              C + " sum = 0;\n    for (wk_i64 j = 0; j < n; ++j) sum += exp(" + v +
              " - m);\n"
              "    const " +
              C + " lse = log(sum), inv = (" + C +
              ")1 / sum;\n"
              "    for (wk_i64 j = 0; j < n; ++j) {\n      const " +
              C + " v = " + v +
              ";\n"
              "      y[o[0] + j * ys] = " +
              store(t, "log_ ? v - m - lse : exp(v - m) * inv") + ";\n    }\n  }\n}\n");
}

// layer_norm / rms_norm over the trailing axes (an inner geometry whose operands are x, y, weight,
// bias), one work-item per row: statistics in the widest float, two passes, then
// (x - mean) * rstd [* weight] [+ bias] in the compute type, as the CPU plugin's loop.
void emit_norm(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute;
  const std::string xv = "(" + C + ")" + load(t, "x", "o[1] + q[0]");
  guarded(out, t,
          "WK_KERNEL norm_" + std::string(t.name) + "(WK_G " + t.storage + "* y, WK_G const " +
              t.storage + "* x, WK_G const " + t.storage + "* w, WK_G const " + t.storage +
              "* b, int rms, int has_w, int has_b, wk_wide eps, wk_args inner, wk_args g) {\n  "
              "WK_FOR_EACH(g) {\n"
              "    wk_i64 o[WK_MAX_OPERANDS], q[WK_MAX_OPERANDS];\n    wk_offsets(&g, i, o);\n"
              "    wk_wide mean = 0, var = 0;\n    if (!rms) {\n      for (wk_i64 j = 0; j < "
              "inner.numel; ++j) {\n"
              "        wk_offsets(&inner, j, q);\n        mean += (wk_wide)" +
              xv +
              ";\n      }\n"
              "      mean /= (wk_wide)inner.numel;\n    }\n    for (wk_i64 j = 0; j < inner.numel; "
              "++j) {\n"
              "      wk_offsets(&inner, j, q);\n      const wk_wide d = (wk_wide)" +
              xv +
              " - mean;\n      var += d * d;\n    }\n"
              "    var /= (wk_wide)inner.numel;\n    const " +
              C + " rstd = (" + C +
              ")((wk_wide)1 / sqrt(var + eps));\n"
              "    const " +
              C + " mu = (" + C +
              ")mean;\n    for (wk_i64 j = 0; j < inner.numel; ++j) {\n"
              "      wk_offsets(&inner, j, q);\n      " +
              C + " v = (" + xv +
              " - mu) * rstd;\n"
              "      if (has_w) v *= " +
              load(t, "w", "q[2]") + ";\n      if (has_b) v += " + load(t, "b", "q[3]") +
              ";\n"
              "      y[o[0] + q[1]] = " +
              store(t, "v") + ";\n    }\n  }\n}\n");
}

// Batch norm (inference), elementwise over x with the channel (i / inner) % channels of the C-order
// index: (x - mean) * a + b, a = weight / sqrt(var + eps) in the widest float, as the CPU plugin.
void emit_batch_norm(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute, S = t.storage;
  auto vec = [&](const char* p, const char* k) {
    return "(wk_wide)" + load(t, p, std::string("c * s[") + k + "] + off[" + k + "]");
  };
  guarded(out, t,
          "WK_KERNEL batch_norm_" + std::string(t.name) + "(WK_G " + S + "* y, WK_G const " + S +
              "* x, WK_G const " + S + "* mean, WK_G const " + S + "* var, WK_G const " + S +
              "* w, WK_G const " + S +
              "* b, wk_wide eps, wk_i64 inner, wk_i64 channels, wk_args s4, wk_args a) {\n"
              "  const wk_i64* s = s4.strides[0];\n  const wk_i64* off = s4.offsets;\n  "
              "WK_FOR_EACH(a) {\n"
              "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n    const wk_i64 c = (i "
              "/ inner) % channels;\n"
              "    const " +
              C + " m = (" + C + ")" + vec("mean", "0") +
              ";\n"
              "    const " +
              C + " sc = (" + C + ")(" + vec("w", "2") + " / sqrt(" + vec("var", "1") +
              " + eps));\n"
              "    const " +
              C + " sh = (" + C + ")" + vec("b", "3") +
              ";\n"
              "    y[o[0]] = " +
              store(t, std::string("(") + load(t, "x", "o[1]") + " - m) * sc + sh") + ";\n  }\n}\n");
}

// Attention, one work-item per query row: the scores q k^T * scale (+ mask, -inf above the diagonal
// when causal) in a private array of at most kMaxAttentionKeys, the CPU plugin's row softmax, then
// the row times v; all in the compute type.
void emit_attention(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute, S = t.storage;
  std::string k = "WK_KERNEL attention_" + std::string(t.name) + "(WK_G " + S + "* o, WK_G const " +
                  S + "* q, ";
  k += "WK_G const " + S + "* kk, WK_G const " + S + "* v, WK_G const " + S +
       "* mask, int has_mask, int causal, ";
  k += C +
       " scale, wk_i64 L, wk_i64 Skeys, wk_i64 E, wk_i64 Ev, wk_i64 qe, wk_i64 ks, wk_i64 ke, "
       "wk_i64 vs, ";
  k += "wk_i64 ve, wk_i64 oe, wk_i64 ms, wk_args g, wk_args gm) {\n";
  k += "  " + C + " sc[" + std::to_string(gpu::kMaxAttentionKeys) + "];\n";
  k += R"(  WK_FOR_EACH(g) {
    wk_i64 o4[WK_MAX_OPERANDS], m4[WK_MAX_OPERANDS];
    wk_offsets(&g, i, o4);
    wk_offsets(&gm, i, m4);
    const wk_i64 row = i % L;
)";
  k += "    " + C + " m = -(" + C + ")WK_INF_F;\n";
  k += "    for (wk_i64 j = 0; j < Skeys; ++j) {\n      " + C + " d = 0;\n";
  k += "      for (wk_i64 e = 0; e < E; ++e) d += " + load(t, "q", "o4[1] + e * qe") + " * " +
       load(t, "kk", "o4[2] + j * ks + e * ke") + ";\n";
  k += "      " + C + " val = d * scale;\n";
  k += "      if (has_mask) val += " + load(t, "mask", "m4[0] + j * ms") + ";\n";
  k += "      if (causal && j > row) val = -(" + C + ")WK_INF_F;\n";
  k += "      sc[j] = val;\n      if (val > m || val != val) m = val;\n    }\n";
  // Every score -inf (a fully masked row; NaN would have won the max): weights exp(-inf) = 0,
  // sum 0, and an output row of 0 (the flash-attention convention), never 0 / 0.
  k += "    if (m == -(" + C + ")WK_INF_F) m = 0;\n";
  k += "    " + C +
       " sum = 0;\n    for (wk_i64 j = 0; j < Skeys; ++j) {\n      sc[j] = exp(sc[j] - m);\n";
  k += "      sum += sc[j];\n    }\n    const " + C + " inv = sum == (" + C + ")0 ? (" + C +
       ")0 : (" + C + ")1 / sum;\n";
  k += "    for (wk_i64 c = 0; c < Ev; ++c) {\n      " + C + " acc = 0;\n";
  k += "      for (wk_i64 j = 0; j < Skeys; ++j) acc += (sc[j] * inv) * " +
       load(t, "v", "o4[3] + j * vs + c * ve") + ";\n";
  k += "      o[o4[0] + c * oe] = " + store(t, "acc") + ";\n    }\n  }\n}\n";
  guarded(out, t, k);
}

}  // namespace wick::gpu::detail
