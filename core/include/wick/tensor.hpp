// wick/tensor.hpp — wick::Tensor: shared storage on a device, a dtype, a shape, strides and an
// offset. Views (reshape, permute, broadcast, slice, squeeze, ...) share storage and never reach a
// device; ops are dispatched through the device's plugin, or the CPU when it declines.
#pragma once

#include <wick/device.hpp>
#include <wick/error.hpp>
#include <wick/sdk/dtype.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace wick {

enum class DType : int {
  F32 = WICK_DTYPE_F32,
  F64 = WICK_DTYPE_F64,
  F16 = WICK_DTYPE_F16,
  BF16 = WICK_DTYPE_BF16,
  I8 = WICK_DTYPE_I8,
  U8 = WICK_DTYPE_U8,
  I16 = WICK_DTYPE_I16,
  I32 = WICK_DTYPE_I32,
  I64 = WICK_DTYPE_I64,
  U32 = WICK_DTYPE_U32,
  U64 = WICK_DTYPE_U64,
  Bool = WICK_DTYPE_BOOL
};

using f16 = sdk::f16;
using bf16 = sdk::bf16;
using Shape = std::vector<int64_t>;

inline wick_dtype to_c(DType t) { return static_cast<wick_dtype>(t); }
inline size_t dtype_size(DType t) { return sdk::dtype_size(to_c(t)); }
inline const char* dtype_name(DType t) { return sdk::dtype_name(to_c(t)); }
inline bool is_float(DType t) { return sdk::dtype_is_float(to_c(t)); }
// The dtype both operands are converted to before a binary op (docs/ops.md: type promotion).
DType promote_types(DType a, DType b);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, double>) return DType::F64;
  else if constexpr (std::is_same_v<T, f16>) return DType::F16;
  else if constexpr (std::is_same_v<T, bf16>) return DType::BF16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::U32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::U64;
  else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else static_assert(sizeof(T) == 0, "no Wick dtype for this C++ type");
}

struct Storage;  // a device buffer and the device it lives on

class Tensor {
 public:
  Tensor() = default;

  // ---- creation (device: an invalid Device means Runtime::global().default_device()) ----------
  static Tensor empty(const Shape& shape, DType dtype, const Device& device = {});
  static Tensor full(const Shape& shape, double value, DType dtype, const Device& device = {});
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, const Device& device = {});
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, const Device& device = {});
  // Copies host bytes (C order, shape's element count) to a new tensor.
  static Tensor from_bytes(const void* data, size_t bytes, const Shape& shape, DType dtype,
                           const Device& device = {});
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, const Shape& shape, const Device& device = {}) {
    return from_bytes(data.data(), data.size() * sizeof(T), shape, dtype_of<T>(), device);
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, const Device& device = {}) {
    return from_vector(data, Shape{static_cast<int64_t>(data.size())}, device);
  }
  template <class T>
  static Tensor scalar(T value, const Device& device = {}) {
    return from_bytes(&value, sizeof(T), Shape{}, dtype_of<T>(), device);
  }

  // ---- back to the host ------------------------------------------------------------------------
  // Copies the elements, in C order, to `dst` (bytes must equal numel * dtype size).
  void copy_to_host(void* dst, size_t bytes) const;
  template <class T>
  std::vector<T> to_vector() const {
    check_host_type(dtype_of<T>(), "to_vector");
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> raw(static_cast<size_t>(numel()));
      copy_to_host(raw.data(), raw.size());
      return std::vector<bool>(raw.begin(), raw.end());
    } else {
      std::vector<T> out(static_cast<size_t>(numel()));
      copy_to_host(out.data(), out.size() * sizeof(T));
      return out;
    }
  }
  template <class T>
  T item() const {
    if (numel() != 1) throw Error("item: tensor has " + std::to_string(numel()) + " elements, not 1");
    return to_vector<T>()[0];
  }

  // ---- metadata --------------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int64_t offset() const { return offset_; }                        // in elements
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  int64_t dim(int axis) const;  // negative axes count from the end
  Device device() const;
  bool is_contiguous() const;
  std::string to_string() const;  // shape, dtype, device and (for small tensors) the values

  // ---- views: share storage, no device work ----------------------------------------------------
  Tensor reshape(const Shape& shape) const;  // one -1 is inferred; copies when not viewable
  Tensor permute(const std::vector<int>& axes) const;
  Tensor transpose(int a, int b) const;
  Tensor t() const;  // transpose of the last two axes
  Tensor broadcast_to(const Shape& shape) const;
  // Python-style slice of one axis: negative indices count from the end, out-of-range bounds are
  // clamped, a negative step walks backwards (a negative stride). nullopt = the natural end.
  Tensor slice(int axis, std::optional<int64_t> start, std::optional<int64_t> stop,
               int64_t step = 1) const;
  Tensor narrow(int axis, int64_t start, int64_t length) const;
  Tensor flip(int axis) const;
  Tensor squeeze() const;
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;

  // ---- materialisation -------------------------------------------------------------------------
  Tensor contiguous() const;  // itself when already contiguous, else a strided copy on its device
  Tensor clone() const;       // always a new contiguous copy
  Tensor to(const Device& device) const;
  Tensor to(DType dtype) const;

  // ---- math --------------------------------------------------------------------------------------
  Tensor add(const Tensor& other) const;
  Tensor sub(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  // [..., M, K] x [..., K, N] with NumPy batch broadcasting; 1-D operands as in numpy.matmul.
  Tensor matmul(const Tensor& other) const;
  Tensor sum(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor sum() const;  // over every axis

  // Internals for the core.
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, std::vector<int64_t> strides,
         int64_t offset);

 private:
  void check_host_type(DType requested, const char* what) const;
  Tensor view(Shape shape, std::vector<int64_t> strides, int64_t offset) const;

  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);

std::string shape_to_string(const Shape& shape);  // "[2, 3]"

}  // namespace wick
