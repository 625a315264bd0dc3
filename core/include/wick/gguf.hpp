// wick/gguf.hpp — reading and writing GGUF files, llama.cpp's model format, versions 2 and 3
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
//
// A file is, all little-endian: the magic "GGUF", the version (u32), the tensor count (u64), the
// metadata count (u64); the metadata, each a key (a string: u64 byte count, then UTF-8 bytes, no
// NUL), a value type (u32) and a value; the tensor infos, each a name (string), n_dims (u32), that
// many dimensions (u64 each), a ggml type (u32, wick/sdk/ggml_types.hpp) and an offset (u64) into
// the data section; zero padding to the alignment (`general.alignment`, default 32); then the
// data section, where each tensor starts at a multiple of the alignment. Versions 2 and 3 are laid
// out alike (3 allowed big-endian files); version 1 (32-bit counts) and big-endian files are
// refused, naming the version.
//
// Axis order: a tensor info lists its dimensions fastest-varying first, as ggml's ne[]: ne[0] is
// the length of a row, the contiguous axis. Wick, NumPy and PyTorch list shapes slowest first;
// TensorInfo::shape() is that order (ne reversed): ne = [4096, 11008] is a Wick [11008, 4096]
// matrix of 11008 rows. Quantized types pack each row into blocks (ne[0] a multiple of the block
// size).
//
// Reading maps the file (MappedFile) and validates all of it before returning: counts bounded by
// the bytes left before anything is allocated for them, every string and array within the file,
// bool values 0 or 1, known value and ggml types, no duplicate key or tensor name, at most 4
// dimensions, element counts and byte sizes checked for overflow, ne[0] a multiple of the block
// size, offsets multiples of the alignment, each tensor's bytes inside the file and no two
// tensors' bytes overlapping. Every failure is a wick::Error naming the file, the key or tensor
// (escaped as wick::safetensors::printable_name does) and the problem. Not checked, as llama.cpp
// does not check them either: the bytes after the last tensor, the padding's values, the spelling
// of keys (the spec asks for ASCII lower_snake_case) and whether strings are valid UTF-8.
// Metadata is held as Values: about 40 bytes each, so an array of n uint8 costs ~40n bytes.
// A file that shrinks while mapped reads as zeros past its new end (MappedFile): to_tensor() then
// fails naming the file; what tensor_data() views is not checked.
#pragma once

#include <wick/error.hpp>
#include <wick/sdk/ggml_types.hpp>
#include <wick/quant.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

namespace wick {
class MappedFile;
}

namespace wick::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
// GGML_MAX_DIMS; the spec: "currently at most 4".
inline constexpr size_t kMaxDims = 4;
// The spec: a tensor name "must be at most 64 bytes long" (llama.cpp takes 63: its GGML_MAX_NAME
// of 64 counts the NUL).
inline constexpr size_t kMaxTensorNameBytes = 64;
// Arrays of arrays deeper than this are refused (real files nest at most 2 deep): the reader
// recurses once per level.
inline constexpr int kMaxArrayDepth = 16;

// The metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

// The spec's name of a value type ("uint8", "float32", "string", "array"); "value type N" for a
// number outside the enum.
std::string value_type_name(ValueType type);

class Value;

// An array value: `type` is the type of every item. The items of an array of arrays are arrays
// with item types of their own.
struct Array {
  ValueType type = ValueType::UInt8;
  std::vector<Value> items;
};

// The alternatives in ValueType's order: a Value's variant index is its type number.
using ValueVariant = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float,
                                  bool, std::string, Array, uint64_t, int64_t, double>;

namespace detail {
template <class T, class V>
struct IsAlternative;
template <class T, class... Ts>
struct IsAlternative<T, std::variant<Ts...>> : std::bool_constant<(std::is_same_v<T, Ts> || ...)> {
};
template <class T, class... Ts>
constexpr size_t index_in(std::variant<Ts...>*) {
  size_t i = 0;
  (void)((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
  return i;
}
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
}  // namespace detail

// A C++ type that is exactly one metadata value type (int32_t, not int; std::string, ...).
template <class T>
concept ValueAlternative = detail::IsAlternative<T, ValueVariant>::value;

// One metadata value of any type. Constructed from the C++ type of its value type, without
// conversion: Value(int32_t{3}) is an int32, Value(3u) a uint32, Value(3.0f) a float32.
class Value {
 public:
  Value() = default;  // uint8 0
  template <ValueAlternative T>
  Value(T v) : v_(std::move(v)) {}
  Value(const char* s) : v_(std::string(s)) {}

  // An array of `type` items; throws wick::Error when an item is of another type.
  static Value array(ValueType type, std::vector<Value> items);
  template <ValueAlternative T>
  static Value array(const std::vector<T>& items) {
    Array a{type_of<T>(), {}};
    a.items.reserve(items.size());
    for (const T& item : items) a.items.emplace_back(item);
    return Value(std::move(a));
  }

  template <ValueAlternative T>
  static constexpr ValueType type_of() {
    return static_cast<ValueType>(detail::index_in<T>(static_cast<ValueVariant*>(nullptr)));
  }

  ValueType type() const { return static_cast<ValueType>(v_.index()); }
  const ValueVariant& variant() const { return v_; }
  // "uint32", "string", "array of float32", "array of array".
  std::string describe() const;

  // The value as T, its own C++ type (no conversion: a uint32 is not an int64), or as
  // std::vector<T> for an array of T items. Any other request is a wick::Error saying what the
  // value is ("is of type string, read as uint32"); GgufFile::get adds the file and the key.
  template <class T>
  T as() const;
  // The array, or a wick::Error saying what the value is.
  const Array& array() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  [[noreturn]] void wrong_type(const std::string& wanted) const;
  ValueVariant v_;
};

bool operator==(const Array& a, const Array& b);

template <class T>
T Value::as() const {
  if constexpr (detail::IsVector<T>::value) {
    using Item = typename T::value_type;
    static_assert(ValueAlternative<Item>, "as<std::vector<T>>: T must be a value type's C++ type");
    const Array* a = std::get_if<Array>(&v_);
    if (a == nullptr || a->type != type_of<Item>())
      wrong_type("array of " + value_type_name(type_of<Item>()));
    T out;
    out.reserve(a->items.size());
    for (const Value& item : a->items) out.push_back(item.as<Item>());
    return out;
  } else {
    static_assert(ValueAlternative<T>, "as<T>: T must be a value type's C++ type");
    if (const T* p = std::get_if<T>(&v_)) return *p;
    wrong_type(value_type_name(type_of<T>()));
  }
}

struct KeyValue {
  std::string key;
  Value value;
};

// One tensor of a file.
struct TensorInfo {
  std::string name;
  sdk::ggml::Type type = sdk::ggml::Type::F32;
  std::vector<uint64_t> ne;  // fastest-varying first (see the top of this file); 0 to 4 of them
  uint64_t offset = 0;       // into the data section; a multiple of the alignment
  uint64_t size = 0;         // bytes

  // Elements: the product of ne (1 for no dimensions).
  int64_t numel() const;
  // Wick (NumPy) order, slowest first: ne reversed.
  Shape shape() const;
};

// The bytes of a tensor of `type` with dimensions `ne` (ggml order). Throws wick::Error saying what
// is wrong — more than kMaxDims dimensions, a dimension or the element count past 2^63 - 1, ne[0]
// not a multiple of the block size — without naming a file or tensor (callers add those).
uint64_t tensor_bytes(sdk::ggml::Type type, const std::vector<uint64_t>& ne);

// The alignment `metadata` sets through general.alignment: kDefaultAlignment when absent; a
// wick::Error naming `source` when it is not a uint32 or not a power of two.
uint32_t alignment_of(const std::vector<KeyValue>& metadata, const std::string& source);

// The Wick dtype of a plain ggml type (F32, F16, BF16, F64, I8, I16, I32, I64); nothing for a
// quantized one.
std::optional<DType> wick_dtype(sdk::ggml::Type type);

class GgufFile;
// Validates a whole file held in memory (`source` names it in errors). The object borrows `data`,
// which must outlive it. Needs no device: this is the entry the fuzzer drives.
GgufFile parse(const void* data, size_t size, const std::string& source = "<memory>");

// A validated GGUF file. Copies share the mapping; all members are const and may be called from
// any thread.
class GgufFile {
 public:
  // Maps and validates `path` (a regular file; FIFOs, devices and directories are refused).
  explicit GgufFile(const std::string& path);

  uint32_t version() const { return version_; }
  const std::string& source() const { return source_; }
  // In the file's order.
  const std::vector<KeyValue>& metadata() const { return metadata_; }
  // The value of `key`, or nullptr.
  const Value* find(const std::string& key) const;
  // The value of `key` as T (Value::as); a wick::Error naming the file and the key when it is
  // absent or of another type ("model.gguf: metadata key 'general.alignment' is of type string,
  // read as uint32").
  template <class T>
  T get(const std::string& key) const;

  // In the file's order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The tensor named `name`, or nullptr.
  const TensorInfo* find_tensor(const std::string& name) const;
  // The bytes of `info` (one of tensors()) in the mapping, without a copy: valid while any copy of
  // this object lives. Throws when `info` does not lie in this file.
  std::span<const uint8_t> tensor_data(const TensorInfo& info) const;
  // `info` on `device` (an invalid Device means the runtime's default) as a Wick tensor of shape
  // info.shape(): a read-only view of the mapping, without a copy, when the device's buffers are
  // host memory and its plugin wraps them (cpu-onednn; Tensor::from_host_memory), else a copy
  // (a GPU; a file parse()d from memory), which checks that the file did not shrink under the
  // mapping. The plain types only: a quantized one is a wick::Error naming the tensor and its
  // type, and pointing at to_qtensor().
  Tensor to_tensor(const TensorInfo& info, const Device& device = {}) const;
  // A quantized `info`'s blocks as they lie in the file (wick/quant.hpp), of shape info.shape(),
  // viewed or copied as to_tensor() does; a wick::Error naming the tensor for a plain type or a
  // block type the quantized ops do not take (the IQ and ternary formats).
  quant::QTensor to_qtensor(const TensorInfo& info, const Device& device = {}) const;

  uint32_t alignment() const { return alignment_; }
  // Where the data section starts in the file: the tensor infos' end, aligned. With no tensors it
  // may lie past the file's end (writers may leave the padding out).
  uint64_t data_offset() const { return data_offset_; }

 private:
  friend GgufFile parse(const void* data, size_t size, const std::string& source);
  GgufFile() = default;
  [[noreturn]] void key_error(const std::string& key, const std::string& why) const;
  Tensor load(std::span<const uint8_t> bytes, const Shape& shape, DType dtype,
              const Device& device, const std::string& what) const;

  std::shared_ptr<const MappedFile> mapping_;  // null for parse()
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string source_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> key_index_, tensor_index_;
};

template <class T>
T GgufFile::get(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) key_error(key, "is absent");
  try {
    return v->as<T>();
  } catch (const Error& e) {
    key_error(key, e.what());
  }
}

// ---- writing ------------------------------------------------------------------------------------

// A tensor to write: its bytes as the file holds them (for a quantized type, its blocks),
// borrowed for the call.
struct TensorToWrite {
  std::string name;
  sdk::ggml::Type type = sdk::ggml::Type::F32;
  std::vector<uint64_t> ne;  // ggml order, fastest first
  std::span<const uint8_t> data;
};

// Writes a version-3 file: the metadata in the order given (general.alignment, when present, sets
// the alignment: a uint32 power of two), the tensor infos in the order given with offsets packed
// in that order, zero padding to the alignment after the infos and after each tensor's bytes (the
// last one's included). This is the layout of the `gguf` package's GGUFWriter, so that the same
// metadata and tensors give the same bytes (tests/data/gguf/make_fixtures.py). Refused, naming
// `path` and the key or tensor: empty or duplicate keys, arrays whose items are not all of their
// type or nest deeper than kMaxArrayDepth, empty, over-long or duplicate tensor names, data of
// the wrong size for its type and dimensions.
// The file is written to "<path>.tmp.<pid>.<n>" beside `path`, flushed to disk, then renamed over
// it: a crash leaves the old file or the new one, never half of one.
void write(const std::string& path, const std::vector<KeyValue>& metadata,
           const std::vector<TensorToWrite>& tensors);
// The bytes write() would write.
std::string write_bytes(const std::vector<KeyValue>& metadata,
                        const std::vector<TensorToWrite>& tensors);

}  // namespace wick::gguf
