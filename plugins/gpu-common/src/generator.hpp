// generator.hpp — internals of the kernel generator (gpu-common).
#pragma once

#include <wick/gpu/kernels.hpp>

#include <string>

namespace wick::gpu::detail {

extern const char* const kOpenClPrelude;
extern const char* const kCudaPrelude;
extern const char* const kCommon;

// How a dtype looks in kernels: its name, storage type, compute type, the unsigned type integer
// arithmetic wraps in (at least 32 bits, so no promotion to int can overflow), its width, and
// whether it is signed. f16/bf16 are stored as their bits and computed in f32.
struct TypeInfo {
  wick_dtype dtype;
  const char* name;         // "f32"
  const char* storage;      // "float", "wk_u16", "wk_i8", ...
  const char* compute;      // "float", "double", "wk_i8", ...
  const char* wide;         // integers: "wk_u32" or "wk_u64"; floats: the compute type
  const char* unsigned_of;  // integers: the same-width unsigned type
  int bits;
  bool is_signed;
};

const TypeInfo& type_info(wick_dtype t);
// Every dtype, in the order the program's units are emitted (generator.cpp).
extern const TypeInfo kTypes[12];

// Per-op expressions in the neutral dialect, over the compute type: `v` (unary), `a`, `b`
// (binary), `alpha`, `beta`, `mode` (unary params). Placeholders: $C compute type, $T storage (for
// integers the same as $C), $U the unsigned type of the same width, $W the wide unsigned type,
// $S 1 for signed types else 0, $B the width in bits. nullptr: not defined for that class.
struct OpExpr {
  wick_op_code op;
  const char* on_float;
  const char* on_int;
  const char* on_bool;
};
extern const OpExpr kOpExprs[];
extern const size_t kOpExprCount;
const OpExpr* op_expr(wick_op_code op);
// The expression of op on type t, or nullptr where the op is not defined for it.
const char* expr_for(const OpExpr& e, wick_dtype t);

// What the kernel families share (generator.cpp): whether t is a float dtype; an element loaded
// as its compute type, a stored value as its compute type, a compute value stored; code appended
// to `out` inside #ifdef WK_HAS_F64 for f64; t's lowest and highest values and whether v is NaN,
// as kernel expressions.
bool is_float(wick_dtype t);
std::string load(const TypeInfo& t, const std::string& ptr, const std::string& at);
std::string to_compute(const TypeInfo& t, const std::string& value);
std::string store(const TypeInfo& t, const std::string& value);
void guarded(std::string& out, const TypeInfo& t, const std::string& code);
std::string lowest(const TypeInfo& t);
std::string highest(const TypeInfo& t);
std::string isnan_of(const TypeInfo& t, const std::string& v);

// The kernel families, each appending its kernels for dtype t to a unit's text `out` (generator.cpp
// puts them in units). elementwise_kernels.cpp:
void emit_unary(std::string& out, const TypeInfo& t);   // unary_, predicate_ (and their _flat)
void emit_binary(std::string& out, const TypeInfo& t);  // binary_, compare_ (and their _flat)
void emit_where(std::string& out, const TypeInfo& t);
void emit_cast(std::string& out, const TypeInfo& from);  // from `from` to every other dtype
void emit_iota(std::string& out, const TypeInfo& t);
void emit_rng(std::string& out, const TypeInfo& t);
void emit_copy_fill(std::string& out);  // copy_, fill_ for each element size
// reduction_kernels.cpp: reduce_ (one and two passes), scan_, arg_
void emit_reductions(std::string& out, const TypeInfo& t);
// index_kernels.cpp (gather: for each element size `bits`; it: the index type)
void emit_sort(std::string& out, const TypeInfo& t, const char* index_type, const char* index_name);
void emit_gather(std::string& out, const char* bits, const char* it, const char* it_name);
void emit_scatter(std::string& out, const TypeInfo& t, const char* it, const char* it_name);
// fused_kernels.cpp
void emit_softmax(std::string& out, const TypeInfo& t);
void emit_norm(std::string& out, const TypeInfo& t);
void emit_batch_norm(std::string& out, const TypeInfo& t);
void emit_attention(std::string& out, const TypeInfo& t);
// quant_kernels.cpp: quantize_<dt>, dequantize_<dt> and matmul_quant_<dt> (GGML blocks from and to
// a float dtype)
void emit_quant(std::string& out, const TypeInfo& t);
// quant_k_kernels.cpp: the K-quants' weight types' quantizers (wk_quant_k), for quantize_<dt>.
extern const char* const kQuantKFn;
// nn_kernels.cpp
void emit_matmul(std::string& out, const TypeInfo& t);
void emit_window(std::string& out, const TypeInfo& t);
void emit_im2col(std::string& out, const TypeInfo& t);
void emit_conv(std::string& out, const TypeInfo& t);
void emit_window_scatter(std::string& out, const TypeInfo& t);

}  // namespace wick::gpu::detail
