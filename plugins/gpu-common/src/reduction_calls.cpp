// Launches of the reduction kernels: reduce_* (one pass, or two through partials in scratch),
// scan_* and arg_*.
#include "calls.hpp"

#include <wick/sdk/elementwise.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace wick::gpu::detail {

// Reductions keep the input's rank (reduced axes extent 1, axes distinct and in range); scans keep
// its shape; arg-reductions keep its rank with the axis at extent 1.
wick_support check_lines(const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &out = op.outputs[0];
  if (x.rank != out.rank) return WICK_SUPPORT_NO_PARAMS;
  std::vector<bool> walked(static_cast<size_t>(x.rank), false);
  if (op.op >= WICK_OP_REDUCE_SUM && op.op <= WICK_OP_REDUCE_MIN) {
    const auto& p = *static_cast<const wick_reduce_params*>(op.params);
    if (p.struct_size < sizeof(wick_reduce_params) || p.num_axes < 0 ||
        (p.num_axes > 0 && p.axes == nullptr))
      return WICK_SUPPORT_NO_PARAMS;
    for (int k = 0; k < p.num_axes; ++k) {
      if (p.axes[k] < 0 || p.axes[k] >= x.rank || walked[static_cast<size_t>(p.axes[k])])
        return WICK_SUPPORT_NO_PARAMS;
      walked[static_cast<size_t>(p.axes[k])] = true;
    }
  } else {
    const auto& p = *static_cast<const wick_axis_params*>(op.params);
    if (p.struct_size < sizeof(wick_axis_params) || p.axis < 0 || p.axis >= x.rank)
      return WICK_SUPPORT_NO_PARAMS;
    const bool scan = sdk::op_info(op.op)->kind == sdk::OpKind::SCAN;
    if (scan ? (p.flag < 0 || p.flag > 3) : (p.flag < 0 || p.flag > 1))
      return WICK_SUPPORT_NO_PARAMS;
    if (scan) return same_shape(x, out) ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_PARAMS;
    walked[static_cast<size_t>(p.axis)] = true;
    if (x.shape[p.axis] == 0) return WICK_SUPPORT_NO_PARAMS;  // no element to point at
  }
  for (int d = 0; d < x.rank; ++d)
    if (out.shape[d] != (walked[static_cast<size_t>(d)] ? 1 : x.shape[d]))
      return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

namespace {

// A geometry over `shape` with operand 0's strides only (the inner loop of a reduction).
sdk::StridedArgs inner_geometry(const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& strides) {
  sdk::StridedArgs g{};
  g.numel = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.shape[g.rank] = shape[d];
    g.strides[0][g.rank] = strides[d];
    g.numel *= shape[d];
    ++g.rank;
  }
  return g;
}

// The outer geometry of an op that walks lines or reduced blocks: the output and the input viewed
// over `shape` (the input's strides; the walked axes have extent 1 there). When a walked axis is
// empty the kernel reads no input, and the input may have no element at all (a buffer of 0
// bytes): the geometry is the output's alone, the input's strides and offset 0.
sdk::StridedArgs outer_geometry(const wick_op_desc& op, const int64_t* shape,
                                const wick_tensor_desc& out_view, bool walked_empty) {
  wick_tensor_desc in = op.inputs[0];
  in.shape = shape;
  wick_op_desc v = op;
  v.inputs = &in;
  v.num_inputs = walked_empty ? 0 : 1;
  v.outputs = &out_view;
  return sdk::make_strided_args(v);
}

// The inner geometry of a reduction: the reduced axes with the input's strides.
sdk::StridedArgs reduce_inner(const wick_op_desc& op) {
  const wick_tensor_desc& x = op.inputs[0];
  const auto& p = *static_cast<const wick_reduce_params*>(op.params);
  std::vector<int64_t> shape, strides;
  for (int k = 0; k < p.num_axes; ++k) {
    shape.push_back(x.shape[p.axes[k]]);
    strides.push_back(x.strides[p.axes[k]]);
  }
  return inner_geometry(shape, strides);
}

}  // namespace

// reduce_*: one work-item per output element, an inner loop over the reduced axes.
void plan_reduce(KernelCall& call, const wick_op_desc& op) {
  const wick_tensor_desc& out = op.outputs[0];
  const sdk::StridedArgs inner = reduce_inner(op);
  call.add(static_cast<int32_t>(op.op));
  call.add_bytes(&inner, sizeof inner);
  // An empty reduced axis: the kernel's inner loop runs no step and stores the identity.
  const sdk::StridedArgs outer = outer_geometry(op, out.shape, out, inner.numel == 0);
  call.add_bytes(&outer, sizeof outer);
  call.numel = outer.numel;
}

// Few outputs, each over many elements: two passes (reduce_part_*, reduce_final_*) through
// kReduceParts partials per output in scratch, or nothing (empty) where one pass has enough
// work-items.
Launch plan_reduce_two_pass(const wick_op_desc& op, const void* const* handles,
                            size_t handle_size, const std::string& kernel) {
  const wick_tensor_desc& out = op.outputs[0];
  const sdk::StridedArgs inner = reduce_inner(op);
  const sdk::StridedArgs outer = outer_geometry(op, out.shape, out, inner.numel == 0);
  Launch launch;
  if (inner.numel < 4 * kReduceGroup || outer.numel > 1024) return launch;
  const int64_t parts = std::min<int64_t>(kReduceParts, inner.numel / (4 * kReduceGroup));
  const std::string suffix = kernel.substr(std::string("reduce_").size());
  KernelCall first, last;
  first.kernel = "reduce_part_" + suffix;
  first.scratch_slot = 0;
  first.add_bytes(handles[0], handle_size);  // replaced by the scratch buffer
  first.add_bytes(handles[1], handle_size);
  last.kernel = "reduce_final_" + suffix;
  last.add_bytes(handles[0], handle_size);
  last.scratch_slot = 1;
  last.add_bytes(handles[1], handle_size);  // replaced by the scratch buffer
  for (KernelCall* c : {&first, &last}) {
    c->add(static_cast<int32_t>(op.op));
    c->add(parts);
    if (c == &first) c->add(inner);
    c->add(outer);
    c->numel = outer.numel;
    c->dims = 2;
    c->global[0] = (c == &first ? parts : 1) * kReduceGroup;
    c->global[1] = outer.numel;
    c->local[0] = kReduceGroup;
  }
  launch.calls = {first, last};
  launch.scratch_bytes = static_cast<size_t>(outer.numel * parts) * sizeof(double);
  return launch;
}

// Scans and arg-reductions: one work-item per line along the axis.
void plan_lines(KernelCall& call, const wick_op_desc& op) {
  const wick_tensor_desc &x = op.inputs[0], &out = op.outputs[0];
  const auto& p = *static_cast<const wick_axis_params*>(op.params);
  std::vector<int64_t> line_shape(x.shape, x.shape + x.rank);
  line_shape[static_cast<size_t>(p.axis)] = 1;
  wick_tensor_desc out_view = out;
  out_view.shape = line_shape.data();
  call.add(static_cast<int32_t>(op.op));
  const bool scan = sdk::op_info(op.op)->kind == sdk::OpKind::SCAN;
  call.add(static_cast<int32_t>(scan ? p.flag : p.flag == 1));
  call.add(x.shape[p.axis]);
  call.add(x.strides[p.axis]);
  if (scan) call.add(out.strides[p.axis]);
  // A scan along an empty axis writes nothing: its output is as empty as its input (and its lines
  // over line_shape would reach outside both).
  const bool empty = x.shape[p.axis] == 0;
  const sdk::StridedArgs outer =
      empty && scan ? sdk::StridedArgs{} : outer_geometry(op, line_shape.data(), out_view, empty);
  call.add_bytes(&outer, sizeof outer);
  call.numel = empty && scan ? 0 : outer.numel;
}

}  // namespace wick::gpu::detail
