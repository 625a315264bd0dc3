// gguf.cpp — GGUF metadata values and the validating parser (no device, no file: the fuzzer links
// this alone). Opening a path and copying tensors onto a device: gguf_file.cpp; writing:
// gguf_writer.cpp.
#include <wick/gguf.hpp>

#include <wick/safetensors.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "GGUF files are read as little-endian; a big-endian host would need byte swaps here");

namespace wick::gguf {

using safetensors::printable_name;
namespace ggml = sdk::ggml;

// ---- values -------------------------------------------------------------------------------------

std::string value_type_name(ValueType type) {
  static constexpr const char* kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",   "string", "array",
                                           "uint64", "int64",   "float64"};
  const auto n = static_cast<uint32_t>(type);
  if (n < std::size(kNames)) return kNames[n];
  return "value type " + std::to_string(n);
}

Value Value::array(ValueType type, std::vector<Value> items) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].type() != type)
      throw Error("an array of " + value_type_name(type) + " cannot hold item " +
                  std::to_string(i) + ", of type " + items[i].describe());
  return Value(Array{type, std::move(items)});
}

std::string Value::describe() const {
  if (const Array* a = std::get_if<Array>(&v_)) return "array of " + value_type_name(a->type);
  return value_type_name(type());
}

const Array& Value::array() const {
  if (const Array* a = std::get_if<Array>(&v_)) return *a;
  wrong_type("array");
}

void Value::wrong_type(const std::string& wanted) const {
  throw Error("is of type " + describe() + ", read as " + wanted);
}

bool operator==(const Value& a, const Value& b) {
  return a.v_ == b.v_;
}
bool operator==(const Array& a, const Array& b) {
  return a.type == b.type && a.items == b.items;
}

// ---- shared rules (reader and writer) -----------------------------------------------------------

uint64_t tensor_bytes(ggml::Type type, const std::vector<uint64_t>& ne) {
  if (ne.size() > kMaxDims)
    throw Error("has " + std::to_string(ne.size()) + " dimensions; GGUF allows at most " +
                std::to_string(kMaxDims));
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  uint64_t numel = 1;
  for (size_t i = 0; i < ne.size(); ++i) {
    if (ne[i] > kMax)
      throw Error("ne[" + std::to_string(i) + "] is " + std::to_string(ne[i]) + ", past 2^63 - 1");
    if (ne[i] != 0 && numel > kMax / ne[i]) {
      std::string dims;
      for (uint64_t d : ne) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      throw Error("its dimensions ne = [" + dims + "] hold more than 2^63 - 1 elements");
    }
    numel *= ne[i];
  }
  const std::optional<ggml::TypeTraits> traits = ggml::type_traits(static_cast<uint32_t>(type));
  if (!traits)
    throw Error("unknown ggml type number " + std::to_string(static_cast<uint32_t>(type)));
  const ggml::TypeTraits& t = *traits;
  const uint64_t row = ne.empty() ? 1 : ne[0];
  if (row % t.block_size != 0)
    throw Error("ne[0] = " + std::to_string(row) + " is not a multiple of " + std::string(t.name) +
                "'s block size " + std::to_string(t.block_size));
  const uint64_t blocks = numel / t.block_size;
  if (blocks > std::numeric_limits<uint64_t>::max() / t.type_size)
    throw Error(std::to_string(numel) + " elements of " + std::string(t.name) +
                " take more than 2^64 bytes");
  return blocks * t.type_size;
}

uint32_t alignment_of(const std::vector<KeyValue>& metadata, const std::string& source) {
  static const std::string kKey = "general.alignment";
  const auto it = std::find_if(metadata.begin(), metadata.end(),
                               [](const KeyValue& kv) { return kv.key == kKey; });
  if (it == metadata.end()) return kDefaultAlignment;
  if (it->value.type() != ValueType::UInt32)
    throw Error(source + ": metadata key '" + kKey + "' is of type " + it->value.describe() +
                "; it must be uint32");
  const uint32_t a = it->value.as<uint32_t>();
  if (a == 0 || (a & (a - 1)) != 0)
    throw Error(source + ": metadata key '" + kKey + "' is " + std::to_string(a) +
                "; it must be a power of two");
  return a;
}

std::optional<DType> wick_dtype(ggml::Type type) {
  switch (type) {
    case ggml::Type::F32: return DType::F32;
    case ggml::Type::F16: return DType::F16;
    case ggml::Type::BF16: return DType::BF16;
    case ggml::Type::F64: return DType::F64;
    case ggml::Type::I8: return DType::I8;
    case ggml::Type::I16: return DType::I16;
    case ggml::Type::I32: return DType::I32;
    case ggml::Type::I64: return DType::I64;
    default: return std::nullopt;
  }
}

int64_t TensorInfo::numel() const {
  // Checked by the parser (tensor_bytes); an info built by hand gets the same check.
  (void)tensor_bytes(type, ne);
  return std::accumulate(ne.begin(), ne.end(), int64_t{1},
                         [](int64_t a, uint64_t d) { return a * static_cast<int64_t>(d); });
}

Shape TensorInfo::shape() const {
  (void)numel();
  return Shape(ne.rbegin(), ne.rend());
}

// ---- the parser ---------------------------------------------------------------------------------

namespace {

// The bytes of a file and a position in them. Every read is bounds-checked; a failure names the
// file and what was being read (`context`: the header, a metadata key, a tensor).
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& source)
      : data_(data), size_(size), source_(source) {}

  const uint8_t* begin() const { return data_; }
  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  uint64_t left() const { return size_ - pos_; }

  // What is being read: `kind` and `name` ("metadata key 'a.b'"), or `kind` and an index when the
  // name is not known yet ("tensor info #3"). `name` must outlive the reads.
  void at(const char* kind, const std::string* name, uint64_t index = 0) {
    kind_ = kind;
    name_ = name;
    index_ = index;
  }

  [[noreturn]] void fail(const std::string& what) const {
    std::string where = kind_;
    if (name_ != nullptr)
      where += " '" + printable_name(*name_) + "'";
    else if (std::strcmp(kind_, "the header") != 0)
      where += " #" + std::to_string(index_);
    throw Error(source_ + ": " + where + ": " + what);
  }

  const uint8_t* take(uint64_t n, const char* what) {
    if (n > left())
      fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + ", but the file ends at " + std::to_string(size_));
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }

  template <class T>
  T scalar(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }

  std::string string(const char* what) {
    const uint64_t n = scalar<uint64_t>(what);
    const auto* p = reinterpret_cast<const char*>(take(n, what));
    return std::string(p, static_cast<size_t>(n));
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& source_;
  const char* kind_ = "the header";
  const std::string* name_ = nullptr;
  uint64_t index_ = 0;
};

constexpr uint32_t kValueTypes = 13;  // 0 (uint8) to 12 (float64)
// The smallest encodings of a metadata entry (empty key is refused: 8 + 1 bytes; type; a uint8)
// and of a tensor info (name of 1 byte, n_dims 0, type, offset): counts are bounded by them.
constexpr uint64_t kMinEntryBytes = 9 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 9 + 4 + 4 + 8;

// The fewest bytes a value of `type` takes (a string: its length; an array: type and length).
uint64_t min_bytes(ValueType type) {
  switch (type) {
    case ValueType::UInt8:
    case ValueType::Int8:
    case ValueType::Bool: return 1;
    case ValueType::UInt16:
    case ValueType::Int16: return 2;
    case ValueType::UInt32:
    case ValueType::Int32:
    case ValueType::Float32: return 4;
    case ValueType::Array: return 12;
    default: return 8;  // 64-bit values, a string's length
  }
}

ValueType value_type(Reader& r, uint32_t raw) {
  if (raw >= kValueTypes)
    r.fail("unknown value type " + std::to_string(raw) + " (the types are numbered 0 to " +
           std::to_string(kValueTypes - 1) + ")");
  return static_cast<ValueType>(raw);
}

Value read_value(Reader& r, ValueType type, int depth);

Value read_array(Reader& r, int depth) {
  const ValueType item = value_type(r, r.scalar<uint32_t>("an array's item type"));
  const uint64_t n = r.scalar<uint64_t>("an array's length");
  if (item == ValueType::Array && depth + 1 >= kMaxArrayDepth)
    r.fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
  if (n > r.left() / min_bytes(item))
    r.fail("an array of " + std::to_string(n) + " " + value_type_name(item) + " items, but only " +
           std::to_string(r.left()) + " bytes are left in the file");
  Array a{item, {}};
  a.items.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) a.items.push_back(read_value(r, item, depth + 1));
  return Value(std::move(a));
}

Value read_value(Reader& r, ValueType type, int depth) {
  switch (type) {
    case ValueType::UInt8: return r.scalar<uint8_t>("a uint8");
    case ValueType::Int8: return r.scalar<int8_t>("an int8");
    case ValueType::UInt16: return r.scalar<uint16_t>("a uint16");
    case ValueType::Int16: return r.scalar<int16_t>("an int16");
    case ValueType::UInt32: return r.scalar<uint32_t>("a uint32");
    case ValueType::Int32: return r.scalar<int32_t>("an int32");
    case ValueType::Float32: return r.scalar<float>("a float32");
    case ValueType::UInt64: return r.scalar<uint64_t>("a uint64");
    case ValueType::Int64: return r.scalar<int64_t>("an int64");
    case ValueType::Float64: return r.scalar<double>("a float64");
    case ValueType::String: return r.string("a string");
    case ValueType::Array: return read_array(r, depth);
    case ValueType::Bool: break;
  }
  const uint8_t b = r.scalar<uint8_t>("a bool");
  // The spec: "anything else is invalid".
  if (b > 1) r.fail("a bool holds " + std::to_string(b) + "; it must be 0 or 1");
  return b == 1;
}

struct Counts {
  uint64_t tensors = 0, entries = 0;
};

void read_version(Reader& r, uint32_t& version) {
  version = r.scalar<uint32_t>("the version");
  if (version == 2 || version == 3) return;
  const uint32_t swapped = __builtin_bswap32(version);
  if (swapped >= 1 && swapped <= 3)
    r.fail("a big-endian GGUF file (its version field reads " + std::to_string(version) +
           ", which is version " + std::to_string(swapped) +
           " byte-swapped): Wick reads little-endian files only");
  if (version == 1)
    r.fail(
        "GGUF version 1 is not supported: Wick reads versions 2 and 3 (version 1, of 2023, "
        "held 32-bit counts; convert the file with a current llama.cpp)");
  r.fail("GGUF version " + std::to_string(version) +
         " is not supported: Wick reads versions 2 and 3");
}

Counts read_header(Reader& r, uint32_t& version) {
  // A shorter file that starts as "GGUF" does is a truncated one (take says so).
  const std::string start(reinterpret_cast<const char*>(r.begin()), std::min<size_t>(r.size(), 4));
  if (start != std::string_view("GGUF").substr(0, start.size()))
    r.fail("not a GGUF file: it starts with '" + printable_name(start) + "', not 'GGUF'");
  r.take(4, "the magic");
  read_version(r, version);
  Counts c;
  c.tensors = r.scalar<uint64_t>("the tensor count");
  c.entries = r.scalar<uint64_t>("the metadata count");
  if (c.entries > r.left() / kMinEntryBytes || c.tensors > r.left() / kMinTensorInfoBytes ||
      c.entries * kMinEntryBytes + c.tensors * kMinTensorInfoBytes > r.left())
    r.fail("it counts " + std::to_string(c.entries) + " metadata entries and " +
           std::to_string(c.tensors) + " tensors, more than the " + std::to_string(r.left()) +
           " bytes after the header can hold");
  return c;
}

void read_metadata(Reader& r, uint64_t count, std::vector<KeyValue>& out,
                   std::unordered_map<std::string, size_t>& index) {
  out.reserve(static_cast<size_t>(count));
  index.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    r.at("metadata entry", nullptr, i);
    out.push_back(KeyValue{r.string("its key"), Value()});
    KeyValue& kv = out.back();  // stays in place: reserved
    if (kv.key.empty()) r.fail("an empty key");
    r.at("metadata key", &kv.key);
    const auto [it, fresh] = index.emplace(kv.key, static_cast<size_t>(i));
    if (!fresh)
      r.fail("appears twice (entries #" + std::to_string(it->second) + " and #" +
             std::to_string(i) + ")");
    const ValueType type = value_type(r, r.scalar<uint32_t>("its value type"));
    kv.value = read_value(r, type, 0);
  }
}

void read_tensor_info(Reader& r, uint32_t alignment, TensorInfo& t) {
  const uint32_t n_dims = r.scalar<uint32_t>("its number of dimensions");
  if (n_dims > kMaxDims)
    r.fail("has " + std::to_string(n_dims) + " dimensions; GGUF allows at most " +
           std::to_string(kMaxDims));
  for (uint32_t d = 0; d < n_dims; ++d) t.ne.push_back(r.scalar<uint64_t>("its dimensions"));
  const uint32_t raw = r.scalar<uint32_t>("its ggml type");
  const std::optional<ggml::TypeTraits> traits = ggml::type_traits(raw);
  if (!traits) r.fail("unknown ggml type number " + std::to_string(raw));
  t.type = traits->type;
  try {
    t.size = tensor_bytes(t.type, t.ne);
  } catch (const Error& e) {
    r.fail(e.what());
  }
  t.offset = r.scalar<uint64_t>("its data offset");
  if (t.offset % alignment != 0)
    r.fail("its data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
           std::to_string(alignment));
}

void read_tensor_infos(Reader& r, uint64_t count, uint32_t alignment, std::vector<TensorInfo>& out,
                       std::unordered_map<std::string, size_t>& index) {
  out.reserve(static_cast<size_t>(count));
  index.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    r.at("tensor info", nullptr, i);
    out.push_back(TensorInfo{r.string("its name"), ggml::Type::F32, {}, 0, 0});
    TensorInfo& t = out.back();  // stays in place: reserved
    if (t.name.empty()) r.fail("an empty tensor name");
    r.at("tensor", &t.name);
    if (t.name.size() > kMaxTensorNameBytes)
      r.fail("its name is " + std::to_string(t.name.size()) + " bytes long; GGUF allows at most " +
             std::to_string(kMaxTensorNameBytes));
    const auto [it, fresh] = index.emplace(t.name, static_cast<size_t>(i));
    if (!fresh)
      r.fail("appears twice (tensor infos #" + std::to_string(it->second) + " and #" +
             std::to_string(i) + ")");
    read_tensor_info(r, alignment, t);
  }
}

// Each tensor's bytes inside the file, and no two tensors sharing a byte.
void place_tensors(Reader& r, uint64_t data_offset, const std::vector<TensorInfo>& tensors) {
  for (const TensorInfo& t : tensors) {
    r.at("tensor", &t.name);
    const uint64_t room = data_offset <= r.size() ? r.size() - data_offset : 0;
    if (data_offset > r.size() || t.offset > room || t.size > room - t.offset)
      r.fail("its " + std::to_string(t.size) + " bytes at data offset " + std::to_string(t.offset) +
             " (file offset " + std::to_string(data_offset) + " + " + std::to_string(t.offset) +
             ") run past the end of the file (" + std::to_string(r.size()) + " bytes)");
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  const TensorInfo* reach = nullptr;  // of the tensors so far, the one that ends last
  for (size_t i : order) {
    const TensorInfo& t = tensors[i];
    if (t.size == 0) continue;
    if (reach != nullptr && t.offset < reach->offset + reach->size) {
      r.at("tensor", &t.name);
      r.fail("its bytes [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.size) +
             ") of the data section overlap those of tensor '" + printable_name(reach->name) +
             "', [" + std::to_string(reach->offset) + ", " +
             std::to_string(reach->offset + reach->size) + ")");
    }
    if (reach == nullptr || t.offset + t.size > reach->offset + reach->size) reach = &t;
  }
}

}  // namespace

GgufFile parse(const void* data, size_t size, const std::string& source) {
  GgufFile f;
  f.data_ = static_cast<const uint8_t*>(data);
  f.size_ = size;
  f.source_ = source;
  Reader r(f.data_, size, f.source_);
  const Counts counts = read_header(r, f.version_);
  read_metadata(r, counts.entries, f.metadata_, f.key_index_);
  r.at("the header", nullptr);
  f.alignment_ = alignment_of(f.metadata_, source);
  read_tensor_infos(r, counts.tensors, f.alignment_, f.tensors_, f.tensor_index_);
  // The position is within a file held in memory, far from 2^64: aligning it cannot wrap.
  f.data_offset_ = (uint64_t{r.pos()} + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  place_tensors(r, f.data_offset_, f.tensors_);
  return f;
}

// ---- GgufFile's lookups -------------------------------------------------------------------------

const Value* GgufFile::find(const std::string& key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

void GgufFile::key_error(const std::string& key, const std::string& why) const {
  throw Error(source_ + ": metadata key '" + printable_name(key) + "' " + why);
}

const TensorInfo* GgufFile::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& info) const {
  const uint64_t room = data_offset_ <= size_ ? size_ - data_offset_ : 0;
  if (info.offset > room || info.size > room - info.offset)
    throw Error(source_ + ": tensor '" + printable_name(info.name) + "' (" +
                std::to_string(info.size) + " bytes at data offset " + std::to_string(info.offset) +
                ") does not lie in this file");
  return {data_ + data_offset_ + info.offset, static_cast<size_t>(info.size)};
}

}  // namespace wick::gguf
