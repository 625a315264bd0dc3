// The reduction kernel families of wick/gpu/kernels.hpp: reduce_* (and the two passes
// reduce_part_*, reduce_final_*), scan_* and arg_*.
#include "generator.hpp"

#include <string>

namespace wick::gpu::detail {

// ---- reductions, scans, arg-reductions: one work-item per output (or line), sequential in it, or
// (reductions with few outputs) two passes of fixed trees; results are deterministic (no atomics). Sums and products accumulate in the widest float or in
// 64 bits wrapping; max and min in the compute type, where NaN wins and stays (as the CPU plugin).

namespace {

// The accumulator of sums and products.
std::string sum_acc(const TypeInfo& t) {
  return is_float(t.dtype) ? "wk_wide" : "wk_u64";
}
std::string enter_sum(const TypeInfo& t, const std::string& v) {
  return is_float(t.dtype) ? "(wk_wide)" + v : "(wk_u64)(wk_i64)" + v;
}
// A value of the accumulator stored to the output type o.
std::string store_acc(const TypeInfo& o, const std::string& acc) {
  // Built step by step: GCC 12's -Wrestrict misfires on the one-expression form when inlined.
  std::string cast = "(";
  cast += is_float(o.dtype) ? o.compute : o.storage;
  cast += ")";
  cast += acc;
  return is_float(o.dtype) ? store(o, cast) : cast;
}

// The dtype sums and products of t write when widened (docs/ops.md).
wick_dtype widened(wick_dtype t) {
  return sdk::widened_dtype(t);
}

// Loop bodies shared by reductions (over an inner geometry) and scans (along one axis): `init`,
// then `step` for each element `v` of the line.
struct Fold {
  std::string decl, step, result;
};
Fold fold(const TypeInfo& t, const TypeInfo& o, bool sum_like, const std::string& v) {
  const std::string C = t.compute;
  if (sum_like)
    return {sum_acc(t) + " acc = op == " + std::to_string(WICK_OP_REDUCE_SUM) +
                " || op == " + std::to_string(WICK_OP_CUMSUM) + " ? (" + sum_acc(t) + ")0 : (" +
                sum_acc(t) + ")1;",
            "acc = (op == " + std::to_string(WICK_OP_REDUCE_SUM) +
                " || op == " + std::to_string(WICK_OP_CUMSUM) + ") ? acc + " + enter_sum(t, v) +
                " : acc * " + enter_sum(t, v) + ";",
            store_acc(o, "acc")};
  const std::string max = "(op == " + std::to_string(WICK_OP_REDUCE_MAX) +
                          " || op == " + std::to_string(WICK_OP_CUMMAX) + ")";
  return {C + " acc = " + max + " ? " + lowest(t) + " : " + highest(t) + ";",
          "if (" + isnan_of(t, v) + " || (" + max + " ? " + v + " > acc : " + v +
              " < acc)) acc = " + v + ";",
          store(o, "acc")};
}

void emit_reduce(std::string& out, const TypeInfo& t, const TypeInfo& o, bool sum_like) {
  const Fold f = fold(t, o, sum_like, "v");
  guarded(out, t,
          "WK_KERNEL reduce_" + std::string(t.name) + "_" + o.name + (sum_like ? "" : "_ext") +
              "(WK_G " + o.storage + "* out, WK_G const " + t.storage +
              "* x, int op, wk_args inner, wk_args a) {\n  WK_FOR_EACH(a) {\n"
              "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n    " +
              f.decl +
              "\n"
              "    for (wk_i64 j = 0; j < inner.numel; ++j) {\n      wk_i64 q[WK_MAX_OPERANDS];\n"
              "      wk_offsets(&inner, j, q);\n      const " +
              t.compute + " v = " + load(t, "x", "o[1] + q[0]") +
              ";\n"
              "      " +
              f.step + "\n    }\n    out[o[0]] = " + f.result + ";\n  }\n}\n");
}

// The two passes of a reduction with few outputs and a long inner loop. Pass 1: work-group
// (g, r) folds the inner elements g * WK_RED_GROUP + lid, stepping by parts * WK_RED_GROUP, of
// output r, then a tree in local memory leaves partial[r * parts + g]. Pass 2: work-group r folds
// its output's partials by the same tree and stores the result. The partition and the tree are
// fixed, so the result does not depend on scheduling.
void emit_reduce_two_pass(std::string& out, const TypeInfo& t, const TypeInfo& o, bool sum_like) {
  const Fold f = fold(t, o, sum_like, "v");
  const std::string acc_t = sum_like ? sum_acc(t) : std::string(t.compute);
  const std::string suffix = std::string(t.name) + "_" + o.name + (sum_like ? "" : "_ext");
  // The tree over tree[0 .. WK_RED_GROUP): after it, tree[0] holds the fold of all.
  const std::string tree =
      "  tree[WK_LID] = acc;\n  WK_BARRIER();\n"
      "  for (wk_i64 s = WK_RED_GROUP / 2; s > 0; s >>= 1) {\n"
      "    if (WK_LID < s) {\n      const " + acc_t + " v = tree[WK_LID + s];\n      acc = tree[WK_LID];\n"
      "      " + f.step + "\n      tree[WK_LID] = acc;\n    }\n    WK_BARRIER();\n  }\n";
  std::string pass1 = "WK_KERNEL reduce_part_" + suffix + "(WK_G " + acc_t + "* part, WK_G const " +
                      t.storage + "* x, int op, wk_i64 parts, wk_args inner, wk_args a) {\n";
  pass1 += "  WK_LOCAL " + acc_t + " tree[WK_RED_GROUP];\n  wk_i64 o[WK_MAX_OPERANDS];\n"
           "  wk_offsets(&a, WK_GROUP_Y, o);\n  " + f.decl + "\n"
           "  for (wk_i64 j = WK_GROUP * WK_RED_GROUP + WK_LID; j < inner.numel; j += parts * WK_RED_GROUP) {\n"
           "    wk_i64 q[WK_MAX_OPERANDS];\n    wk_offsets(&inner, j, q);\n"
           "    const " + std::string(t.compute) + " v = " + load(t, "x", "o[1] + q[0]") + ";\n"
           "    " + f.step + "\n  }\n" + tree +
           "  if (WK_LID == 0) part[WK_GROUP_Y * parts + WK_GROUP] = tree[0];\n}\n";
  std::string pass2 = "WK_KERNEL reduce_final_" + suffix + "(WK_G " + o.storage + "* out, WK_G const " +
                      acc_t + "* part, int op, wk_i64 parts, wk_args a) {\n";
  pass2 += "  WK_LOCAL " + acc_t + " tree[WK_RED_GROUP];\n  wk_i64 o[WK_MAX_OPERANDS];\n"
           "  wk_offsets(&a, WK_GROUP_Y, o);\n  " + f.decl + "\n"
           "  if (WK_LID < parts) {\n    const " + acc_t + " v = part[WK_GROUP_Y * parts + WK_LID];\n"
           "    " + f.step + "\n  }\n" + tree +
           "  if (WK_LID == 0) {\n    acc = tree[0];\n    out[o[0]] = " + f.result + ";\n  }\n}\n";
  guarded(out, t, pass1 + pass2);
}

void emit_scan(std::string& out, const TypeInfo& t, const TypeInfo& o, bool sum_like) {
  const Fold f = fold(t, o, sum_like, "v");
  guarded(
      out, t,
      "WK_KERNEL scan_" + std::string(t.name) + "_" + o.name + (sum_like ? "" : "_ext") + "(WK_G " +
          o.storage + "* out, WK_G const " + t.storage +
          "* x, int op, int flag, wk_i64 n, wk_i64 xs, wk_i64 os, wk_args a) {\n"
          "  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n    " +
          f.decl +
          "\n"
          "    for (wk_i64 s = 0; s < n; ++s) {\n      const wk_i64 j = (flag & 1) ? n - 1 - s : "
          "s;\n"
          "      const " +
          t.compute + " v = " + load(t, "x", "o[1] + j * xs") +
          ";\n"
          "      if (flag & 2) out[o[0] + j * os] = " +
          f.result + ";\n      " + f.step +
          "\n"
          "      if (!(flag & 2)) out[o[0] + j * os] = " +
          f.result + ";\n    }\n  }\n}\n");
}

// argmax / argmin along an axis: the first NaN wins outright; equal values keep the first, or the
// last with `last`.
void emit_arg(std::string& out, const TypeInfo& t, const char* index_type, const char* index_name) {
  const std::string C = t.compute, nan = isnan_of(t, "v");
  guarded(out, t,
          "WK_KERNEL arg_" + std::string(t.name) + "_" + index_name + "(WK_G " + index_type +
              "* out, WK_G const " + t.storage +
              "* x, int op, int last, wk_i64 n, wk_i64 xs, wk_args a) {\n  WK_FOR_EACH(a) {\n"
              "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n    wk_i64 best_at = "
              "0;\n    " +
              C +
              " best = 0;\n    int have = 0;\n    for (wk_i64 j = 0; j < n; ++j) {\n      const " +
              C + " v = " + load(t, "x", "o[1] + j * xs") + ";\n      if (" + nan +
              ") { best_at = j; break; }\n"
              "      const int better = op == " +
              std::to_string(WICK_OP_ARGMAX) +
              " ? v > best : v < best;\n"
              "      if (!have || better || (last && v == best)) { best = v; best_at = j; have = "
              "1; }\n    }\n"
              "    out[o[0]] = (" +
              index_type + ")best_at;\n  }\n}\n");
}

}  // namespace

void emit_reductions(std::string& out, const TypeInfo& t) {
  const TypeInfo& w = type_info(widened(t.dtype));
  for (bool sum_like : {true, false}) {
    // Sums and products write t itself (not bool) or its widening; max and min write t.
    if (!sum_like || t.dtype != WICK_DTYPE_BOOL) {
      emit_reduce(out, t, t, sum_like);
      emit_reduce_two_pass(out, t, t, sum_like);
      emit_scan(out, t, t, sum_like);
    }
    if (sum_like && w.dtype != t.dtype) {
      emit_reduce(out, t, w, true);
      emit_reduce_two_pass(out, t, w, true);
      emit_scan(out, t, w, true);
    }
  }
  emit_arg(out, t, "wk_i32", "i32");
  emit_arg(out, t, "wk_i64", "i64");
}

}  // namespace wick::gpu::detail
