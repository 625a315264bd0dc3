// wick/sdk/ggml_types.hpp — the element types of GGML/GGUF files (llama.cpp's `ggml_type`): their
// stable numbers, names, block sizes (elements per block) and block bytes. A GGUF tensor of n
// elements along its first (fastest) axis holds n / block_size blocks of type_size bytes per row.
//
// Shared by the GGUF reader (core) and the quantized kernels (plugins): header-only, it depends on
// nothing of Wick's. Numbers never change meaning; llama.cpp retired 4, 5 (Q4_2, Q4_3) and 31-33
// (Q4_0_4_4 and its kin, now repacked at load), and those are refused like any unknown number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wick::sdk::ggml {

enum class Type : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TypeTraits {
  Type type;
  std::string_view name;  // as llama.cpp and the `gguf` package spell it: "Q4_K", "BF16"
  uint32_t block_size;    // elements per block (1 for the plain types)
  uint32_t type_size;     // bytes per block
  bool quantized;         // a block format (not a plain element type)
};

// Every type a GGUF file may name, in number order.
inline constexpr TypeTraits kTypes[] = {
    {Type::F32, "F32", 1, 4, false},         {Type::F16, "F16", 1, 2, false},
    {Type::Q4_0, "Q4_0", 32, 18, true},      {Type::Q4_1, "Q4_1", 32, 20, true},
    {Type::Q5_0, "Q5_0", 32, 22, true},      {Type::Q5_1, "Q5_1", 32, 24, true},
    {Type::Q8_0, "Q8_0", 32, 34, true},      {Type::Q8_1, "Q8_1", 32, 36, true},
    {Type::Q2_K, "Q2_K", 256, 84, true},     {Type::Q3_K, "Q3_K", 256, 110, true},
    {Type::Q4_K, "Q4_K", 256, 144, true},    {Type::Q5_K, "Q5_K", 256, 176, true},
    {Type::Q6_K, "Q6_K", 256, 210, true},    {Type::Q8_K, "Q8_K", 256, 292, true},
    {Type::IQ2_XXS, "IQ2_XXS", 256, 66, true}, {Type::IQ2_XS, "IQ2_XS", 256, 74, true},
    {Type::IQ3_XXS, "IQ3_XXS", 256, 98, true}, {Type::IQ1_S, "IQ1_S", 256, 50, true},
    {Type::IQ4_NL, "IQ4_NL", 32, 18, true},  {Type::IQ3_S, "IQ3_S", 256, 110, true},
    {Type::IQ2_S, "IQ2_S", 256, 82, true},   {Type::IQ4_XS, "IQ4_XS", 256, 136, true},
    {Type::I8, "I8", 1, 1, false},           {Type::I16, "I16", 1, 2, false},
    {Type::I32, "I32", 1, 4, false},         {Type::I64, "I64", 1, 8, false},
    {Type::F64, "F64", 1, 8, false},         {Type::IQ1_M, "IQ1_M", 256, 56, true},
    {Type::BF16, "BF16", 1, 2, false},       {Type::TQ1_0, "TQ1_0", 256, 54, true},
    {Type::TQ2_0, "TQ2_0", 256, 66, true},   {Type::MXFP4, "MXFP4", 32, 17, true},
};

// The traits of type number `id`, or nothing for a number no GGUF writer uses (a corrupt file, or
// a type newer than this table).
constexpr std::optional<TypeTraits> type_traits(uint32_t id) {
  for (const TypeTraits& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

constexpr TypeTraits traits(Type type) { return *type_traits(static_cast<uint32_t>(type)); }

// The type's name ("Q4_K"), or "#<number>" for a number the table does not know: for messages.
inline std::string type_name(Type type) {
  const auto t = type_traits(static_cast<uint32_t>(type));
  if (t) return std::string(t->name);
  std::string name = "#";  // appended, not "#" + ...: GCC 12's -Wrestrict misfires on that inlined
  name += std::to_string(static_cast<uint32_t>(type));
  return name;
}

// The bytes of a row of `n` elements of `type`, or nothing when n is not a whole number of blocks.
constexpr std::optional<uint64_t> row_bytes(Type type, uint64_t n) {
  const TypeTraits t = traits(type);
  if (n % t.block_size != 0) return std::nullopt;
  return n / t.block_size * t.type_size;
}

// The 8-bit type llama.cpp rounds the other operand of a dot product with `type`'s blocks to (its
// type traits' vec_dot_type): Q8_0 for Q4_0, Q5_0 and Q8_0; Q8_1 for Q4_1, Q5_1 and Q8_1 (whose
// dots use the sum the Q8_1 block keeps); Q8_K for the K-quants. Nothing for any other type.
// MATMUL_QUANT's WICK_QUANT_ROUND_X (ABI 1.6) rounds each row of x to it.
constexpr std::optional<Type> activation_type(Type type) {
  switch (type) {
    case Type::Q4_0:
    case Type::Q5_0:
    case Type::Q8_0: return Type::Q8_0;
    case Type::Q4_1:
    case Type::Q5_1:
    case Type::Q8_1: return Type::Q8_1;
    case Type::Q2_K:
    case Type::Q3_K:
    case Type::Q4_K:
    case Type::Q5_K:
    case Type::Q6_K:
    case Type::Q8_K: return Type::Q8_K;
    default: return std::nullopt;
  }
}

}  // namespace wick::sdk::ggml
