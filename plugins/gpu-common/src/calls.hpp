// calls.hpp — internals of launch planning (gpu-common): what the op families' checks and plans
// share (calls.cpp), and the checks and plans check_call and plan_launch dispatch to.
#pragma once

#include <wick/gpu/kernels.hpp>

#include <string>
#include <vector>

namespace wick::gpu::detail {

// Shared (calls.cpp): an operand's offset in elements; whether two operands have one shape; a
// float parameter as the kernels' wk_wide (f64 or f32); the first `count` handles as arguments.
int64_t element_offset(const wick_tensor_desc& d);
bool same_shape(const wick_tensor_desc& a, const wick_tensor_desc& b);
void add_wide(KernelCall& call, double v, bool as_double);
void add_handles(KernelCall& call, const void* const* handles, size_t count, size_t handle_size);
// The outer geometry of per-line ops over `line_shape`: `views` are the operands (the first as the
// output) seen over that shape with their own strides (and rank `rank`, unless it is -1).
sdk::StridedArgs line_geometry(const wick_op_desc& op, const int64_t* line_shape,
                               std::vector<wick_tensor_desc> views, int rank = -1);

// reduction_calls.cpp: reduce_*, scan_* and arg_*.
wick_support check_lines(const wick_op_desc& op);
void plan_reduce(KernelCall& call, const wick_op_desc& op);
Launch plan_reduce_two_pass(const wick_op_desc& op, const void* const* handles, size_t handle_size,
                            const std::string& kernel);
void plan_lines(KernelCall& call, const wick_op_desc& op);

// nn_calls.cpp: matmul, window ops, convolution.
wick_support check_matmul(const wick_op_desc& op);
KernelCall plan_matmul(const wick_op_desc& op, const void* const* handles, size_t handle_size);
wick_support check_window(const wick_op_desc& op);
void plan_window(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                 size_t handle_size);
void plan_window_scatter(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                         size_t handle_size, bool wide_is_double);
wick_support check_conv(const wick_op_desc& op);
void plan_conv(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size);
Launch plan_conv_gemm(const wick_op_desc& op, const void* const* handles, size_t handle_size);

// index_calls.cpp: sort, index_select, gather_elements, index_reduce, scatter_elements.
void plan_sort(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size);
wick_support check_index(const wick_op_desc& op);
void plan_index(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                size_t handle_size);

// fused_calls.cpp: softmax, norms, batch norm, attention; check_lines_of checks softmax, the
// norms and sort.
wick_support check_lines_of(const wick_op_desc& op);
wick_support check_batch_norm(const wick_op_desc& op);
wick_support check_attention(const wick_op_desc& op);
void plan_softmax(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                  size_t handle_size);
void plan_norm(KernelCall& call, const wick_op_desc& op, const void* const* handles,
               size_t handle_size, bool wide_is_double);
void plan_batch_norm(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                     size_t handle_size, bool wide_is_double);
void plan_attention(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                    size_t handle_size);

// quant_kernels.cpp: quantize, dequantize, matmul_quant (the launch of each: plan_quant).
wick_support check_quantize(const wick_op_desc& op);
wick_support check_dequantize(const wick_op_desc& op);
wick_support check_matmul_quant(const wick_op_desc& op);
KernelCall plan_quant(const wick_op_desc& op, const void* const* handles, size_t handle_size);

}  // namespace wick::gpu::detail
