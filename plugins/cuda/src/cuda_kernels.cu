// cuda_kernels.cu — the strided copy, fill and add kernels and their launchers.
//
// Every kernel walks out[0]'s elements in row-major order with a grid-stride loop and turns the
// linear index into one element offset per operand (strides of any sign, 0 for broadcast).
#include "cuda_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace wick::cuda {
namespace {

constexpr int kBlockSize = 256;
// At most this many blocks per launch (about a million threads, enough to fill an H200); the
// grid-stride loop covers larger tensors.
constexpr int64_t kMaxBlocks = 4096;

struct ElementOffsets {
  int64_t at[kMaxOperands];
};

__device__ ElementOffsets offsets_of(const StridedArgs& a, int64_t i) {
  ElementOffsets o;
  for (int k = 0; k < kMaxOperands; ++k) o.at[k] = a.offsets[k];
  for (int64_t d = a.rank - 1; d >= 0; --d) {
    const int64_t extent = a.shape[d];
    const int64_t index = i % extent;
    i /= extent;
    for (int k = 0; k < kMaxOperands; ++k) o.at[k] += index * a.strides[k][d];
  }
  return o;
}

__device__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t index_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <class T>
__global__ void copy_kernel(T* dst, const T* src, StridedArgs a) {
  for (int64_t i = first_index(); i < a.numel; i += index_step()) {
    const ElementOffsets o = offsets_of(a, i);
    dst[o.at[0]] = src[o.at[1]];
  }
}

template <class T>
__global__ void fill_kernel(T* dst, T value, StridedArgs a) {
  for (int64_t i = first_index(); i < a.numel; i += index_step()) dst[offsets_of(a, i).at[0]] = value;
}

__device__ float add_values(float x, float y) { return x + y; }
__device__ double add_values(double x, double y) { return x + y; }
// Signed overflow is undefined: add as unsigned to get the two's-complement wrap.
__device__ int32_t add_values(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
}
__device__ int64_t add_values(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
}
// Halves add in f32 and round once to nearest-even on store; f32 has more than 2p+2 bits of
// either half type, so rounding twice still gives the correctly rounded sum.
__device__ __half add_values(__half x, __half y) { return __float2half_rn(__half2float(x) + __half2float(y)); }
__device__ __nv_bfloat16 add_values(__nv_bfloat16 x, __nv_bfloat16 y) {
  return __float2bfloat16_rn(__bfloat162float(x) + __bfloat162float(y));
}

template <class T>
__global__ void add_kernel(T* out, const T* x, const T* y, StridedArgs a) {
  for (int64_t i = first_index(); i < a.numel; i += index_step()) {
    const ElementOffsets o = offsets_of(a, i);
    out[o.at[0]] = add_values(x[o.at[1]], y[o.at[2]]);
  }
}

unsigned blocks_for(int64_t numel) {
  return static_cast<unsigned>(std::min((numel + kBlockSize - 1) / kBlockSize, kMaxBlocks));
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<U>) with the unsigned integer type of the element size: copy and fill move bits.
template <class F>
cudaError_t with_bits_type(size_t element_size, F&& f) {
  switch (element_size) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    case 8: return f(Tag<uint64_t>{});
    default: return cudaErrorInvalidValue;
  }
}

template <class T>
cudaError_t add_as(void* out, const void* x, const void* y, const StridedArgs& args, cudaStream_t stream) {
  add_kernel<T><<<blocks_for(args.numel), kBlockSize, 0, stream>>>(
      static_cast<T*>(out), static_cast<const T*>(x), static_cast<const T*>(y), args);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_copy(size_t element_size, void* dst, const void* src, const StridedArgs& args,
                        cudaStream_t stream) {
  if (args.numel == 0) return cudaSuccess;
  return with_bits_type(element_size, [&](auto tag) {
    using T = typename decltype(tag)::type;
    copy_kernel<T><<<blocks_for(args.numel), kBlockSize, 0, stream>>>(static_cast<T*>(dst),
                                                                      static_cast<const T*>(src), args);
    return cudaGetLastError();
  });
}

cudaError_t launch_fill(size_t element_size, void* dst, const void* value, const StridedArgs& args,
                        cudaStream_t stream) {
  if (args.numel == 0) return cudaSuccess;
  return with_bits_type(element_size, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T bits;
    std::memcpy(&bits, value, sizeof(T));
    fill_kernel<T><<<blocks_for(args.numel), kBlockSize, 0, stream>>>(static_cast<T*>(dst), bits, args);
    return cudaGetLastError();
  });
}

cudaError_t launch_add(wick_dtype dtype, void* out, const void* x, const void* y, const StridedArgs& args,
                       cudaStream_t stream) {
  if (args.numel == 0) return cudaSuccess;
  switch (dtype) {
    case WICK_DTYPE_F32: return add_as<float>(out, x, y, args, stream);
    case WICK_DTYPE_F64: return add_as<double>(out, x, y, args, stream);
    case WICK_DTYPE_I32: return add_as<int32_t>(out, x, y, args, stream);
    case WICK_DTYPE_I64: return add_as<int64_t>(out, x, y, args, stream);
    case WICK_DTYPE_F16: return add_as<__half>(out, x, y, args, stream);
    case WICK_DTYPE_BF16: return add_as<__nv_bfloat16>(out, x, y, args, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace wick::cuda
