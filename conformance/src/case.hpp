// case.hpp — the conformance case model: one case is one op (or one ONNX node test) with its
// operands, params, expected outputs and tolerance class. Cases come from three sources:
//   golden/  float64 NumPy references checked in under conformance/golden/data (generate.py)
//   diff/    the generator's "large" recipes, filled with seeded random data and compared with
//            the reference backend (cpu-onednn)
//   onnx/    the ONNX backend node tests of Debian's libonnx-testdata (onnx_import.cpp)
#pragma once

#include <wick/tensor.hpp>
#include <wick/wick_plugin.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wick::conformance {

// What every process (supervisor and worker) knows of a case without loading its data.
struct CaseInfo {
  std::string id;      // "golden/add/f32/contiguous", "diff/matmul/f32/large", "onnx/test_add_bcast"
  std::string source;  // "golden", "diff" or "onnx"
  std::string op;      // the Wick op name ("add"), or the ONNX op type for onnx ("onnx:Add")
  std::string dtype;   // "f32", "f32->i64", ...
};

// A parameter value: integers exactly (i), floats as d; both set for integers.
struct Num {
  double d = 0;
  int64_t i = 0;
};
using ParamValues = std::map<std::string, std::vector<Num>>;

// An op's parameter struct with the arrays it points into; cheap to copy, immutable once built.
class Params {
 public:
  Params() = default;
  // Builds the struct that `op` takes (the op table's params column) from key/values; missing keys are 0.
  // Ops without params, and an empty map for ops whose params are optional, give NULL.
  static Params build(wick_op_code op, const ParamValues& values);
  const void* get() const;
  // What get() points into: the struct and the arrays it points to (case.cpp).
  struct Holder;

 private:
  std::shared_ptr<Holder> holder_;
};

// One operand as it lies in its buffer: the buffer's bytes (C order, `storage` elements) and the
// view (shape, strides in elements, offset in elements) the op receives.
struct Operand {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  int64_t storage = 0;
  std::vector<unsigned char> bytes;
  // The logical values in C order, as doubles (u64 above 2^53 loses bits; only used for checks).
  std::vector<double> logical_values() const;
  int64_t numel() const;
};

// An expected output: float outputs as float64, integer and bool outputs as int64 (u64 as its
// two's complement bit pattern). `scale` (optional, per element) is the magnitude the error is
// measured against for reductions: sum |terms| where cancellation makes |result| small.
struct Expected {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;
  std::vector<double> scale;
};

// A random operand of a large recipe: values uniform in [lo, hi] (integers inclusive), bool, or
// indices in [0, index_bound).
struct RandomSpec {
  DType dtype = DType::F32;
  Shape shape;
  double lo = -1, hi = 1;
  bool has_range = false;
  bool is_bool = false;
  int64_t index_bound = 0;
};

struct Case {
  CaseInfo info;
  wick_op_code code = WICK_OP_INVALID;
  Params params;
  std::string tolerance = "exact";  // the metric class (tolerances.toml)
  int64_t reduction = 1;            // K: the reduction length the bound scales with
  std::string check;                // "" (values) or "sort_indices"
  std::vector<Operand> inputs;      // golden: the data; diff: filled by materialize()
  std::vector<Expected> outputs;    // golden: expected values; diff: shapes and dtypes only
  std::vector<RandomSpec> random_inputs;  // diff only
};

DType parse_dtype(const std::string& name);  // throws wick::Error for an unknown name
bool is_float_dtype(DType t);

// seed = hash(base seed, case id): FNV-1a 64 of the id with the basis xor'ed with the base seed.
// conformance/golden/cases.py's case_seed is the same function.
uint64_t case_seed(uint64_t base_seed, const std::string& case_id);
constexpr uint64_t kDefaultBaseSeed = 20240601;

// The golden data directory: every <op>.json written by generate.py.
class GoldenStore {
 public:
  explicit GoldenStore(std::string directory);
  const std::string& directory() const { return directory_; }
  // Every golden and diff case, in file (op) order then case order.
  std::vector<CaseInfo> list(bool golden, bool diff) const;
  // Ops (by name) with golden cases, and how many.
  std::map<std::string, int> golden_counts() const;
  // A case by id ("golden/..." or "diff/..."); diff cases get random inputs from
  // case_seed(base_seed, id). Throws wick::Error for an unknown id.
  Case load(const std::string& id, uint64_t base_seed) const;

 private:
  struct File;
  const File& file(const std::string& op) const;
  std::string directory_;
  std::vector<std::string> ops_;  // file stems, sorted by op code
  mutable std::map<std::string, std::shared_ptr<File>> cache_;
};

// Fills a diff case's inputs with seeded random data (uniform; integers in their range).
void materialize(Case& c, uint64_t seed);

// Every op code the SDK names (sdk::op_name knows it), ascending.
std::vector<wick_op_code> sdk_op_codes();
// The op code for a name ("add" -> WICK_OP_ADD), or WICK_OP_INVALID.
wick_op_code op_code_of(const std::string& name);

}  // namespace wick::conformance
