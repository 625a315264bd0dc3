// Renders the kernel families of wick/gpu/kernels.hpp for every dtype, from the op table (which
// ops of each kind exist, and their dtype classes) and the per-op expressions (op_exprs.cpp).
#include "generator.hpp"

#include <wick/sdk/strided_args.hpp>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wick::gpu {

namespace detail {

namespace {

const TypeInfo kTypes[] = {
    {WICK_DTYPE_F32, "f32", "float", "float", "float", "", 32, true},
    {WICK_DTYPE_F64, "f64", "double", "double", "double", "", 64, true},
    {WICK_DTYPE_F16, "f16", "wk_u16", "float", "float", "", 16, true},
    {WICK_DTYPE_BF16, "bf16", "wk_u16", "float", "float", "", 16, true},
    {WICK_DTYPE_I8, "i8", "wk_i8", "wk_i8", "wk_u32", "wk_u8", 8, true},
    {WICK_DTYPE_U8, "u8", "wk_u8", "wk_u8", "wk_u32", "wk_u8", 8, false},
    {WICK_DTYPE_I16, "i16", "wk_i16", "wk_i16", "wk_u32", "wk_u16", 16, true},
    {WICK_DTYPE_I32, "i32", "wk_i32", "wk_i32", "wk_u32", "wk_u32", 32, true},
    {WICK_DTYPE_I64, "i64", "wk_i64", "wk_i64", "wk_u64", "wk_u64", 64, true},
    {WICK_DTYPE_U32, "u32", "wk_u32", "wk_u32", "wk_u32", "wk_u32", 32, false},
    {WICK_DTYPE_U64, "u64", "wk_u64", "wk_u64", "wk_u64", "wk_u64", 64, false},
    {WICK_DTYPE_BOOL, "bool", "wk_bool", "wk_bool", "wk_u32", "wk_u8", 8, false},
};

bool is_float(wick_dtype t) {
  return sdk::has_dtype(sdk::kFloatDTypes, t);
}

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

// The expression of op on type t, or nullptr where the op is not defined for it.
const char* expr_for(const OpExpr& e, wick_dtype t) {
  if (is_float(t)) return e.on_float;
  return t == WICK_DTYPE_BOOL ? e.on_bool : e.on_int;
}

// Loading an element as its compute type, and storing a compute value.
std::string load(const TypeInfo& t, const std::string& ptr, const std::string& at) {
  const std::string x = ptr + "[" + at + "]";
  if (t.dtype == WICK_DTYPE_F16) return "wk_f16_to_f32(" + x + ")";
  if (t.dtype == WICK_DTYPE_BF16) return "wk_bf16_to_f32(" + x + ")";
  return x;
}
// A stored value as its compute type.
std::string to_compute(const TypeInfo& t, const std::string& value) {
  if (t.dtype == WICK_DTYPE_F16) return "wk_f16_to_f32(" + value + ")";
  if (t.dtype == WICK_DTYPE_BF16) return "wk_bf16_to_f32(" + value + ")";
  return value;
}
std::string store(const TypeInfo& t, const std::string& value) {
  if (t.dtype == WICK_DTYPE_F16) return "wk_f32_to_f16(" + value + ")";
  if (t.dtype == WICK_DTYPE_BF16) return "wk_f32_to_bf16(" + value + ")";
  return std::string("(") + t.storage + ")(" + value + ")";
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

// Kernels are emitted inside #ifdef WK_HAS_F64 for f64.
void guarded(std::string& out, const TypeInfo& t, const std::string& code) {
  if (t.dtype == WICK_DTYPE_F64)
    out += "#ifdef WK_HAS_F64\n" + code + "#endif\n";
  else
    out += code;
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
                           : "(" + std::string(t.unsigned_of) + ")a[r * xm + k * xk]");
  const std::string y = "(" + acc + ")" +
                        (f ? load(t, "b", "k * yk + j * yn")
                           : "(" + std::string(t.unsigned_of) + ")b[k * yk + j * yn]");
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

// ---- reductions, scans, arg-reductions: one work-item per output (or line), sequential in it, or
// (reductions with few outputs) two passes of fixed trees; results are deterministic (no atomics). Sums and products accumulate in the widest float or in
// 64 bits wrapping; max and min in the compute type, where NaN wins and stays (as the CPU plugin).

std::string lowest(const TypeInfo& t) {
  if (is_float(t.dtype)) return "-(" + std::string(t.compute) + ")WK_INF_F";
  if (t.dtype == WICK_DTYPE_BOOL) return "(wk_bool)0";
  return t.is_signed ? "(" + std::string(t.storage) + ")((" + t.unsigned_of + ")1 << " +
                           std::to_string(t.bits - 1) + ")"
                     : "(" + std::string(t.storage) + ")0";
}
std::string highest(const TypeInfo& t) {
  if (is_float(t.dtype)) return "(" + std::string(t.compute) + ")WK_INF_F";
  if (t.dtype == WICK_DTYPE_BOOL) return "(wk_bool)1";
  return t.is_signed ? "(" + std::string(t.storage) + ")(((" + t.unsigned_of + ")1 << " +
                           std::to_string(t.bits - 1) + ") - 1)"
                     : "(" + std::string(t.storage) + ")~(" + t.unsigned_of + ")0";
}
std::string isnan_of(const TypeInfo& t, const std::string& v) {
  return is_float(t.dtype) ? "isnan(" + v + ")" : "0";
}
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
          (is_float(t.dtype) ? store(t, "s") : "(" + std::string(t.storage) + ")s") + " : " +
          store(t, "m") + ";\n  }\n}\n");
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
              store(t, "(" + load(t, "x", "o[1]") + " - m) * sc + sh") + ";\n  }\n}\n");
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
      f ? store(t, "(" + std::string(t.compute) + ")acc") : "(" + std::string(t.storage) + ")acc";
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
  k += "    " + C +
       " sum = 0;\n    for (wk_i64 j = 0; j < Skeys; ++j) {\n      sc[j] = exp(sc[j] - m);\n";
  k += "      sum += sc[j];\n    }\n    const " + C + " inv = (" + C + ")1 / sum;\n";
  k += "    for (wk_i64 c = 0; c < Ev; ++c) {\n      " + C + " acc = 0;\n";
  k += "      for (wk_i64 j = 0; j < Skeys; ++j) acc += (sc[j] * inv) * " +
       load(t, "v", "o4[3] + j * vs + c * ve") + ";\n";
  k += "      o[o4[0] + c * oe] = " + store(t, "acc") + ";\n    }\n  }\n}\n";
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

}  // namespace

const TypeInfo& type_info(wick_dtype t) {
  for (const TypeInfo& info : kTypes)
    if (info.dtype == t) return info;
  return kTypes[0];
}

}  // namespace detail

namespace detail {
namespace {

// The kernels in units, each a few dozen kernels of one dtype and kind: a driver builds the unit a
// kernel is in when it is first used, so a process compiles (or loads from the caches) only what
// it runs. Kernel bodies are the same for every dialect; the prelude in front of them is not.
struct Units {
  std::vector<std::pair<std::string, std::string>> bodies;  // unit name, its kernels
  std::unordered_map<std::string, size_t> kernel_unit;      // kernel name -> index in bodies

  std::string& body(const std::string& unit) {
    for (auto& [name, text] : bodies)
      if (name == unit) return text;
    return bodies.emplace_back(unit, std::string()).second;
  }
};

Units emit_units() {
  Units u;
  std::string& bits = u.body("bits");
  emit_copy_fill(bits);
  for (const char* b : {"u8", "u16", "u32", "u64"}) {
    emit_gather(bits, b, "wk_i32", "i32");
    emit_gather(bits, b, "wk_i64", "i64");
  }
  for (const TypeInfo& t : kTypes) {
    emit_unary(u.body(std::string(t.name) + ".unary"), t);
    std::string& binary = u.body(std::string(t.name) + ".binary");
    emit_binary(binary, t);
    emit_where(binary, t);
    std::string& make = u.body(std::string(t.name) + ".make");
    emit_cast(make, t);
    if (t.dtype != WICK_DTYPE_BOOL) emit_iota(make, t);
    if (is_float(t.dtype)) emit_rng(make, t);
    std::string& lines = u.body(std::string(t.name) + ".lines");
    emit_reductions(lines, t);
    emit_sort(lines, t, "wk_i32", "i32");
    emit_sort(lines, t, "wk_i64", "i64");
    if (is_float(t.dtype)) {
      emit_softmax(lines, t);
      emit_norm(lines, t);
      emit_batch_norm(lines, t);
      emit_attention(lines, t);
    }
    std::string& nn = u.body(std::string(t.name) + ".nn");
    emit_matmul(nn, t);
    emit_scatter(nn, t, "wk_i32", "i32");
    emit_scatter(nn, t, "wk_i64", "i64");
    if (t.dtype != WICK_DTYPE_BOOL) {
      emit_window(nn, t);
      emit_window_scatter(nn, t);
      emit_conv(nn, t);
      if (is_float(t.dtype)) emit_im2col(nn, t);
    }
  }
  for (size_t i = 0; i < u.bodies.size(); ++i) {
    const std::string& text = u.bodies[i].second;
    for (size_t at = text.find("WK_KERNEL "); at != std::string::npos;
         at = text.find("WK_KERNEL ", at + 1)) {
      const size_t name = at + std::string("WK_KERNEL ").size(), paren = text.find('(', name);
      u.kernel_unit.emplace(text.substr(name, paren - name), i);
    }
  }
  return u;
}

const Units& units() {
  static const Units u = emit_units();
  return u;
}

// The prelude of a dialect, the constants and the common code.
std::string head(Dialect dialect) {
  std::string src = dialect == Dialect::OpenCL ? kOpenClPrelude : kCudaPrelude;
  src += "#define WK_MAX_RANK " + std::to_string(sdk::kMaxRank) + "\n#define WK_MAX_OPERANDS " +
         std::to_string(sdk::kMaxOperands) + "\n";
  src += "#define WK_MM_RM " + std::to_string(kMatmulRows) + "\n#define WK_MM_RN " +
         std::to_string(kMatmulCols) + "\n#define WK_RED_GROUP " + std::to_string(kReduceGroup) +
         "\n#define WK_SORT_GROUP " + std::to_string(kSortGroup) + "\n";
  return src + kCommon;
}

}  // namespace
}  // namespace detail

std::string render_head(Dialect dialect) {
  return detail::head(dialect);
}

std::string render_program(Dialect dialect) {
  std::string src = detail::head(dialect);
  for (const auto& [name, body] : detail::units().bodies) src += body;
  return src;
}

std::vector<std::string> program_units() {
  std::vector<std::string> names;
  for (const auto& [name, body] : detail::units().bodies) names.push_back(name);
  return names;
}

std::string render_unit(Dialect dialect, const std::string& unit) {
  for (const auto& [name, body] : detail::units().bodies)
    if (name == unit) return detail::head(dialect) + body;
  return "";
}

std::string unit_of(const std::string& kernel) {
  const auto& u = detail::units();
  const auto it = u.kernel_unit.find(kernel);
  return it == u.kernel_unit.end() ? "" : u.bodies[it->second].first;
}

sdk::DTypeSet generated_dtypes(wick_op_code op) {
  const sdk::OpInfo* info = sdk::op_info(op);
  if (info == nullptr) return 0;
  const sdk::DTypeSet all = sdk::dtypes_of(sdk::DTypeClass::ANY);
  switch (info->kind) {
    case sdk::OpKind::UNARY:
    case sdk::OpKind::BINARY:
    case sdk::OpKind::COMPARE: {
      const detail::OpExpr* e = detail::op_expr(op);
      if (e == nullptr) return 0;
      sdk::DTypeSet set = 0;
      for (const detail::TypeInfo& t : detail::kTypes)
        if (detail::expr_for(*e, t.dtype) != nullptr) set |= sdk::dtype_bit(t.dtype);
      return set & sdk::dtypes_of(info->dtypes);
    }
    case sdk::OpKind::SELECT: return all;
    case sdk::OpKind::NN:
      if (op == WICK_OP_MATMUL) return all;
      if (op == WICK_OP_CONV) return sdk::dtypes_of(sdk::DTypeClass::NUM);
      return sdk::dtypes_of(sdk::DTypeClass::NUM) & sdk::dtypes_of(info->dtypes);  // window ops
    case sdk::OpKind::REDUCE:
    case sdk::OpKind::SCAN: return all;
    case sdk::OpKind::INDEX: return all;
    case sdk::OpKind::FUSED: return sdk::kFloatDTypes;
    case sdk::OpKind::MEMORY:
      if (op == WICK_OP_IOTA) return sdk::dtypes_of(sdk::DTypeClass::NUM);
      if (op == WICK_OP_RNG_UNIFORM || op == WICK_OP_RNG_NORMAL) return sdk::kFloatDTypes;
      return all;  // copy, fill, cast
    default: return 0;
  }
}

std::string kernel_name(wick_op_code op, wick_dtype t, wick_dtype to) {
  const sdk::OpInfo* info = sdk::op_info(op);
  if (info == nullptr || !sdk::has_dtype(generated_dtypes(op), t)) return "";
  const std::string dt = detail::type_info(t).name;
  switch (info->kind) {
    case sdk::OpKind::UNARY:
      return (info->out == sdk::OutDType::BOOL ? "predicate_" : "unary_") + dt;
    case sdk::OpKind::BINARY: return "binary_" + dt;
    case sdk::OpKind::COMPARE: return "compare_" + dt;
    case sdk::OpKind::SELECT: return "where_" + dt;
    case sdk::OpKind::REDUCE:
    case sdk::OpKind::SCAN: {
      const std::string to_name = detail::type_info(to).name;
      if (op == WICK_OP_ARGMAX || op == WICK_OP_ARGMIN) return "arg_" + dt + "_" + to_name;
      const std::string family = info->kind == sdk::OpKind::REDUCE ? "reduce_" : "scan_";
      if (info->out == sdk::OutDType::ACC) return family + dt + "_" + to_name;
      return family + dt + "_" + dt + "_ext";
    }
    case sdk::OpKind::INDEX: {
      const std::string index = detail::type_info(to).name;  // the index dtype
      if (op == WICK_OP_SORT) return "sort_" + dt + "_" + index;
      if (op == WICK_OP_INDEX_SELECT || op == WICK_OP_GATHER_ELEMENTS) {
        static const char* const kBits[] = {"", "u8", "u16", "", "u32", "", "", "", "u64"};
        return std::string("gather_") + kBits[sdk::dtype_size(t)] + "_" + index;
      }
      return "scatter_" + dt + "_" + index;
    }
    case sdk::OpKind::FUSED:
      if (op == WICK_OP_BATCH_NORM) return "batch_norm_" + dt;
      if (op == WICK_OP_ATTENTION) return "attention_" + dt;
      return (op == WICK_OP_SOFTMAX || op == WICK_OP_LOG_SOFTMAX ? "softmax_" : "norm_") + dt;
    case sdk::OpKind::NN:
      if (op == WICK_OP_WINDOW_SCATTER_MAX || op == WICK_OP_WINDOW_SCATTER_MIN)
        return "window_scatter_" + dt;
      return (op == WICK_OP_MATMUL ? "matmul_" : op == WICK_OP_CONV ? "conv_" : "window_") + dt;
    default: break;
  }
  if (op == WICK_OP_CAST) return "cast_" + dt + "_" + detail::type_info(to).name;
  if (op == WICK_OP_IOTA) return "iota_" + dt;
  if (op == WICK_OP_RNG_UNIFORM) return "rng_uniform_" + dt;
  if (op == WICK_OP_RNG_NORMAL) return "rng_normal_" + dt;
  static const char* const kBits[] = {"", "u8", "u16", "", "u32", "", "", "", "u64"};
  return std::string(op == WICK_OP_COPY ? "copy_" : "fill_") + kBits[sdk::dtype_size(t)];
}

}  // namespace wick::gpu
