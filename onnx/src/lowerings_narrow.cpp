// lowerings_narrow.cpp — ONNX's narrow types (float8*, float4e2m1, float8e8m0, [u]int4, [u]int2),
// which Wick has no dtypes for: values held exactly in a wider dtype and tagged (Value::narrow),
// decoded from data files and initializers, rounded to the type's value set on the host by Cast,
// CastLike and QuantizeLinear (wick/onnx/narrow_types.hpp), and refused by every op that would
// compute on them as if they were their holder dtype.
#include "lowerings.hpp"

#include <wick/onnx/narrow_types.hpp>

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace wick::onnx {

namespace {

// Ops that only move values: output 0 keeps input 0's narrow type.
bool moves_only(const std::string& type) {
  return type == "Identity" || type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze";
}
// The inputs of an op that may be narrow.
bool takes_narrow(const std::string& type, size_t input) {
  if (type == "Cast" || moves_only(type)) return input == 0;
  if (type == "CastLike") return input <= 1;
  if (type == "DequantizeLinear") return input == 0 || input == 2;  // x and its zero point
  if (type == "QuantizeLinear") return input == 2;                  // the zero point: the output type
  return false;
}
int32_t narrow_in(const Value& v) {
  if (v.kind == Value::Kind::Tensor) return v.narrow;
  for (const Value& item : v.items)
    if (const int32_t t = narrow_in(item); t != 0) return t;
  return 0;
}

}  // namespace

Value upload_tensor_value(const onnx::TensorProto& t, const Device& device) {
  if (!narrow::is_narrow(t.data_type)) return Value::of(upload_proto(t, device), t.data_type == onnx::kUint16);
  Shape shape(t.dims.begin(), t.dims.end());
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > import_limits().max_elements)
      throw NotImportable("tensor '" + t.name + "' has the shape " + shape_to_string(shape) + limit_hint("max_elements"));
  std::vector<double> v;
  try {
    v = narrow::unpack(t.data_type, t.data, static_cast<size_t>(n));
  } catch (const std::invalid_argument& e) {
    throw NotImportable("tensor '" + t.name + "' of " + narrow::name(t.data_type) + ": " + e.what());
  }
  const DType h = narrow::holder(t.data_type);
  std::vector<unsigned char> raw(v.size() * dtype_size(h));
  for (size_t k = 0; k < v.size(); ++k) store_value(h, v[k], raw.data() + k * dtype_size(h));
  return Value::narrow_of(Tensor::from_bytes(raw.data(), raw.size(), shape, h, device), t.data_type);
}

void OnnxLowering::Impl::check_narrow_inputs(const std::string& type) const {
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!has_in(i) || !g.has(n.inputs[i])) continue;
    const int32_t t = narrow_in(g.value(n.inputs[i]));
    if (t == 0 || takes_narrow(type, i)) continue;
    throw NotImportable("ONNX op " + n.op_type + " (opset " + std::to_string(version) + "): input '" + n.inputs[i] +
                        "' is " + narrow::name(t) +
                        ", which Wick has no dtype for: the importer holds it exactly, and only Cast, CastLike, "
                        "QuantizeLinear's zero point, DequantizeLinear and ops that only move values (Identity, "
                        "Reshape, Flatten, Squeeze, Unsqueeze) take it");
  }
}

void OnnxLowering::Impl::tag_narrow_outputs(const std::string& type) {
  if (!moves_only(type) || !has_in(0) || n.outputs.empty() || n.outputs[0].empty()) return;
  const int32_t t = g.value(n.inputs[0]).narrow;
  if (t == 0 || !g.has(n.outputs[0])) return;
  Value v = g.value(n.outputs[0]);
  if (v.kind != Value::Kind::Tensor) return;
  v.narrow = t;
  g.set_value(n.outputs[0], v);
}

Value OnnxLowering::Impl::cast_to_onnx(const Value& x, int32_t to, bool saturate, const std::string& round_mode) {
  if (x.kind != Value::Kind::Tensor) throw NotImportable(n.op_type + " of a " + kind_name(x.kind));
  // A narrow value's holder represents it exactly: a cast to a Wick dtype is the holder's.
  if (!narrow::is_narrow(to)) return Value::of(cast(x.tensor, onnx_dtype(to)));
  const bool from_float = x.narrow != 0 ? narrow::is_float(x.narrow) : is_float(x.tensor.dtype());
  std::vector<double> v = host_doubles(x.tensor);
  for (double& e : v) e = narrow::cast_value(to, e, from_float, saturate, round_mode);
  return Value::narrow_of(upload_values(v, x.tensor.shape(), narrow::holder(to)), to);
}

Value OnnxLowering::Impl::quantize_narrow(const Tensor& y, int32_t to, bool saturate) {
  std::vector<double> v = host_doubles(y);
  for (double& e : v) {
    if (narrow::is_float(to)) {
      e = narrow::cast_value(to, e, true, saturate, "up");
    } else {
      if (std::isnan(e)) throw NotImportable(n.op_type + ": a NaN quantized to " + narrow::name(to));
      e = static_cast<double>(narrow::saturate_int(to, e));
    }
  }
  return Value::narrow_of(upload_values(v, y.shape(), narrow::holder(to)), to);
}

// Cast: to a narrow type exactly (round to nearest even, `saturate` for the float8 types,
// `round_mode` for float8e8m0); from one through its exact holder.
void OnnxLowering::Impl::lower_cast() {
  const bool saturate = attr_i("saturate", 1) != 0;
  const std::string round_mode = attr_choice("round_mode", "up", {"up", "down", "nearest"});
  const int32_t to = static_cast<int32_t>(attr_i("to", 0));
  (void)in(0);  // a tensor, or NotImportable
  const Value& x = in_value(0);
  if (x.narrow == 0 && !narrow::is_narrow(to)) {
    out(0, cast(x.tensor, onnx_dtype(to)));
    return;
  }
  out_value(0, cast_to_onnx(x, to, saturate, round_mode));
}
void OnnxLowering::Impl::lower_cast_like() {
  const bool saturate = attr_i("saturate", 1) != 0;
  const std::string round_mode = attr_choice("round_mode", "up", {"up", "down", "nearest"});
  (void)in(0);
  const Tensor like = in(1);
  const Value& x = in_value(0);
  const int32_t to = in_value(1).narrow;
  if (to == 0) {
    out(0, cast(x.tensor, like.dtype()));
    return;
  }
  out_value(0, cast_to_onnx(x, to, saturate, round_mode));
}

}  // namespace wick::onnx
