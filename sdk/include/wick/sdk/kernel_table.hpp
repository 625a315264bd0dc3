// wick/sdk/kernel_table.hpp — a plugin's kernels as rows, and `supports` answered from them.
//
//   sdk::KernelTable<MyContext> table;
//   table.add({WICK_OP_ADD, sdk::kFloatDTypes, &run_add});                // op, dtypes, function
//   table.add({WICK_OP_MATMUL, sdk::dtype_bit(WICK_DTYPE_F32), &run_matmul, &check_matmul});
//   ...
//   wick_support supports(const wick_device*, const wick_op_desc& op) override {
//     return table.supports(op);
//   }
//   void execute(wick_device*, const wick_op_desc& op) override { table.execute(ctx, op); }
//
// supports() checks, in order: a row for the op (else NO_OP), the op table's signature (arity,
// params struct, dtype rules: sdk::check_signature), the row's dtypes (the op's dtype, see
// sdk::op_dtype; else NO_DTYPE), then the row's own check (shapes, params values), if it has one.
// execute() runs the row's function; the host calls it only after supports() said yes.
#pragma once

#include <wick/sdk/op_table.hpp>
#include <wick/sdk/plugin.hpp>

#include <string>
#include <vector>

namespace wick::sdk {

template <class Context>
struct KernelRow {
  using Run = void (*)(Context& ctx, const wick_op_desc& op);
  using Check = wick_support (*)(const wick_op_desc& op);

  wick_op_code op;
  DTypeSet dtypes;  // the op dtypes this kernel runs (a subset of the table's class)
  Run run;
  Check check = nullptr;  // optional: shapes and params beyond the op table's rules
};

template <class Context>
class KernelTable {
 public:
  using Row = KernelRow<Context>;

  // Adds a row; an op of no table row, a second row for one op, or a row without a function is a
  // plugin bug, reported when the plugin initializes (std::logic_error).
  void add(const Row& row) {
    const OpInfo* info = op_info(row.op);
    if (info == nullptr || row.run == nullptr)
      throw std::logic_error("kernel table: op code " + std::to_string(row.op) +
                             (info == nullptr ? " is not in the op table" : " has no function"));
    if (find(row.op) != nullptr)
      throw std::logic_error(std::string("kernel table: a second row for op ") + info->name);
    if (index_.size() < static_cast<size_t>(kMaxOpCode)) index_.assign(kMaxOpCode, -1);
    index_[static_cast<size_t>(row.op)] = static_cast<int>(rows_.size());
    rows_.push_back(row);
  }

  const Row* find(int op) const {
    if (op <= 0 || op >= kMaxOpCode || index_.empty() || index_[static_cast<size_t>(op)] < 0)
      return nullptr;
    return &rows_[static_cast<size_t>(index_[static_cast<size_t>(op)])];
  }

  wick_support supports(const wick_op_desc& op) const {
    const Row* row = find(op.op);
    if (row == nullptr) return WICK_SUPPORT_NO_OP;
    if (const wick_support s = check_signature(op); s != WICK_SUPPORT_YES) return s;
    if (!has_dtype(row->dtypes, op_dtype(op))) return WICK_SUPPORT_NO_DTYPE;
    return row->check != nullptr ? row->check(op) : WICK_SUPPORT_YES;
  }

  void execute(Context& ctx, const wick_op_desc& op) const {
    const Row* row = find(op.op);
    if (row == nullptr)
      throw Error(WICK_STATUS_UNSUPPORTED, std::string("op ") + op_name(op.op) + " (" +
                                               std::to_string(op.op) + ") is not implemented");
    row->run(ctx, op);
  }

  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
  std::vector<int> index_;  // op code -> row, -1 for none
};

}  // namespace wick::sdk
