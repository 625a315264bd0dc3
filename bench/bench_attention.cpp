// Scaled-dot-product attention, f32 [b, h, s, d] (self-attention, no mask): Wick's fused
// Tensor::attention against Wick's own composite (q kᵀ · scale, softmax, · v, three ops) and raw
// oneDNN doing the same three steps (a batched matmul with the scale as an output scale, the
// softmax primitive in place, a batched matmul; primitives created once), on the same threads.
#include "bench_common.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <random>
#include <string>

namespace wick::bench {

namespace {

using dnnl::memory;

struct Shape4 {
  int64_t b, h, s, d;
};

double attention_flops(const Shape4& a) {
  return 4.0 * static_cast<double>(a.b * a.h) * static_cast<double>(a.s * a.s * a.d);
}

void wick_attention(benchmark::State& state, Shape4 a) {
  const Tensor q = random({a.b, a.h, a.s, a.d}, DType::F32, 1),
               k = random({a.b, a.h, a.s, a.d}, DType::F32, 2),
               v = random({a.b, a.h, a.s, a.d}, DType::F32, 3);
  for (auto _ : state) {
    Tensor o = Tensor::attention(q, k, v);
    benchmark::DoNotOptimize(o);
  }
  report_flops(state, attention_flops(a));
}

void composite_attention(benchmark::State& state, Shape4 a) {
  const Tensor q = random({a.b, a.h, a.s, a.d}, DType::F32, 1),
               k = random({a.b, a.h, a.s, a.d}, DType::F32, 2),
               v = random({a.b, a.h, a.s, a.d}, DType::F32, 3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(a.d));
  for (auto _ : state) {
    Tensor o = (q.matmul(k.t()) * scale).softmax(-1).matmul(v);
    benchmark::DoNotOptimize(o);
  }
  report_flops(state, attention_flops(a));
}

memory random_memory(const memory::desc& md, const dnnl::engine& eng, uint32_t seed) {
  memory m(md, eng);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = static_cast<float*>(m.get_data_handle());
  for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) p[i] = dist(gen);
  return m;
}

void onednn_attention(benchmark::State& state, Shape4 a) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream st(eng);
  const memory::dim bh = a.b * a.h, s = a.s, d = a.d;
  const auto f32 = memory::data_type::f32;
  const memory::desc q_md({bh, s, d}, f32, {s * d, d, 1}), v_md = q_md, o_md = q_md;
  // kᵀ as a strided view of the row-major k.
  const memory::desc kt_md({bh, d, s}, f32, {s * d, 1, d});
  const memory::desc p_md({bh, s, s}, f32, {s * s, s, 1});
  dnnl::primitive_attr scaled;
  scaled.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(d))});
  const dnnl::matmul qk(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, kt_md, p_md), scaled, eng));
  const dnnl::softmax_v2_forward softmax(dnnl::softmax_v2_forward::primitive_desc(
      dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::softmax_accurate, p_md, p_md, 2),
      eng));
  const dnnl::matmul pv(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p_md, v_md, o_md), eng));
  memory q = random_memory(q_md, eng, 1), k = random_memory(q_md, eng, 2),
         v = random_memory(v_md, eng, 3), p(p_md, eng), o(o_md, eng);
  const memory kt(kt_md, eng, k.get_data_handle());
  for (auto _ : state) {
    qk.execute(st, {{DNNL_ARG_SRC, q}, {DNNL_ARG_WEIGHTS, kt}, {DNNL_ARG_DST, p}});
    softmax.execute(st, {{DNNL_ARG_SRC, p}, {DNNL_ARG_DST, p}});
    pv.execute(st, {{DNNL_ARG_SRC, p}, {DNNL_ARG_WEIGHTS, v}, {DNNL_ARG_DST, o}});
    st.wait();
  }
  report_flops(state, attention_flops(a));
}

}  // namespace

void register_attention() {
  for (const Shape4& a : {Shape4{1, 8, 128, 64}, Shape4{1, 8, 512, 64}, Shape4{1, 8, 2048, 64},
                          Shape4{8, 8, 128, 64}, Shape4{1, 8, 512, 32}, Shape4{1, 8, 512, 128}}) {
    const std::string name = "attention_f32_b" + std::to_string(a.b) + "h" + std::to_string(a.h) +
                             "s" + std::to_string(a.s) + "d" + std::to_string(a.d);
    benchmark::RegisterBenchmark((name + "/wick").c_str(), wick_attention, a)->UseRealTime();
    benchmark::RegisterBenchmark((name + "/composite").c_str(), composite_attention, a)
        ->UseRealTime();
    benchmark::RegisterBenchmark((name + "/onednn").c_str(), onednn_attention, a)->UseRealTime();
  }
}

}  // namespace wick::bench
