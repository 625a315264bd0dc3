// wick/sdk/op_table.hpp — the op table (wick/wick_ops.h) as C++ data: names, kinds, arity, params
// structs and dtype classes, with the checks every layer shares (header-only, depends only on the
// C ABI headers).
//
//   const sdk::OpInfo* info = sdk::op_info(WICK_OP_ADD);   // nullptr for an unknown code
//   for (const sdk::OpInfo& o : sdk::kOps) ...              // every op, in code order
//   sdk::check_signature(op)  // arity, params struct and dtypes against the table
#pragma once

#include <wick/wick_ops.h>
#include <wick/wick_plugin.h>
#include <wick/sdk/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

namespace wick::sdk {

enum class OpKind { MEMORY, UNARY, BINARY, COMPARE, SELECT, REDUCE, SCAN, INDEX, NN, FUSED };
// The params struct an op takes (wick_<name>_params); `none` takes NULL.
enum class ParamsKind {
  none,
  fill,
  iota,
  rng,
  unary,
  reduce,
  axis,
  conv,
  window,
  sort,
  norm,
  attention,
  optim,
  quant
};
// The dtypes an op is defined for (see wick_ops.h).
enum class DTypeClass { ANY, NUM, FLOAT, INT, INT_BOOL, U8 };
// The first output's dtype: the op's dtype, bool, an index dtype (i32 or i64), any dtype (cast),
// or the accumulator: the op's dtype (not bool) or its 64-bit widening (sums, products, scans);
// u8 (quantized blocks), or any float dtype (dequantized values).
enum class OutDType { SAME, BOOL, INDEX, ANY, ACC, U8, FLOAT };

// A set of dtypes: bit t for wick_dtype t.
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(wick_dtype t) {
  return DTypeSet(1) << static_cast<unsigned>(t);
}
inline constexpr DTypeSet kFloatDTypes = dtype_bit(WICK_DTYPE_F32) | dtype_bit(WICK_DTYPE_F64) |
                                         dtype_bit(WICK_DTYPE_F16) | dtype_bit(WICK_DTYPE_BF16);
inline constexpr DTypeSet kIntDTypes = dtype_bit(WICK_DTYPE_I8) | dtype_bit(WICK_DTYPE_U8) |
                                       dtype_bit(WICK_DTYPE_I16) | dtype_bit(WICK_DTYPE_I32) |
                                       dtype_bit(WICK_DTYPE_I64) | dtype_bit(WICK_DTYPE_U32) |
                                       dtype_bit(WICK_DTYPE_U64);
inline constexpr DTypeSet kBoolDType = dtype_bit(WICK_DTYPE_BOOL);
inline constexpr DTypeSet kIndexDTypes = dtype_bit(WICK_DTYPE_I32) | dtype_bit(WICK_DTYPE_I64);

constexpr DTypeSet dtypes_of(DTypeClass c) {
  switch (c) {
    case DTypeClass::ANY: return kFloatDTypes | kIntDTypes | kBoolDType;
    case DTypeClass::NUM: return kFloatDTypes | kIntDTypes;
    case DTypeClass::FLOAT: return kFloatDTypes;
    case DTypeClass::INT: return kIntDTypes;
    case DTypeClass::INT_BOOL: return kIntDTypes | kBoolDType;
    case DTypeClass::U8: return dtype_bit(WICK_DTYPE_U8);
  }
  return 0;
}
constexpr bool has_dtype(DTypeSet set, wick_dtype t) {
  return t > WICK_DTYPE_INVALID && t <= WICK_DTYPE_BOOL && (set & dtype_bit(t)) != 0;
}
// In words, for messages: "floats", "integers and bool", ...
constexpr const char* dtype_class_words(DTypeClass c) {
  switch (c) {
    case DTypeClass::ANY: return "every dtype";
    case DTypeClass::NUM: return "numbers";
    case DTypeClass::FLOAT: return "floats";
    case DTypeClass::INT: return "integers";
    case DTypeClass::INT_BOOL: return "integers and bool";
    case DTypeClass::U8: return "u8 (quantized blocks)";
  }
  return "";
}

struct OpInfo {
  wick_op_code code;
  const char* name;
  OpKind kind;
  int min_inputs, max_inputs, outputs;
  ParamsKind params;
  size_t params_size;  // sizeof(wick_<params>_params); 0 for none
  DTypeClass dtypes;
  OutDType out;
};

// The C struct of each ParamsKind: ParamsStruct<ParamsKind::conv>::type is wick_conv_params.
template <ParamsKind K>
struct ParamsStruct {
  using type = void;
};
#define WICK_PARAMS_STRUCT(K)          \
  template <>                          \
  struct ParamsStruct<ParamsKind::K> { \
    using type = wick_##K##_params;    \
  };
WICK_PARAMS_STRUCT(fill)
WICK_PARAMS_STRUCT(iota)
WICK_PARAMS_STRUCT(rng)
WICK_PARAMS_STRUCT(unary)
WICK_PARAMS_STRUCT(reduce)
WICK_PARAMS_STRUCT(axis)
WICK_PARAMS_STRUCT(conv)
WICK_PARAMS_STRUCT(window)
WICK_PARAMS_STRUCT(sort)
WICK_PARAMS_STRUCT(norm)
WICK_PARAMS_STRUCT(attention)
WICK_PARAMS_STRUCT(optim)
WICK_PARAMS_STRUCT(quant)
#undef WICK_PARAMS_STRUCT
template <ParamsKind K>
constexpr size_t params_size() {
  if constexpr (std::is_void_v<typename ParamsStruct<K>::type>)
    return 0;
  else
    return sizeof(typename ParamsStruct<K>::type);
}

inline constexpr OpInfo kOps[] = {
#define WICK_OP_ROW(NAME, CODE, name, KIND, IN_MIN, IN_MAX, OUTS, PARAMS, DTYPES, OUT) \
  {WICK_OP_##NAME,                                                                     \
   #name,                                                                              \
   OpKind::KIND,                                                                       \
   IN_MIN,                                                                             \
   IN_MAX,                                                                             \
   OUTS,                                                                               \
   ParamsKind::PARAMS,                                                                 \
   params_size<ParamsKind::PARAMS>(),                                                  \
   DTypeClass::DTYPES,                                                                 \
   OutDType::OUT},
    WICK_OP_LIST(WICK_OP_ROW)
#undef WICK_OP_ROW
};
inline constexpr size_t kOpCount = std::size(kOps);

// Codes are below 1000 (wick_ops.h's ranges): the row of each, found in constant time.
inline constexpr int kMaxOpCode = 1000;
namespace detail {
struct OpIndex {
  int16_t row[kMaxOpCode];
};
constexpr OpIndex make_op_index() {
  OpIndex index{};
  for (int c = 0; c < kMaxOpCode; ++c) index.row[c] = -1;
  for (size_t i = 0; i < kOpCount; ++i) {
    if (kOps[i].code <= 0 || kOps[i].code >= kMaxOpCode || index.row[kOps[i].code] != -1)
      throw "wick_ops.h: op codes must be unique and in 1..999";  // a compile error in constexpr
    index.row[kOps[i].code] = static_cast<int16_t>(i);
  }
  return index;
}
inline constexpr OpIndex kOpIndex = make_op_index();
}  // namespace detail

// Whether this SDK knows the op code (a newer host may send codes it does not).
constexpr bool op_known(int code) {
  return code > 0 && code < kMaxOpCode && detail::kOpIndex.row[code] >= 0;
}
// The row of an op code, or nullptr for a code this SDK does not know.
constexpr const OpInfo* op_info(int code) {
  return op_known(code) ? &kOps[detail::kOpIndex.row[code]] : nullptr;
}
// The row of an op code known at compile time. (The check compares no pointers: GCC's
// sanitizer builds do not treat a pointer comparison as a constant expression.)
template <int Code>
constexpr const OpInfo& op_row() {
  static_assert(op_known(Code), "not an op of wick_ops.h");
  return kOps[detail::kOpIndex.row[Code]];
}
constexpr const char* op_name(int code) {
  const OpInfo* o = op_info(code);
  return o != nullptr ? o->name : "unknown-op";
}
// The code of an op name, or WICK_OP_INVALID.
constexpr wick_op_code op_code_of(std::string_view name) {
  for (const OpInfo& o : kOps)
    if (name == o.name) return o.code;
  return WICK_OP_INVALID;
}

// The 64-bit type integers and bool widen to in sums, products and their scans (docs/ops.md).
constexpr wick_dtype widened_dtype(wick_dtype t) {
  if (has_dtype(kFloatDTypes, t)) return t;
  if (t == WICK_DTYPE_U8 || t == WICK_DTYPE_U32 || t == WICK_DTYPE_U64) return WICK_DTYPE_U64;
  return WICK_DTYPE_I64;
}

// Whether `out` is a valid first-output dtype for an op of dtype `t` under rule `rule`.
constexpr bool output_dtype_ok(OutDType rule, wick_dtype t, wick_dtype out) {
  switch (rule) {
    case OutDType::SAME: return out == t;
    case OutDType::BOOL: return out == WICK_DTYPE_BOOL;
    case OutDType::INDEX: return has_dtype(kIndexDTypes, out);
    case OutDType::ANY: return has_dtype(dtypes_of(DTypeClass::ANY), out);
    case OutDType::ACC: return out == widened_dtype(t) || (out == t && t != WICK_DTYPE_BOOL);
    case OutDType::U8: return out == WICK_DTYPE_U8;
    case OutDType::FLOAT: return has_dtype(kFloatDTypes, out);
  }
  return false;
}

// Whether op Code is defined for elements of C++ type T (kernels templated on both ask this).
template <int Code, class T>
constexpr bool op_defined_for() {
  return has_dtype(dtypes_of(op_row<Code>().dtypes), dtype_of<T>);
}

// The dtype an op is defined over (the DTypes column): its first input's, the values' (input 1)
// for where, the output's for ops without inputs.
inline wick_dtype op_dtype(const wick_op_desc& op) {
  if (op.op == WICK_OP_WHERE && op.num_inputs >= 2) return op.inputs[1].dtype;
  if (op.num_inputs >= 1) return op.inputs[0].dtype;
  return op.num_outputs >= 1 ? op.outputs[0].dtype : WICK_DTYPE_INVALID;
}

// Whether the descriptor has the table's shape: known op, input and output counts, a params struct
// of the table's kind (size at least the fields an old host knew: struct_size is checked by the
// op's own params reader), the op's dtype in its class, and the first output's dtype rule. The host
// checks this before it asks a plugin (so a plugin never sees a malformed call from the core), and
// a plugin's kernel table checks it again for hosts other than Wick's core.
inline wick_support check_signature(const wick_op_desc& op) {
  const OpInfo* info = op_info(op.op);
  if (info == nullptr) return WICK_SUPPORT_NO_OP;
  if (op.num_inputs < static_cast<size_t>(info->min_inputs) ||
      op.num_inputs > static_cast<size_t>(info->max_inputs) ||
      op.num_outputs != static_cast<size_t>(info->outputs))
    return WICK_SUPPORT_NO_PARAMS;
  if (info->params != ParamsKind::none && info->params != ParamsKind::unary) {
    if (op.params == nullptr) return WICK_SUPPORT_NO_PARAMS;
    // Every params struct starts with struct_size.
    if (*static_cast<const size_t*>(op.params) <= sizeof(size_t)) return WICK_SUPPORT_NO_PARAMS;
  }
  const wick_dtype t = op_dtype(op);
  if (!has_dtype(dtypes_of(info->dtypes), t)) return WICK_SUPPORT_NO_DTYPE;
  if (!output_dtype_ok(info->out, t, op.outputs[0].dtype)) return WICK_SUPPORT_NO_DTYPE;
  return WICK_SUPPORT_YES;
}

}  // namespace wick::sdk
