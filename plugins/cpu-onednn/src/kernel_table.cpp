// Every kernel of the cpu-onednn plugin, one row per op: the op, the dtypes it runs, its function
// and its check. `supports` answers from this table (wick/sdk/kernel_table.hpp), after the op
// table's rules (wick/wick_ops.h). Each row runs every dtype the op table defines the op for.
#include "kernels.hpp"

#include <initializer_list>

namespace wick::cpu {

KernelTable make_kernel_table() {
  KernelTable table;
  auto add = [&](Kernel (*family)(int), std::initializer_list<wick_op_code> ops) {
    for (wick_op_code op : ops) {
      const Kernel k = family(op);
      table.add({op, sdk::dtypes_of(sdk::op_info(op)->dtypes), k.run, k.check});
    }
  };
  // Unary and binary elementwise ops and comparisons: every one the op table has.
  for (const sdk::OpInfo& o : sdk::kOps) {
    if (o.kind == sdk::OpKind::UNARY) add(&unary_kernel, {o.code});
    if (o.kind == sdk::OpKind::BINARY || o.kind == sdk::OpKind::COMPARE)
      add(&binary_kernel, {o.code});
  }
  add(&elementwise_kernel, {WICK_OP_COPY, WICK_OP_FILL, WICK_OP_CAST, WICK_OP_WHERE});
  add(&creation_kernel, {WICK_OP_IOTA, WICK_OP_RNG_UNIFORM, WICK_OP_RNG_NORMAL});
  add(&reduce_kernel, {WICK_OP_REDUCE_SUM, WICK_OP_REDUCE_PROD, WICK_OP_REDUCE_MAX,
                       WICK_OP_REDUCE_MIN, WICK_OP_ARGMAX, WICK_OP_ARGMIN});
  add(&scan_kernel, {WICK_OP_CUMSUM, WICK_OP_CUMPROD, WICK_OP_CUMMAX, WICK_OP_CUMMIN});
  add(&index_kernel, {WICK_OP_INDEX_SELECT, WICK_OP_INDEX_REDUCE, WICK_OP_GATHER_ELEMENTS,
                      WICK_OP_SCATTER_ELEMENTS});
  add(&sort_kernel, {WICK_OP_SORT});
  add(&matmul_kernel, {WICK_OP_MATMUL});
  add(&conv_kernel, {WICK_OP_CONV, WICK_OP_CONV_GRAD_INPUT, WICK_OP_CONV_GRAD_WEIGHT,
                     WICK_OP_CONV_BIAS, WICK_OP_CONV_BIAS_RELU});
  add(&window_kernel, {WICK_OP_WINDOW_SUM, WICK_OP_WINDOW_PROD, WICK_OP_WINDOW_MAX,
                       WICK_OP_WINDOW_MIN, WICK_OP_WINDOW_SCATTER_MAX, WICK_OP_WINDOW_SCATTER_MIN});
  add(&fused_kernel, {WICK_OP_SOFTMAX, WICK_OP_LOG_SOFTMAX, WICK_OP_LAYER_NORM, WICK_OP_RMS_NORM,
                      WICK_OP_BATCH_NORM, WICK_OP_ADAM_UPDATE});
  add(&attention_kernel, {WICK_OP_ATTENTION});
  add(&quant_kernel, {WICK_OP_QUANTIZE, WICK_OP_DEQUANTIZE, WICK_OP_MATMUL_QUANT});
  return table;
}

}  // namespace wick::cpu
