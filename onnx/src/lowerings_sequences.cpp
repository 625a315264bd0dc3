// lowerings_sequences.cpp — ONNX sequence and optional values: SequenceConstruct,
// SequenceEmpty, SequenceInsert, SequenceAt, SequenceErase, SequenceLength, SplitToSequence,
// ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement.
//
// A sequence is a list of tensor handles on the host and an optional holds zero or one value, so
// building, indexing and erasing move no data; splitting takes views and concatenating copies on
// the device. A sequence's length and whether an optional holds a value are metadata, like a
// tensor's shape: uploaded as the scalar the op returns.
#include "lowerings.hpp"

#include <algorithm>

namespace wick::onnx {

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Tensor: return "tensor";
    case Value::Kind::Sequence: return "sequence";
    case Value::Kind::Optional: return "optional";
  }
  return "?";
}

Value upload_value(const onnx::ValueProto& v, const Device& device) {
  if (v.kind == onnx::ValueProto::Kind::Tensor) return upload_tensor_value(v.tensor, device);
  std::vector<Value> items;
  for (const onnx::ValueProto& item : v.items) items.push_back(upload_value(item, device));
  return v.kind == onnx::ValueProto::Kind::Sequence ? Value::sequence(std::move(items))
                                                    : Value::optional(std::move(items));
}

void OnnxLowering::Impl::narrow_u16_outputs() {
  bool u16 = false;
  for (const std::string& name : n.inputs) u16 = u16 || (!name.empty() && g.has(name) && g.value(name).u16);
  if (!u16) return;
  for (const std::string& name : n.outputs) {
    if (name.empty() || !g.has(name)) continue;
    Value v = g.value(name);
    if (v.kind != Value::Kind::Tensor || v.tensor.dtype() != DType::U32 || v.u16) continue;
    v.tensor = op2(WICK_OP_BITWISE_AND, v.tensor, scalar(0xFFFF, DType::U32));
    v.u16 = true;
    g.set_value(name, v);
  }
}

const Value& OnnxLowering::Impl::in_value(size_t i) const {
  mark_input(i);
  return g.value(n.inputs.at(i));
}
void OnnxLowering::Impl::out_value(size_t i, Value v) {
  if (i < n.outputs.size() && !n.outputs[i].empty()) g.set_value(n.outputs[i], std::move(v));
}
Value OnnxLowering::Impl::in_sequence(size_t i) const {
  Value v = in_value(i);
  if (v.kind != Value::Kind::Sequence)
    throw NotImportable(n.op_type + ": input " + std::to_string(i) + " is a " +
                        kind_name(v.kind) + ", not a sequence");
  return v;
}
// A position input of a sequence of `size`: [-size, size - 1], or up to `size` where one past the
// end is allowed (SequenceInsert).
size_t OnnxLowering::Impl::sequence_position(size_t input, size_t size, bool past_end) {
  const std::vector<int64_t> p = host_ints(in(input));
  if (p.size() != 1) throw NotImportable(n.op_type + ": position is not a scalar");
  const int64_t s = static_cast<int64_t>(size);
  const int64_t at = p[0] < 0 ? p[0] + s : p[0];
  if (at < 0 || at > s || (at == s && !past_end))
    throw NotImportable(n.op_type + ": position " + std::to_string(p[0]) + " outside a sequence of " +
                        std::to_string(size));
  return static_cast<size_t>(at);
}

// Parts joined along `axis` (all of one dtype, equal elsewhere), copied on the device.
Tensor OnnxLowering::Impl::concat(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) throw NotImportable(n.op_type + " of no tensors");
  Shape s = parts[0].shape();
  s[static_cast<size_t>(axis)] = 0;
  for (const Tensor& p : parts) {
    Shape ps = p.shape();
    if (p.dtype() != parts[0].dtype() || ps.size() != s.size())
      throw NotImportable(n.op_type + ": parts differ in dtype or rank");
    ps[static_cast<size_t>(axis)] = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int>(d) != axis && ps[d] != s[d])
        throw NotImportable(n.op_type + ": parts differ in shape off the axis");
    }
    s[static_cast<size_t>(axis)] = checked_add(s[static_cast<size_t>(axis)], p.dim(axis));
  }
  Tensor o = Tensor::empty(s, parts[0].dtype(), dev());
  int64_t at = 0;
  for (const Tensor& p : parts) {
    if (p.numel() > 0) exec(WICK_OP_COPY, nullptr, {p}, {o.narrow(axis, at, p.dim(axis))});
    at += p.dim(axis);
  }
  return o;
}
// Parts of one shape stacked along a new axis `axis` (0..rank).
Tensor OnnxLowering::Impl::stack(const std::vector<Tensor>& parts, int axis) {
  std::vector<Tensor> lifted;
  for (const Tensor& p : parts) lifted.push_back(p.unsqueeze(axis));
  return concat(lifted, axis);
}

std::vector<Tensor> OnnxLowering::Impl::sequence_tensors(const Value& seq) const {
  std::vector<Tensor> ts;
  for (const Value& v : seq.items) {
    if (v.kind != Value::Kind::Tensor)
      throw NotImportable(n.op_type + ": a sequence of " + kind_name(v.kind) + "s");
    ts.push_back(v.tensor);
  }
  return ts;
}

void OnnxLowering::Impl::lower_sequence_construct() {
  std::vector<Value> items;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    items.push_back(Value::of(in(i)));
    if (items.back().tensor.dtype() != items.front().tensor.dtype())
      throw NotImportable("SequenceConstruct of tensors of different dtypes");
  }
  out_value(0, Value::sequence(std::move(items)));
}
void OnnxLowering::Impl::lower_sequence_empty() {
  onnx_dtype(static_cast<int32_t>(attr_i("dtype", onnx::kFloat)));  // a dtype Wick has
  out_value(0, Value::sequence({}));
}
void OnnxLowering::Impl::lower_sequence_insert() {
  Value seq = in_sequence(0);
  const Tensor t = in(1);
  if (!seq.items.empty() && seq.items[0].kind == Value::Kind::Tensor &&
      seq.items[0].tensor.dtype() != t.dtype())
    throw NotImportable("SequenceInsert of a tensor of another dtype");
  const size_t at = has_in(2) ? sequence_position(2, seq.items.size(), true) : seq.items.size();
  seq.items.insert(seq.items.begin() + static_cast<long>(at), Value::of(t));
  out_value(0, std::move(seq));
}
void OnnxLowering::Impl::lower_sequence_at() {
  const Value seq = in_sequence(0);
  out_value(0, seq.items[sequence_position(1, seq.items.size(), false)]);
}
void OnnxLowering::Impl::lower_sequence_erase() {
  Value seq = in_sequence(0);
  if (seq.items.empty()) throw NotImportable("SequenceErase of an empty sequence");
  const size_t at = has_in(1) ? sequence_position(1, seq.items.size(), false) : seq.items.size() - 1;
  seq.items.erase(seq.items.begin() + static_cast<long>(at));
  out_value(0, std::move(seq));
}
void OnnxLowering::Impl::lower_sequence_length() {
  out(0, upload_i64({static_cast<int64_t>(in_sequence(0).items.size())}, {}));
}
// SplitToSequence: pieces of `split` (a scalar: that size, the last piece smaller; a list: those
// sizes) along axis, as views; without split, pieces of 1 with the axis kept unless keepdims = 0.
void OnnxLowering::Impl::lower_split_to_sequence() {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const int64_t len = host_count(static_cast<double>(x.dim(axis)), "SplitToSequence's axis length");
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (has_in(1)) {
    const Tensor s = in(1);
    const std::vector<int64_t> v = host_ints(s);
    if (s.rank() == 0) {
      if (v.at(0) <= 0) throw NotImportable("SplitToSequence: split size " + std::to_string(v[0]));
      for (int64_t at = 0; at < len; at += sizes.back()) sizes.push_back(std::min(v[0], len - at));
    } else {
      sizes = v;
    }
  } else {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = attr_i("keepdims", 1) == 0;
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw NotImportable("SplitToSequence: a negative split size");
    total = checked_add(total, s);
  }
  if (total != len) throw NotImportable("SplitToSequence: sizes do not add up to the axis");
  std::vector<Value> items;
  int64_t at = 0;
  for (int64_t s : sizes) {
    const Tensor piece = x.narrow(axis, at, s);
    items.push_back(Value::of(squeeze ? piece.squeeze(axis) : piece));
    at += s;
  }
  out_value(0, Value::sequence(std::move(items)));
}
// ConcatFromSequence: the elements joined along axis, or stacked along a new one (new_axis = 1,
// where axis may also be one past the last).
void OnnxLowering::Impl::lower_concat_from_sequence() {
  const std::vector<Tensor> parts = sequence_tensors(in_sequence(0));
  if (parts.empty()) throw NotImportable("ConcatFromSequence of an empty sequence");
  const bool new_axis = attr_i("new_axis", 0) != 0;
  const int rank = parts[0].rank() + (new_axis ? 1 : 0);
  const int axis = norm_axis(attr_i("axis", 0), rank);
  out(0, new_axis ? stack(parts, axis) : concat(parts, axis));
}

void OnnxLowering::Impl::lower_optional() {
  out_value(0, Value::optional(has_in(0) ? std::vector<Value>{in_value(0)} : std::vector<Value>{}));
}
// From opset 18 the input may also be a tensor or a sequence (it has an element) or absent (it has
// none); in 15 to 17 it is an optional.
void OnnxLowering::Impl::lower_optional_has_element() {
  bool has = false;
  if (has_in(0)) {
    const Value v = in_value(0);
    has = v.kind != Value::Kind::Optional || !v.items.empty();
  }
  out(0, upload_values({has ? 1.0 : 0.0}, {}, DType::Bool));
}
void OnnxLowering::Impl::lower_optional_get_element() {
  const Value v = in_value(0);
  if (v.kind != Value::Kind::Optional) return out_value(0, v);
  if (v.items.empty()) throw NotImportable("OptionalGetElement of an empty optional");
  out_value(0, v.items[0]);
}

}  // namespace wick::onnx
