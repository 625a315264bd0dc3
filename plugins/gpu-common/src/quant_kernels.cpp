// quant_kernels.cpp — DEQUANTIZE (ABI 1.4) for the GPU plugins: GGML blocks to float rows, bit for
// bit the SDK's reference (wick/sdk/ggml_quants*.hpp): every product and difference rounded on its
// own (WK_MUL_RN, WK_SUB_RN, WK_ADD_RN: plain operators under OpenCL's FP_CONTRACT OFF, __fmul_rn
// and friends in CUDA, whose compiler contracts to FMAs otherwise), in the reference's order. One
// work-item per 32 values of a row (a block of the 32-value types, a sub-block of the K-quants).
// MATMUL_QUANT: one work-item per output, each weight group decoded by the same function and
// dotted with x (a plain kernel: correct on every device, not tuned). QUANTIZE: one work-item per
// block, the SDK's reference operation for operation (its divisions correctly rounded: WK_DIV_RN),
// for every type DEQUANTIZE decodes; the K-quants' weight types (their scale searches) are in
// quant_k_kernels.cpp.
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

// QUANTIZE's pieces: a correctly rounded division (CUDA's __fdiv_rn; in OpenCL, whose `/` may be
// 2.5 ULP off, the exact quotient of the significands in 64-bit integers, rounded to nearest even),
// C's (int)v as x86 computes it (the SDK's trunc_int), an f16 stored little-endian, and one block
// of 32 values of the 32-value types from v.
const char* const kQuantFn = R"K(
#ifdef __CUDACC__
#define WK_DIV_RN(a, b) __fdiv_rn(a, b)
#define WK_ROUND_AWAY(v) roundf(v)
#else
#define WK_DIV_RN(a, b) wk_div_rn(a, b)
#define WK_ROUND_AWAY(v) round(v)
WK_FN float wk_div_rn(float a, float b) {
  const wk_u32 xa = WK_F32_BITS(a), xb = WK_F32_BITS(b);
  const wk_u32 sign = (xa ^ xb) & 0x80000000u, aa = xa & 0x7fffffffu, ab = xb & 0x7fffffffu;
  if (aa > 0x7f800000u || ab > 0x7f800000u) return WK_NAN_F;
  if (aa == 0x7f800000u) return ab == 0x7f800000u ? WK_NAN_F : WK_BITS_F32(sign | 0x7f800000u);
  if (ab == 0x7f800000u) return WK_BITS_F32(sign);
  if (ab == 0u) return aa == 0u ? WK_NAN_F : WK_BITS_F32(sign | 0x7f800000u);
  if (aa == 0u) return WK_BITS_F32(sign);
  /* a = ma 2^(ea - 150), b = mb 2^(eb - 150), ma and mb normalised to 24 bits */
  int ea = (int)(aa >> 23), eb = (int)(ab >> 23);
  wk_u64 ma = aa & 0x7fffffu, mb = ab & 0x7fffffu;
  if (ea == 0) ea = 1; else ma |= 0x800000u;
  if (eb == 0) eb = 1; else mb |= 0x800000u;
  while (ma < 0x800000u) { ma <<= 1; --ea; }
  while (mb < 0x800000u) { mb <<= 1; --eb; }
  const wk_u64 q = (ma << 40) / mb;  /* a / b = (q + a fraction) 2^e, q of 40 or 41 bits */
  const int sticky = (ma << 40) % mb != 0u;
  const int e = ea - eb - 40;
  int shift = (q >> 40) != 0u ? 17 : 16;  /* down to 24 bits */
  if (e + shift < -149) shift = -149 - e;  /* a subnormal result keeps fewer */
  if (shift > 62) shift = 62;              /* below half the least subnormal: 0 */
  wk_u64 m = q >> shift;
  const wk_u64 rest = q & ((((wk_u64)1) << shift) - 1u), halfway = ((wk_u64)1) << (shift - 1);
  if (rest > halfway || (rest == halfway && (sticky || (m & 1u)))) ++m;
  int ex = e + shift;  /* the result is m 2^ex */
  if (m == 0x1000000u) { m >>= 1; ++ex; }
  if (m < 0x800000u) return WK_BITS_F32(sign | (wk_u32)m);  /* subnormal (ex = -149) or 0 */
  if (ex + 150 >= 255) return WK_BITS_F32(sign | 0x7f800000u);
  return WK_BITS_F32(sign | ((wk_u32)(ex + 150) << 23) | ((wk_u32)m & 0x7fffffu));
}
#endif
WK_FN float wk_fabs(float v) { return WK_BITS_F32(WK_F32_BITS(v) & 0x7fffffffu); }
/* ggml's nearest_int: v + 1.5 2^23 leaves v rounded (ties to even) in the low mantissa bits. */
WK_FN int wk_nearest_int(float v) {
  return (int)(WK_F32_BITS(WK_ADD_RN(v, 12582912.0f)) & 0x007fffffu) - 0x00400000;
}
/* The low byte of x as a signed 8-bit value (C's (int8_t)x). */
WK_FN int wk_low_i8(int x) { return ((x & 0xFF) ^ 0x80) - 0x80; }
WK_FN int wk_trunc_int(float v) { return v >= -2147483648.0f && v < 2147483648.0f ? (int)v : (int)0x80000000u; }
WK_FN int wk_finite(float v) { return (WK_F32_BITS(v) & 0x7fffffffu) < 0x7f800000u; }
WK_FN void wk_put_half(WK_G wk_u8* p, float v) {
  const wk_u16 h = wk_f32_to_f16(v);
  p[0] = (wk_u8)(h & 0xFFu);
  p[1] = (wk_u8)(h >> 8);
}
/* The value of largest magnitude, signed (the first on a tie; 0 for none). */
WK_FN float wk_signed_absmax(const float* v, int n) {
  float max = 0.0f, amax = 0.0f;
  for (int l = 0; l < n; ++l) {
    const float a = wk_fabs(v[l]);
    if (a > amax) { amax = a; max = v[l]; }
  }
  return max;
}
/* Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 (type numbers 2, 3, 6, 7, 8, 9): the block of v at b. */
WK_FN void wk_quant32(const float* v, int type, WK_G wk_u8* b) {
  const int size = type == 2 ? 18 : type == 3 ? 20 : type == 6 ? 22 : type == 7 ? 24 : type == 8 ? 34 : 36;
  for (int i = 0; i < size; ++i) b[i] = 0;
  int finite = 1;
  for (int l = 0; l < 32; ++l) finite &= wk_finite(v[l]);
  const int has_m = type == 3 || type == 7 || type == 9;  /* a second half after d: m, or Q8_1's s */
  if (!finite) {
    wk_put_half(b, WK_NAN_F);
    if (has_m) wk_put_half(b + 2, WK_NAN_F);
    return;
  }
  float d, id, lo = 3.40282347e38f, hi = -3.40282347e38f;
  if (type == 8 || type == 9) {
    float amax = 0.0f;
    for (int l = 0; l < 32; ++l) amax = amax < wk_fabs(v[l]) ? wk_fabs(v[l]) : amax;
    d = WK_DIV_RN(amax, 127.0f);
    id = d != 0.0f ? WK_DIV_RN(1.0f, d) : 0.0f;
    int sum = 0;
    for (int l = 0; l < 32; ++l) {
      const int q = wk_low_i8(wk_trunc_int(WK_ROUND_AWAY(WK_MUL_RN(v[l], id))));
      b[(type == 8 ? 2 : 4) + l] = (wk_u8)(q & 0xFF);
      sum += q;
    }
    wk_put_half(b, d);
    if (type == 9) wk_put_half(b + 2, WK_MUL_RN((float)sum, d));
    return;
  }
  if (type == 2 || type == 6) {
    d = WK_DIV_RN(wk_signed_absmax(v, 32), type == 2 ? -8.0f : -16.0f);
  } else {  /* Q4_1, Q5_1: the block's range */
    for (int l = 0; l < 32; ++l) {
      if (v[l] < lo) lo = v[l];
      if (v[l] > hi) hi = v[l];
    }
    d = WK_DIV_RN(WK_SUB_RN(hi, lo), type == 3 ? 15.0f : 31.0f);
    wk_put_half(b + 2, lo);
  }
  id = d != 0.0f ? WK_DIV_RN(1.0f, d) : 0.0f;
  wk_put_half(b, d);
  int q[32];
  for (int l = 0; l < 32; ++l) {
    if (type == 2 || type == 6) {  /* the offset 8 or 16, + 0.5 */
      const int t = wk_low_i8(wk_trunc_int(WK_ADD_RN(WK_MUL_RN(v[l], id), type == 2 ? 8.5f : 16.5f)));
      q[l] = (t < (type == 2 ? 15 : 31) ? t : (type == 2 ? 15 : 31)) & 0xFF;
    } else if (type == 3) {
      const int t = wk_low_i8(wk_trunc_int(WK_ADD_RN(WK_MUL_RN(WK_SUB_RN(v[l], lo), id), 0.5f)));
      q[l] = (t < 15 ? t : 15) & 0xFF;
    } else {  /* Q5_1: not clamped, as ggml */
      q[l] = wk_trunc_int(WK_ADD_RN(WK_MUL_RN(WK_SUB_RN(v[l], lo), id), 0.5f)) & 0xFF;
    }
  }
  WK_G wk_u8* qs = b + (type == 2 ? 2 : type == 3 ? 4 : type == 6 ? 6 : 8);
  wk_u32 qh = 0;
  const int q4 = type == 2 || type == 3;  /* Q4's quants are at most 15; Q5's low nibbles */
  for (int l = 0; l < 16; ++l) {
    qs[l] = (wk_u8)((q4 ? q[l] | (q[l + 16] << 4) : (q[l] & 0x0F) | ((q[l + 16] & 0x0F) << 4)) & 0xFF);
    qh |= (wk_u32)((q[l] & 0x10) >> 4) << l;
    qh |= (wk_u32)((q[l + 16] & 0x10) >> 4) << (l + 16);
  }
  if (type == 6 || type == 7)
    for (int i = 0; i < 4; ++i) b[(type == 6 ? 2 : 4) + i] = (wk_u8)((qh >> (8 * i)) & 0xFFu);
}
/* Q8_K (292 bytes: d as f32, qs[256], bsums[16] as i16) of the 256 values v at b. */
WK_FN void wk_quant_q8k(const float* v, WK_G wk_u8* b) {
  for (int i = 0; i < 292; ++i) b[i] = 0;
  int finite = 1;
  for (int l = 0; l < 256; ++l) finite &= wk_finite(v[l]);
  const float max = wk_signed_absmax(v, 256);
  wk_u32 d_bits = finite ? 0u : 0x7fc00000u;  /* all zero: d = 0; a NaN or infinity: d NaN */
  if (finite && max != 0.0f) {
    const float iscale = WK_DIV_RN(-127.0f, max);
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) {
        const int l8 = wk_nearest_int(WK_MUL_RN(iscale, v[16 * s + l]));
        const int q = wk_low_i8(l8 < 127 ? l8 : 127);
        b[4 + 16 * s + l] = (wk_u8)(q & 0xFF);
        sum += q;
      }
      b[260 + 2 * s] = (wk_u8)(sum & 0xFF);
      b[261 + 2 * s] = (wk_u8)((sum >> 8) & 0xFF);
    }
    d_bits = WK_F32_BITS(WK_DIV_RN(1.0f, iscale));
  }
  for (int i = 0; i < 4; ++i) b[i] = (wk_u8)((d_bits >> (8 * i)) & 0xFFu);
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

// Whether the kernels take p: a type they decode, rows of whole blocks, no flag (the GPU plugins
// decline WICK_QUANT_ROUND_X: the host composes it from QUANTIZE and DEQUANTIZE).
bool takes(const wick_quant_params& p) {
  const auto traits = sdk::ggml::type_traits(static_cast<uint32_t>(p.type));
  return p.type >= 0 && traits && decodes(static_cast<sdk::ggml::Type>(p.type)) && p.k > 0 &&
         p.k % traits->block_size == 0 && sdk::quant_flags(p) == 0;
}

// The shapes QUANTIZE and DEQUANTIZE share: `blocks` u8 [..., k / block_size * type_size] and
// `values` a float [..., k], both dense, of a type the kernels take.
wick_support check_blocks(const wick_quant_params& p, const wick_tensor_desc& blocks,
                          const wick_tensor_desc& values) {
  if (!takes(p)) return WICK_SUPPORT_NO_PARAMS;
  const auto traits = sdk::ggml::type_traits(static_cast<uint32_t>(p.type));
  if (blocks.dtype != WICK_DTYPE_U8 || !sdk::has_dtype(sdk::kFloatDTypes, values.dtype) ||
      blocks.rank < 1 || blocks.rank != values.rank || !dense(blocks) || !dense(values))
    return WICK_SUPPORT_NO_PARAMS;
  const int last = values.rank - 1;
  for (int i = 0; i < last; ++i)
    if (blocks.shape[i] != values.shape[i]) return WICK_SUPPORT_NO_PARAMS;
  if (values.shape[last] != p.k ||
      blocks.shape[last] != p.k / traits->block_size * traits->type_size)
    return WICK_SUPPORT_NO_PARAMS;
  return WICK_SUPPORT_YES;
}

}  // namespace

// quantize_<dt>: one work-item per block, its values loaded into private memory (the K-quants'
// searches read each sub-block many times).
std::string quantize_kernel(const TypeInfo& t) {
  const std::string x = "(float)" + load(t, "x", "l");
  return std::string(kQuantFn) + kQuantKFn + "WK_KERNEL quantize_" + t.name +
         "(WK_G wk_u8* out, WK_G const " + t.storage +
         "* in, wk_i64 out_off, wk_i64 in_off, wk_i64 blocks, wk_i64 per_row, wk_i64 row_bytes, "
         "wk_i32 type) {\n"
         "  const int n = type < 10 ? 32 : 256, size = (int)(row_bytes / per_row);\n"
         "  for (wk_i64 g = WK_GID; g < blocks; g += WK_GSIZE) {\n"
         "    const wk_i64 r = g / per_row, j = g % per_row;\n"
         "    WK_G const " + t.storage + "* x = in + in_off + (r * per_row + j) * n;\n"
         "    WK_G wk_u8* b = out + out_off + r * row_bytes + j * size;\n"
         "    float v[256];\n"
         "    for (int l = 0; l < n; ++l) v[l] = " + x + ";\n"
         "    if (type < 10) wk_quant32(v, type, b);\n"
         "    else if (type < 15) wk_quant_k(v, type, b);\n"
         "    else wk_quant_q8k(v, b);\n"
         "  }\n}\n";
}

void emit_quant(std::string& out, const TypeInfo& t) {
  const std::string dt = t.name, st = t.storage, acc = t.compute;
  std::string k = kGroupFn + quantize_kernel(t);
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

wick_support check_quantize(const wick_op_desc& op) {
  if (op.params == nullptr || op.num_inputs != 1 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  return check_blocks(p, op.outputs[0], op.inputs[0]);
}

wick_support check_dequantize(const wick_op_desc& op) {
  if (op.params == nullptr || op.num_inputs != 1 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  return check_blocks(p, op.inputs[0], op.outputs[0]);
}

wick_support check_matmul_quant(const wick_op_desc& op) {
  if (op.params == nullptr || op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  if (!takes(p)) return WICK_SUPPORT_NO_PARAMS;
  const auto traits = sdk::ggml::type_traits(static_cast<uint32_t>(p.type));
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

// Dequantize: one work-item per 32 values; quantize: one per block (32 values, or 256 for the
// K-quants). `values` is the float tensor, `blocks` the u8 one.
void plan_blocks(KernelCall& call, const wick_op_desc& op, const void* const* handles,
                 size_t handle_size, const wick_tensor_desc& values, const wick_tensor_desc& blocks) {
  const auto& p = *static_cast<const wick_quant_params*>(op.params);
  add_handles(call, handles, 2, handle_size);
  const auto type = static_cast<sdk::ggml::Type>(p.type);
  const int64_t group = op.op == WICK_OP_QUANTIZE ? sdk::ggml::traits(type).block_size : 32;
  const int64_t per_row = p.k / group, rows = sdk::shape_numel(values.shape, values.rank) / p.k;
  call.add(element_offset(op.outputs[0]));
  call.add(element_offset(op.inputs[0]));
  call.add(static_cast<int64_t>(rows * per_row));
  call.add(per_row);
  call.add(static_cast<int64_t>(blocks.shape[blocks.rank - 1]));
  call.add(static_cast<int32_t>(p.type));
  call.numel = rows * per_row;
}

}  // namespace

KernelCall plan_quant(const wick_op_desc& op, const void* const* handles, size_t handle_size) {
  sdk::check_operands_inside(op);
  KernelCall call;
  call.kernel = kernel_name(op.op, sdk::op_dtype(op), op.outputs[0].dtype);
  if (op.op == WICK_OP_DEQUANTIZE)
    plan_blocks(call, op, handles, handle_size, op.outputs[0], op.inputs[0]);
  else if (op.op == WICK_OP_QUANTIZE)
    plan_blocks(call, op, handles, handle_size, op.inputs[0], op.outputs[0]);
  else
    plan_matmul_quant(call, op, handles, handle_size);
  return call;
}

}  // namespace wick::gpu::detail
