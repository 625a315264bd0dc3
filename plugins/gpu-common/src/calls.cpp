// From an op descriptor to a launch of a generated kernel: which kernel, and its arguments.
// The op families' checks and plans are in reduction_calls.cpp, nn_calls.cpp, index_calls.cpp
// and fused_calls.cpp; here are what they share, the elementwise ones, and the dispatch.
#include "calls.hpp"

#include <wick/gpu/driver.hpp>

#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/strided.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace wick::gpu {

void KernelCall::add_bytes(const void* data, size_t size) {
  offsets_.push_back(bytes_.size());
  sizes_.push_back(size);
  bytes_.resize(bytes_.size() + size);
  std::memcpy(bytes_.data() + offsets_.back(), data, size);
}

void KernelCall::replace(size_t i, const void* data, size_t size) {
  if (i >= sizes_.size() || sizes_[i] != size)
    throw std::logic_error("KernelCall::replace: no such argument");
  std::memcpy(bytes_.data() + offsets_[i], data, size);
}

namespace detail {

int64_t element_offset(const wick_tensor_desc& d) {
  return static_cast<int64_t>(d.byte_offset / sdk::dtype_size(d.dtype));
}

bool same_shape(const wick_tensor_desc& a, const wick_tensor_desc& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

// A float parameter in the kernels' wk_wide, or in the compute type of a unary kernel.
void add_wide(KernelCall& call, double v, bool as_double) {
  if (as_double)
    call.add(v);
  else
    call.add(static_cast<float>(v));
}

void add_handles(KernelCall& call, const void* const* handles, size_t count, size_t handle_size) {
  for (size_t k = 0; k < count; ++k) call.add_bytes(handles[k], handle_size);
}

// The outer geometry of per-line ops over `line_shape`: `views` are the operands (the first as the
// output) seen over that shape with their own strides.
sdk::StridedArgs line_geometry(const wick_op_desc& op, const int64_t* line_shape,
                               std::vector<wick_tensor_desc> views, int rank) {
  for (wick_tensor_desc& v : views) {
    v.shape = line_shape;
    if (rank >= 0) v.rank = rank;
  }
  wick_op_desc g = op;
  g.outputs = views.data();
  g.num_outputs = 1;
  g.inputs = views.data() + 1;
  g.num_inputs = views.size() - 1;
  return sdk::make_strided_args(g);
}

namespace {

void add_unary_params(KernelCall& call, const wick_op_desc& op, wick_dtype t) {
  double alpha = 0, beta = 0;
  int32_t mode = WICK_ROUND_HALF_AWAY_FROM_ZERO;
  if (op.params != nullptr) {
    const auto& p = *static_cast<const wick_unary_params*>(op.params);
    alpha = p.alpha;
    beta = p.beta;
    if (p.struct_size >= offsetof(wick_unary_params, mode) + sizeof(int32_t)) mode = p.mode;
  }
  call.add(static_cast<int32_t>(op.op));
  if (sdk::dtype_is_float(t)) {
    add_wide(call, alpha, t == WICK_DTYPE_F64);
    add_wide(call, beta, t == WICK_DTYPE_F64);
  } else {
    call.add(static_cast<int64_t>(alpha));
    call.add(static_cast<int64_t>(beta));
  }
  call.add(mode);
}

// The inner size and extent of the iota axis in the output's C order (extent 0: the flat index).
void add_iota_params(KernelCall& call, const wick_op_desc& op, bool wide_is_double) {
  const auto& p = *static_cast<const wick_iota_params*>(op.params);
  const wick_tensor_desc& out = op.outputs[0];
  int64_t inner = 1, extent = 0;
  if (p.axis >= 0 && p.axis < out.rank) {
    for (int d = out.rank - 1; d > p.axis; --d) inner *= out.shape[d];
    extent = out.shape[p.axis];
  }
  call.add(inner);
  call.add(extent);
  add_wide(call, p.float_start, wide_is_double);
  add_wide(call, p.float_step, wide_is_double);
  call.add(p.int_start);
  call.add(p.int_step);
}

void add_rng_params(KernelCall& call, const wick_op_desc& op, bool wide_is_double) {
  const auto& p = *static_cast<const wick_rng_params*>(op.params);
  call.add(p.seed);
  call.add(p.offset);
  add_wide(call, p.a, wide_is_double);
  add_wide(call, p.b, wide_is_double);
}

}  // namespace

}  // namespace detail

wick_support check_call(const wick_op_desc& op) {
  if (op.op == WICK_OP_MATMUL) return detail::check_matmul(op);
  if (op.op == WICK_OP_DEQUANTIZE) return detail::check_dequantize(op);
  if (op.op == WICK_OP_QUANTIZE) return detail::check_quantize(op);
  if (op.op == WICK_OP_MATMUL_QUANT) return detail::check_matmul_quant(op);
  const sdk::OpKind kind = sdk::op_info(op.op)->kind;
  if (kind == sdk::OpKind::REDUCE || kind == sdk::OpKind::SCAN) return detail::check_lines(op);
  if (op.op == WICK_OP_BATCH_NORM) return detail::check_batch_norm(op);
  if (op.op == WICK_OP_ATTENTION) return detail::check_attention(op);
  if (op.op == WICK_OP_CONV) return detail::check_conv(op);
  if (kind == sdk::OpKind::NN) return detail::check_window(op);
  if (kind == sdk::OpKind::INDEX && op.op != WICK_OP_SORT) return detail::check_index(op);
  if (kind == sdk::OpKind::INDEX || kind == sdk::OpKind::FUSED) return detail::check_lines_of(op);
  for (size_t i = 0; i < op.num_inputs; ++i)
    if (!detail::same_shape(op.inputs[i], op.outputs[0])) return WICK_SUPPORT_NO_PARAMS;
  if (op.op == WICK_OP_IOTA &&
      static_cast<const wick_iota_params*>(op.params)->axis >= op.outputs[0].rank)
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

static KernelCall plan_call(const wick_op_desc& op, const void* const* handles,
                            size_t handle_size, bool wide_is_double, int64_t flat_chunk) {
  if (op.op == WICK_OP_MATMUL) return detail::plan_matmul(op, handles, handle_size);
  const wick_tensor_desc& out = op.outputs[0];
  const wick_dtype t = sdk::op_dtype(op);
  KernelCall call;
  // Index ops' kernels are named after their index dtype (sort's output 1, the others' input 1).
  const sdk::OpKind kind = sdk::op_info(op.op)->kind;
  const wick_dtype to = op.op == WICK_OP_SORT        ? op.outputs[1].dtype
                        : kind == sdk::OpKind::INDEX ? op.inputs[1].dtype
                                                     : out.dtype;
  call.kernel = kernel_name(op.op, t, to);
  if (call.kernel.empty())
    throw sdk::Error(WICK_STATUS_UNSUPPORTED, std::string("no generated kernel for ") +
                                                  sdk::op_name(op.op) + " on " +
                                                  sdk::dtype_name(t));
  const sdk::OpInfo& info = *sdk::op_info(op.op);
  if (info.kind == sdk::OpKind::REDUCE || info.kind == sdk::OpKind::SCAN) {
    sdk::check_operands_inside(op);
    detail::add_handles(call, handles, 2, handle_size);
    if (info.kind == sdk::OpKind::REDUCE && op.op != WICK_OP_ARGMAX && op.op != WICK_OP_ARGMIN)
      detail::plan_reduce(call, op);
    else
      detail::plan_lines(call, op);
    return call;
  }
  if (info.kind == sdk::OpKind::INDEX || info.kind == sdk::OpKind::FUSED ||
      info.kind == sdk::OpKind::NN) {
    sdk::check_operands_inside(op);
    if (op.op == WICK_OP_CONV)
      detail::plan_conv(call, op, handles, handle_size);
    else if (op.op == WICK_OP_WINDOW_SCATTER_MAX || op.op == WICK_OP_WINDOW_SCATTER_MIN)
      detail::plan_window_scatter(call, op, handles, handle_size, wide_is_double);
    else if (info.kind == sdk::OpKind::NN)
      detail::plan_window(call, op, handles, handle_size);
    else if (info.kind == sdk::OpKind::INDEX && op.op != WICK_OP_SORT)
      detail::plan_index(call, op, handles, handle_size);
    else if (op.op == WICK_OP_BATCH_NORM)
      detail::plan_batch_norm(call, op, handles, handle_size, wide_is_double);
    else if (op.op == WICK_OP_ATTENTION)
      detail::plan_attention(call, op, handles, handle_size);
    else if (op.op == WICK_OP_SORT)
      detail::plan_sort(call, op, handles, handle_size);
    else if (op.op == WICK_OP_SOFTMAX || op.op == WICK_OP_LOG_SOFTMAX)
      detail::plan_softmax(call, op, handles, handle_size);
    else
      detail::plan_norm(call, op, handles, handle_size, wide_is_double);
    return call;
  }
  const sdk::StridedArgs geometry = sdk::make_strided_args(op);
  detail::add_handles(call, handles, 1 + op.num_inputs, handle_size);
  if (info.kind == sdk::OpKind::UNARY && info.out == sdk::OutDType::BOOL)
    call.add(static_cast<int32_t>(op.op));
  else if (info.kind == sdk::OpKind::UNARY)
    detail::add_unary_params(call, op, t);
  else if (info.kind == sdk::OpKind::BINARY || info.kind == sdk::OpKind::COMPARE)
    call.add(static_cast<int32_t>(op.op));
  else if (op.op == WICK_OP_IOTA)
    detail::add_iota_params(call, op, wide_is_double);
  else if (op.op == WICK_OP_RNG_UNIFORM || op.op == WICK_OP_RNG_NORMAL)
    detail::add_rng_params(call, op, wide_is_double);
  else if (op.op == WICK_OP_FILL) {
    const auto pattern =
        sdk::fill_pattern(out.dtype, *static_cast<const wick_fill_params*>(op.params));
    call.add_bytes(pattern.data(), sdk::dtype_size(out.dtype));
  }
  // Every operand one contiguous run: the _flat kernel, `chunk` elements per work-item.
  bool flat = geometry.rank <= 1 && op.op != WICK_OP_IOTA && op.op != WICK_OP_RNG_UNIFORM &&
              op.op != WICK_OP_RNG_NORMAL;
  for (size_t k = 0; flat && geometry.rank == 1 && k <= op.num_inputs; ++k)
    flat = geometry.strides[k][0] == 1;
  call.numel = geometry.numel;
  if (flat) {
    call.kernel += "_flat";
    call.add(flat_chunk);
    call.numel = (geometry.numel + flat_chunk - 1) / flat_chunk;  // work-items
  }
  call.add_bytes(&geometry, sizeof geometry);
  return call;
}

Launch plan_launch(const wick_op_desc& op, const void* const* handles, size_t handle_size,
                   const Target& target) {
  if (op.op == WICK_OP_QUANTIZE || op.op == WICK_OP_DEQUANTIZE || op.op == WICK_OP_MATMUL_QUANT)
    return {{detail::plan_quant(op, handles, handle_size)}, 0};
  if (op.op == WICK_OP_CONV) {
    sdk::check_operands_inside(op);
    Launch gemm = detail::plan_conv_gemm(op, handles, handle_size);
    if (!gemm.calls.empty()) return gemm;
  }
  if (op.op >= WICK_OP_REDUCE_SUM && op.op <= WICK_OP_REDUCE_MIN) {
    sdk::check_operands_inside(op);
    const std::string kernel = kernel_name(op.op, sdk::op_dtype(op), op.outputs[0].dtype);
    if (!kernel.empty()) {
      Launch two = detail::plan_reduce_two_pass(op, handles, handle_size, kernel);
      if (!two.calls.empty()) return two;
    }
  }
  Launch launch;
  launch.calls.push_back(
      plan_call(op, handles, handle_size, target.wide_is_double, std::max<int64_t>(target.flat_chunk, 1)));
  return launch;
}

void run_plan(Launch& plan, const Runner& runner) {
  const void* scratch = plan.scratch_bytes == 0 ? nullptr : runner.scratch(plan.scratch_bytes);
  for (KernelCall& call : plan.calls) {
    if (call.numel == 0) continue;
    if (call.scratch_slot >= 0)
      call.replace(static_cast<size_t>(call.scratch_slot), scratch, runner.handle_size);
    if (call.error_slot < 0) {
      runner.launch(call);
      continue;
    }
    int64_t report[2] = {0, 0};
    runner.launch_checked(call, report);
    if (report[0] != 0)
      throw sdk::Error(WICK_STATUS_INVALID_ARGUMENT,
                       "index " + std::to_string(report[1]) + " is out of range in " + call.context);
  }
}

}  // namespace wick::gpu
