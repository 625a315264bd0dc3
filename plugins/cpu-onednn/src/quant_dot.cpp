// quant_dot.cpp — quant_dot.hpp's dispatch: the fused dot products of quant_dot_kernels.inc on the
// widest ISA vecmath::active_isa() allows (AVX-512, AVX2 + FMA, or baseline), capped by
// ONEDNN_MAX_CPU_ISA as the rest of the plugin is. Only the per-ISA files hold code beyond
// baseline x86-64, in namespaces quant_isa_avx* (tests/baseline_isa_test.sh allows those).
#include "quant_dot.hpp"

#include "vector_math.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

namespace wick::cpu {

namespace quant_isa_base {
float dot_blocks(sdk::ggml::Type type, const uint8_t* w, const float* x, const float* xs, int64_t k);
void dot8_rows(sdk::ggml::Type type, const uint8_t* w, int64_t row_bytes, const uint8_t* a, int64_t k, float* y,
               int64_t rows);
}
#ifdef WICK_CPU_VECTOR_MATH
namespace quant_isa_avx2 {
float dot_blocks(sdk::ggml::Type type, const uint8_t* w, const float* x, const float* xs, int64_t k);
void dot8_rows(sdk::ggml::Type type, const uint8_t* w, int64_t row_bytes, const uint8_t* a, int64_t k, float* y,
               int64_t rows);
}
namespace quant_isa_avx512 {
float dot_blocks(sdk::ggml::Type type, const uint8_t* w, const float* x, const float* xs, int64_t k);
}
namespace quant_isa_avx512vnni {
void dot8_rows(sdk::ggml::Type type, const uint8_t* w, int64_t row_bytes, const uint8_t* a, int64_t k, float* y,
               int64_t rows);
}
#endif

namespace {

using DotFn = float (*)(sdk::ggml::Type, const uint8_t*, const float*, const float*, int64_t);

DotFn pick() {
#ifdef WICK_CPU_VECTOR_MATH
  switch (vecmath::active_isa()) {
    case vecmath::Isa::AVX512: return &quant_isa_avx512::dot_blocks;
    case vecmath::Isa::AVX2: return &quant_isa_avx2::dot_blocks;
    default: break;
  }
#endif
  return &quant_isa_base::dot_blocks;
}

using Dot8Fn = void (*)(sdk::ggml::Type, const uint8_t*, int64_t, const uint8_t*, int64_t, float*, int64_t);

#ifdef WICK_CPU_VECTOR_MATH
// vpdpbusd needs AVX-512 VNNI (and VL, BW for its 256-bit form and the byte ops); a cap of
// ONEDNN_MAX_CPU_ISA=AVX512_CORE (oneDNN's level below VNNI) leaves it out, as oneDNN does.
bool vnni_allowed() {
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512bw"))
    return false;
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::string cap = env != nullptr ? env : "";
  for (char& c : cap) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return cap != "AVX512_CORE";
}
#endif

Dot8Fn pick8() {
#ifdef WICK_CPU_VECTOR_MATH
  const vecmath::Isa isa = vecmath::active_isa();
  if (isa == vecmath::Isa::AVX512 && vnni_allowed()) return &quant_isa_avx512vnni::dot8_rows;
  if (isa >= vecmath::Isa::AVX2) return &quant_isa_avx2::dot8_rows;
#endif
  return &quant_isa_base::dot8_rows;
}

}  // namespace

bool has_dot8(sdk::ggml::Type type) { return has_fused_dot(type); }

void dot8_rows(sdk::ggml::Type type, const uint8_t* w, int64_t row_bytes, const uint8_t* a, int64_t k, float* y,
               int64_t rows) {
  static const Dot8Fn fn = pick8();
  fn(type, w, row_bytes, a, k, y, rows);
}

bool has_fused_dot(sdk::ggml::Type type) {
  using sdk::ggml::Type;
  return type == Type::Q8_0 || type == Type::Q4_0 || type == Type::Q4_K || type == Type::Q6_K;
}

void group_sums(const float* x, float* xs, int64_t k) {
  for (int64_t g = 0; g < k / 32; ++g) {
    float s = 0;
    for (int l = 0; l < 32; ++l) s += x[32 * g + l];
    xs[g] = s;
  }
}

float dot_blocks(sdk::ggml::Type type, const uint8_t* w, const float* x, const float* xs, int64_t k) {
  static const DotFn fn = pick();
  return fn(type, w, x, xs, k);
}

}  // namespace wick::cpu
