// wick/onnx/narrow_types.hpp — ONNX's narrow element types, which Wick has no dtype for, emulated
// exactly: a value of one is held in a wider Wick dtype that represents each of its values exactly
// (f32 for float8e4m3fn/fnuz, float8e5m2/fnuz, float4e2m1 and float8e8m0; i8 for int4 and int2, u8
// for uint4 and uint2) and tagged with its ONNX type (Value::narrow). These are the host codecs:
// decoding stored codes (4- and 2-bit types packed low bits first), and rounding a value to a
// type's value set as ONNX's Cast and QuantizeLinear specify.
#pragma once

#include <wick/tensor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace wick::onnx::narrow {

// TensorProto.DataType values.
enum : int32_t {
  kFloat8e4m3fn = 17, kFloat8e4m3fnuz = 18, kFloat8e5m2 = 19, kFloat8e5m2fnuz = 20, kUint4 = 21,
  kInt4 = 22, kFloat4e2m1 = 23, kFloat8e8m0 = 24, kUint2 = 25, kInt2 = 26
};

bool is_narrow(int32_t onnx_type);
bool is_float(int32_t onnx_type);  // the float8, float4 and e8m0 types
const char* name(int32_t onnx_type);  // "float8e4m3fn", ...
DType holder(int32_t onnx_type);      // the Wick dtype a value of the type is held in
int bits(int32_t onnx_type);          // 8, 4 or 2

// The value of one stored code (NaN and infinities as the type defines them).
double decode(int32_t onnx_type, uint32_t code);
// The n values of a tensor's raw data (packed two or four to a byte for the 4- and 2-bit types,
// the first element in the low bits). Throws std::invalid_argument when the size does not match.
std::vector<double> unpack(int32_t onnx_type, const std::vector<unsigned char>& raw, size_t n);

// Cast of a float value to a float type: round to nearest even; `saturate` as Cast's tables (an
// infinity or a value past the largest finite becomes it, or without saturate NaN, or an infinity
// for float8e5m2). float4e2m1 has no infinity or NaN and always saturates. float8e8m0 follows
// `round_mode` ("up", "down", "nearest") on the value's float32 bits, as onnx's to_float8e8m0.
// Returns the code.
uint32_t encode_float(int32_t onnx_type, double v, bool saturate, const std::string& round_mode);
// Cast to an integer type: a float source truncates toward zero, and NaN or a value out of range
// gives 0 (ONNX leaves it undefined; this is what its reference, via ml_dtypes, gives); an integer
// source keeps its low bits (two's complement), as ONNX's integer casts do.
int64_t cast_int(int32_t onnx_type, double v, bool from_float);
// QuantizeLinear's saturate for an integer type: v (already rounded) clipped to its range.
int64_t saturate_int(int32_t onnx_type, double v);

// The value a Cast to `onnx_type` gives for v.
double cast_value(int32_t onnx_type, double v, bool from_float, bool saturate, const std::string& round_mode);

}  // namespace wick::onnx::narrow
