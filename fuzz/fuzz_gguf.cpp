// libFuzzer entry: wick::gguf::parse on arbitrary bytes. It must return a validated file or throw
// wick::Error; anything else (a crash, a sanitizer report, another exception) is a bug. A file
// that parses is also written back (write_bytes) and parsed again: the writer must take whatever
// the reader accepts, the rewritten file must parse to the same metadata, and writing it once
// more must give the same bytes (the layout depends on the content alone).
#include <wick/gguf.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

std::vector<wick::gguf::TensorToWrite> tensors_of(const wick::gguf::GgufFile& f,
                                                  const uint8_t* data, size_t size) {
  std::vector<wick::gguf::TensorToWrite> out;
  for (const wick::gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_data(t);
    // What a load would read must lie inside the input.
    if (bytes.size() > size || bytes.data() < data || bytes.data() > data + (size - bytes.size()))
      __builtin_trap();
    out.push_back({t.name, t.type, t.ne, bytes});
  }
  return out;
}

// Values compared by their bytes, so that a NaN equals itself.
bool same_bytes(const wick::gguf::GgufFile& a, const wick::gguf::GgufFile& b) {
  const auto bytes = [](const wick::gguf::GgufFile& f) {
    return wick::gguf::write_bytes(f.metadata(), {});
  };
  return bytes(a) == bytes(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<wick::gguf::GgufFile> f;
  try {
    f.emplace(wick::gguf::parse(data, size, "fuzz"));
  } catch (const wick::Error&) {
    return 0;
  }
  const std::vector<wick::gguf::TensorToWrite> tensors = tensors_of(*f, data, size);
  std::string once;
  try {
    once = wick::gguf::write_bytes(f->metadata(), tensors);
  } catch (const wick::Error&) {
    __builtin_trap();  // the writer refused what the reader accepted
  }
  const auto* p = reinterpret_cast<const uint8_t*>(once.data());
  const wick::gguf::GgufFile again = wick::gguf::parse(p, once.size(), "rewritten");
  if (again.tensors().size() != tensors.size() || !same_bytes(*f, again)) __builtin_trap();
  if (wick::gguf::write_bytes(again.metadata(), tensors_of(again, p, once.size())) != once)
    __builtin_trap();
  return 0;
}
