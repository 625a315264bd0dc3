// Renders the kernel families of wick/gpu/kernels.hpp for every dtype, from the op table (which
// ops of each kind exist, and their dtype classes) and the per-op expressions (op_exprs.cpp).
// The families' emitters are in elementwise_kernels.cpp, reduction_kernels.cpp,
// index_kernels.cpp, fused_kernels.cpp and nn_kernels.cpp; here are the dtypes, the loads and
// stores they share, the program's units and the names of their kernels.
#include "generator.hpp"

#include <wick/sdk/strided_args.hpp>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wick::gpu {

namespace detail {

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

// Kernels are emitted inside #ifdef WK_HAS_F64 for f64.
void guarded(std::string& out, const TypeInfo& t, const std::string& code) {
  if (t.dtype == WICK_DTYPE_F64)
    out += "#ifdef WK_HAS_F64\n" + code + "#endif\n";
  else
    out += code;
}

// The lowest and highest values of t (floats: -inf and inf), and whether v is NaN (never for
// integers and bool). Strings start as std::string("("): GCC 12's -Wrestrict misfires on
// "(" + std::string(...) in these functions when they are not file-local.
std::string lowest(const TypeInfo& t) {
  if (is_float(t.dtype)) return "-(" + std::string(t.compute) + ")WK_INF_F";
  if (t.dtype == WICK_DTYPE_BOOL) return "(wk_bool)0";
  return t.is_signed ? std::string("(") + t.storage + ")((" + t.unsigned_of + ")1 << " +
                           std::to_string(t.bits - 1) + ")"
                     : std::string("(") + t.storage + ")0";
}
std::string highest(const TypeInfo& t) {
  if (is_float(t.dtype)) return std::string("(") + t.compute + ")WK_INF_F";
  if (t.dtype == WICK_DTYPE_BOOL) return "(wk_bool)1";
  return t.is_signed ? std::string("(") + t.storage + ")(((" + t.unsigned_of + ")1 << " +
                           std::to_string(t.bits - 1) + ") - 1)"
                     : std::string("(") + t.storage + ")~(" + t.unsigned_of + ")0";
}
std::string isnan_of(const TypeInfo& t, const std::string& v) {
  return is_float(t.dtype) ? "isnan(" + v + ")" : "0";
}

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
    if (is_float(t.dtype)) {
      emit_rng(make, t);
      // A unit of their own: only a process that runs GGML blocks compiles them.
      emit_quant(u.body(std::string(t.name) + ".quant"), t);
    }
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
  // No kernels yet: the fused convolutions (the core composes conv, add, relu).
  if (op == WICK_OP_CONV_BIAS || op == WICK_OP_CONV_BIAS_RELU) return 0;
  // Dequantize's dtype is its input's, u8; the kernel is the output dtype's. Quantize's and
  // matmul_quant's is x's (quantize declines the K-quants' weight types: quant_kernels.cpp).
  if (op == WICK_OP_DEQUANTIZE) return sdk::dtype_bit(WICK_DTYPE_U8);
  if (op == WICK_OP_MATMUL_QUANT || op == WICK_OP_QUANTIZE) return sdk::kFloatDTypes;
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
      // No kernels: the core composes conv's gradients from conv where a device lacks them.
      if (op == WICK_OP_CONV_GRAD_INPUT || op == WICK_OP_CONV_GRAD_WEIGHT) return 0;
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
      if (op == WICK_OP_MATMUL_QUANT) return "matmul_quant_" + dt;
      if (op == WICK_OP_WINDOW_SCATTER_MAX || op == WICK_OP_WINDOW_SCATTER_MIN)
        return "window_scatter_" + dt;
      return (op == WICK_OP_MATMUL ? "matmul_" : op == WICK_OP_CONV ? "conv_" : "window_") + dt;
    default: break;
  }
  if (op == WICK_OP_CAST) return "cast_" + dt + "_" + detail::type_info(to).name;
  if (op == WICK_OP_IOTA) return "iota_" + dt;
  if (op == WICK_OP_DEQUANTIZE) return "dequantize_" + std::string(detail::type_info(to).name);
  if (op == WICK_OP_QUANTIZE) return "quantize_" + dt;
  if (op == WICK_OP_RNG_UNIFORM) return "rng_uniform_" + dt;
  if (op == WICK_OP_RNG_NORMAL) return "rng_normal_" + dt;
  static const char* const kBits[] = {"", "u8", "u16", "", "u32", "", "", "", "u64"};
  return std::string(op == WICK_OP_COPY ? "copy_" : "fill_") + kBits[sdk::dtype_size(t)];
}

}  // namespace wick::gpu
