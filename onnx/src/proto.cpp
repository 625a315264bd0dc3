#include <wick/onnx/proto.hpp>

#include <wick/error.hpp>
#include <wick/mapped_file.hpp>
#include <wick/safe_file.hpp>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

namespace wick::onnx {

namespace {

// A cursor over one message's bytes. `what` names the file in errors; it outlives every Reader (a
// parse_* call's argument), and is not copied into each: a model has millions of sub-messages.
// Where a model's bytes come from when read_model mapped its file: the mapping (large initializers
// are views into it) and the folder external data files are found in.
struct Source {
  std::shared_ptr<const MappedFile> file;
  std::filesystem::path dir;
  std::map<std::string, std::shared_ptr<const MappedFile>> externals;  // by location, mapped once
};

class Reader {
 public:
  Reader(const unsigned char* p, size_t n, const std::string& what, Source* src = nullptr)
      : p_(p), end_(p + n), what_(&what), src_(src) {}
  Source* source() const { return src_; }
  const std::string& what() const { return *what_; }
  bool done() const { return p_ >= end_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) fail("truncated varint");
      const unsigned char b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("varint too long");
  }
  // (field number, wire type)
  std::pair<uint32_t, uint32_t> key() {
    const uint64_t k = varint();
    return {static_cast<uint32_t>(k >> 3), static_cast<uint32_t>(k & 7)};
  }
  Reader sub() {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) fail("length past the end");
    Reader r(p_, static_cast<size_t>(n), *what_, src_);
    p_ += n;
    return r;
  }
  // A length-delimited field's bytes, in place.
  std::pair<const unsigned char*, size_t> span() {
    Reader r = sub();
    return {r.p_, static_cast<size_t>(r.end_ - r.p_)};
  }
  std::string bytes() {
    Reader r = sub();
    return std::string(reinterpret_cast<const char*>(r.p_), static_cast<size_t>(r.end_ - r.p_));
  }
  uint32_t fixed32() {
    if (end_ - p_ < 4) fail("truncated fixed32");
    uint32_t v;
    std::memcpy(&v, p_, 4);
    p_ += 4;
    return v;
  }
  uint64_t fixed64() {
    if (end_ - p_ < 8) fail("truncated fixed64");
    uint64_t v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case 0: varint(); break;
      case 1: fixed64(); break;
      case 2: sub(); break;
      case 5: fixed32(); break;
      default: fail("unsupported wire type " + std::to_string(wire));
    }
  }
  // A repeated scalar field, packed (wire 2) or not.
  template <class F>
  void repeated(uint32_t wire, uint32_t scalar_wire, F&& one) {
    if (wire == 2) {
      Reader r = sub();
      while (!r.done()) one(r, scalar_wire);
    } else {
      one(*this, scalar_wire);
    }
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw ReadError("ONNX protobuf " + *what_ + ": " + why);
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
  const std::string* what_;
  Source* src_;
};

float as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T>
void append(std::vector<unsigned char>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

// StringStringEntryProto: key 1, value 2.
std::pair<std::string, std::string> parse_entry(Reader r) {
  std::pair<std::string, std::string> kv;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1 && wire == 2) kv.first = r.bytes();
    else if (field == 2 && wire == 2) kv.second = r.bytes();
    else r.skip(wire);
  }
  return kv;
}

uint64_t entry_number(const Reader& r, const std::string& name, const std::string& key, const std::string& v) {
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
    r.fail("tensor '" + name + "': external data " + key + " '" + v + "' is not a non-negative integer");
  return std::stoull(v);
}

// The bytes of an initializer whose data is in another file: `location` relative to the model's
// folder, inside it; `offset` and `length` within that file.
void map_external(const Reader& r, TensorProto& t, const std::vector<std::pair<std::string, std::string>>& entries) {
  Source* src = r.source();
  if (src == nullptr || !src->file)
    r.fail("tensor '" + t.name + "' has external data, which is read only for a graph initializer of a model file");
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& kv : entries) {
    if (kv.first == "location") location = kv.second;
    else if (kv.first == "offset") offset = entry_number(r, t.name, kv.first, kv.second);
    else if (kv.first == "length") length = entry_number(r, t.name, kv.first, kv.second);
    else if (kv.first != "checksum") r.fail("tensor '" + t.name + "': unknown external data key '" + kv.first + "'");
  }
  const std::filesystem::path rel(location);
  bool escapes = location.empty() || rel.is_absolute();
  for (const auto& part : rel) escapes = escapes || part == "..";
  if (escapes)
    r.fail("tensor '" + t.name + "': external data location '" + location +
           "' is not a path inside the model's folder");
  auto& file = src->externals[location];
  if (!file) {
    try {
      file = std::make_shared<const MappedFile>((src->dir / rel).string());
    } catch (const std::exception& e) {
      r.fail("tensor '" + t.name + "': external data: " + e.what());
    }
  }
  const uint64_t size = file->size();
  const uint64_t n = length.value_or(offset <= size ? size - offset : 0);
  if (offset > size || n > size - offset)
    r.fail("tensor '" + t.name + "': external data [" + std::to_string(offset) + ", " + std::to_string(offset + n) +
           ") runs past the end of " + location + " (" + std::to_string(size) + " bytes)");
  t.mapping = file;
  t.view = file->data() + offset;
  t.view_size = static_cast<size_t>(n);
  if (n == 0) t.view = nullptr;  // nothing to view: bytes() is data's (empty)
}

TensorProto parse_tensor(Reader r, bool initializer = false) {
  TensorProto t;
  std::pair<const unsigned char*, size_t> raw{nullptr, 0};
  bool has_raw = false, external = false;
  std::vector<unsigned char> typed;
  std::vector<int64_t> int32_data;
  std::vector<std::pair<std::string, std::string>> entries;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    switch (field) {
      case 1: r.repeated(wire, 0, [&](Reader& x, uint32_t) { t.dims.push_back(static_cast<int64_t>(x.varint())); }); break;
      case 2: t.data_type = static_cast<int32_t>(r.varint()); break;
      case 4: r.repeated(wire, 5, [&](Reader& x, uint32_t) { append(typed, as_float(x.fixed32())); }); break;
      case 5: r.repeated(wire, 0, [&](Reader& x, uint32_t) { int32_data.push_back(static_cast<int64_t>(x.varint())); }); break;
      case 6: r.bytes(); t.has_strings = true; break;
      case 7: r.repeated(wire, 0, [&](Reader& x, uint32_t) { append(typed, static_cast<int64_t>(x.varint())); }); break;
      case 8: t.name = r.bytes(); break;
      case 9: raw = r.span(); has_raw = true; break;
      case 10: r.repeated(wire, 1, [&](Reader& x, uint32_t) { append(typed, x.fixed64()); }); break;
      case 11: r.repeated(wire, 0, [&](Reader& x, uint32_t) { append(typed, x.varint()); }); break;
      case 13: entries.push_back(parse_entry(r.sub())); break;
      case 14: external = r.varint() == 1; break;  // data_location: DEFAULT 0, EXTERNAL 1
      default: r.skip(wire); break;
    }
  }
  if (external) {
    if (!initializer) r.fail("tensor '" + t.name + "' has external data outside the graph's initializers");
    map_external(r, t, entries);
  } else if (has_raw) {
    if (initializer && r.source() != nullptr && r.source()->file && raw.second >= TensorProto::kViewBytes) {
      t.mapping = r.source()->file;
      t.view = raw.first;
      t.view_size = raw.second;
    } else {
      t.data.assign(raw.first, raw.first + raw.second);
    }
  } else if (!int32_data.empty()) {
    // int32_data carries every type of 32 bits or fewer, one element per entry; for ONNX's narrow
    // types (17-26: float8*, [u]int4, float4e2m1, float8e8m0, [u]int2) one byte per entry, of
    // packed elements for the 4- and 2-bit ones (onnx.numpy_helper.to_array reads them so).
    const size_t size = t.data_type >= 17 && t.data_type <= 26 ? 1 : element_size(t.data_type);
    if (size == 0 || size > sizeof(uint32_t))
      r.fail("int32_data for data type " + std::to_string(t.data_type) + ", which it cannot carry");
    for (int64_t v : int32_data) {
      const uint32_t u = static_cast<uint32_t>(v);
      const size_t at = t.data.size();
      t.data.resize(at + size);
      std::memcpy(t.data.data() + at, &u, size);
    }
  } else {
    t.data = std::move(typed);
  }
  return t;
}

// Subgraphs, nested types and nested sequences recurse; a corrupt file could nest them deeply
// enough to exhaust the stack, so nesting past this depth is malformed.
constexpr int kMaxDepth = 32;

GraphProto parse_graph(Reader r, int depth);

// TypeProto: tensor_type 1, sequence_type 4, map_type 5, sparse_tensor_type 8, optional_type 9;
// the element type of each container is its field 1.
// A TensorShapeProto: each Dimension's dim_value, -1 for a dim_param or none.
std::vector<int64_t> parse_shape(Reader shape) {
  std::vector<int64_t> dims;
  while (!shape.done()) {
    const auto [field, wire] = shape.key();
    if (field != 1 || wire != 2) {
      shape.skip(wire);
      continue;
    }
    Reader dim = shape.sub();
    int64_t d = -1;
    while (!dim.done()) {
      const auto [df, dw] = dim.key();
      if (df == 1 && dw == 0) d = static_cast<int64_t>(dim.varint());
      else dim.skip(dw);
    }
    dims.push_back(d);
  }
  return dims;
}

TypeInfo parse_type(Reader r, int depth) {
  if (depth > kMaxDepth) r.fail("types nested too deeply");
  TypeInfo t;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1 && wire == 2) {
      t.tensor = true;
      Reader tensor = r.sub();
      while (!tensor.done()) {
        const auto [ef, ew] = tensor.key();
        if (ef == 1 && ew == 0) {
          t.elem_type = static_cast<int32_t>(tensor.varint());
        } else if (ef == 2 && ew == 2) {
          t.has_shape = true;
          t.dims = parse_shape(tensor.sub());
        } else {
          tensor.skip(ew);
        }
      }
    } else if ((field == 4 || field == 9) && wire == 2) {
      Reader container = r.sub();
      while (!container.done()) {
        const auto [cf, cw] = container.key();
        if (cf == 1 && cw == 2) {
          const TypeInfo inner = parse_type(container.sub(), depth + 1);
          t.wrappers = std::string(1, field == 4 ? 's' : 'o') + inner.wrappers;
          t.tensor = inner.tensor;
          t.elem_type = inner.elem_type;
          t.has_shape = inner.has_shape;
          t.dims = inner.dims;
        } else {
          container.skip(cw);
        }
      }
      if (t.wrappers.empty()) t.wrappers = field == 4 ? "s" : "o";  // no element type given
    } else {
      r.skip(wire);
    }
  }
  return t;
}

AttributeProto parse_attribute(Reader r, int depth) {
  AttributeProto a;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    switch (field) {
      case 1: a.name = r.bytes(); break;
      case 2: a.f = as_float(r.fixed32()); break;
      case 3: a.i = static_cast<int64_t>(r.varint()); break;
      case 4: a.s = r.bytes(); break;
      case 5: a.t.push_back(parse_tensor(r.sub())); break;
      case 6: a.g = std::make_shared<const GraphProto>(parse_graph(r.sub(), depth + 1)); a.has_graph = true; break;
      case 7: r.repeated(wire, 5, [&](Reader& x, uint32_t) { a.floats.push_back(as_float(x.fixed32())); }); break;
      case 8: r.repeated(wire, 0, [&](Reader& x, uint32_t) { a.ints.push_back(static_cast<int64_t>(x.varint())); }); break;
      case 9: a.strings.push_back(r.bytes()); break;
      case 14: a.tp = parse_type(r.sub(), depth + 1); break;
      case 20: a.type = static_cast<int32_t>(r.varint()); break;
      default: r.skip(wire); break;
    }
  }
  return a;
}

NodeProto parse_node(Reader r, int depth) {
  NodeProto n;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    switch (field) {
      case 1: n.inputs.push_back(r.bytes()); break;
      case 2: n.outputs.push_back(r.bytes()); break;
      case 3: n.name = r.bytes(); break;
      case 4: n.op_type = r.bytes(); break;
      case 5: n.attributes.push_back(parse_attribute(r.sub(), depth)); break;
      case 7: n.domain = r.bytes(); break;
      default: r.skip(wire); break;
    }
  }
  return n;
}

ValueInfo parse_value_info(Reader r) {
  ValueInfo v;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1) {
      v.name = r.bytes();
    } else if (field == 2) {  // TypeProto
      if (wire != 2) r.fail("ValueInfoProto.type is not a message");
      v.type = parse_type(r.sub(), 0);
      v.is_tensor = v.type.tensor && v.type.wrappers.empty();
      v.elem_type = v.type.elem_type;
    } else {
      r.skip(wire);
    }
  }
  return v;
}

GraphProto parse_graph(Reader r, int depth) {
  if (depth > kMaxDepth) r.fail("subgraphs nested too deeply");
  GraphProto g;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    switch (field) {
      case 1: g.nodes.push_back(parse_node(r.sub(), depth)); break;
      case 5: g.initializers.push_back(parse_tensor(r.sub(), depth == 0)); break;
      case 11: g.inputs.push_back(parse_value_info(r.sub())); break;
      case 12: g.outputs.push_back(parse_value_info(r.sub())); break;
      default: r.skip(wire); break;
    }
  }
  return g;
}

// SequenceProto: tensor_values 3, sequence_values 5, optional_values 7 (sparse 4 and map 6 are
// not read); OptionalProto: tensor_value 3, sequence_value 5, optional_value 7.
ValueProto parse_container(Reader r, ValueProto::Kind kind, int depth) {
  if (depth > kMaxDepth) r.fail("sequences or optionals nested too deeply");
  ValueProto v;
  v.kind = kind;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (wire == 2 && (field == 3 || field == 5 || field == 7)) {
      if (field == 3) {
        ValueProto t;
        t.tensor = parse_tensor(r.sub());
        v.items.push_back(std::move(t));
      } else {
        v.items.push_back(parse_container(
            r.sub(), field == 5 ? ValueProto::Kind::Sequence : ValueProto::Kind::Optional,
            depth + 1));
      }
    } else if (wire == 2 && (field == 4 || field == 6)) {
      r.fail("sparse tensor or map values are not read");
    } else {
      r.skip(wire);
    }
  }
  if (kind == ValueProto::Kind::Optional && v.items.size() > 1) r.fail("an optional with two values");
  return v;
}

// The most bytes read from a model.onnx or a test data file: protobuf caps a serialized message at
// 2 GiB, so no file the reader could parse is larger (bigger models keep their weights outside).
constexpr uint64_t kMaxProtoBytes = uint64_t{2} << 30;

// A regular file of at most kMaxProtoBytes, whole; a FIFO, a device (a symlink to /dev/zero), a
// directory, a symlink loop or a larger file is a ReadError naming the path, never a blocking or
// unbounded read.
std::string slurp(const std::string& path) {
  try {
    return safe_file::read_file(path, kMaxProtoBytes);
  } catch (const std::runtime_error& e) {
    throw ReadError(e.what());
  }
}

// ModelProto: ir_version 1, producer_name 2, producer_version 3, graph 7, opset_import 8.
ModelProto parse_model_from(Reader r) {
  ModelProto m;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 7) {
      m.graph = parse_graph(r.sub(), 0);
    } else if (field == 8) {  // OperatorSetIdProto
      Reader o = r.sub();
      std::string domain;
      int64_t version = 0;
      while (!o.done()) {
        const auto [of, ow] = o.key();
        if (of == 1) {
          domain = o.bytes();
        } else if (of == 2) {
          version = static_cast<int64_t>(o.varint());
        } else {
          o.skip(ow);
        }
      }
      if (domain.empty() || domain == "ai.onnx") m.opset = version;
      if (domain == kTrainingDomain) m.training_opset = version;
      m.opset_imports.emplace_back(domain, version);
    } else if (field == 1 && wire == 0) {
      m.ir_version = static_cast<int64_t>(r.varint());
    } else if (field == 2 && wire == 2) {
      m.producer_name = r.bytes();
    } else if (field == 3 && wire == 2) {
      m.producer_version = r.bytes();
    } else {
      r.skip(wire);
    }
  }
  return m;
}

}  // namespace

const AttributeProto* NodeProto::attribute(const std::string& key) const {
  for (const AttributeProto& a : attributes) {
    if (a.name == key) return &a;
  }
  return nullptr;
}

size_t element_size(int32_t t) {
  switch (t) {
    case kFloat: case kInt32: case kUint32: return 4;
    case kDouble: case kInt64: case kUint64: return 8;
    case kFloat16: case kBfloat16: case kInt16: case kUint16: return 2;
    case kInt8: case kUint8: case kBool: return 1;
    default: return 0;
  }
}

ModelProto read_model(const std::string& path) {
  Source src;
  try {
    if (const auto why = safe_file::refuse(path, kMaxProtoBytes)) throw ReadError(path + ": " + *why);
    src.file = std::make_shared<const MappedFile>(path);
  } catch (const ReadError&) {
    throw;
  } catch (const std::exception& e) {
    throw ReadError(e.what());
  }
  src.dir = std::filesystem::path(path).parent_path();
  ModelProto m = parse_model_from(Reader(src.file->data(), src.file->size(), path, &src));
  src.file->check_intact("reading it as an ONNX model");
  for (const auto& kv : src.externals) kv.second->check_intact("reading it as external data of " + path);
  return m;
}

ModelProto parse_model(const unsigned char* data, size_t size, const std::string& where) {
  return parse_model_from(Reader(data, size, where));
}


ValueProto read_value(const std::string& path, const TypeInfo& type) {
  const std::string bytes = slurp(path);
  return parse_value(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), type, path);
}

ValueProto parse_value(const unsigned char* data, size_t size, const TypeInfo& type,
                       const std::string& where) {
  Reader r(data, size, where);
  if (type.wrappers.empty()) {
    ValueProto v;
    v.tensor = parse_tensor(r);
    return v;
  }
  return parse_container(r, type.wrappers[0] == 's' ? ValueProto::Kind::Sequence
                                                    : ValueProto::Kind::Optional, 0);
}

TensorProto read_tensor(const std::string& path) {
  const std::string bytes = slurp(path);
  return parse_tensor(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), path);
}

TensorProto parse_tensor(const unsigned char* data, size_t size, const std::string& where) {
  return parse_tensor(Reader(data, size, where));
}

}  // namespace wick::onnx
