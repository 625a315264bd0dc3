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
#include <utility>
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
// Writes v as one element of dtype t at dst (f16/bf16 through f32, rounding to nearest-even;
// integers truncate toward zero, NaN is 0, values beyond the type saturate, except that a negative
// value for an unsigned type wraps as its int64 would).
void store_value(DType t, double v, unsigned char* dst);
// A double as an int64: truncated toward zero, saturated at the int64 range, NaN 0 (a params
// struct's integer field must be defined whatever the double).
int64_t saturating_i64(double v);
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

// How Tensor::from_host_memory's second form views the caller's memory (ABI 1.7).
struct HostMemoryOptions {
  // The element strides of the memory (in elements, one per axis, any sign: a negative one walks
  // back from `data`, which holds element [0, ..., 0]); empty: C order.
  std::vector<int64_t> strides;
  // Wick may write into the tensor (copy_, an in-place op, an optimizer's step): into the caller's
  // memory where the tensor views it (is_host_view()), else into its copy.
  bool writable = false;
};

// A tensor's memory as its device's own API names it (Tensor::native_memory, ABI 1.8), for a
// library that works on device memory itself (NCCL in the distributed layer).
struct NativeMemory {
  static constexpr int kCuda = 2;  // DLPack's kDLCUDA: `data` a CUdeviceptr, `queue` a cudaStream_t
  int kind = 0;                    // DLPack's device type
  int device_ordinal = 0;          // the device in its API's numbering
  void* data = nullptr;            // the tensor's first element (storage + offset() elements)
  void* queue = nullptr;           // the in-order queue the tensor's work runs on
};

struct Storage;       // a device buffer and the device it lives on
struct AutogradMeta;  // requires_grad, the gradient and the op that made a tensor (autograd.cpp)

class Tensor {
 public:
  // Undefined until assigned. (No default member initialisers: methods below take Tensor default
  // arguments, which need the class complete.)
  Tensor() : dtype_(DType::F32), offset_(0) {}

  // ---- creation (device: an invalid Device means Runtime::global().default_device()) ----------
  static Tensor empty(const Shape& shape, DType dtype, const Device& device = {});
  static Tensor full(const Shape& shape, double value, DType dtype, const Device& device = {});
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, const Device& device = {});
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, const Device& device = {});
  // Copies host bytes (C order, shape's element count) to a new tensor.
  static Tensor from_bytes(const void* data, size_t bytes, const Shape& shape, DType dtype,
                           const Device& device = {});
  // A tensor over host memory `owner` keeps alive (a mapped file), without a copy where the
  // device's buffers are host memory and its plugin wraps them (buffer_wrap_host, ABI 1.5): the
  // result is then read-only (an in-place write into it is an error) and `owner` lives as long as
  // it. Elsewhere it is from_bytes()'s copy. `data` must stay unchanged while viewed, and be
  // aligned to 32 bytes for a wrap (to the dtype's size for a plugin of minor 7; else it is
  // copied).
  static Tensor from_host_memory(std::shared_ptr<const void> owner, const void* data, size_t bytes,
                                 const Shape& shape, DType dtype, const Device& device = {});
  // A tensor over the caller's memory with any strides, shared with another library (a NumPy or
  // PyTorch array, DLPack): `owner` keeps `data` alive, and the elements lie at data + stride *
  // index * dtype_size. Without a copy (is_host_view()) where the device's plugin wraps host
  // memory and gives buffer addresses (ABI 1.7: cpu-onednn): `data` need then be aligned only to
  // the dtype's size, the caller may read and write the memory between Wick calls (Wick writes
  // there too when options.writable), and host_data() is its address. A plugin that gives no
  // addresses (minor 5 or 6, or without buffer_host_address) wraps only memory that is not
  // writable, aligned to 32 bytes below minor 7, and the memory must then stay unchanged while
  // viewed (the first form's rules; host_data() is nullptr there). Otherwise a C-order copy (not
  // is_host_view(): a snapshot, which a writable tensor's writes never reach; the caller decides
  // whether that will do). An error for a negative extent or a rank other than the strides'.
  // Writes through the memory are not seen by autograd's version counter (host_data()).
  static Tensor from_host_memory(std::shared_ptr<const void> owner, void* data, const Shape& shape,
                                 DType dtype, const Device& device, const HostMemoryOptions& options);
  // Whether the tensor views read-only memory (from_host_memory's wrap of a mapped file, or of
  // memory not asked to be writable).
  bool is_read_only() const;
  // Whether the tensor views its creator's host memory without a copy (either from_host_memory's
  // wrap), so that the creator's writes there reach it and its writes reach the creator.
  bool is_host_view() const;
  // The host address of this tensor's first element (its storage's address + offset() *
  // dtype_size()), after waiting for the work queued on its device, where the device gives
  // buffer addresses (buffer_host_address, ABI 1.7: cpu-onednn); nullptr elsewhere (another
  // device, an older plugin, an isolated plugin) and for an undefined tensor. Valid while this
  // tensor's storage lives; the elements lie at strides() from it. Read or write there only
  // between Wick calls that use the storage (Wick's later work is not waited for), never write a
  // read-only tensor's, and note that such writes bypass autograd's version counter: a backward
  // that saved the tensor cannot tell that it changed.
  void* host_data() const;
  // The tensor's memory as its device's API names it (buffer_native_memory, ABI 1.8: the cuda
  // plugin gives a device pointer and its stream), without waiting for anything; nullopt where the
  // device gives none (cpu-onednn, opencl, an older or isolated plugin) and for an undefined
  // tensor. Valid while the storage lives; the elements lie at strides() from `data`. Foreign work
  // must go on `queue` (it then runs after the work Wick queued on the tensor, and before Wick's
  // later work), and bypasses autograd's version counter as host_data()'s writes do.
  std::optional<NativeMemory> native_memory() const;
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
  // clamped, a negative step walks backwards (a negative stride). nullopt = the natural end. Any
  // int64 bounds and steps are taken (INT64_MIN as a step is -INT64_MAX, as in CPython).
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

  // ---- in-place write (core/src/tensor/in_place.cpp) ---------------------------------------------
  // Writes src into this tensor's own elements, whatever its strides and offset: a view (narrow,
  // slice with a step, transpose, permute) writes through to the tensor it views, e.g. one position
  // of a KV cache, cache.narrow(2, pos, 1).copy_(k_new), which moves only that position. src is
  // broadcast to this shape, converted to this dtype and moved to this device first; a src that
  // shares memory with the target is read whole before anything is written. Refused with a
  // wick::Error (naming the shapes) when: either is undefined; src does not broadcast; the target
  // has elements that may share one memory location (a broadcast or expanded view); grad mode is on
  // and the target requires grad (a write records no history: do it under
  // autograd::NoGradGuard) or src requires grad (its gradient would be lost: detach() it). The
  // write gives the storage a new version, so a recorded backward that saved the old contents
  // (of any view of this storage) throws naming its op rather than using the new ones. Returns
  // *this.
  Tensor& copy_(const Tensor& src);

  // ---- whole-tensor statistics (core/src/tensor/stats.cpp) ---------------------------------------
  // Over every element, computed on the tensor's device by its plugin (only a scalar per statistic
  // comes back to the host). NaN elements are skipped by min_all, max_all, mean_all and std_all
  // (they describe the other elements; count_nan says how many were skipped); +-inf take part as
  // values. Each is NaN when no element is left (an empty tensor, or every element NaN). std_all is
  // the population standard deviation (divides by n - ddof, n the non-NaN count; NaN when
  // n <= ddof). Floats are computed in their dtype (f16 and bf16 in f32), integers and bool
  // (0/1) in f64. Integers and bool have no NaN or Inf (count 0, no device work).
  double min_all() const;
  double max_all() const;
  double mean_all() const;
  double std_all(int64_t ddof = 0) const;
  int64_t count_nan() const;
  int64_t count_inf() const;
  // One line: "f32 [2, 3] cpu-onednn:0 min -1 max 4 mean 1.5 std 1.70783 nan 0 inf 0"
  // (the statistics above; an empty tensor says "empty").
  std::string summary() const;

  // ---- creation from ops (core/src/tensor/ops_elementwise.cpp) ----------------------------------
  // [start, stop) with step, like numpy.arange.
  static Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::F32,
                       const Device& device = {});
  // start + step * (index along axis), or the C-order flat index when axis == -1.
  static Tensor iota(const Shape& shape, int axis, DType dtype = DType::F32, const Device& device = {});
  // Counter-based random numbers: the same seed gives the same values on every device. Without a
  // seed, the process generator (manual_seed) is used and advanced by numel.
  static Tensor rand(const Shape& shape, double lo = 0.0, double hi = 1.0, DType dtype = DType::F32,
                     const Device& device = {}, std::optional<uint64_t> seed = std::nullopt);
  static Tensor randn(const Shape& shape, double mean = 0.0, double std = 1.0,
                      DType dtype = DType::F32, const Device& device = {},
                      std::optional<uint64_t> seed = std::nullopt);

  // ---- unary elementwise (core/src/tensor/ops_elementwise.cpp) ----------------------------------
  Tensor neg() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor recip() const;
  Tensor sqr() const;
  Tensor tanh() const;
  Tensor erf() const;
  Tensor sigmoid() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor expm1() const;
  Tensor log1p() const;
  Tensor cbrt() const;
  Tensor erfc() const;
  Tensor erfinv() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round(bool half_to_even = false) const;  // default: half away from zero
  Tensor relu() const;
  Tensor gelu() const;  // tanh approximation
  Tensor gelu_erf() const;
  Tensor silu() const;
  Tensor elu(double alpha = 1.0) const;
  Tensor affine(double mul, double add) const;  // x * mul + add
  Tensor powf(double exponent) const;
  Tensor isnan() const;  // -> bool
  Tensor isinf() const;  // -> bool
  Tensor logical_not() const;
  Tensor bitwise_not() const;
  Tensor popcount() const;
  Tensor clz() const;
  Tensor clamp(double lo, double hi) const;

  // ---- binary elementwise, NumPy broadcasting (tensor.cpp, core/src/tensor/ops_elementwise.cpp) -
  Tensor add(const Tensor& other) const;
  Tensor sub(const Tensor& other) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor pow(const Tensor& other) const;
  Tensor rem(const Tensor& other) const;  // sign of the dividend, like C fmod
  Tensor atan2(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;  // comparisons -> bool
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor bitwise_and(const Tensor& other) const;
  Tensor bitwise_or(const Tensor& other) const;
  Tensor bitwise_xor(const Tensor& other) const;
  Tensor shl(const Tensor& other) const;
  Tensor shr(const Tensor& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_xor(const Tensor& other) const;
  // cond ? a : b, all three broadcast together; cond must be bool.
  static Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

  // Any unary, binary or comparison op of the op table (wick/wick_ops.h) by its code, with the
  // table's dtype rules: an op is computed in the operands' (promoted) dtype when the table defines
  // it for that dtype; float math on integers and bool is computed in f32; any other dtype is an
  // error naming the dtypes the op takes. Comparisons and predicates give bool. The named methods
  // are these plus each op's conveniences (abs of bool is the identity, floor of an integer too).
  Tensor apply(wick_op_code op, const wick_unary_params* params = nullptr) const;
  Tensor apply(wick_op_code op, const Tensor& other) const;

  // ---- linear algebra ----------------------------------------------------------------------------
  // [..., M, K] x [..., K, N] with NumPy batch broadcasting; 1-D operands as in numpy.matmul.
  Tensor matmul(const Tensor& other) const;

  // ---- reductions and scans (tensor.cpp, core/src/tensor/ops_reduce.cpp) -------------------------
  Tensor sum(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor sum() const;  // over every axis
  Tensor prod(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor max(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor min(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor mean(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor all(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor any(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor argmax(int axis, bool keepdim = false, bool last = false) const;  // -> i64
  Tensor argmin(int axis, bool keepdim = false, bool last = false) const;  // -> i64
  Tensor cumsum(int axis, bool reverse = false, bool exclusive = false) const;
  Tensor cumprod(int axis, bool reverse = false, bool exclusive = false) const;
  Tensor cummax(int axis, bool reverse = false) const;
  Tensor cummin(int axis, bool reverse = false) const;

  // ---- indexing and sorting (core/src/tensor/ops_index.cpp) ---------------------------------------
  Tensor index_select(const Tensor& ids, int axis) const;
  // A copy of this tensor with out[ids[i]] (along axis) combined with src[i] by mode
  // ("set", "add", "mul", "max", "min").
  Tensor index_reduce(int axis, const Tensor& ids, const Tensor& src, const std::string& mode) const;
  Tensor index_add(int axis, const Tensor& ids, const Tensor& src) const;
  Tensor gather(int axis, const Tensor& ids) const;
  Tensor scatter(int axis, const Tensor& ids, const Tensor& src, const std::string& mode = "set") const;
  // (values, indices as i64).
  std::pair<Tensor, Tensor> sort(int axis = -1, bool descending = false, bool stable = true) const;
  Tensor argsort(int axis = -1, bool descending = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int axis = -1, bool largest = true) const;
  static Tensor cat(const std::vector<Tensor>& tensors, int axis);
  static Tensor stack(const std::vector<Tensor>& tensors, int axis);

  // ---- neural-network ops (core/src/tensor/ops_nn.cpp) ---------------------------------------------
  // N-d convolution: input [N, C, spatial...], weight [O, C / groups, kernel...].
  Tensor conv(const Tensor& weight, const std::vector<int64_t>& strides = {},
              const std::vector<int64_t>& padding = {}, const std::vector<int64_t>& dilations = {},
              int64_t groups = 1) const;
  // conv(weight, ...) + bias (shape [O], one value per output channel), then max(0, y) when relu:
  // one fused op where the device has it (cpu-onednn: a oneDNN convolution with bias and a ReLU
  // post-op), conv, add and relu otherwise (and under autograd).
  Tensor conv_bias(const Tensor& weight, const Tensor& bias, bool relu,
                   const std::vector<int64_t>& strides = {}, const std::vector<int64_t>& padding = {},
                   const std::vector<int64_t>& dilations = {}, int64_t groups = 1) const;
  // Window reductions over every axis ("sum", "prod", "max", "min"); padding as (lo, hi) pairs.
  Tensor window_reduce(const std::string& op, const std::vector<int64_t>& window,
                       const std::vector<int64_t>& strides = {},
                       const std::vector<std::pair<int64_t, int64_t>>& padding = {},
                       const std::vector<int64_t>& dilations = {}) const;
  // The select-and-scatter of max-pool backward: source values added where each window's max was.
  Tensor window_scatter(const std::string& op, const Tensor& source, const std::vector<int64_t>& window,
                        const std::vector<int64_t>& strides = {},
                        const std::vector<std::pair<int64_t, int64_t>>& padding = {}) const;
  Tensor max_pool2d(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride = {},
                    const std::vector<int64_t>& padding = {}) const;
  Tensor avg_pool2d(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride = {},
                    const std::vector<int64_t>& padding = {}, bool count_include_pad = false) const;
  Tensor softmax(int axis) const;
  Tensor log_softmax(int axis) const;
  // Normalises over the last normalized_rank axes; weight and bias may be undefined.
  Tensor layer_norm(int normalized_rank, const Tensor& weight = {}, const Tensor& bias = {},
                    double eps = 1e-5) const;
  Tensor rms_norm(const Tensor& weight = {}, double eps = 1e-6) const;
  Tensor batch_norm(const Tensor& mean, const Tensor& var, const Tensor& weight = {},
                    const Tensor& bias = {}, double eps = 1e-5) const;
  // softmax(q k^T * scale + mask) v; scale defaults to 1 / sqrt(E).
  static Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {},
                          std::optional<double> scale = std::nullopt, bool causal = false);

  // ---- autograd (core/src/tensor/autograd.cpp; wick/autograd.hpp has the no-grad scope) ---------
  // Ops on tensors that require grad record how they were computed; backward() walks that record
  // from this tensor and adds d(this)/d(leaf) into every leaf's grad(). Copies of a Tensor share
  // these attributes (they are one tensor); views and op results are new tensors.
  //
  // Marks this float tensor as a leaf whose gradient backward() accumulates (an error naming the
  // dtype for integers and bool). false on a leaf stops it; false on a non-leaf is an error.
  Tensor& set_requires_grad(bool requires_grad = true);
  bool requires_grad() const;
  // True for tensors no recorded op made: user tensors, and everything made without grad.
  bool is_leaf() const;
  // The accumulated gradient of a leaf (undefined before any backward reaches it); non-leaf
  // tensors keep none, as in PyTorch. It is stored as backward made it, without a copy: it may share
  // memory with another gradient or be a broadcast view, so read it (or replace it with set_grad),
  // never write into it.
  Tensor grad() const;
  void set_grad(const Tensor& grad);  // an undefined tensor clears it
  void zero_grad() { set_grad(Tensor()); }
  // The same storage, without history: it does not require grad.
  Tensor detach() const;
  // Back-propagates from this tensor. The seed (d loss / d this) defaults to 1 for a one-element
  // tensor; any other shape needs one of its own shape. The record is kept, so a second backward
  // adds again; it is freed with the tensors that hold it.
  void backward(const Tensor& seed = Tensor()) const;

  // Internals for the core.
  const std::shared_ptr<AutogradMeta>& autograd_meta() const { return meta_; }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> meta) { meta_ = std::move(meta); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, std::vector<int64_t> strides,
         int64_t offset);

 private:
  void check_host_type(DType requested, const char* what) const;
  Tensor view(Shape shape, std::vector<int64_t> strides, int64_t offset) const;

  std::shared_ptr<Storage> storage_;
  DType dtype_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_;
  std::shared_ptr<AutogradMeta> meta_;  // null unless autograd tracks this tensor
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
// A scalar operand takes the tensor's dtype (a float scalar with an integer tensor gives f32).
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// Seeds the process generator used by rand/randn without an explicit seed.
void manual_seed(uint64_t seed);

std::string shape_to_string(const Shape& shape);  // "[2, 3]"

}  // namespace wick
