// gguf_file.cpp — a GGUF file opened from a path (MappedFile, kept alive by every copy of the
// GgufFile and by every tensor viewing it) and its tensors as Wick tensors: views of the mapping
// where the device's buffers are host memory and its plugin wraps them, copies elsewhere. The
// parser is gguf.cpp.
#include <wick/gguf.hpp>

#include <wick/mapped_file.hpp>
#include <wick/safetensors.hpp>

namespace wick::gguf {

using safetensors::printable_name;

// `bytes` of the file as a tensor on `device`: a view of the mapping when the device can wrap it
// (Tensor::from_host_memory; the mapping then lives as long as the tensor), else a copy whose
// bytes are checked against the file shrinking under it. A file that shrinks later, under a view,
// reads as zeros past its new end (MappedFile).
Tensor GgufFile::load(std::span<const uint8_t> bytes, const Shape& shape, DType dtype,
                      const Device& device, const std::string& what) const {
  Tensor t;
  try {
    t = mapping_ ? Tensor::from_host_memory(mapping_, bytes.data(), bytes.size(), shape, dtype, device)
                 : Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype, device);
  } catch (const Error& e) {
    if (mapping_) mapping_->check_intact("copying " + what);
    throw Error(source_ + ": " + what + ": " + e.what());
  }
  if (mapping_) mapping_->check_intact("copying " + what);
  return t;
}

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
                ", a quantized type: to_qtensor() gives its blocks");
  }
  return load(tensor_data(info), info.shape(), *dtype, device, what);
}

quant::QTensor GgufFile::to_qtensor(const TensorInfo& info, const Device& device) const {
  const std::string what = "tensor '" + printable_name(info.name) + "'";
  const std::optional<sdk::ggml::TypeTraits> t = sdk::ggml::type_traits(static_cast<uint32_t>(info.type));
  if (!t || !t->quantized || !quant::has_reference(info.type)) {
    throw Error(source_ + ": " + what + " is of ggml type " + sdk::ggml::type_name(info.type) +
                (t && !t->quantized ? ", not a quantized type: to_tensor() reads it"
                                    : ", which the quantized ops do not take (yet)"));
  }
  const Shape shape = info.shape();
  if (shape.empty()) throw Error(source_ + ": " + what + " has no dimensions");
  Shape stored = shape;
  stored.back() = stored.back() / t->block_size * t->type_size;
  return quant::QTensor(load(tensor_data(info), stored, DType::U8, device, what), info.type, shape);
}

}  // namespace wick::gguf
