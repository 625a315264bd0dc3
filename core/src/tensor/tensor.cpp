// tensor.cpp — wick::Tensor itself: construction, host access, metadata, views and
// materialisation. The ops live with their families (ops_*.cpp), built from ops_common.hpp.
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <wick/dispatch.hpp>
#include "tensor/autograd_rules.hpp"
#include "tensor/ops_common.hpp"
#include <wick/shape.hpp>
#include "tensor/storage.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

namespace wick {

namespace {

Device resolve(const Device& d) {
  return d.valid() ? d : Runtime::global().default_device();
}

}  // namespace

using namespace detail;

// ---- construction -------------------------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape,
               std::vector<int64_t> strides, int64_t offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset) {}

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  for (int64_t d : shape) {
    if (d < 0) throw Error("empty: negative extent in shape " + shape_to_string(shape));
  }
  const uint64_t bytes = bytes_of(shape, dtype);
  return Tensor(Storage::allocate(resolve(device), bytes), dtype, shape, contiguous_strides(shape),
                0);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, const Device& device) {
  Tensor out = empty(shape, dtype, device);
  wick_fill_params p{};
  p.struct_size = sizeof(p);
  p.float_value = value;
  // Integer fills take the value truncated toward zero, a finite value saturated at int64's range
  // (a float fill of -3.4e38, an additive mask's lowest value, must not convert out of range);
  // NaN and infinities give 0. Float fills read float_value only.
  constexpr double kTwo63 = 9223372036854775808.0;
  p.int_value = !std::isfinite(value) ? 0
                : value >= kTwo63   ? std::numeric_limits<int64_t>::max()
                : value < -kTwo63   ? std::numeric_limits<int64_t>::min()
                                    : static_cast<int64_t>(std::trunc(value));
  if (out.numel() > 0) dispatch(WICK_OP_FILL, &p, {}, {out});
  return out;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, const Device& device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, const Device& device) {
  return full(shape, 1.0, dtype, device);
}

Tensor Tensor::from_bytes(const void* data, size_t bytes, const Shape& shape, DType dtype,
                          const Device& device) {
  const size_t expected = static_cast<size_t>(bytes_of(shape, dtype));
  if (bytes != expected) {
    throw Error("from_vector: shape " + shape_to_string(shape) + " of " + dtype_name(dtype) +
                " needs " + std::to_string(expected / dtype_size(dtype)) + " elements, got " +
                std::to_string(bytes / dtype_size(dtype)));
  }
  Tensor out = empty(shape, dtype, device);
  if (bytes > 0) out.storage_->write(0, data, bytes);
  return out;
}

Tensor Tensor::from_host_memory(std::shared_ptr<const void> owner, const void* data, size_t bytes,
                                const Shape& shape, DType dtype, const Device& device) {
  const Device d = resolve(device);
  const size_t expected = static_cast<size_t>(bytes_of(shape, dtype));
  if (bytes == expected && bytes > 0) {
    if (auto s = Storage::wrap(d, data, bytes, dtype_size(dtype), Storage::Access::Unchanged,
                               std::move(owner)))
      return Tensor(std::move(s), dtype, shape, contiguous_strides(shape), 0);
  }
  return from_bytes(data, bytes, shape, dtype, d);
}

namespace {

// The smallest and largest element offsets of a view of caller memory with these strides,
// checked: an extent times a stride beyond int64 is an error, not a wrapped span.
std::pair<int64_t, int64_t> checked_span(const Shape& shape, const std::vector<int64_t>& strides,
                                         size_t element_size) {
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t reach = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach) ||
        __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
      throw Error("from_host_memory: shape " + shape_to_string(shape) + " with strides " +
                  shape_to_string(strides) + " reaches beyond 2^63 elements");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(hi - lo + 1, static_cast<int64_t>(element_size), &bytes))
    throw Error("from_host_memory: shape " + shape_to_string(shape) + " with strides " +
                shape_to_string(strides) + " spans beyond 2^63 bytes");
  return {lo, hi};
}

}  // namespace

Tensor Tensor::from_host_memory(std::shared_ptr<const void> owner, void* data, const Shape& shape,
                                DType dtype, const Device& device, const HostMemoryOptions& options) {
  const Device d = resolve(device);
  const std::vector<int64_t> strides =
      options.strides.empty() ? contiguous_strides(shape) : options.strides;
  if (strides.size() != shape.size())
    throw Error("from_host_memory: " + std::to_string(strides.size()) + " strides for shape " +
                shape_to_string(shape));
  if (numel_of(shape) == 0) return empty(shape, dtype, d);  // also checks the extents
  const size_t esize = dtype_size(dtype);
  const auto [lo, hi] = checked_span(shape, strides, esize);
  // The buffer is the span the view touches; the view starts -lo elements into it.
  const auto* first = static_cast<const unsigned char*>(data) + lo * static_cast<int64_t>(esize);
  const uint64_t bytes = static_cast<uint64_t>(hi - lo + 1) * esize;
  const auto access = options.writable ? Storage::Access::Writable : Storage::Access::Shared;
  if (auto s = Storage::wrap(d, first, bytes, esize, access, std::move(owner)))
    return Tensor(std::move(s), dtype, shape, strides, -lo);
  // A copy of the span (as to() moves one), made C-order on the device.
  auto s = Storage::allocate(d, bytes);
  s->write(0, first, bytes);
  Tensor copy(std::move(s), dtype, shape, strides, -lo);
  return copy.is_contiguous() && lo == 0 ? copy : copy.clone();
}

bool Tensor::is_read_only() const {
  return storage_ && storage_->read_only;
}

bool Tensor::is_host_view() const {
  return storage_ && storage_->host_view;
}

void* Tensor::host_data() const {
  if (!storage_) return nullptr;
  auto* base = static_cast<unsigned char*>(storage_->host_address());
  return base == nullptr ? nullptr : base + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

std::optional<NativeMemory> Tensor::native_memory() const {
  if (!storage_) return std::nullopt;
  std::optional<NativeMemory> m = storage_->native_memory();
  if (m) m->data = static_cast<unsigned char*>(m->data) + offset_ * int64_t(dtype_size(dtype_));
  return m;
}

// ---- host access --------------------------------------------------------------------------------

void Tensor::check_host_type(DType requested, const char* what) const {
  require_defined(*this, what);
  if (requested != dtype_) {
    throw Error(std::string(what) + "<" + dtype_name(requested) + ">: the tensor's dtype is " +
                dtype_name(dtype_) + "; convert it first with .to(DType::...)");
  }
}

void Tensor::copy_to_host(void* dst, size_t bytes) const {
  require_defined(*this, "copy_to_host");
  const size_t expected = static_cast<size_t>(numel()) * dtype_size(dtype_);
  if (bytes != expected) {
    throw Error("copy_to_host: destination has " + std::to_string(bytes) + " bytes, the tensor " +
                std::to_string(expected));
  }
  if (bytes == 0) return;
  if (!is_contiguous()) return contiguous().copy_to_host(dst, bytes);
  storage_->read(static_cast<uint64_t>(offset_) * dtype_size(dtype_), dst, bytes);
}

// ---- metadata -----------------------------------------------------------------------------------

int64_t Tensor::numel() const {
  return numel_of(shape_);
}

int64_t Tensor::dim(int axis) const {
  return shape_[static_cast<size_t>(normalize_axis(axis, rank(), "dim"))];
}

Device Tensor::device() const {
  return storage_ ? storage_->device : Device();
}

bool Tensor::is_contiguous() const {
  // An empty tensor is contiguous whatever its other extents (whose product may exceed int64: the
  // element count of a non-empty tensor was checked when it was made).
  if (std::find(shape_.begin(), shape_.end(), 0) != shape_.end()) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor" << shape_to_string(shape_) << " " << dtype_name(dtype_) << " on "
     << device().name();
  if (numel() > 64) return os.str();
  std::vector<unsigned char> host(static_cast<size_t>(numel()) * dtype_size(dtype_));
  copy_to_host(host.data(), host.size());
  std::vector<double> values(static_cast<size_t>(numel()));
  sdk::visit_dtype(to_c(dtype_), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = reinterpret_cast<const T*>(host.data());
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(p[i]);
  });
  // Nested brackets in C order.
  size_t next = 0;
  std::function<void(size_t)> emit = [&](size_t axis) {
    if (axis == shape_.size()) {
      os << values[next++];
      return;
    }
    os << "[";
    for (int64_t i = 0; i < shape_[axis]; ++i) {
      if (i) os << ", ";
      emit(axis + 1);
    }
    os << "]";
  };
  os << " ";
  emit(0);
  return os.str();
}

// ---- views --------------------------------------------------------------------------------------

Tensor Tensor::view(Shape shape, std::vector<int64_t> strides, int64_t offset) const {
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset);
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (grad::needs(*this)) return grad::reshape(*this, shape);
  require_defined(*this, "reshape");
  Shape target = shape;
  int infer = -1;
  int64_t known = 1;
  const bool empty = std::find(target.begin(), target.end(), 0) != target.end();
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) throw Error("reshape: more than one -1 in " + shape_to_string(shape));
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      throw Error("reshape: negative extent in " + shape_to_string(shape));
    } else if (empty) {
      known = 0;  // other extents may multiply past int64: an empty shape holds no element
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      throw Error("reshape: " + shape_to_string(shape) + " has more than 2^63 - 1 elements");
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0) {
      throw Error("reshape: cannot infer -1 in " + shape_to_string(shape) + " for " +
                  std::to_string(numel()) + " elements");
    }
    target[static_cast<size_t>(infer)] = numel() / known;
  }
  if (numel_of(target) != numel()) {
    throw Error("reshape: cannot reshape " + shape_to_string(shape_) + " (" +
                std::to_string(numel()) + " elements) into " + shape_to_string(target) + " (" +
                std::to_string(numel_of(target)) + " elements)");
  }
  if (target == shape_) return *this;  // the same shape is a view of any layout, never a copy
  if (!is_contiguous()) return contiguous().reshape(target);
  return view(target, contiguous_strides(target), offset_);
}

Tensor Tensor::permute(const std::vector<int>& axes) const {
  if (grad::needs(*this)) return grad::permute(*this, axes);
  require_defined(*this, "permute");
  if (static_cast<int>(axes.size()) != rank()) {
    throw Error("permute: " + std::to_string(axes.size()) + " axes given for a tensor of rank " +
                std::to_string(rank()));
  }
  Shape shape(axes.size());
  std::vector<int64_t> strides(axes.size());
  std::vector<bool> seen(axes.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = normalize_axis(axes[i], rank(), "permute");
    if (seen[static_cast<size_t>(a)])
      throw Error("permute: axis " + std::to_string(axes[i]) + " repeats");
    seen[static_cast<size_t>(a)] = true;
    shape[i] = shape_[static_cast<size_t>(a)];
    strides[i] = strides_[static_cast<size_t>(a)];
  }
  return view(shape, strides, offset_);
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> axes(static_cast<size_t>(rank()));
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[static_cast<size_t>(normalize_axis(a, rank(), "transpose"))],
            axes[static_cast<size_t>(normalize_axis(b, rank(), "transpose"))]);
  return permute(axes);
}

Tensor Tensor::t() const {
  if (rank() < 2)
    throw Error("t: needs rank >= 2, got a tensor of shape " + shape_to_string(shape_));
  return transpose(-2, -1);
}

Tensor Tensor::broadcast_to(const Shape& shape) const {
  if (grad::needs(*this)) return grad::broadcast_to(*this, shape);
  require_defined(*this, "broadcast_to");
  if (shape == shape_) return *this;
  if (shape.size() < shape_.size()) {
    throw Error("broadcast_to: cannot broadcast " + shape_to_string(shape_) +
                " to the lower rank " + shape_to_string(shape));
  }
  const size_t lead = shape.size() - shape_.size();
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    const int64_t from = shape_[i], to = shape[lead + i];
    if (from == to) {
      strides[lead + i] = strides_[i];
    } else if (from != 1) {
      throw Error("broadcast_to: cannot broadcast " + shape_to_string(shape_) + " to " +
                  shape_to_string(shape) + " (axis " + std::to_string(i) + ": " +
                  std::to_string(from) + " vs " + std::to_string(to) + ")");
    }
  }
  return view(shape, strides, offset_);
}

Tensor Tensor::slice(int axis, std::optional<int64_t> start, std::optional<int64_t> stop,
                     int64_t step) const {
  if (grad::needs(*this)) return grad::slice(*this, axis, start, stop, step);
  require_defined(*this, "slice");
  const int a = normalize_axis(axis, rank(), "slice");
  if (step == 0) throw Error("slice: step must not be zero");
  const int64_t n = shape_[static_cast<size_t>(a)];
  // Python's slice.indices over the whole int64 range: a bound below -n or at or beyond n clamps
  // (v + n only for negative v, so it cannot overflow), the step is cut to -INT64_MAX as CPython
  // does (so that -step exists), and the length is formed from differences within [-1, n].
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
  auto bound = [&](std::optional<int64_t> v, int64_t lo, int64_t hi, int64_t natural) {
    return v ? clamp(*v < 0 ? *v + n : *v, lo, hi) : natural;
  };
  step = std::max(step, -std::numeric_limits<int64_t>::max());
  int64_t b, len;
  if (step > 0) {
    b = bound(start, 0, n, 0);
    const int64_t e = bound(stop, 0, n, n);
    len = e > b ? (e - b - 1) / step + 1 : 0;
  } else {
    b = bound(start, -1, n - 1, n - 1);
    const int64_t e = bound(stop, -1, n - 1, -1);
    len = b > e ? (b - e - 1) / -step + 1 : 0;
  }
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  const int64_t stride = strides_[static_cast<size_t>(a)];
  shape[static_cast<size_t>(a)] = len;
  // stride * step overflows only for a step past the axis (one element or none): the step then
  // never moves, and the stride is kept.
  int64_t stepped;
  if (__builtin_mul_overflow(stride, step, &stepped)) stepped = stride;
  strides[static_cast<size_t>(a)] = stepped;
  const int64_t offset = len > 0 ? offset_ + b * stride : offset_;
  return view(shape, strides, offset);
}

Tensor Tensor::narrow(int axis, int64_t start, int64_t length) const {
  require_defined(*this, "narrow");
  const int a = normalize_axis(axis, rank(), "narrow");
  const int64_t n = shape_[static_cast<size_t>(a)];
  const int64_t s = start < 0 ? start + n : start;
  if (s < 0 || s > n || length < 0 || length > n - s) {
    throw Error("narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                " do not fit axis " + std::to_string(axis) + " of extent " + std::to_string(n));
  }
  return slice(a, s, s + length, 1);
}

Tensor Tensor::flip(int axis) const {
  return slice(axis, std::nullopt, std::nullopt, -1);
}

Tensor Tensor::squeeze() const {
  if (grad::needs(*this)) return grad::squeeze(*this, std::nullopt);
  require_defined(*this, "squeeze");
  Shape shape;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] == 1) continue;
    shape.push_back(shape_[i]);
    strides.push_back(strides_[i]);
  }
  return view(shape, strides, offset_);
}

Tensor Tensor::squeeze(int axis) const {
  if (grad::needs(*this)) return grad::squeeze(*this, axis);
  require_defined(*this, "squeeze");
  const int a = normalize_axis(axis, rank(), "squeeze");
  if (shape_[static_cast<size_t>(a)] != 1) {
    throw Error("squeeze: axis " + std::to_string(axis) + " of " + shape_to_string(shape_) +
                " has extent " + std::to_string(shape_[static_cast<size_t>(a)]) + ", not 1");
  }
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  shape.erase(shape.begin() + a);
  strides.erase(strides.begin() + a);
  return view(shape, strides, offset_);
}

Tensor Tensor::unsqueeze(int axis) const {
  if (grad::needs(*this)) return grad::unsqueeze(*this, axis);
  require_defined(*this, "unsqueeze");
  const int a = normalize_axis(axis, rank() + 1, "unsqueeze");
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  const int64_t stride =
      a < rank() ? strides_[static_cast<size_t>(a)] * shape_[static_cast<size_t>(a)] : 1;
  shape.insert(shape.begin() + a, 1);
  strides.insert(strides.begin() + a, stride);
  return view(shape, strides, offset_);
}

// ---- materialisation ----------------------------------------------------------------------------

Tensor Tensor::contiguous() const {
  require_defined(*this, "contiguous");
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  if (grad::needs(*this)) return grad::clone(*this);
  require_defined(*this, "clone");
  Tensor out = empty(shape_, dtype_, device());
  if (numel() > 0) dispatch(WICK_OP_COPY, nullptr, {*this}, {out});
  return out;
}

Tensor Tensor::to(const Device& target) const {
  if (grad::needs(*this)) return grad::to_device(*this, target);
  require_defined(*this, "to");
  if (!target.valid()) throw Error("to: invalid target device");
  if (target == device()) return *this;
  if (numel() == 0) return empty(shape_, dtype_, target);
  // Move only the span of the buffer this view touches and keep the view's strides, so that no
  // device work is needed on either side (the source plugin may not even support copy).
  const auto [lo, hi] = element_span(shape_, strides_, offset_);
  const size_t esize = dtype_size(dtype_);
  std::vector<unsigned char> host(static_cast<size_t>(hi - lo + 1) * esize);
  storage_->read(static_cast<uint64_t>(lo) * esize, host.data(), host.size());
  auto storage = Storage::allocate(target, host.size());
  storage->write(0, host.data(), host.size());
  return Tensor(storage, dtype_, shape_, strides_, offset_ - lo);
}

Tensor Tensor::to(DType dtype) const {
  if (grad::needs(*this)) return grad::to_dtype(*this, dtype);
  require_defined(*this, "to");
  if (dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype, device());
  if (numel() > 0) dispatch(WICK_OP_CAST, nullptr, {*this}, {out});
  return out;
}

}  // namespace wick
