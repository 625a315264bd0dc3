// vector_math.cpp — picks the ISA of the vector math kernels (vector_math.hpp) at run time. Built
// for baseline x86-64: it only asks the CPU and calls through the per-ISA tables.
#include "vector_math.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

namespace wick::cpu {
#define WICK_VM_DECLARE(NS) \
  namespace NS {            \
  const vecmath::Kernels& kernels(); \
  }
WICK_VM_DECLARE(vecmath_isa_sse2)
WICK_VM_DECLARE(vecmath_isa_sse4)
WICK_VM_DECLARE(vecmath_isa_avx2)
WICK_VM_DECLARE(vecmath_isa_avx512)
#undef WICK_VM_DECLARE
}  // namespace wick::cpu

namespace wick::cpu::vecmath {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::SSE2: return "sse2";
    case Isa::SSE41: return "sse4.1";
    case Isa::AVX2: return "avx2";
    case Isa::AVX512: return "avx512f";
  }
  return "?";
}

const char* fn_name(Fn fn) {
  static constexpr const char* kNames[kFnCount] = {
      "exp",   "log",   "tanh",  "erf",   "erfc",  "sin",     "cos",  "tan",       "asin",
      "acos",  "atan",  "sinh",  "cosh",  "asinh", "acosh",   "atanh", "expm1",    "log1p",
      "cbrt",  "pow",   "sigmoid", "silu", "elu",  "gelu_tanh", "gelu_erf"};
  const int i = static_cast<int>(fn);
  return i >= 0 && i < kFnCount ? kNames[i] : "?";
}

bool cpu_has(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::SSE2: return true;
    case Isa::SSE41: return __builtin_cpu_supports("sse4.1");
    // SLEEF's avx2 functions use FMA too. __builtin_cpu_supports also checks that the OS saves
    // the wider registers (XCR0).
    case Isa::AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::AVX512: return __builtin_cpu_supports("avx512f");
  }
#endif
  return isa == Isa::SSE2;
}

const Kernels& kernels_of(Isa isa) {
  switch (isa) {
    case Isa::SSE41: return vecmath_isa_sse4::kernels();
    case Isa::AVX2: return vecmath_isa_avx2::kernels();
    case Isa::AVX512: return vecmath_isa_avx512::kernels();
    case Isa::SSE2: break;
  }
  return vecmath_isa_sse2::kernels();
}

std::optional<Isa> parse_isa_cap(std::string_view value) {
  std::string v;
  for (const char c : value) v += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto starts = [&v](std::string_view p) { return std::string_view(v).substr(0, p.size()) == p; };
  if (v == "SSE41") return Isa::SSE41;
  // AVX without AVX2: the widest kernels below AVX2 are SSE4.1's.
  if (v == "AVX") return Isa::SSE41;
  if (starts("AVX2")) return Isa::AVX2;
  if (starts("AVX512") || starts("AVX10")) return Isa::AVX512;
  return std::nullopt;  // ALL, DEFAULT, empty, or unknown: oneDNN runs uncapped too
}

namespace {

Isa pick_isa() {
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::optional<Isa> cap = env != nullptr ? parse_isa_cap(env) : std::nullopt;
  Isa best = Isa::SSE2;
  for (int i = 1; i < kIsaCount; ++i) {
    const auto isa = static_cast<Isa>(i);
    if (cap && isa > *cap) break;
    if (cpu_has(isa)) best = isa;
  }
  return best;
}

}  // namespace

Isa active_isa() {
  static const Isa isa = pick_isa();
  return isa;
}

const Kernels& active_kernels() {
  static const Kernels& k = kernels_of(active_isa());
  return k;
}

float exp_shift_sum(float* x, int64_t n, float shift, float scale) {
  return active_kernels().exp_shift_sum(x, n, shift, scale);
}

float max_f32(const float* x, int64_t n) {
  return active_kernels().max_f32(x, n);
}

void apply(Fn fn, const float* in, float* out, int64_t n, float alpha) {
  active_kernels().f32(fn, in, out, n, alpha);
}

void apply(Fn fn, const double* in, double* out, int64_t n, double alpha) {
  active_kernels().f64(fn, in, out, n, alpha);
}

}  // namespace wick::cpu::vecmath
