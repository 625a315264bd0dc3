// The plugin's oneDNN state and the dense scratch operands of the oneDNN paths.
#include "onednn.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace wick::cpu {

namespace {

// Whether oneDNN offers an optimised (not reference) implementation for `make`'s descriptor; a
// descriptor it cannot implement at all throws dnnl::error (status unimplemented).
template <class Make>
bool has_kernel(Make&& make) {
  try {
    return !is_reference(make());
  } catch (const dnnl::error&) {
    return false;
  }
}

std::atomic<uint64_t> g_next_id{1};  // Onednn::id_: one per plugin initialize, never reused

}  // namespace

Context::Onednn::Onednn(int thread_count, uint64_t plan_cache_bytes)
    : threads(thread_count),
      id_(g_next_id++),
      plan_budget_(std::make_shared<PlanBudget>(plan_cache_bytes)) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using prop = dnnl::prop_kind;
  const auto md = [](dnnl::memory::dims dims, tag t) {
    return dnnl::memory::desc(dims, dt::bf16, t);
  };
  bf16[kMatmul] = has_kernel([&] {
    return dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(md({8, 8}, tag::ab), md({8, 8}, tag::ab), md({8, 8}, tag::ab)), engine);
  });
  bf16[kConv] = has_kernel([&] {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(prop::forward_inference,
                                        dnnl::algorithm::convolution_direct,
                                        md({1, 8, 8, 8}, tag::any), md({8, 8, 3, 3}, tag::any),
                                        md({1, 8, 6, 6}, tag::any), {1, 1}, {0, 0}, {0, 0}),
        engine);
  });
  bf16[kPooling] = has_kernel([&] {
    return dnnl::pooling_v2_forward::primitive_desc(
        dnnl::pooling_v2_forward::desc(prop::forward_inference, dnnl::algorithm::pooling_max,
                                       md({1, 8, 8, 8}, tag::nchw), md({1, 8, 4, 4}, tag::nchw),
                                       {2, 2}, {2, 2}, {0, 0}, {0, 0}, {0, 0}),
        engine);
  });
  bf16[kSoftmax] = has_kernel([&] {
    return dnnl::softmax_v2_forward::primitive_desc(
        dnnl::softmax_v2_forward::desc(prop::forward_inference, dnnl::algorithm::softmax_accurate,
                                       md({8, 64}, tag::ab), md({8, 64}, tag::ab), 1),
        engine);
  });
  bf16[kLayerNorm] = has_kernel([&] {
    return dnnl::layer_normalization_forward::primitive_desc(
        dnnl::layer_normalization_forward::desc(prop::forward_inference, md({8, 64}, tag::ab),
                                                1e-5f, dnnl::normalization_flags::none),
        engine);
  });
}

std::string Context::Onednn::isa_note() const {
  std::string isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: isa = "sse41"; break;
    case dnnl::cpu_isa::avx: isa = "avx"; break;
    case dnnl::cpu_isa::avx2: isa = "avx2"; break;
    case dnnl::cpu_isa::avx2_vnni: isa = "avx2_vnni"; break;
    case dnnl::cpu_isa::avx512_mic: isa = "avx512_mic"; break;
    case dnnl::cpu_isa::avx512_mic_4ops: isa = "avx512_mic_4ops"; break;
    case dnnl::cpu_isa::avx512_core: isa = "avx512_core"; break;
    case dnnl::cpu_isa::avx512_core_vnni: isa = "avx512_core_vnni"; break;
    case dnnl::cpu_isa::avx512_core_bf16: isa = "avx512_core_bf16"; break;
    case dnnl::cpu_isa::avx512_core_amx: isa = "avx512_core_amx"; break;
    default: isa = "no JIT ISA (reference kernels only)"; break;
  }
  size_t native = 0;
  for (bool b : bf16) native += b ? 1 : 0;
  if (native == bf16.size()) return isa + ", bf16 native";
  if (native == 0) return isa + ", bf16 through f32";
  return isa + ", bf16 native for " + std::to_string(native) + " of " +
         std::to_string(bf16.size()) + " primitive families";
}

Context::Onednn::Local& Context::Onednn::local() {
  // Destroyed when the thread ends (its plans hold their own references to the engine).
  thread_local uint64_t owner = 0;
  thread_local std::unique_ptr<Local> state;
  if (owner != id_) {
    state = std::make_unique<Local>(engine, plan_budget_);
    owner = id_;
  }
  return *state;
}

void Context::Onednn::use_configured_threads() const {
  set_threads(threads);
}

void Context::Onednn::set_threads(int n) {
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}

Context::Onednn* create_onednn(int threads, uint64_t plan_cache_bytes) {
  return new Context::Onednn(threads, plan_cache_bytes);
}
void destroy_onednn(Context::Onednn* onednn) {
  delete onednn;
}

namespace {

template <class T>
inline constexpr bool is_float_type =
    std::is_floating_point_v<T> || std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>;

}  // namespace

void convert_strided(const wick_tensor_desc& src, const wick_tensor_desc& dst) {
  sdk::visit_dtype(src.dtype, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    sdk::visit_dtype(dst.dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      if constexpr (std::is_same_v<From, To> || (is_float_type<From> && is_float_type<To>)) {
        const From* s = data_of<const From>(src);
        To* d = data_of<To>(dst);
        sdk::for_each_row<2>(dst.shape, dst.rank, {dst.strides, src.strides},
                             [&](const sdk::Row<2>& r) {
                               if (r.stride[0] == 1 && r.stride[1] == 1) {
                                 for (int64_t i = 0; i < r.length; ++i)
                                   d[r.offset[0] + i] = cast_value<To>(s[r.offset[1] + i]);
                               } else {
                                 for (int64_t i = 0; i < r.length; ++i)
                                   d[r.offset[0] + i * r.stride[0]] =
                                       cast_value<To>(s[r.offset[1] + i * r.stride[1]]);
                               }
                             });
      } else {
        throw std::logic_error("convert_strided: unsupported dtype pair");
      }
    });
  });
}

bool has_non_finite(const Context& ctx, const wick_tensor_desc& d) {
  std::atomic<bool> found{false};
  auto scan = [&](auto tag, auto exponent) {
    using Bits = typename decltype(tag)::type;
    const Bits* p = data_of<const Bits>(d);
    // Rows (chunks of long ones) on every thread, as the primitive after it runs.
    parallel_rows<1>(ctx, d, {d.strides}, [&](const sdk::Row<1>& r) {
      // Branch-free blocks of 4096 that the compiler vectorises, leaving at the first hit.
      for (int64_t b = 0; b < r.length && !found.load(std::memory_order_relaxed); b += 4096) {
        const int64_t e = std::min<int64_t>(r.length, b + 4096);
        unsigned any = 0;
        if (r.stride[0] == 1) {
          const Bits* q = p + r.offset[0];
          for (int64_t i = b; i < e; ++i) any |= (q[i] & exponent) == exponent ? 1u : 0u;
        } else {
          for (int64_t i = b; i < e; ++i)
            any |= (p[r.offset[0] + i * r.stride[0]] & exponent) == exponent ? 1u : 0u;
        }
        if (any != 0) found.store(true, std::memory_order_relaxed);
      }
    });
  };
  if (d.dtype == WICK_DTYPE_F32)
    scan(sdk::type_tag<uint32_t>{}, uint32_t{0x7f800000u});
  else
    scan(sdk::type_tag<uint16_t>{}, uint16_t{0x7f80u});  // bf16
  return found.load();
}

void relu_keeping_nan_f32(const Context& ctx, const wick_tensor_desc& d) {
  // x < 0 ? 0 : x keeps NaN (the comparison is false) and vectorises (maxps with 0 first).
  auto relu = [](float* q, int64_t n, int64_t s) {
    if (s == 1) {
      for (int64_t i = 0; i < n; ++i) q[i] = q[i] < 0.0f ? 0.0f : q[i];
    } else {
      for (int64_t i = 0; i < n; ++i) q[i * s] = q[i * s] < 0.0f ? 0.0f : q[i * s];
    }
  };
  float* p = data_of<float>(d);
  if (fills_one_span(d)) {  // C order or channels-last: one loop over the memory
    const int64_t n = numel_of(d), chunk = int64_t{1} << 15, chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for num_threads(ctx.threads) schedule(static) if (ctx.threads > 1 && chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) relu(p + c * chunk, std::min(chunk, n - c * chunk), 1);
    return;
  }
  parallel_rows<1>(ctx, d, {d.strides},
                   [&](const sdk::Row<1>& r) { relu(p + r.offset[0], r.length, r.stride[0]); });
}

void Dense::allocate(const wick_tensor_desc& like, wick_dtype t) {
  shape.assign(like.shape, like.shape + like.rank);
  strides.resize(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  const size_t size = static_cast<size_t>(s) * sdk::dtype_size(t);
  bytes.reset(static_cast<unsigned char*>(
      ::operator new(std::max<size_t>(size, 64), std::align_val_t(64))));
  buffer.data = bytes.get();
  buffer.size = size;
  desc = wick_tensor_desc{};
  desc.struct_size = sizeof(desc);
  desc.buffer = &buffer;
  desc.byte_offset = 0;
  desc.dtype = t;
  desc.rank = like.rank;
  desc.shape = shape.data();
  desc.strides = strides.data();
}

void Dense::load(const wick_tensor_desc& src, wick_dtype t) {
  allocate(src, t);
  convert_strided(src, desc);
}

void Dense::store(const wick_tensor_desc& dst) const {
  convert_strided(desc, dst);
}

}  // namespace wick::cpu
