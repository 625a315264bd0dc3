// kernels.hpp — the cpu-onednn plugin's kernel table and the helpers every kernel uses.
#pragma once

#include <wick/sdk/dtype.hpp>
#include <wick/sdk/kernel_table.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace wick::cpu {

// Buffers live in host memory, 64-byte aligned (wrapped ones: the host's memory, aligned to the
// element size; the kernels need no more: cpu_plugin.cpp, wrap_host).
struct HostBuffer : wick_buffer {
  unsigned char* data = nullptr;
  bool wrapped = false;  // buffer_wrap_host's: the memory is the host's, not freed with the buffer
  // Set by buffer_host_address (1.7): the host may change the contents between calls without
  // telling the plugin, so write_generation() is 0 from then on and no derived data is kept.
  std::atomic<bool> host_visible{false};
  // A value from next_write_generation() given at allocation and at every write the plugin makes
  // or is asked to make into the buffer (buffer_write, buffer_copy, an op's outputs): a cache of
  // data derived from the contents (matmul's prepacked weights) is valid while it is unchanged.
  // Never reused across buffers, so a new buffer at a freed one's address never matches.
  std::atomic<uint64_t> generation{0};
  // Set (alive_flag) when a cache keeps data derived from the buffer; buffer_free clears it, so
  // that the cache can drop the data (and not mistake a new buffer at this address for this one).
  std::shared_ptr<std::atomic<bool>> derived_alive;
};

// b's derived_alive, made on first use (threads may pack the same weight at once).
inline std::shared_ptr<std::atomic<bool>> alive_flag(const wick_buffer* buffer) {
  static std::mutex made;
  auto* b = const_cast<HostBuffer*>(static_cast<const HostBuffer*>(buffer));
  const std::lock_guard<std::mutex> lock(made);
  if (!b->derived_alive) b->derived_alive = std::make_shared<std::atomic<bool>>(true);
  return b->derived_alive;
}

// A process-wide counter, never returning the same value twice.
inline uint64_t next_write_generation() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}
inline void mark_written(wick_buffer* b) {
  static_cast<HostBuffer*>(b)->generation.store(next_write_generation(),
                                                std::memory_order_release);
}

// Per-plugin state a kernel may use (threads, oneDNN engine and caches live behind it).
struct Context {
  int threads = 1;
  struct Onednn;
  Onednn* onednn = nullptr;
};

using KernelTable = sdk::KernelTable<Context>;
using RunFn = KernelTable::Row::Run;
using CheckFn = KernelTable::Row::Check;

// One op's kernel in a family file: its function, and its check of shapes and params beyond the op
// table's rules. Empty (run == nullptr) for an op the family does not have.
struct Kernel {
  RunFn run = nullptr;
  CheckFn check = nullptr;
};

// The kernels of each family file, by op code; kernel_table.cpp lists them as the table's rows.
Kernel elementwise_kernel(int op);  // elementwise.cpp: copy, fill, cast, where
Kernel binary_kernel(int op);       // binary.cpp: arithmetic, comparisons, bitwise, shifts
Kernel unary_kernel(int op);        // unary.cpp: math, activations, predicates, bit counts
Kernel creation_kernel(int op);     // creation.cpp: iota, rng_uniform, rng_normal
Kernel reduce_kernel(int op);       // reduce.cpp: reductions, arg-reductions
Kernel scan_kernel(int op);         // scan.cpp: cumsum, cumprod, cummax, cummin
Kernel index_kernel(int op);        // index.cpp: index_select/reduce, gather/scatter
Kernel sort_kernel(int op);         // sort.cpp
Kernel matmul_kernel(int op);       // matmul.cpp
Kernel conv_kernel(int op);         // conv.cpp
Kernel window_kernel(int op);       // window.cpp: window reductions, window scatter
Kernel fused_kernel(int op);        // fused.cpp: softmax, norms, adam_update
Kernel attention_kernel(int op);    // attention.cpp
Kernel quant_kernel(int op);        // quant.cpp: quantize, dequantize, matmul_quant (GGML blocks)

// Every kernel of the plugin, one row per op (kernel_table.cpp); `supports` answers from it.
KernelTable make_kernel_table();

// The kernel of op code `op` from Family<Code>::kernel() (a constexpr function of the family that
// returns an empty Kernel for ops it does not have), for every op of the op table.
template <template <int> class Family>
Kernel kernel_of(int op) {
  switch (op) {
#define WICK_CPU_KERNEL_CASE(NAME, ...) \
  case WICK_OP_##NAME: return Family<WICK_OP_##NAME>::kernel();
    WICK_OP_LIST(WICK_CPU_KERNEL_CASE)
#undef WICK_CPU_KERNEL_CASE
    default: return {};
  }
}

// The oneDNN engine, streams and plan cache (at most plan_cache_bytes over all threads); created
// by the plugin, used by the oneDNN kernels.
Context::Onednn* create_onednn(int threads, uint64_t plan_cache_bytes);
void destroy_onednn(Context::Onednn* onednn);

// The element pointer of a descriptor's element [0, ..., 0].
template <class T = unsigned char>
T* data_of(const wick_tensor_desc& d) {
  auto* b = static_cast<HostBuffer*>(d.buffer);
  return reinterpret_cast<T*>(b->data + d.byte_offset);
}

inline int64_t numel_of(const wick_tensor_desc& d) {
  return sdk::shape_numel(d.shape, d.rank);
}

inline bool same_shape(const wick_tensor_desc& a, const wick_tensor_desc& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

// Work of at least this many elements is split across threads; below it, one thread runs inline
// (an OpenMP region costs about a microsecond, more than a small op itself).
constexpr int64_t kParallelThreshold = 1 << 15;

// Calls f(row) for every row of the shape, on several threads when the work is large.
template <size_t N, class F>
void parallel_rows(const Context& ctx, const wick_tensor_desc& shape_of,
                   const std::array<const int64_t*, N>& strides, F&& f) {
  const int64_t n = numel_of(shape_of);
  if (ctx.threads <= 1 || n < kParallelThreshold) {
    sdk::for_each_row<N>(shape_of.shape, shape_of.rank, strides, f);
    return;
  }
  // Split long rows into chunks so that even a single contiguous row uses every thread.
  std::vector<sdk::Row<N>> chunks;
  sdk::for_each_row<N>(shape_of.shape, shape_of.rank, strides, [&](const sdk::Row<N>& row) {
    const int64_t chunk = std::max<int64_t>(kParallelThreshold / 4, row.length / ctx.threads + 1);
    for (int64_t s = 0; s < row.length; s += chunk) {
      sdk::Row<N> r = row;
      for (size_t k = 0; k < N; ++k) r.offset[k] += s * row.stride[k];
      r.length = std::min(chunk, row.length - s);
      chunks.push_back(r);
    }
  });
  const int64_t count = static_cast<int64_t>(chunks.size());
#pragma omp parallel for num_threads(ctx.threads) schedule(static)
  for (int64_t i = 0; i < count; ++i) f(chunks[static_cast<size_t>(i)]);
}

// Converts between element types with Wick's cast rules (docs/ops.md): float -> integer truncates
// toward zero and saturates, NaN -> 0; anything -> bool is (x != 0); integer -> narrower integer
// wraps; floats round to nearest-even.
template <class To, class From>
To cast_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, sdk::f16> || std::is_same_v<From, sdk::bf16>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (std::is_same_v<To, sdk::f16> || std::is_same_v<To, sdk::bf16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    if constexpr (std::is_same_v<From, sdk::f16> || std::is_same_v<From, sdk::bf16>)
      return static_cast<To>(static_cast<float>(v));
    else
      return static_cast<To>(v);
  } else {  // integer destination
    if constexpr (std::is_same_v<From, sdk::f16> || std::is_same_v<From, sdk::bf16> ||
                  std::is_floating_point_v<From>) {
      const double d = static_cast<double>(v);
      if (d != d) return To(0);
      constexpr double lo = static_cast<double>(std::numeric_limits<To>::lowest());
      constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
      if (d <= lo) return std::numeric_limits<To>::lowest();
      if (d >= hi) return std::numeric_limits<To>::max();
      return static_cast<To>(d);
    } else {
      return static_cast<To>(v);  // two's complement wrap (C++20)
    }
  }
}

}  // namespace wick::cpu
