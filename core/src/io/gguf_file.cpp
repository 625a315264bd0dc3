// gguf_file.cpp — a GGUF file opened from a path (MappedFile, kept alive by every copy of the
// GgufFile) and its plain tensors copied into Wick tensors. The parser is gguf.cpp.
#include <wick/gguf.hpp>

#include <wick/mapped_file.hpp>
#include <wick/safetensors.hpp>

namespace wick::gguf {

using safetensors::printable_name;

GgufFile::GgufFile(const std::string& path) {
  auto mapping = std::make_shared<const MappedFile>(path);
  try {
    *this = parse(mapping->data(), mapping->size(), path);
  } catch (const Error&) {
    // An error caused by the file shrinking under the parse (zeros read) says so instead.
    mapping->check_intact("reading its header");
    throw;
  }
  mapping->check_intact("reading its header");
  mapping_ = std::move(mapping);
}

Tensor GgufFile::to_tensor(const TensorInfo& info, const Device& device) const {
  const std::string what = "tensor '" + printable_name(info.name) + "'";
  const std::optional<DType> dtype = wick_dtype(info.type);
  if (!dtype) {
    const std::optional<sdk::ggml::TypeTraits> t =
        sdk::ggml::type_traits(static_cast<uint32_t>(info.type));
    throw Error(source_ + ": " + what + " is of ggml type " +
                (t ? std::string(t->name) : std::to_string(static_cast<uint32_t>(info.type))) +
                ", a quantized type Wick has no dtype for (yet): tensor_data() gives its blocks");
  }
  const std::span<const uint8_t> bytes = tensor_data(info);
  Tensor t;
  try {
    t = Tensor::from_bytes(bytes.data(), bytes.size(), info.shape(), *dtype, device);
  } catch (const Error& e) {
    if (mapping_) mapping_->check_intact("copying " + what);
    throw Error(source_ + ": " + what + ": " + e.what());
  }
  if (mapping_) mapping_->check_intact("copying " + what);
  return t;
}

}  // namespace wick::gguf
