// The GPU plugins' shared kernel description (gpu-common), checked without a device: both
// dialects render the same kernel text after their preludes, every op and dtype the generator
// claims has its kernel in a program unit, and launch plans have valid shapes.
#include <wick/gpu/kernels.hpp>
#include <wick/sdk/dtype.hpp>
#include <wick/sdk/plugin.hpp>
#include <wick/sdk/op_table.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace wick;

namespace {

const std::vector<wick_dtype>& all_dtypes() {
  static const std::vector<wick_dtype> v = {
      WICK_DTYPE_F32, WICK_DTYPE_F64, WICK_DTYPE_F16, WICK_DTYPE_BF16, WICK_DTYPE_I8, WICK_DTYPE_U8,
      WICK_DTYPE_I16, WICK_DTYPE_I32, WICK_DTYPE_I64, WICK_DTYPE_U32,  WICK_DTYPE_U64, WICK_DTYPE_BOOL};
  return v;
}

bool unit_has(const std::string& kernel) {
  const std::string unit = gpu::unit_of(kernel);
  if (unit.empty()) return false;
  return gpu::render_unit(gpu::Dialect::OpenCL, unit).find("WK_KERNEL " + kernel + "(") !=
         std::string::npos;
}

}  // namespace

TEST_CASE("both dialects render the same kernels after their own preludes", "[gpu-common]") {
  const std::string cl_head = gpu::render_head(gpu::Dialect::OpenCL);
  const std::string cuda_head = gpu::render_head(gpu::Dialect::CUDA);
  CHECK(cl_head.find("__kernel") != std::string::npos);
  CHECK(cuda_head.find("__global__") != std::string::npos);
  const std::vector<std::string> units = gpu::program_units();
  REQUIRE(units.size() >= 12 * 5);  // five kinds per dtype, and the dtype-less one
  for (const std::string& unit : units) {
    INFO(unit);
    const std::string cl = gpu::render_unit(gpu::Dialect::OpenCL, unit);
    const std::string cuda = gpu::render_unit(gpu::Dialect::CUDA, unit);
    REQUIRE(cl.compare(0, cl_head.size(), cl_head) == 0);
    REQUIRE(cuda.compare(0, cuda_head.size(), cuda_head) == 0);
    const std::string body = cl.substr(cl_head.size());
    CHECK(body == cuda.substr(cuda_head.size()));  // same expressions, same index arithmetic
    CHECK(body.find("WK_KERNEL ") != std::string::npos);
    for (const char* dialect_only : {"__kernel", "__global", "get_global_id", "blockIdx", "__device__"})
      CHECK(body.find(dialect_only) == std::string::npos);
  }
  CHECK(gpu::render_unit(gpu::Dialect::OpenCL, "no-such-unit").empty());
  CHECK(gpu::unit_of("no_such_kernel").empty());
}

TEST_CASE("every op and dtype the generator claims has its kernel in a unit", "[gpu-common]") {
  int checked = 0;
  for (const sdk::OpInfo& o : sdk::kOps) {
    for (wick_dtype t : all_dtypes()) {
      if (!sdk::has_dtype(gpu::generated_dtypes(o.code), t)) continue;
      INFO(std::string(o.name) + " on " + sdk::dtype_name(t));
      // Some kernels are named after a second dtype (cast's output, an index or accumulator
      // dtype): at least one must exist, and for cast every target.
      int found = 0;
      for (wick_dtype to : all_dtypes()) {
        const std::string k = gpu::kernel_name(o.code, t, to);
        REQUIRE(!k.empty());
        if (o.code == WICK_OP_CAST && to != t) CHECK(unit_has(k));
        if (unit_has(k)) ++found;
        const bool elementwise = o.kind == sdk::OpKind::UNARY || o.kind == sdk::OpKind::BINARY ||
                                 o.kind == sdk::OpKind::COMPARE || o.kind == sdk::OpKind::SELECT ||
                                 o.code == WICK_OP_COPY || o.code == WICK_OP_FILL;
        if (unit_has(k) && (elementwise || o.code == WICK_OP_CAST)) CHECK(unit_has(k + "_flat"));
        if (unit_has(k) && k.rfind("reduce_", 0) == 0) {
          CHECK(unit_has("reduce_part_" + k.substr(7)));
          CHECK(unit_has("reduce_final_" + k.substr(7)));
        }
      }
      CHECK(found > 0);
      ++checked;
    }
  }
  CHECK(checked > 500);
}

TEST_CASE("a matmul plan is a 3-D launch of whole work-groups over 6 x 16 tiles", "[gpu-common]") {
  const int64_t a_shape[] = {2, 37, 53}, b_shape[] = {2, 53, 41}, c_shape[] = {2, 37, 41};
  const int64_t a_strides[] = {37 * 53, 53, 1}, b_strides[] = {53 * 41, 41, 1},
                c_strides[] = {37 * 41, 41, 1};
  wick_buffer buffers[3] = {};
  buffers[0].size = 2 * 37 * 41 * 4;
  buffers[1].size = 2 * 37 * 53 * 4;
  buffers[2].size = 2 * 53 * 41 * 4;
  auto desc = [](wick_buffer* b, const int64_t* shape, const int64_t* strides) {
    wick_tensor_desc d{};
    d.struct_size = sizeof d;
    d.buffer = b;
    d.dtype = WICK_DTYPE_F32;
    d.rank = 3;
    d.shape = shape;
    d.strides = strides;
    return d;
  };
  wick_tensor_desc out = desc(&buffers[0], c_shape, c_strides);
  wick_tensor_desc in[2] = {desc(&buffers[1], a_shape, a_strides), desc(&buffers[2], b_shape, b_strides)};
  wick_op_desc op{};
  op.struct_size = sizeof op;
  op.op = WICK_OP_MATMUL;
  op.outputs = &out;
  op.num_outputs = 1;
  op.inputs = in;
  op.num_inputs = 2;
  REQUIRE(gpu::check_call(op) == WICK_SUPPORT_YES);
  const uint64_t handles[3] = {1, 2, 3};
  const void* h[3] = {&handles[0], &handles[1], &handles[2]};
  const gpu::Launch launch = gpu::plan_launch(op, h, sizeof(uint64_t), gpu::Target{});
  REQUIRE(launch.calls.size() == 1);
  const gpu::KernelCall& call = launch.calls[0];
  CHECK(call.kernel == "matmul_f32");
  CHECK(call.dims == 3);
  CHECK(call.global[0] == 3);   // ceil(41 / 16) column tiles
  CHECK(call.global[1] == 8);   // ceil(37 / 6) = 7 row tiles, rounded up to whole groups of 8
  CHECK(call.global[2] == 2);   // the batch
  for (int d = 0; d < 3; ++d) CHECK(call.global[d] % call.local[d] == 0);
  // An operand reaching past its buffer is refused before any launch.
  buffers[2].size = 4;
  CHECK_THROWS(gpu::plan_launch(op, h, sizeof(uint64_t), gpu::Target{}));
}
