// quant_k_kernels.cpp — QUANTIZE of the K-quants' weight types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) for
// the GPU plugins: one super-block of 256 values per work-item, the SDK's reference
// (wick/sdk/ggml_quants_k.hpp: ggml's quantize_row_*_ref and its make_* scale searches) operation
// for operation and in its order, each operation rounded on its own (WK_MUL_RN etc.), divisions and
// the square root correctly rounded (WK_DIV_RN, WK_SQRT_RN: CUDA's __fdiv_rn and __fsqrt_rn; in
// OpenCL, whose `/` and sqrt may be 2.5 and 3 ULP off, exact integer versions). Appended to
// quant_kernels.cpp's pieces (wk_div_rn, wk_nearest_int, wk_fabs, wk_put_half, wk_signed_absmax),
// which it uses.
#include "generator.hpp"

namespace wick::gpu::detail {

const char* const kQuantKFn = R"K(
#ifdef __CUDACC__
#define WK_SQRT_RN(v) __fsqrt_rn(v)
#else
#define WK_SQRT_RN(v) wk_sqrt_rn(v)
/* sqrt of a finite v >= 0 or +Inf: the integer square root of the significand, widened to 52 or
   53 bits, rounded to nearest even with the remainder as the sticky bit. */
WK_FN float wk_sqrt_rn(float v) {
  const wk_u32 x = WK_F32_BITS(v);
  if (x == 0u || x >= 0x7f800000u) return v;
  int e = (int)(x >> 23);
  wk_u64 m = x & 0x7fffffu;
  if (e == 0) e = 1; else m |= 0x800000u;
  e -= 150;  /* v = m 2^e */
  while (m < 0x800000u) { m <<= 1; --e; }
  if (e & 1) { m <<= 1; --e; }
  wk_u64 rem = m << 28, r = 0, bit = ((wk_u64)1) << 52;
  while (bit > rem) bit >>= 2;
  while (bit != 0u) {
    if (rem >= r + bit) { rem -= r + bit; r = (r >> 1) + bit; } else { r >>= 1; }
    bit >>= 2;
  }
  /* sqrt(v) = (r + a fraction) 2^((e - 28) / 2), r of 26 or 27 bits */
  const int shift = (r >> 26) != 0u ? 3 : 2;
  wk_u64 q = r >> shift;
  const wk_u64 rest = r & ((((wk_u64)1) << shift) - 1u), halfway = ((wk_u64)1) << (shift - 1);
  if (rest > halfway || (rest == halfway && (rem != 0u || (q & 1u)))) ++q;
  int ex = (e - 28) / 2 + shift;
  if (q == 0x1000000u) { q >>= 1; ++ex; }
  return WK_BITS_F32(((wk_u32)(ex + 150) << 23) | ((wk_u32)q & 0x7fffffu));
}
#endif
WK_FN int wk_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
WK_FN float wk_half_round(float v) { return wk_f16_to_f32(wk_f32_to_f16(v)); }

/* ggml's make_qkx2_quants: x ~ scale L + min, L in 0..nmax, min <= 0; the best of nstep + 1
   grids by weighted error, each refit by weighted least squares. Returns the scale, *the_min -min. */
WK_FN void wk_affine(int n, int nmax, const float* x, float iscale, float mn, int* L) {
  for (int i = 0; i < n; ++i) L[i] = wk_clamp(wk_nearest_int(WK_MUL_RN(iscale, WK_SUB_RN(x[i], mn))), 0, nmax);
}
WK_FN float wk_affine_error(int n, const float* x, const float* w, const int* L, float scale, float mn, int mad) {
  float error = 0.0f;
  for (int i = 0; i < n; ++i) {
    float diff = WK_SUB_RN(WK_ADD_RN(WK_MUL_RN(scale, (float)L[i]), mn), x[i]);
    diff = mad ? wk_fabs(diff) : WK_MUL_RN(diff, diff);
    error = WK_ADD_RN(error, WK_MUL_RN(w[i], diff));
  }
  return error;
}
WK_FN float wk_qkx2(int n, int nmax, const float* x, const float* w, int* L, float* the_min, float rmin,
                    float rdelta, int nstep, int mad) {
  float mn = x[0], mx = x[0], sum_w = w[0], sum_x = WK_MUL_RN(w[0], x[0]);
  for (int i = 1; i < n; ++i) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w = WK_ADD_RN(sum_w, w[i]);
    sum_x = WK_ADD_RN(sum_x, WK_MUL_RN(w[i], x[i]));
  }
  if (mn > 0.0f) mn = 0.0f;
  if (mx == mn) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -mn;
    return 0.0f;
  }
  float iscale = WK_DIV_RN((float)nmax, WK_SUB_RN(mx, mn));
  float scale = WK_DIV_RN(1.0f, iscale);
  wk_affine(n, nmax, x, iscale, mn, L);
  float best = wk_affine_error(n, x, w, L, scale, mn, mad);
  int aux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = WK_DIV_RN(WK_ADD_RN(WK_ADD_RN(rmin, WK_MUL_RN(rdelta, (float)is)), (float)nmax), WK_SUB_RN(mx, mn));
    wk_affine(n, nmax, x, iscale, mn, aux);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float wl = WK_MUL_RN(w[i], (float)aux[i]);
      sum_l = WK_ADD_RN(sum_l, wl);
      sum_l2 = WK_ADD_RN(sum_l2, WK_MUL_RN(wl, (float)aux[i]));
      sum_xl = WK_ADD_RN(sum_xl, WK_MUL_RN(wl, x[i]));
    }
    const float D = WK_SUB_RN(WK_MUL_RN(sum_w, sum_l2), WK_MUL_RN(sum_l, sum_l));
    if (!(D > 0.0f)) continue;
    float this_scale = WK_DIV_RN(WK_SUB_RN(WK_MUL_RN(sum_w, sum_xl), WK_MUL_RN(sum_x, sum_l)), D);
    float this_min = WK_DIV_RN(WK_SUB_RN(WK_MUL_RN(sum_l2, sum_x), WK_MUL_RN(sum_l, sum_xl)), D);
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = WK_DIV_RN(sum_xl, sum_l2);
    }
    const float cur = wk_affine_error(n, x, w, aux, this_scale, this_min, mad);
    if (cur < best) {
      for (int i = 0; i < n; ++i) L[i] = aux[i];
      best = cur;
      scale = this_scale;
      mn = this_min;
    }
  }
  *the_min = -mn;
  return scale;
}

/* A symmetric grid l in -nmax..nmax-1 at iscale: sums[0] = sum w x l, sums[1] = sum w l^2
   (w = x^2); L[i] = l + nmax where `write`. */
WK_FN void wk_symmetric_fit(int n, int nmax, const float* x, float iscale, int* L, int write, float* sums) {
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = wk_clamp(wk_nearest_int(WK_MUL_RN(iscale, x[i])), -nmax, nmax - 1);
    if (write) L[i] = l + nmax;
    const float w = WK_MUL_RN(x[i], x[i]);
    sumlx = WK_ADD_RN(sumlx, WK_MUL_RN(WK_MUL_RN(w, x[i]), (float)l));
    suml2 = WK_ADD_RN(suml2, WK_MUL_RN(WK_MUL_RN(w, (float)l), (float)l));
  }
  sums[0] = sumlx;
  sums[1] = suml2;
}
/* The start both symmetric searches share: the signed maximum of x (0 when every |x| is below
   ggml's GROUP_MAX_EPS: L all 0, nothing to fit), and the fit of the grid -nmax / max into L, f. */
WK_FN float wk_first_fit(int n, int nmax, const float* x, int* L, float* f) {
  const float max = wk_signed_absmax(x, n);
  if (wk_fabs(max) < 1e-15f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  wk_symmetric_fit(n, nmax, x, WK_DIV_RN(-(float)nmax, max), L, 1, f);
  return max;
}
/* ggml's make_qx_quants as Q6_K calls it: the best of 19 symmetric grids. */
WK_FN float wk_qx(int n, int nmax, const float* x, int* L) {
  float f[2];
  const float max = wk_first_fit(n, nmax, x, L, f);
  if (max == 0.0f) return 0.0f;
  float scale = f[1] != 0.0f ? WK_DIV_RN(f[0], f[1]) : 0.0f;
  float best = WK_MUL_RN(scale, f[0]);
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = WK_DIV_RN(-WK_ADD_RN((float)nmax, WK_MUL_RN(0.1f, (float)is)), max);
    wk_symmetric_fit(n, nmax, x, iscale, L, 0, f);
    if (f[1] > 0.0f && WK_MUL_RN(f[0], f[0]) > WK_MUL_RN(best, f[1])) {
      wk_symmetric_fit(n, nmax, x, iscale, L, 1, f);
      scale = WK_DIV_RN(f[0], f[1]);
      best = WK_MUL_RN(scale, f[0]);
    }
  }
  return scale;
}
/* ggml's make_q3_quants with do_rmse: the grid of -nmax / max, then up to 5 sweeps moving one
   element at a time where that improves the fit. */
WK_FN float wk_q3(int n, int nmax, const float* x, int* L) {
  float f[2];
  if (wk_first_fit(n, nmax, x, L, f) == 0.0f) return 0.0f;
  float sumlx = f[0], suml2 = f[1];
  for (int i = 0; i < n; ++i) L[i] -= nmax;
  for (int itry = 0; itry < 5; ++itry) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = WK_MUL_RN(x[i], x[i]), wx = WK_MUL_RN(w, x[i]);
      float slx = WK_SUB_RN(sumlx, WK_MUL_RN(wx, (float)L[i]));
      if (!(slx > 0.0f)) continue;
      float sl2 = WK_SUB_RN(suml2, WK_MUL_RN(WK_MUL_RN(w, (float)L[i]), (float)L[i]));
      const int nl = wk_clamp(wk_nearest_int(WK_DIV_RN(WK_MUL_RN(x[i], sl2), slx)), -nmax, nmax - 1);
      if (nl == L[i]) continue;
      slx = WK_ADD_RN(slx, WK_MUL_RN(wx, (float)nl));
      sl2 = WK_ADD_RN(sl2, WK_MUL_RN(WK_MUL_RN(w, (float)nl), (float)nl));
      if (sl2 > 0.0f && WK_MUL_RN(WK_MUL_RN(slx, slx), suml2) > WK_MUL_RN(WK_MUL_RN(sumlx, sumlx), sl2)) {
        L[i] = nl;
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] += nmax;
  return suml2 > 0.0f ? WK_DIV_RN(sumlx, suml2) : 0.0f;
}

/* Q2_K's and Q3_K's 2-bit fields: L[128h + 32k + l] at bits 2k of qs[32h + l]. */
WK_FN void wk_pack_q2(const int* L, WK_G wk_u8* qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = (wk_u8)((L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6)) & 0xFF);
}

/* Q2_K (84 bytes: scales[16], qs[64], d, dmin). */
WK_FN void wk_quant_q2k(const float* x, WK_G wk_u8* b) {
  int L[256];
  float w[16], mins[16], scales[16], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) w[l] = wk_fabs(x[16 * j + l]);
    scales[j] = wk_qkx2(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  float d = 0.0f, dmin = 0.0f;
  if (max_scale > 0.0f) {
    const float iscale = WK_DIV_RN(15.0f, max_scale);
    for (int j = 0; j < 16; ++j) b[j] = (wk_u8)(wk_nearest_int(WK_MUL_RN(iscale, scales[j])) & 0xFF);
    d = WK_DIV_RN(max_scale, 15.0f);
  }
  if (max_min > 0.0f) {
    const float iscale = WK_DIV_RN(15.0f, max_min);
    for (int j = 0; j < 16; ++j) b[j] = (wk_u8)((b[j] | (wk_nearest_int(WK_MUL_RN(iscale, mins[j])) << 4)) & 0xFF);
    dmin = WK_DIV_RN(max_min, 15.0f);
  }
  wk_put_half(b + 80, d);
  wk_put_half(b + 82, dmin);
  d = wk_half_round(d);
  dmin = wk_half_round(dmin);
  for (int j = 0; j < 16; ++j) {
    const float dj = WK_MUL_RN(d, (float)(b[j] & 0xF));
    if (dj == 0.0f) continue;
    const float dm = WK_MUL_RN(dmin, (float)(b[j] >> 4));
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = wk_clamp(wk_nearest_int(WK_DIV_RN(WK_ADD_RN(x[16 * j + i], dm), dj)), 0, 3);
  }
  wk_pack_q2(L, b + 16);
}

/* Q3_K (110 bytes: hmask[32], qs[64], scales[12], d). */
WK_FN int wk_q3k_scale(WK_G const wk_u8* s, int j) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  return (low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}
WK_FN void wk_quant_q3k(const float* x, WK_G wk_u8* b) {
  int L[256];
  float scales[16], max_scale = 0.0f, amax = 0.0f;
  for (int j = 0; j < 16; ++j) scales[j] = wk_q3(16, 4, x + 16 * j, L + 16 * j);
  for (int j = 0; j < 16; ++j)
    if (wk_fabs(scales[j]) > amax) { amax = wk_fabs(scales[j]); max_scale = scales[j]; }
  WK_G wk_u8* s = b + 96;
  float d = 0.0f;
  if (max_scale != 0.0f) {
    const float iscale = WK_DIV_RN(-32.0f, max_scale);
    for (int j = 0; j < 16; ++j) {
      const int l = wk_clamp(wk_low_i8(wk_nearest_int(WK_MUL_RN(iscale, scales[j]))), -32, 31) + 32;
      if (j < 8) s[j] = (wk_u8)(l & 0xF);
      else s[j - 8] = (wk_u8)((s[j - 8] | ((l & 0xF) << 4)) & 0xFF);
      s[j % 4 + 8] = (wk_u8)((s[j % 4 + 8] | ((l >> 4) << (2 * (j / 4)))) & 0xFF);
    }
    d = WK_DIV_RN(1.0f, iscale);
  }
  wk_put_half(b + 108, d);
  d = wk_half_round(d);
  for (int j = 0; j < 16; ++j) {
    const float dj = WK_MUL_RN(d, (float)wk_q3k_scale(s, j));
    if (dj == 0.0f) continue;
    for (int i = 0; i < 16; ++i) L[16 * j + i] = wk_clamp(wk_nearest_int(WK_DIV_RN(x[16 * j + i], dj)), -4, 3) + 4;
  }
  for (int e = 0; e < 256; ++e) {
    if (L[e] > 3) b[e % 32] = (wk_u8)(b[e % 32] | (1 << (e / 32)));
    if (L[e] > 3) L[e] -= 4;
  }
  wk_pack_q2(L, b + 32);
}

/* Q4_K and Q5_K's scales and L (nmax 15 or 31): d at b, dmin at b + 2, the 12 scale bytes at b + 4. */
WK_FN void wk_quant_k4(const float* x, int nmax, float rmin, int nstep, WK_G wk_u8* b, int* L) {
  float scales[8], mins[8], w[32], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 = WK_ADD_RN(sum_x2, WK_MUL_RN(xs[l], xs[l]));
    const float av_x = WK_SQRT_RN(WK_DIV_RN(sum_x2, 32.0f));
    for (int l = 0; l < 32; ++l) w[l] = WK_ADD_RN(av_x, wk_fabs(xs[l]));
    scales[j] = wk_qkx2(32, nmax, xs, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep, 0);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0.0f ? WK_DIV_RN(63.0f, max_scale) : 0.0f;
  const float inv_min = max_min > 0.0f ? WK_DIV_RN(63.0f, max_min) : 0.0f;
  WK_G wk_u8* p = b + 4;
  for (int j = 0; j < 8; ++j) {
    const int ls = wk_clamp(wk_nearest_int(WK_MUL_RN(inv_scale, scales[j])) & 0xFF, 0, 63);
    const int lm = wk_clamp(wk_nearest_int(WK_MUL_RN(inv_min, mins[j])) & 0xFF, 0, 63);
    if (j < 4) {
      p[j] = (wk_u8)ls;
      p[j + 4] = (wk_u8)lm;
    } else {
      p[j + 4] = (wk_u8)((ls & 0xF) | ((lm & 0xF) << 4));
      p[j - 4] = (wk_u8)((p[j - 4] | ((ls >> 4) << 6)) & 0xFF);
      p[j] = (wk_u8)((p[j] | ((lm >> 4) << 6)) & 0xFF);
    }
  }
  wk_put_half(b, WK_DIV_RN(max_scale, 63.0f));
  wk_put_half(b + 2, WK_DIV_RN(max_min, 63.0f));
  const float d = wk_half_at(b), dmin = wk_half_at(b + 2);
  for (int j = 0; j < 8; ++j) {
    const int sc = j < 4 ? (p[j] & 63) : ((p[j + 4] & 0xF) | ((p[j - 4] >> 6) << 4));
    const int m = j < 4 ? (p[j + 4] & 63) : ((p[j + 4] >> 4) | ((p[j] >> 6) << 4));
    const float dj = WK_MUL_RN(d, (float)sc);
    if (dj == 0.0f) continue;
    const float dm = WK_MUL_RN(dmin, (float)m);
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = wk_clamp(wk_nearest_int(WK_DIV_RN(WK_ADD_RN(x[32 * j + i], dm), dj)), 0, nmax);
  }
}

/* Q6_K (210 bytes: ql[128], qh[64], scales[16], d). */
WK_FN void wk_quant_q6k(const float* x, WK_G wk_u8* b) {
  int L[256];
  float scales[16], max_scale = 0.0f, max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = wk_qx(16, 32, x + 16 * j, L + 16 * j);
    if (wk_fabs(scales[j]) > max_abs) { max_abs = wk_fabs(scales[j]); max_scale = scales[j]; }
  }
  if (max_abs < 1e-15f) return;  /* all zero: a zero block */
  const float iscale = WK_DIV_RN(-128.0f, max_scale);
  wk_put_half(b + 208, WK_DIV_RN(1.0f, iscale));
  const float d = wk_half_at(b + 208);
  for (int j = 0; j < 16; ++j) {
    const int sc = wk_nearest_int(WK_MUL_RN(iscale, scales[j]));
    b[192 + j] = (wk_u8)((sc < 127 ? sc : 127) & 0xFF);
  }
  for (int j = 0; j < 16; ++j) {
    const float dj = WK_MUL_RN(d, (float)wk_low_i8(b[192 + j]));
    if (dj == 0.0f) continue;
    for (int i = 0; i < 16; ++i) L[16 * j + i] = wk_clamp(wk_nearest_int(WK_DIV_RN(x[16 * j + i], dj)), -32, 31) + 32;
  }
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = e % 128 / 32, l = e % 32;
    b[64 * h + 32 * (k % 2) + l] = (wk_u8)(b[64 * h + 32 * (k % 2) + l] | ((L[e] & 0xF) << (k < 2 ? 0 : 4)));
    b[128 + 32 * h + l] = (wk_u8)(b[128 + 32 * h + l] | ((L[e] >> 4) << (2 * k)));
  }
}

/* One super-block of a K-quant weight type (10..14) from the 256 values x, into b (zeroed here). */
WK_FN void wk_quant_k(const float* x, int type, WK_G wk_u8* b) {
  const int size = type == 10 ? 84 : type == 11 ? 110 : type == 12 ? 144 : type == 13 ? 176 : 210;
  for (int i = 0; i < size; ++i) b[i] = 0;
  int finite = 1;
  for (int l = 0; l < 256; ++l) finite &= wk_finite(x[l]);
  if (!finite) {  /* a NaN d (and dmin) */
    const int at = type == 10 ? 80 : type == 11 ? 108 : type == 14 ? 208 : 0;
    wk_put_half(b + at, WK_NAN_F);
    if (type == 10 || type == 12 || type == 13) wk_put_half(b + at + 2, WK_NAN_F);
    return;
  }
  if (type == 10) { wk_quant_q2k(x, b); return; }
  if (type == 11) { wk_quant_q3k(x, b); return; }
  if (type == 14) { wk_quant_q6k(x, b); return; }
  int L[256];
  wk_quant_k4(x, type == 12 ? 15 : 31, type == 12 ? -1.0f : -0.5f, type == 12 ? 20 : 15, b, L);
  if (type == 12) {
    for (int j = 0; j < 256; j += 64)
      for (int l = 0; l < 32; ++l) b[16 + j / 2 + l] = (wk_u8)((L[j + l] | (L[j + l + 32] << 4)) & 0xFF);
    return;
  }
  for (int e = 0; e < 256; ++e) {
    b[48 + 32 * (e / 64) + e % 32] = (wk_u8)(b[48 + 32 * (e / 64) + e % 32] | ((L[e] & 0xF) << (e % 64 < 32 ? 0 : 4)));
    b[16 + e % 32] = (wk_u8)(b[16 + e % 32] | ((L[e] >> 4) << (e / 32)));
  }
}
)K";

}  // namespace wick::gpu::detail
