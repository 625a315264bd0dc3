// wick/gpu/kernels.hpp — one description of the GPU plugins' kernels, rendered to OpenCL C (the
// opencl plugin, tested on PoCL) and to CUDA C (the cuda plugin, compiled at run time with NVRTC).
//
// The description is data: per-op expressions (one row per op, keyed by the op table's codes) in
// a neutral C dialect, and kernel families (unary, predicate, binary, compare, where, cast, iota,
// random numbers, copy/fill) generated per dtype. A dialect is a prelude of macros (kernel and
// address-space qualifiers, the global index, bit casts, 64-bit types) in front of common code, so
// the index arithmetic, the dtype conversions and every op's expression are the same text for both
// backends; PoCL's runs check the logic the CUDA plugin runs.
//
// Kernels (every kernel ends with a `wk_args` by value: shape, strides and offsets of up to four
// operands, output first; see wick/sdk/strided_args.hpp), for example:
//   unary_<dt>(out, x, int op, alpha, beta, int mode, args)      ops of kind UNARY
//   predicate_<dt>(out bool, x, int op, args)                    is_nan, is_inf, logical_not
//   binary_<dt>(out, x, y, int op, args), compare_<dt>(out bool, x, y, int op, args)
//   where_<dt>(out, cond bool, x, y, args), cast_<from>_<to>(out, x, args)
//   copy_<u8|u16|u32|u64>(out, x, args), fill_<u8|u16|u32|u64>(out, bits, args)
//   ..._flat(same, long chunk, args)          every operand contiguous: chunk elements per item
//   matmul_<dt>, reduce_*, reduce_part_*, reduce_final_*, scan_*, arg_*, sort_*, gather_*,
//   scatter_*, window_*, conv_*, softmax_*, norm_*, batch_norm_*, attention_*   (calls.cpp and
//   the <family>_calls.cpp files plan each one's arguments and launch shape)
// f64 kernels are guarded by WK_HAS_F64 (the OpenCL prelude defines it where cl_khr_fp64 is).
#pragma once

#include <wick/sdk/op_table.hpp>

#include <string>
#include <vector>

namespace wick::gpu {

enum class Dialect { OpenCL, CUDA };

// The most keys (S) the fused attention kernel holds a row of scores for; longer rows are declined
// (the host composes attention from matmul and softmax then).
inline constexpr int64_t kMaxAttentionKeys = 1024;

// The matmul kernel's register tile: each work-item computes kMatmulRows x kMatmulCols outputs
// (f32 with contiguous rows of rhs and out: one 16-float vector per row), work-groups stack
// kMatmulGroupRows work-items along M so that they share rhs's panel in cache.
inline constexpr int64_t kMatmulRows = 6, kMatmulCols = 16, kMatmulGroupRows = 8;

// Reductions with few outputs and long inner loops run in two passes: kReduceGroup work-items per
// partial (a tree in local memory), up to kReduceParts partials per output, then one group per
// output over its partials. No atomics: the result does not depend on scheduling.
inline constexpr int64_t kReduceGroup = 256, kReduceParts = 64;

// Sort: one work-group of kSortGroup work-items per line, a bitonic network over (value, position)
// pairs in the output buffers, so equal values keep their order (stable).
inline constexpr int64_t kSortGroup = 256;

// The whole program's source for a dialect (every unit after one prelude: for tools and checks).
std::string render_program(Dialect dialect);

// The program in units: the kernels of one dtype and kind each ("f32.unary", "f32.binary" (with
// where), "f32.make" (cast, iota, random numbers), "f32.lines" (reductions, scans, sort, softmax,
// norms, attention), "f32.nn" (matmul, scatter, window ops, conv), "f32.quant" (dequantize,
// matmul_quant); "bits" for copy, fill, gather), each a complete source with the
// prelude. A plugin builds a unit when one of its kernels is first used, so a process compiles, or
// loads from the caches, only what it runs.
std::vector<std::string> program_units();
// What every unit starts with: the dialect's prelude and the common code; the rest of a unit, its
// kernels, is the same text for both dialects.
std::string render_head(Dialect dialect);
std::string render_unit(Dialect dialect, const std::string& unit);  // "" for an unknown unit
std::string unit_of(const std::string& kernel);                      // "" for an unknown kernel

// The ops the generated kernels implement, with the dtypes each runs (f64 included: a plugin
// removes it on devices without doubles). Ops of other kinds are not in these sets.
sdk::DTypeSet generated_dtypes(wick_op_code op);

// The kernel that runs `op` on dtype `t` (the op's dtype, sdk::op_dtype; for cast, `to` is the
// output's), e.g. "binary_f32"; empty for an op the generator does not cover.
std::string kernel_name(wick_op_code op, wick_dtype t, wick_dtype to = WICK_DTYPE_INVALID);

}  // namespace wick::gpu

#include <wick/sdk/strided_args.hpp>

#include <vector>

namespace wick::gpu {

// One kernel launch: the kernel's name and its arguments in order, each as bytes (the geometry,
// a StridedArgs, is the last). OpenCL passes them to clSetKernelArg, CUDA to cuLaunchKernel.
class KernelCall {
 public:
  std::string kernel;
  int64_t numel = 0;  // elements to cover (0: nothing to launch)
  // Kernels that check indices take an error buffer (two i64: a flag and the bad index, zeroed
  // before the launch, read after it): the argument slot to put its handle in, or -1. `context`
  // names the op, the axis and its extent for the error message.
  int error_slot = -1;
  std::string context;
  // The argument slot of the scratch buffer (Launch::scratch_bytes), or -1.
  int scratch_slot = -1;
  // The launch's shape: with dims 1 to 3, `global` work-items per dimension in work-groups of
  // `local` (global a multiple of local); with dims 0, a 1-D launch over numel sized by the plugin.
  int dims = 0;
  int64_t global[3] = {1, 1, 1};
  int64_t local[3] = {1, 1, 1};

  template <class T>
  void add(const T& value) {
    add_bytes(&value, sizeof value);
  }
  void add_bytes(const void* data, size_t size);
  // Overwrites argument i (same size), e.g. the error buffer's handle in error_slot.
  void replace(size_t i, const void* data, size_t size);
  size_t count() const { return sizes_.size(); }
  size_t size(size_t i) const { return sizes_[i]; }
  const void* value(size_t i) const { return bytes_.data() + offsets_[i]; }

 private:
  std::vector<size_t> sizes_, offsets_;
  std::vector<unsigned char> bytes_;
};

// The check row of a GPU plugin's kernel table for a generated op: every input broadcast to the
// output's shape (matmul: [..., M, K] x [..., K, N] with batch dims broadcast by the host).
wick_support check_call(const wick_op_desc& op);

// The launches of an op, in order on one queue, and the scratch buffer they share (bytes; 0: none).
struct Launch {
  std::vector<KernelCall> calls;
  size_t scratch_bytes = 0;
};

// What a plan needs to know of the device.
struct Target {
  bool wide_is_double = true;  // the widest float is f64 (the kernels' wk_wide), else f32
  // Elements per work-item of the _flat kernels (contiguous operands): 1 on GPUs (neighbouring
  // work-items read neighbouring elements), more on CPU devices (a work-item's loop vectorises).
  int64_t flat_chunk = 1;
};

// The launch of op: `handles` are the buffers' device handles (cl_mem, CUdeviceptr, ...), the
// outputs' first, then the inputs', each `handle_size` bytes. Throws sdk::Error when an operand
// reaches outside its buffer.
Launch plan_launch(const wick_op_desc& op, const void* const* handles, size_t handle_size,
                   const Target& target);

}  // namespace wick::gpu
