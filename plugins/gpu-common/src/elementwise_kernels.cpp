// The elementwise kernel families of wick/gpu/kernels.hpp: unary and predicate, binary and
// compare (each also as a _flat kernel over contiguous runs), where, cast, iota, random numbers,
// copy and fill.
#include "generator.hpp"

#include <string>
#include <utility>
#include <vector>

namespace wick::gpu::detail {

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// An expression with its placeholders filled for type t.
std::string instantiate(const char* expr, const TypeInfo& t) {
  std::string s = expr;
  s = replace_all(s, "$C", t.compute);
  s = replace_all(s, "$T", t.storage);
  s = replace_all(s, "$U", t.unsigned_of);
  s = replace_all(s, "$W", t.wide);
  s = replace_all(s, "$S", t.is_signed ? "1" : "0");
  s = replace_all(s, "$B", std::to_string(t.bits));
  return s;
}

// The switch over every op of `kinds` defined for t, assigning `r`.
std::string op_switch(const TypeInfo& t, std::initializer_list<sdk::OpKind> kinds,
                      sdk::OutDType out) {
  std::string s = "      switch (op) {\n";
  for (const sdk::OpInfo& o : sdk::kOps) {
    bool kind_ok = false;
    for (sdk::OpKind k : kinds) kind_ok = kind_ok || o.kind == k;
    if (!kind_ok || o.out != out || !sdk::has_dtype(sdk::dtypes_of(o.dtypes), t.dtype)) continue;
    const OpExpr* e = op_expr(o.code);
    const char* expr = e != nullptr ? expr_for(*e, t.dtype) : nullptr;
    if (expr == nullptr) continue;
    s += "        case " + std::to_string(o.code) + ": r = " + instantiate(expr, t) + "; break;\n";
  }
  return s + "        default: r = 0; break;\n      }\n";
}

// ---- the _flat kernels: every operand one contiguous run from its offset (the host merged every
// axis). Work-item g takes elements [g * chunk, g * chunk + chunk): with chunk > 1 (CPU devices)
// a work-item's loop runs over contiguous elements, which the compiler vectorises; GPUs take
// chunk 1, so neighbouring work-items touch neighbouring elements. Ops are switched outside the
// loop, so each loop body is one op's expression.

// The start of a _flat kernel: `e` elements from s0, and pointer p<k> of each operand there.
std::string flat_head(const std::string& name, const std::string& params,
                      const std::vector<std::pair<std::string, std::string>>& operands) {
  std::string k = "WK_KERNEL " + name + "_flat(" + params + "wk_i64 chunk, wk_args a) {\n"
                  "  const wk_i64 s0 = WK_GID * chunk;\n  if (s0 >= a.numel) return;\n"
                  "  const wk_i64 e = a.numel - s0 < chunk ? a.numel - s0 : chunk;\n";
  for (size_t i = 0; i < operands.size(); ++i)
    k += "  " + operands[i].first + "* p" + std::to_string(i) + " = " + operands[i].second +
         " + a.offsets[" + std::to_string(i) + "] + s0;\n";
  return k;
}

// A loop over the run with `body` for element j.
std::string flat_loop(const std::string& body) {
  return "for (wk_i64 j = 0; j < e; ++j) { " + body + " }";
}

// The switch over every op of `kinds` defined for t, each case a loop: `pre` r = expr; `post`.
std::string op_switch_loops(const TypeInfo& t, sdk::OpKind kind, sdk::OutDType out,
                            const std::string& pre, const std::string& post) {
  std::string s = "  switch (op) {\n";
  for (const sdk::OpInfo& o : sdk::kOps) {
    if (o.kind != kind || o.out != out || !sdk::has_dtype(sdk::dtypes_of(o.dtypes), t.dtype))
      continue;
    const OpExpr* e = op_expr(o.code);
    const char* expr = e != nullptr ? expr_for(*e, t.dtype) : nullptr;
    if (expr == nullptr) continue;
    s += "    case " + std::to_string(o.code) + ": " +
         flat_loop(pre + " r = " + instantiate(expr, t) + "; " + post) + " break;\n";
  }
  return s + "    default: " + flat_loop(pre + " r = 0; " + post) + " break;\n  }\n}\n";
}

std::string param_type(const TypeInfo& t) {
  return is_float(t.dtype) ? t.compute : "wk_i64";
}

}  // namespace

void emit_unary(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute, S = t.storage, P = param_type(t);
  std::string k = "WK_KERNEL unary_" + std::string(t.name) + "(WK_G " + S + "* out, WK_G const " +
                  S + "* x, int op, " + P + " alpha, " + P +
                  " beta, int mode, wk_args a) {\n"
                  "  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n"
                  "    const " +
                  C + " v = " + load(t, "x", "o[1]") + ";\n    " + C + " r;\n";
  k += op_switch(t, {sdk::OpKind::UNARY}, sdk::OutDType::SAME);
  k += "    out[o[0]] = " + store(t, "r") + ";\n  }\n}\n";
  k += "WK_KERNEL predicate_" + std::string(t.name) + "(WK_G wk_bool* out, WK_G const " + S +
       "* x, int op, wk_args a) {\n  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n"
       "    wk_offsets(&a, i, o);\n    const " +
       C + " v = " + load(t, "x", "o[1]") + ";\n    int r;\n";
  k += op_switch(t, {sdk::OpKind::UNARY}, sdk::OutDType::BOOL);
  k += "    out[o[0]] = (wk_bool)(r != 0);\n  }\n}\n";
  const std::string W = "WK_G " + S, R = "WK_G const " + S;
  k += flat_head("unary_" + std::string(t.name),
                 W + "* out, " + R + "* x, int op, " + P + " alpha, " + P + " beta, int mode, ",
                 {{W, "out"}, {R, "x"}});
  k += op_switch_loops(t, sdk::OpKind::UNARY, sdk::OutDType::SAME,
                       "const " + C + " v = " + load(t, "p1", "j") + "; " + C + " r;",
                       "p0[j] = " + store(t, "r") + ";");
  k += flat_head("predicate_" + std::string(t.name), "WK_G wk_bool* out, " + R + "* x, int op, ",
                 {{"WK_G wk_bool", "out"}, {R, "x"}});
  k += op_switch_loops(t, sdk::OpKind::UNARY, sdk::OutDType::BOOL,
                       "const " + C + " v = " + load(t, "p1", "j") + "; int r;",
                       "p0[j] = (wk_bool)(r != 0);");
  guarded(out, t, k);
}

void emit_binary(std::string& out, const TypeInfo& t) {
  const std::string C = t.compute, S = t.storage, name = t.name;
  const std::string head =
      "(WK_G const " + S + "* x, WK_G const " + S +
      "* y, int op, wk_args a) {\n"
      "  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n"
      "    const " +
      C + " a = " + load(t, "x", "o[1]") + ";\n    const " + C + " b = " + load(t, "y", "o[2]") +
      ";\n";
  std::string k =
      "WK_KERNEL binary_" + name + "(WK_G " + S + "* out, " + head.substr(1) + "    " + C + " r;\n";
  k += op_switch(t, {sdk::OpKind::BINARY}, sdk::OutDType::SAME);
  k += "    out[o[0]] = " + store(t, "r") + ";\n  }\n}\n";
  k += "WK_KERNEL compare_" + name + "(WK_G wk_bool* out, " + head.substr(1) + "    int r;\n";
  k += op_switch(t, {sdk::OpKind::COMPARE}, sdk::OutDType::BOOL);
  k += "    out[o[0]] = (wk_bool)(r != 0);\n  }\n}\n";
  const std::string R = "WK_G const " + S, args = R + "* x, " + R + "* y, int op, ";
  const std::string ab = "const " + C + " a = " + load(t, "p1", "j") + "; const " + C +
                         " b = " + load(t, "p2", "j") + ";";
  k += flat_head("binary_" + name, "WK_G " + S + "* out, " + args,
                 {{"WK_G " + S, "out"}, {R, "x"}, {R, "y"}});
  k += op_switch_loops(t, sdk::OpKind::BINARY, sdk::OutDType::SAME, ab + " " + C + " r;",
                       "p0[j] = " + store(t, "r") + ";");
  k += flat_head("compare_" + name, "WK_G wk_bool* out, " + args,
                 {{"WK_G wk_bool", "out"}, {R, "x"}, {R, "y"}});
  k += op_switch_loops(t, sdk::OpKind::COMPARE, sdk::OutDType::BOOL, ab + " int r;",
                       "p0[j] = (wk_bool)(r != 0);");
  guarded(out, t, k);
}

void emit_where(std::string& out, const TypeInfo& t) {
  const std::string S = t.storage, W = "WK_G " + S, R = "WK_G const " + S;
  const std::string params = W + "* out, WK_G const wk_bool* c, " + R + "* x, " + R + "* y, ";
  guarded(out, t,
          "WK_KERNEL where_" + std::string(t.name) + "(" + params +
              "wk_args a) {\n  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n"
              "    wk_offsets(&a, i, o);\n    out[o[0]] = c[o[1]] ? x[o[2]] : y[o[3]];\n  }\n}\n" +
              flat_head("where_" + std::string(t.name), params,
                        {{W, "out"}, {"WK_G const wk_bool", "c"}, {R, "x"}, {R, "y"}}) +
              "  " + flat_loop("p0[j] = p1[j] ? p2[j] : p3[j];") + "\n}\n");
}

namespace {

// docs/ops.md, Cast: NaN to an integer is 0, out-of-range values saturate, 16-bit floats go
// through f32, integers wrap.
std::string cast_value(const TypeInfo& from, const TypeInfo& to, const std::string& v) {
  if (to.dtype == WICK_DTYPE_BOOL) return "(wk_bool)(" + v + " != 0)";
  if (is_float(to.dtype)) {
    if (to.dtype == WICK_DTYPE_F16 || to.dtype == WICK_DTYPE_BF16) return store(to, "(float)" + v);
    return "(" + std::string(to.compute) + ")" + v;
  }
  if (!is_float(from.dtype)) return "(" + std::string(to.storage) + ")" + v;
  // The type's bounds, and the same in the source's compute type: MIN is a power of two (exact),
  // and a value >= the rounded MAX is above every value of the type.
  const std::string C = from.compute, T = to.storage, U = to.unsigned_of;
  const std::string top = "((" + U + ")1 << " + std::to_string(to.bits - 1) + ")";
  const std::string lo = to.is_signed ? "(" + T + ")" + top : "(" + T + ")0";
  const std::string hi = to.is_signed ? "(" + T + ")(" + top + " - 1)" : "(" + T + ")~(" + U + ")0";
  return "(isnan(" + v + ") ? (" + T + ")0 : " + v + " <= (" + C + ")" + lo + " ? " + lo + " : " +
         v + " >= (" + C + ")" + hi + " ? " + hi + " : (" + T + ")" + v + ")";
}

}  // namespace

void emit_cast(std::string& out, const TypeInfo& from) {
  for (const TypeInfo& to : kTypes) {
    if (to.dtype == from.dtype) continue;
    const std::string params = "WK_G " + std::string(to.storage) + "* out, WK_G const " +
                               from.storage + "* x, ";
    const std::string k = "WK_KERNEL cast_" + std::string(from.name) + "_" + to.name + "(WK_G " +
                          to.storage + "* out, WK_G const " + from.storage +
                          "* x, wk_args a) {\n  WK_FOR_EACH(a) {\n"
                          "    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n    const " +
                          from.compute + " v = " + load(from, "x", "o[1]") +
                          ";\n    out[o[0]] = " + cast_value(from, to, "v") + ";\n  }\n}\n" +
                          flat_head("cast_" + std::string(from.name) + "_" + to.name, params,
                                    {{"WK_G " + std::string(to.storage), "out"},
                                     {"WK_G const " + std::string(from.storage), "x"}}) +
                          "  " +
                          flat_loop("const " + std::string(from.compute) + " v = " +
                                    load(from, "p1", "j") + "; p0[j] = " +
                                    cast_value(from, to, "v") + ";") +
                          "\n}\n";
    if (from.dtype == WICK_DTYPE_F64 || to.dtype == WICK_DTYPE_F64)
      out += "#ifdef WK_HAS_F64\n" + k + "#endif\n";
    else
      out += k;
  }
}

// iota: start + step * k, k the index along the axis: (flat index / inner) % extent, with extent 0
// for the flat index itself; floats in the widest float, rounded once (16-bit through f32);
// integers wrap.
void emit_iota(std::string& out, const TypeInfo& t) {
  std::string k =
      "WK_KERNEL iota_" + std::string(t.name) + "(WK_G " + t.storage +
      "* out, wk_i64 inner, wk_i64 extent, wk_wide fstart, wk_wide fstep, wk_i64 istart, "
      "wk_i64 istep, wk_args a) {\n  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n"
      "    wk_offsets(&a, i, o);\n    const wk_i64 k = extent == 0 ? i : (i / inner) % extent;\n";
  if (is_float(t.dtype))
    k += "    out[o[0]] = " +
         store(t, "(" + std::string(t.compute) + ")(fstart + fstep * (wk_wide)k)") + ";\n";
  else
    k += "    out[o[0]] = (" + std::string(t.storage) +
         ")((wk_u64)istart + (wk_u64)istep * (wk_u64)k);\n";
  guarded(out, t, k + "  }\n}\n");
}

// Random numbers from the Philox stream: uniform with 24 random bits (53 for f64), normal by
// Box-Muller; a + (b - a) u and a + b n in the widest float, rounded once.
void emit_rng(std::string& out, const TypeInfo& t) {
  const std::string head =
      "(WK_G " + std::string(t.storage) +
      "* out, wk_u64 seed, wk_u64 offset, wk_wide lo, wk_wide hi, wk_args a) {\n"
      "  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n    wk_offsets(&a, i, o);\n"
      "    const wk_philox w = wk_philox_for(seed, offset, (wk_u64)i);\n";
  const std::string u =
      t.dtype == WICK_DTYPE_F64
          ? "(wk_wide)(((wk_u64)w.w[0] << 21) | (w.w[1] >> 11)) * (wk_wide)1.1102230246251565e-16"
          : "(wk_wide)(w.w[0] >> 8) * (wk_wide)5.9604644775390625e-08";
  const std::string C = t.compute;
  std::string k = "WK_KERNEL rng_uniform_" + std::string(t.name) + head +
                  "    out[o[0]] = " + store(t, "(" + C + ")(lo + (hi - lo) * (" + u + "))") +
                  ";\n  }\n}\n";
  k += "WK_KERNEL rng_normal_" + std::string(t.name) + head +
       "    const wk_wide u1 = ((wk_wide)w.w[0] + (wk_wide)1) * (wk_wide)2.3283064365386963e-10;\n"
       "    const wk_wide u2 = (wk_wide)w.w[1] * (wk_wide)2.3283064365386963e-10;\n"
       "    const wk_wide n = sqrt((wk_wide)-2 * log(u1)) * "
       "cos((wk_wide)6.283185307179586476925286766559 * u2);\n"
       "    out[o[0]] = " +
       store(t, "(" + C + ")(lo + hi * n)") + ";\n  }\n}\n";
  guarded(out, t, k);
}

// Copy and fill move bits: one kernel per element size serves every dtype.
void emit_copy_fill(std::string& out) {
  for (const char* bits : {"u8", "u16", "u32", "u64"}) {
    const std::string T = std::string("wk_") + bits, copy = std::string("copy_") + bits,
                      fill = std::string("fill_") + bits;
    const std::string copy_params = "WK_G " + T + "* out, WK_G const " + T + "* x, ";
    const std::string fill_params = "WK_G " + T + "* out, " + T + " value, ";
    out += "WK_KERNEL " + copy + "(" + copy_params +
           "wk_args a) {\n  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n"
           "    wk_offsets(&a, i, o);\n    out[o[0]] = x[o[1]];\n  }\n}\n";
    out += flat_head(copy, copy_params, {{"WK_G " + T, "out"}, {"WK_G const " + T, "x"}}) + "  " +
           flat_loop("p0[j] = p1[j];") + "\n}\n";
    out += "WK_KERNEL " + fill + "(" + fill_params +
           "wk_args a) {\n  WK_FOR_EACH(a) {\n    wk_i64 o[WK_MAX_OPERANDS];\n"
           "    wk_offsets(&a, i, o);\n    out[o[0]] = value;\n  }\n}\n";
    out += flat_head(fill, fill_params, {{"WK_G " + T, "out"}}) + "  " +
           flat_loop("p0[j] = value;") + "\n}\n";
  }
}

}  // namespace wick::gpu::detail
