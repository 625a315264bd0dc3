// The op table (sdk/include/wick/wick_ops.h) against the ABI it must keep, and the checks built on
// it. The numbers below are a record of what ABI 1.1 shipped, written once: a row whose code
// changes, or a code reused, fails the build here.
#include <wick/sdk/op_table.hpp>
#include <wick/sdk/plugin.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <string>

namespace sdk = wick::sdk;

// The op codes ABI 1.1 shipped (ABI_CHANGELOG.md): they never change and are never reused.
static_assert(WICK_OP_COPY == 1);
static_assert(WICK_OP_FILL == 2);
static_assert(WICK_OP_IOTA == 3);
static_assert(WICK_OP_CAST == 4);
static_assert(WICK_OP_RNG_UNIFORM == 5);
static_assert(WICK_OP_RNG_NORMAL == 6);
static_assert(WICK_OP_NEG == 100);
static_assert(WICK_OP_ABS == 101);
static_assert(WICK_OP_SIGN == 102);
static_assert(WICK_OP_EXP == 103);
static_assert(WICK_OP_LOG == 104);
static_assert(WICK_OP_SQRT == 105);
static_assert(WICK_OP_RSQRT == 106);
static_assert(WICK_OP_RECIP == 107);
static_assert(WICK_OP_SQR == 108);
static_assert(WICK_OP_TANH == 109);
static_assert(WICK_OP_ERF == 110);
static_assert(WICK_OP_SIGMOID == 111);
static_assert(WICK_OP_SIN == 112);
static_assert(WICK_OP_COS == 113);
static_assert(WICK_OP_TAN == 114);
static_assert(WICK_OP_ASIN == 115);
static_assert(WICK_OP_ACOS == 116);
static_assert(WICK_OP_ATAN == 117);
static_assert(WICK_OP_SINH == 118);
static_assert(WICK_OP_COSH == 119);
static_assert(WICK_OP_ASINH == 120);
static_assert(WICK_OP_ACOSH == 121);
static_assert(WICK_OP_ATANH == 122);
static_assert(WICK_OP_EXPM1 == 123);
static_assert(WICK_OP_LOG1P == 124);
static_assert(WICK_OP_CBRT == 125);
static_assert(WICK_OP_ERFC == 126);
static_assert(WICK_OP_ERFINV == 127);
static_assert(WICK_OP_FLOOR == 128);
static_assert(WICK_OP_CEIL == 129);
static_assert(WICK_OP_ROUND == 130);
static_assert(WICK_OP_RELU == 131);
static_assert(WICK_OP_GELU_TANH == 132);
static_assert(WICK_OP_GELU_ERF == 133);
static_assert(WICK_OP_SILU == 134);
static_assert(WICK_OP_ELU == 135);
static_assert(WICK_OP_AFFINE == 136);
static_assert(WICK_OP_POWF == 137);
static_assert(WICK_OP_IS_NAN == 138);
static_assert(WICK_OP_IS_INF == 139);
static_assert(WICK_OP_LOGICAL_NOT == 140);
static_assert(WICK_OP_BITWISE_NOT == 141);
static_assert(WICK_OP_POPCOUNT == 142);
static_assert(WICK_OP_CLZ == 143);
static_assert(WICK_OP_ADD == 200);
static_assert(WICK_OP_SUB == 201);
static_assert(WICK_OP_MUL == 202);
static_assert(WICK_OP_DIV == 203);
static_assert(WICK_OP_MAXIMUM == 204);
static_assert(WICK_OP_MINIMUM == 205);
static_assert(WICK_OP_POW == 206);
static_assert(WICK_OP_REM == 207);
static_assert(WICK_OP_ATAN2 == 208);
static_assert(WICK_OP_EQ == 220);
static_assert(WICK_OP_NE == 221);
static_assert(WICK_OP_LT == 222);
static_assert(WICK_OP_LE == 223);
static_assert(WICK_OP_GT == 224);
static_assert(WICK_OP_GE == 225);
static_assert(WICK_OP_BITWISE_AND == 230);
static_assert(WICK_OP_BITWISE_OR == 231);
static_assert(WICK_OP_BITWISE_XOR == 232);
static_assert(WICK_OP_SHL == 233);
static_assert(WICK_OP_SHR == 234);
static_assert(WICK_OP_WHERE == 300);
static_assert(WICK_OP_REDUCE_SUM == 400);
static_assert(WICK_OP_REDUCE_PROD == 401);
static_assert(WICK_OP_REDUCE_MAX == 402);
static_assert(WICK_OP_REDUCE_MIN == 403);
static_assert(WICK_OP_ARGMAX == 404);
static_assert(WICK_OP_ARGMIN == 405);
static_assert(WICK_OP_CUMSUM == 410);
static_assert(WICK_OP_CUMPROD == 411);
static_assert(WICK_OP_CUMMAX == 412);
static_assert(WICK_OP_CUMMIN == 413);
static_assert(WICK_OP_MATMUL == 500);
static_assert(WICK_OP_CONV == 501);
static_assert(WICK_OP_CONV_GRAD_INPUT == 502);   // 1.3
static_assert(WICK_OP_CONV_GRAD_WEIGHT == 503);  // 1.3
static_assert(WICK_OP_WINDOW_SUM == 510);
static_assert(WICK_OP_WINDOW_PROD == 511);
static_assert(WICK_OP_WINDOW_MAX == 512);
static_assert(WICK_OP_WINDOW_MIN == 513);
static_assert(WICK_OP_WINDOW_SCATTER_MAX == 514);
static_assert(WICK_OP_WINDOW_SCATTER_MIN == 515);
static_assert(WICK_OP_INDEX_SELECT == 600);
static_assert(WICK_OP_INDEX_REDUCE == 601);
static_assert(WICK_OP_GATHER_ELEMENTS == 602);
static_assert(WICK_OP_SCATTER_ELEMENTS == 603);
static_assert(WICK_OP_SORT == 604);
static_assert(WICK_OP_SOFTMAX == 700);
static_assert(WICK_OP_LOG_SOFTMAX == 701);
static_assert(WICK_OP_LAYER_NORM == 702);
static_assert(WICK_OP_RMS_NORM == 703);
static_assert(WICK_OP_BATCH_NORM == 704);
static_assert(WICK_OP_ATTENTION == 705);

TEST_CASE("Every op of the table has a unique code and name, and looks up both ways") {
  std::set<int> codes;
  std::set<std::string> names;
  for (const sdk::OpInfo& o : sdk::kOps) {
    CHECK(codes.insert(o.code).second);
    CHECK(names.insert(o.name).second);
    CHECK(sdk::op_info(o.code) == &o);
    CHECK(sdk::op_code_of(o.name) == o.code);
    CHECK(o.min_inputs <= o.max_inputs);
  }
  CHECK(sdk::op_info(0) == nullptr);
  CHECK(sdk::op_info(999) == nullptr);
  CHECK(std::string(sdk::op_name(999)) == "unknown-op");
  CHECK(sdk::op_code_of("no-such-op") == WICK_OP_INVALID);
}

TEST_CASE("The table's params column names each op's params struct") {
  CHECK(sdk::op_info(WICK_OP_CONV)->params_size == sizeof(wick_conv_params));
  CHECK(sdk::op_info(WICK_OP_CONV_GRAD_INPUT)->params_size == sizeof(wick_conv_params));
  CHECK(sdk::op_info(WICK_OP_CONV_GRAD_WEIGHT)->params_size == sizeof(wick_conv_params));
  CHECK(sdk::op_info(WICK_OP_REDUCE_SUM)->params_size == sizeof(wick_reduce_params));
  CHECK(sdk::op_info(WICK_OP_ADD)->params_size == 0);
  CHECK(sdk::op_info(WICK_OP_SORT)->outputs == 2);
  CHECK(sdk::op_info(WICK_OP_LAYER_NORM)->min_inputs == 1);
  CHECK(sdk::op_info(WICK_OP_LAYER_NORM)->max_inputs == 3);
}

namespace {

// A descriptor of `inputs` and `outputs` dtypes (geometry is not the table's business).
struct Call {
  std::vector<wick_tensor_desc> in, out;
  wick_op_desc op{};
  Call(wick_op_code code, std::vector<wick_dtype> ins, std::vector<wick_dtype> outs,
       const void* params = nullptr) {
    for (wick_dtype t : ins) in.push_back(wick_tensor_desc{sizeof(wick_tensor_desc), nullptr, 0, t, 0, nullptr, nullptr});
    for (wick_dtype t : outs) out.push_back(wick_tensor_desc{sizeof(wick_tensor_desc), nullptr, 0, t, 0, nullptr, nullptr});
    op.struct_size = sizeof(op);
    op.op = code;
    op.params = params;
    op.inputs = in.data();
    op.num_inputs = in.size();
    op.outputs = out.data();
    op.num_outputs = out.size();
  }
};

}  // namespace

TEST_CASE("check_signature applies the table's arity, params and dtype rules") {
  using D = wick_dtype;
  const D f32 = WICK_DTYPE_F32, i32 = WICK_DTYPE_I32, i64 = WICK_DTYPE_I64, b = WICK_DTYPE_BOOL;
  CHECK(sdk::check_signature(Call(WICK_OP_ADD, {f32, f32}, {f32}).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_ADD, {f32}, {f32}).op) == WICK_SUPPORT_NO_PARAMS);
  CHECK(sdk::check_signature(Call(WICK_OP_ADD, {f32, f32}, {i32}).op) == WICK_SUPPORT_NO_DTYPE);
  CHECK(sdk::check_signature(Call(WICK_OP_EXP, {i32}, {i32}).op) == WICK_SUPPORT_NO_DTYPE);
  CHECK(sdk::check_signature(Call(WICK_OP_SHL, {f32, f32}, {f32}).op) == WICK_SUPPORT_NO_DTYPE);
  CHECK(sdk::check_signature(Call(WICK_OP_BITWISE_AND, {b, b}, {b}).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_LT, {i32, i32}, {b}).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_LT, {i32, i32}, {i32}).op) == WICK_SUPPORT_NO_DTYPE);
  CHECK(sdk::check_signature(Call(WICK_OP_WHERE, {b, i64, i64}, {i64}).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_CAST, {f32}, {WICK_DTYPE_U8}).op) == WICK_SUPPORT_YES);
  // Sums keep the dtype or widen to 64 bits; bool only widens.
  const wick_reduce_params rp{sizeof(wick_reduce_params), nullptr, 0};
  CHECK(sdk::check_signature(Call(WICK_OP_REDUCE_SUM, {i32}, {i64}, &rp).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_REDUCE_SUM, {i32}, {i32}, &rp).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_REDUCE_SUM, {b}, {b}, &rp).op) == WICK_SUPPORT_NO_DTYPE);
  CHECK(sdk::check_signature(Call(WICK_OP_REDUCE_SUM, {WICK_DTYPE_U8}, {WICK_DTYPE_U64}, &rp).op) ==
        WICK_SUPPORT_YES);
  // A params struct is required where the table names one.
  CHECK(sdk::check_signature(Call(WICK_OP_REDUCE_SUM, {f32}, {f32}).op) == WICK_SUPPORT_NO_PARAMS);
  const wick_axis_params ap{sizeof(wick_axis_params), 0, 0};
  CHECK(sdk::check_signature(Call(WICK_OP_ARGMAX, {f32}, {i64}, &ap).op) == WICK_SUPPORT_YES);
  CHECK(sdk::check_signature(Call(WICK_OP_ARGMAX, {f32}, {f32}, &ap).op) == WICK_SUPPORT_NO_DTYPE);
  // Unknown codes are a newer host's ops: not implemented.
  Call unknown(WICK_OP_ADD, {f32, f32}, {f32});
  unknown.op.op = static_cast<wick_op_code>(998);
  CHECK(sdk::check_signature(unknown.op) == WICK_SUPPORT_NO_OP);
}

TEST_CASE("an exception not derived from std::exception is an error naming its type",
          "[sdk][errors]") {
  wick_error* e = wick::sdk::detail::guarded([] { throw 42; });
  REQUIRE(e != nullptr);
  CHECK(e->message == "an exception of type 'int' (not derived from std::exception)");
  CHECK(e->code == WICK_STATUS_INTERNAL);
  delete e;
}
