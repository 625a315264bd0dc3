// wick/onnx/proto.hpp — a minimal protobuf wire-format reader for the few ONNX messages the node tests
// use (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto, TypeProto,
// SequenceProto, OptionalProto). Field numbers are those of onnx/onnx.proto (ONNX 1.12); unknown
// fields are skipped.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace wick::onnx {

// A model or tensor file that cannot be read or is not valid protobuf (truncated, corrupt): the
// folder is SKIP, since the data, not the backend, is at fault.
struct ReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// TensorProto.DataType
enum DataType : int32_t {
  kUndefined = 0, kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6,
  kInt64 = 7, kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13,
  kComplex64 = 14, kComplex128 = 15, kBfloat16 = 16
};

// The domain of the training operators (Adagrad, Adam, Momentum).
inline constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

struct TensorProto {
  std::vector<int64_t> dims;
  int32_t data_type = kUndefined;
  std::string name;
  // The elements in little-endian C order, in the element size of data_type (bool: 1 byte,
  // f16/bf16: 2 bytes), whichever field carried them.
  std::vector<unsigned char> data;
  bool has_strings = false;
  // A large initializer of a model read with read_model (raw_data of at least kViewBytes, or
  // external data): `data` stays empty and the bytes are a view into the mapped file, which
  // `mapping` keeps mapped. Read a tensor's elements through bytes() and nbytes().
  std::shared_ptr<const void> mapping;
  const unsigned char* view = nullptr;
  size_t view_size = 0;
  const unsigned char* bytes() const { return view ? view : data.data(); }
  size_t nbytes() const { return view ? view_size : data.size(); }
  static constexpr size_t kViewBytes = size_t{64} << 10;
};

// A TypeProto: a tensor of elem_type inside zero or more sequence and optional types.
struct TypeInfo {
  // The containers from the outside in: 's' sequence_type, 'o' optional_type.
  std::string wrappers;
  bool tensor = false;   // the innermost type is a tensor_type (false: map, sparse or absent)
  int32_t elem_type = 0;
  // The innermost tensor's shape, when the type gives one: an extent per axis, -1 for a symbolic
  // (dim_param) or unknown one.
  bool has_shape = false;
  std::vector<int64_t> dims;
};

struct GraphProto;

struct AttributeProto {
  std::string name;
  int32_t type = 0;  // 1 FLOAT, 2 INT, 3 STRING, 4 TENSOR, 5 GRAPH, 6 FLOATS, 7 INTS, 8 STRINGS
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<TensorProto> t;  // 0 or 1
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;  // STRINGS (RNN's activations)
  bool has_graph = false;
  std::shared_ptr<const GraphProto> g;  // a GRAPH attribute (If's branches, Loop's body)
  TypeInfo tp;                          // a TYPE_PROTO attribute (Optional's type)
};

struct NodeProto {
  std::vector<std::string> inputs, outputs;
  std::string name, op_type, domain;
  std::vector<AttributeProto> attributes;
  const AttributeProto* attribute(const std::string& name) const;
};

struct ValueInfo {
  std::string name;
  bool is_tensor = false;  // false for sequence, optional, map types
  int32_t elem_type = 0;
  TypeInfo type;
};

struct GraphProto {
  std::vector<NodeProto> nodes;
  std::vector<TensorProto> initializers;
  std::vector<ValueInfo> inputs, outputs;
};

struct ModelProto {
  GraphProto graph;
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::vector<std::pair<std::string, int64_t>> opset_imports;  // (domain, version) as the file lists them
  int64_t opset = 0;  // the default domain's version
  int64_t training_opset = 0;  // ai.onnx.preview.training's version; 0 when not imported
};

// A test data file's value: a TensorProto, or a SequenceProto or OptionalProto of such values.
struct ValueProto {
  enum class Kind { Tensor, Sequence, Optional };
  Kind kind = Kind::Tensor;
  TensorProto tensor;
  std::vector<ValueProto> items;  // a sequence's elements; an optional's value, if it has one
};

// Throws wick::Error naming the file when it cannot be read or is malformed. The file is mapped,
// not read: large initializers are views into it (TensorProto::view). Initializers with external
// data (data_location EXTERNAL) are mapped from their file, a path relative to the model's folder
// that stays inside it (an absolute path, a '..' component, a range past the file's end or a
// length that does not match the tensor's type and shape is a ReadError naming the tensor).
ModelProto read_model(const std::string& path);
TensorProto read_tensor(const std::string& path);
// The same from bytes in memory; `where` names them in errors (the fuzz targets' entry).
ModelProto parse_model(const unsigned char* data, size_t size, const std::string& where);
TensorProto parse_tensor(const unsigned char* data, size_t size, const std::string& where);
// A data file read as the type the graph declares for it (a tensor, sequence or optional).
ValueProto read_value(const std::string& path, const TypeInfo& type);
ValueProto parse_value(const unsigned char* data, size_t size, const TypeInfo& type,
                       const std::string& where);
size_t element_size(int32_t data_type);  // 0 for strings and unknown types

}  // namespace wick::onnx
