// gguf_writer.cpp — GGUF version-3 files in the layout of the `gguf` package's GGUFWriter (the
// same inputs give the same bytes: tests/test_gguf.cpp checks it against a file the package
// wrote), replaced whole or not at all by io::write_atomically (as safetensors::save does).
#include <wick/gguf.hpp>

#include <wick/safetensors.hpp>

#include "io/atomic_write.hpp"

#include <cstring>
#include <unordered_set>

namespace wick::gguf {
namespace {

using safetensors::printable_name;

constexpr uint32_t kWrittenVersion = 3;

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host (gguf.cpp asserts it)
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

[[noreturn]] void fail(const std::string& target, const std::string& what) {
  throw Error(target + ": " + what);
}

// A value without its type tag (arrays carry their item type and length).
void put_value(std::string& out, const Value& v, const std::string& target, const std::string& key,
               int depth) {
  if (const Array* a = std::get_if<Array>(&v.variant())) {
    if (a->type == ValueType::Array && depth + 1 >= kMaxArrayDepth)
      fail(target, "metadata key '" + printable_name(key) + "': arrays nested deeper than " +
                       std::to_string(kMaxArrayDepth) + " levels");
    if (static_cast<uint32_t>(a->type) > static_cast<uint32_t>(ValueType::Float64))
      fail(target, "metadata key '" + printable_name(key) + "': an array of unknown " +
                       value_type_name(a->type));
    put<uint32_t>(out, static_cast<uint32_t>(a->type));
    put<uint64_t>(out, a->items.size());
    for (size_t i = 0; i < a->items.size(); ++i) {
      const Value& item = a->items[i];
      if (item.type() != a->type)
        fail(target, "metadata key '" + printable_name(key) + "': item " + std::to_string(i) +
                         " of an array of " + value_type_name(a->type) + " is of type " +
                         item.describe());
      put_value(out, item, target, key, depth + 1);
    }
    return;
  }
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          put_string(out, x);
        else if constexpr (std::is_same_v<T, bool>)
          put<uint8_t>(out, x ? 1 : 0);
        else if constexpr (!std::is_same_v<T, Array>)
          put<T>(out, x);
      },
      v.variant());
}

void put_metadata(std::string& out, const std::vector<KeyValue>& metadata,
                  const std::string& target) {
  std::unordered_set<std::string> seen;
  for (const KeyValue& kv : metadata) {
    if (kv.key.empty()) fail(target, "a metadata key may not be empty");
    if (!seen.insert(kv.key).second)
      fail(target, "metadata key '" + printable_name(kv.key) + "' is given twice");
    put_string(out, kv.key);
    put<uint32_t>(out, static_cast<uint32_t>(kv.value.type()));
    put_value(out, kv.value, target, kv.key, 0);
  }
}

uint64_t padded(uint64_t n, uint32_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// The tensor infos, each tensor checked: offsets packed in the order given, each padded.
void put_tensor_infos(std::string& out, const std::vector<TensorToWrite>& tensors,
                      uint32_t alignment, const std::string& target) {
  std::unordered_set<std::string> seen;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    if (t.name.empty()) fail(target, "a tensor name may not be empty");
    const std::string what = "tensor '" + printable_name(t.name) + "'";
    if (t.name.size() > kMaxTensorNameBytes)
      fail(target, what + ": the name is " + std::to_string(t.name.size()) +
                       " bytes long; GGUF allows at most " + std::to_string(kMaxTensorNameBytes));
    if (!seen.insert(t.name).second) fail(target, what + " is given twice");
    uint64_t bytes = 0;
    try {
      bytes = tensor_bytes(t.type, t.ne);
    } catch (const Error& e) {
      fail(target, what + ": " + e.what());
    }
    if (t.data.size() != bytes)
      fail(target, what + ": " + std::to_string(t.data.size()) + " bytes given, its type and " +
                       "dimensions take " + std::to_string(bytes));
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset += padded(bytes, alignment);
  }
}

// Everything before the data section, padded to the alignment.
std::string prefix(const std::vector<KeyValue>& metadata, const std::vector<TensorToWrite>& tensors,
                   const std::string& target) {
  const uint32_t alignment = alignment_of(metadata, target);
  std::string out = "GGUF";
  put<uint32_t>(out, kWrittenVersion);
  put<uint64_t>(out, tensors.size());
  put<uint64_t>(out, metadata.size());
  put_metadata(out, metadata, target);
  put_tensor_infos(out, tensors, alignment, target);
  out.append(padded(out.size(), alignment) - out.size(), '\0');
  return out;
}

// The tensors' bytes, each followed by zeros to the alignment, through `sink(data, size)`.
template <class Sink>
void put_data(const std::vector<TensorToWrite>& tensors, uint32_t alignment, Sink&& sink) {
  const std::string zeros(alignment, '\0');
  for (const TensorToWrite& t : tensors) {
    sink(t.data.data(), t.data.size());
    sink(zeros.data(), static_cast<size_t>(padded(t.data.size(), alignment) - t.data.size()));
  }
}

}  // namespace

std::string write_bytes(const std::vector<KeyValue>& metadata,
                        const std::vector<TensorToWrite>& tensors) {
  std::string out = prefix(metadata, tensors, "<memory>");
  put_data(tensors, alignment_of(metadata, "<memory>"),
           [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  return out;
}

void write(const std::string& path, const std::vector<KeyValue>& metadata,
           const std::vector<TensorToWrite>& tensors) {
  const std::string head = prefix(metadata, tensors, path);  // every check before any file work
  io::write_atomically(path, [&](const io::Sink& sink) {
    sink(head.data(), head.size());
    put_data(tensors, alignment_of(metadata, path), sink);
  });
}

}  // namespace wick::gguf
