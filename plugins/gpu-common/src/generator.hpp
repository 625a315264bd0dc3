// generator.hpp — internals of the kernel generator (gpu-common).
#pragma once

#include <wick/gpu/kernels.hpp>

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

}  // namespace wick::gpu::detail
