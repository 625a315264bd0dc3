// quant_kernels.cpp — DEQUANTIZE (ABI 1.4) for the GPU plugins: GGML blocks to float rows, bit for
// bit the SDK's reference (wick/sdk/ggml_quants*.hpp): every product and difference rounded on its
// own (WK_MUL_RN, WK_SUB_RN, WK_ADD_RN: plain operators under OpenCL's FP_CONTRACT OFF, __fmul_rn
// and friends in CUDA, whose compiler contracts to FMAs otherwise), in the reference's order. One
// work-item per 32 values of a row (a block of the 32-value types, a sub-block of the K-quants).
// MATMUL_QUANT: one work-item per output, each weight group decoded by the same function and
// dotted with x (a plain kernel: correct on every device, not tuned). QUANTIZE has no kernel: the
// core quantizes on the host (ggml's search for scales is long serial code).
#include "calls.hpp"
#include "generator.hpp"

#include <wick/sdk/elementwise.hpp>
#include <wick/sdk/ggml_types.hpp>

namespace wick::gpu::detail {

namespace {

// The 32 values of group j of a row of blocks (a block of the 32-value types, a sub-block of the
// K-quants) into v, per GGML type (its number in `type`). A function of its own per unit: the
// dequantize and matmul_quant kernels of a dtype share it.
const char* const kGroupFn = R"K(
WK_FN void wk_dequant32(WK_G const wk_u8* row, wk_i64 j, int type, float* v) {
  if (type == 8 || type == 9) {  /* Q8_0, Q8_1: d, (s,) qs[32] */
    WK_G const wk_u8* b = row + j * (type == 8 ? 34 : 36);
    const float d = wk_half_at(b);
    WK_G const wk_u8* qs = b + (type == 8 ? 2 : 4);
    for (int l = 0; l < 32; ++l) v[l] = WK_MUL_RN((float)(wk_i8)qs[l], d);
  } else if (type == 2 || type == 3) {  /* Q4_0: d, qs[16]; Q4_1: d, m, qs[16] */
    WK_G const wk_u8* b = row + j * (type == 2 ? 18 : 20);
    const float d = wk_half_at(b);
    WK_G const wk_u8* qs = b + (type == 2 ? 2 : 4);
    for (int l = 0; l < 32; ++l) {
      const int q = (qs[l % 16] >> (l < 16 ? 0 : 4)) & 0x0F;
      v[l] = type == 2 ? WK_MUL_RN((float)(q - 8), d) : WK_ADD_RN(WK_MUL_RN((float)q, d), wk_half_at(b + 2));
    }
  } else if (type == 6 || type == 7) {  /* Q5_0: d, qh[4], qs[16]; Q5_1: d, m, qh[4], qs[16] */
    WK_G const wk_u8* b = row + j * (type == 6 ? 22 : 24);
    const float d = wk_half_at(b);
    WK_G const wk_u8* qh = b + (type == 6 ? 2 : 4);
    const wk_u32 high = (wk_u32)qh[0] | ((wk_u32)qh[1] << 8) | ((wk_u32)qh[2] << 16) | ((wk_u32)qh[3] << 24);
    WK_G const wk_u8* qs = qh + 4;
    for (int l = 0; l < 32; ++l) {
      const int q = ((qs[l % 16] >> (l < 16 ? 0 : 4)) & 0x0F) | (int)(((high >> l) & 1u) << 4);
      v[l] = type == 6 ? WK_MUL_RN((float)(q - 16), d) : WK_ADD_RN(WK_MUL_RN((float)q, d), wk_half_at(b + 2));
    }
  } else if (type == 10) {  /* Q2_K: scales[16], qs[64], d, dmin; sub-blocks of 16 */
    const int sub = (int)(j % 8);
    WK_G const wk_u8* b = row + (j / 8) * 84;
    const float d = wk_half_at(b + 80), dmin = wk_half_at(b + 82);
    WK_G const wk_u8* qs = b + 16 + 32 * (sub / 4);
    for (int l = 0; l < 32; ++l) {
      const int sc = b[2 * sub + l / 16], q = (qs[l] >> (2 * (sub % 4))) & 3;
      v[l] = WK_SUB_RN(WK_MUL_RN(WK_MUL_RN(d, (float)(sc & 0xF)), (float)q), WK_MUL_RN(dmin, (float)(sc >> 4)));
    }
  } else if (type == 11) {  /* Q3_K: hmask[32], qs[64], scales[12], d; sub-blocks of 16 */
    const int sub = (int)(j % 8);
    WK_G const wk_u8* b = row + (j / 8) * 110;
    const float d = wk_half_at(b + 108);
    WK_G const wk_u8* qs = b + 32 + 32 * (sub / 4);
    WK_G const wk_u8* s = b + 96;
    for (int l = 0; l < 32; ++l) {
      const int k = 2 * sub + l / 16;  /* the sub-block of 16 */
      const int low = k < 8 ? (s[k] & 0xF) : (s[k - 8] >> 4);
      const int sc = (low | (((s[8 + k % 4] >> (2 * (k / 4))) & 3) << 4)) - 32;
      const int q = ((qs[l] >> (2 * (sub % 4))) & 3) - ((b[l] >> sub) & 1 ? 0 : 4);
      v[l] = WK_MUL_RN(WK_MUL_RN(d, (float)sc), (float)q);
    }
  } else if (type == 12 || type == 13) {  /* Q4_K, Q5_K: 8 sub-blocks of a 256-value block */
    const int sub = (int)(j % 8);
    WK_G const wk_u8* b = row + (j / 8) * (type == 12 ? 144 : 176);
    const float d = wk_half_at(b), dmin = wk_half_at(b + 2);
    WK_G const wk_u8* s = b + 4;
    const int sc = sub < 4 ? (s[sub] & 63) : ((s[sub + 4] & 0xF) | ((s[sub - 4] >> 6) << 4));
    const int m = sub < 4 ? (s[sub + 4] & 63) : ((s[sub + 4] >> 4) | ((s[sub] >> 6) << 4));
    WK_G const wk_u8* qs = b + (type == 12 ? 16 : 48) + 32 * (sub / 2);
    WK_G const wk_u8* qh = b + 16;
    const float dsc = WK_MUL_RN(d, (float)sc), mm = WK_MUL_RN(dmin, (float)m);
    for (int l = 0; l < 32; ++l) {
      int q = (qs[l] >> ((sub % 2) * 4)) & 0xF;
      if (type == 13) q += 16 * ((qh[l] >> sub) & 1);
      v[l] = WK_SUB_RN(WK_MUL_RN(dsc, (float)q), mm);
    }
  } else if (type == 14) {  /* Q6_K: ql[128], qh[64], scales[16], d */
    const int sub = (int)(j % 8), h = sub / 4, k = sub % 4;
    WK_G const wk_u8* b = row + (j / 8) * 210;
    const float d = wk_half_at(b + 208);
    WK_G const wk_u8* ql = b + 64 * h + 32 * (k % 2);
    WK_G const wk_u8* qh = b + 128 + 32 * h;
    for (int l = 0; l < 32; ++l) {
      const int low = (ql[l] >> (k < 2 ? 0 : 4)) & 0xF, high = (qh[l] >> (2 * k)) & 3;
      const float ds = WK_MUL_RN(d, (float)(wk_i8)b[192 + 2 * sub + l / 16]);
      v[l] = WK_MUL_RN(ds, (float)((low | (high << 4)) - 32));
    }
  } else {  /* Q8_K (15): d (f32), qs[256], bsums */
    WK_G const wk_u8* b = row + (j / 8) * 292;
    const float d = WK_BITS_F32((wk_u32)b[0] | ((wk_u32)b[1] << 8) | ((wk_u32)b[2] << 16) | ((wk_u32)b[3] << 24));
    WK_G const wk_u8* qs = b + 4 + 32 * (j % 8);
    for (int l = 0; l < 32; ++l) v[l] = WK_MUL_RN(d, (float)(wk_i8)qs[l]);
  }
}
)K";

bool dense(const wick_tensor_desc& d) { return sdk::is_c_dense(d.shape, d.strides, d.rank); }

// The GGML types the kernel decodes (numbers as in the file).
bool decodes(sdk::ggml::Type type) {
  using sdk::ggml::Type;
  switch (type) {
    case Type::Q4_0: case Type::Q4_1: case Type::Q5_0: case Type::Q5_1: case Type::Q8_0:
    case Type::Q8_1: case Type::Q2_K: case Type::Q3_K: case Type::Q4_K: case Type::Q5_K:
    case Type::Q6_K: case Type::Q8_K:
      return true;
    default: return false;
  }
}

}  // namespace

void emit_dequantize(std::string& out, const TypeInfo& t) {
  const std::string dt = t.name, st = t.storage, acc = t.compute;
  std::string k = kGroupFn;
  // dequantize_<dt>: one work-item per group of 32 values.
  k += "WK_KERNEL dequantize_" + dt + "(WK_G " + st +
       "* out, WK_G const wk_u8* in, wk_i64 out_off, wk_i64 in_off, wk_i64 groups, wk_i64 per_row, "
       "wk_i64 row_bytes, wk_i32 type) {\n"
       "  for (wk_i64 g = WK_GID; g < groups; g += WK_GSIZE) {\n"
       "    const wk_i64 r = g / per_row, j = g % per_row;\n"
       "    float v[32];\n"
       "    wk_dequant32(in + in_off + r * row_bytes, j, type, v);\n"
       "    for (int l = 0; l < 32; ++l) out[out_off + r * per_row * 32 + j * 32 + l] = " +
       store(t, "v[l]") + ";\n  }\n}\n";
  // matmul_quant_<dt>: one work-item per output element, x [rows, k] times w [n, row_bytes]^T,
  // each group of a weight row decoded into registers; sums in the compute type (f32, f64 for f64).
  k += "WK_KERNEL matmul_quant_" + dt + "(WK_G " + st + "* out, WK_G const " + st +
       "* x, WK_G const wk_u8* w, wk_i64 out_off, wk_i64 x_off, wk_i64 w_off, wk_i64 rows, wk_i64 n, "
       "wk_i64 per_row, wk_i64 row_bytes, wk_i32 type) {\n"
       "  for (wk_i64 e = WK_GID; e < rows * n; e += WK_GSIZE) {\n"
       "    const wk_i64 i = e / n, jn = e % n;\n"
       "    WK_G const " + st + "* xr = x + x_off + i * per_row * 32;\n"
       "    " + acc + " sum = 0;\n"
       "    for (wk_i64 g = 0; g < per_row; ++g) {\n"
       "      float v[32];\n"
       "      wk_dequant32(w + w_off + jn * row_bytes, g, type, v);\n"
       "      for (int l = 0; l < 32; ++l) sum += (" + acc + ")v[l] * (" + acc + ")" +
       load(t, "xr", "g * 32 + l") + ";\n"
       "    }\n"
       "    out[out_off + e] = " + store(t, "sum") + ";\n  }\n}\n";
  guarded(out, t, k);
}

wick_support check_dequantize(const wick_op_desc& op) {
  if (op.params == nullptr || op.num_inputs != 1 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  const auto type = static_cast<sdk::ggml::Type>(p.type);
  const auto traits = sdk::ggml::type_traits(static_cast<uint32_t>(p.type));
  if (p.type < 0 || !traits || !decodes(type) || p.k <= 0 || p.k % traits->block_size != 0 ||
      sdk::quant_flags(p) != 0)
    return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  if (in.dtype != WICK_DTYPE_U8 || !sdk::has_dtype(sdk::kFloatDTypes, out.dtype) || in.rank < 1 ||
      in.rank != out.rank || !dense(in) || !dense(out))
    return WICK_SUPPORT_NO_PARAMS;
  const int last = out.rank - 1;
  for (int i = 0; i < last; ++i)
    if (in.shape[i] != out.shape[i]) return WICK_SUPPORT_NO_PARAMS;
  if (out.shape[last] != p.k || in.shape[last] != p.k / traits->block_size * traits->type_size)
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

wick_support check_matmul_quant(const wick_op_desc& op) {
  if (op.params == nullptr || op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  const auto traits = sdk::ggml::type_traits(static_cast<uint32_t>(p.type));
  // No WICK_QUANT_ROUND_X (1.6): declined, the host composes it from QUANTIZE and DEQUANTIZE.
  if (p.type < 0 || !traits || !decodes(static_cast<sdk::ggml::Type>(p.type)) || p.k <= 0 ||
      p.k % traits->block_size != 0 || sdk::quant_flags(p) != 0)
    return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  if (x.rank < 1 || y.rank != x.rank || w.rank != 2 || w.dtype != WICK_DTYPE_U8 || y.dtype != x.dtype ||
      !dense(x) || !dense(w) || !dense(y))
    return WICK_SUPPORT_NO_PARAMS;
  const int last = x.rank - 1;
  for (int i = 0; i < last; ++i)
    if (x.shape[i] != y.shape[i]) return WICK_SUPPORT_NO_PARAMS;
  if (x.shape[last] != p.k || w.shape[1] != p.k / traits->block_size * traits->type_size ||
      y.shape[last] != w.shape[0])
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

namespace {

void plan_matmul_quant(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                       size_t handle_size) {
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  const wick_tensor_desc &x = op.inputs[0], &w = op.inputs[1], &y = op.outputs[0];
  add_handles(call, handles, 3, handle_size);
  const int64_t rows = sdk::shape_numel(x.shape, x.rank) / p.k, n = w.shape[0];
  call.add(element_offset(y));
  call.add(element_offset(x));
  call.add(element_offset(w));
  call.add(rows);
  call.add(n);
  call.add(static_cast<int64_t>(p.k / 32));
  call.add(static_cast<int64_t>(w.shape[1]));
  call.add(static_cast<int32_t>(p.type));
  call.numel = rows * n;
}

void plan_dequantize(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                     size_t handle_size) {
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  const wick_tensor_desc &in = op.inputs[0], &out = op.outputs[0];
  add_handles(call, handles, 2, handle_size);
  const int64_t per_row = p.k / 32, rows = sdk::shape_numel(out.shape, out.rank) / p.k;
  call.add(element_offset(out));
  call.add(element_offset(in));
  call.add(static_cast<int64_t>(rows * per_row));
  call.add(per_row);
  call.add(static_cast<int64_t>(in.shape[in.rank - 1]));
  call.add(static_cast<int32_t>(p.type));
  call.numel = rows * per_row;
}

}  // namespace

KernelCall plan_quant(const wick_op_desc& op, const void* const* handles, size_t handle_size) {
  sdk::check_operands_inside(op);
  KernelCall call;
  call.kernel = kernel_name(op.op, sdk::op_dtype(op), op.outputs[0].dtype);
  if (op.op == WICK_OP_DEQUANTIZE)
    plan_dequantize(call, op, handles, handle_size);
  else
    plan_matmul_quant(call, op, handles, handle_size);
  return call;
}

}  // namespace wick::gpu::detail
