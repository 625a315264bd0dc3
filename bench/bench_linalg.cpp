// Matmul and convolution: Wick's Tensor ops against raw oneDNN primitives created once and
// executed in the loop, on the same threads.
#include "bench_common.hpp"

#include <wick/autograd.hpp>

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace wick::bench {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

memory::data_type dnnl_type(DType t) {
  return t == DType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

const char* type_name(DType t) {
  return t == DType::BF16 ? "bf16" : "f32";
}

// A oneDNN memory of the descriptor, filled with values in [-1, 1) (through a plain f32 source and
// a reorder, so that every layout and dtype gets the same kind of numbers).
memory filled(const memory::desc& md, const dnnl::engine& eng, dnnl::stream& s, uint32_t seed) {
  memory out(md, eng);
  memory::dims strides(md.dims().size(), 1);
  for (size_t i = strides.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * md.dims()[i + 1];
  const memory::desc f32_md(md.dims(), memory::data_type::f32, strides);
  memory src(f32_md, eng);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = static_cast<float*>(src.get_data_handle());
  for (size_t i = 0; i < f32_md.get_size() / sizeof(float); ++i) p[i] = dist(gen);
  dnnl::reorder(src, out).execute(s, src, out);
  s.wait();
  return out;
}

// A oneDNN primitive descriptor, or nullopt (the benchmark skipped with the reason) where this
// CPU's oneDNN has no kernel for it: oneDNN 2.6 has no bf16 kernels below AVX-512.
template <class Make>
auto primitive_desc_or_skip(benchmark::State& state, DType t, Make&& make)
    -> std::optional<decltype(make())> {
  try {
    return make();
  } catch (const dnnl::error& e) {
    state.SkipWithError((std::string("oneDNN has no ") + type_name(t) +
                         " kernel on this CPU (ONEDNN_MAX_CPU_ISA or an older ISA): " + e.what())
                            .c_str());
    return std::nullopt;
  }
}

// ---- matmul -------------------------------------------------------------------------------------

// Under no-grad with the same weight tensor every call: the inference pattern, in which the
// plugin prepacks b after its second use (matmul.cpp).
void wick_matmul(benchmark::State& state, int64_t m, int64_t k, int64_t n, DType t) {
  const autograd::NoGradGuard no_grad;
  const Tensor a = random({m, k}, t, 1), b = random({k, n}, t, 2);
  // Outside the timing, as the prepacked reference's reorder is: the calls that pack b (a 46 MB
  // weight's reorder costs several calls' time, which a model's thousands of calls amortise).
  for (int warm = 0; warm < 3; ++warm) benchmark::DoNotOptimize(a.matmul(b));
  for (auto _ : state) {
    Tensor c = a.matmul(b);
    benchmark::DoNotOptimize(c);
  }
  report_flops(state, 2.0 * static_cast<double>(m * k * n));
}

// Plain row-major operands, as Wick's tensors are; with `prepacked`, the weights are reordered once
// into the layout oneDNN prefers (possible only when they are constant, which an eager op cannot
// know).
void onednn_matmul(benchmark::State& state, int64_t m, int64_t k, int64_t n, DType t,
                   bool prepacked) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::desc a_md({m, k}, dnnl_type(t), tag::ab), b_md({k, n}, dnnl_type(t), tag::ab),
      c_md({m, n}, dnnl_type(t), tag::ab);
  const memory::desc b_want = prepacked ? memory::desc({k, n}, dnnl_type(t), tag::any) : b_md;
  const auto made = primitive_desc_or_skip(state, t, [&] {
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_want, c_md), eng);
  });
  if (!made) return;
  const dnnl::matmul::primitive_desc& pd = *made;
  dnnl::matmul prim(pd);
  memory a = filled(a_md, eng, s, 1), b = filled(pd.weights_desc(), eng, s, 2), c(c_md, eng);
  for (auto _ : state) {
    prim.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
  }
  report_flops(state, 2.0 * static_cast<double>(m * k * n));
  state.SetLabel(pd.impl_info_str());
}

// ---- convolution --------------------------------------------------------------------------------

constexpr int64_t kN = 32, kC = 64, kHW = 56, kO = 64, kK = 3;
constexpr double kConvFlops = 2.0 * kN * kO * kHW * kHW * kC * kK * kK;

void wick_conv(benchmark::State& state, DType t, bool channels_last) {
  // channels_last: the same logical [N, C, H, W] tensor stored as [N, H, W, C].
  const Tensor x = channels_last ? random({kN, kHW, kHW, kC}, t, 1).permute({0, 3, 1, 2})
                                 : random({kN, kC, kHW, kHW}, t, 1);
  const Tensor w = random({kO, kC, kK, kK}, t, 2);
  for (auto _ : state) {
    Tensor y = x.conv(w, {1}, {1});
    benchmark::DoNotOptimize(y);
  }
  report_flops(state, kConvFlops);
}

// The convolution primitive with the layouts oneDNN prefers (format `any`). With `plain_io`, the
// data starts and ends in plain NCHW / OIHW, as a NCHW user's tensors do: src and weights are
// reordered in, dst out, on every iteration. Without it, only the primitive runs (data already in
// its layout): the ceiling.
void onednn_conv(benchmark::State& state, DType t, bool plain_io) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::data_type dt = dnnl_type(t);
  const memory::dims src_dims{kN, kC, kHW, kHW}, wei_dims{kO, kC, kK, kK},
      dst_dims{kN, kO, kHW, kHW};
  const auto made = primitive_desc_or_skip(state, t, [&] {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
            memory::desc(src_dims, dt, tag::any), memory::desc(wei_dims, dt, tag::any),
            memory::desc(dst_dims, dt, tag::any),
            // strides 1, no dilation (oneDNN counts gaps), padding 1 each side
            {1, 1}, {0, 0}, {1, 1}, {1, 1}),
        eng);
  });
  if (!made) return;
  const dnnl::convolution_forward::primitive_desc& pd = *made;
  dnnl::convolution_forward conv(pd);
  memory src(pd.src_desc(), eng), wei(pd.weights_desc(), eng), dst(pd.dst_desc(), eng);
  const memory::desc src_plain(src_dims, dt, tag::nchw), wei_plain(wei_dims, dt, tag::oihw),
      dst_plain(dst_dims, dt, tag::nchw);
  memory user_src = filled(src_plain, eng, s, 1), user_wei = filled(wei_plain, eng, s, 2),
         user_dst(dst_plain, eng);
  dnnl::reorder to_src(user_src, src), to_wei(user_wei, wei), from_dst(dst, user_dst);
  to_src.execute(s, user_src, src);
  to_wei.execute(s, user_wei, wei);
  s.wait();
  for (auto _ : state) {
    if (plain_io) {
      to_src.execute(s, user_src, src);
      to_wei.execute(s, user_wei, wei);
    }
    conv.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    if (plain_io) from_dst.execute(s, dst, user_dst);
    s.wait();
  }
  report_flops(state, kConvFlops);
  state.SetLabel(pd.impl_info_str());
}

// ---- pooling -------------------------------------------------------------------------------------

// Max pooling of [n, c, hw, hw] with k x k windows, stride st, padding p on each side.
struct PoolShape {
  int64_t n, c, hw, k, st, p;
  int64_t out() const { return (hw + 2 * p - k) / st + 1; }
  double bytes() const { return 4.0 * static_cast<double>(n * c * hw * hw); }
  std::string name() const {  // snprintf: GCC 12 warns (-Wrestrict) on the chain of + it would be
    char s[96];
    std::snprintf(s, sizeof s, "n%lldc%lldh%lldk%llds%lld", static_cast<long long>(n), static_cast<long long>(c),
                  static_cast<long long>(hw), static_cast<long long>(k), static_cast<long long>(st));
    return p > 0 ? s + std::string("p") + std::to_string(p) : std::string(s);
  }
};

// Forward only, or (train) forward and backward, as a training step runs them: Wick's window_max
// then window_scatter of a gradient.
void wick_max_pool(benchmark::State& state, PoolShape ps, bool train) {
  const Tensor x = random({ps.n, ps.c, ps.hw, ps.hw}, DType::F32, 1);
  const Tensor g = random({ps.n, ps.c, ps.out(), ps.out()}, DType::F32, 2);
  for (auto _ : state) {
    Tensor y = x.max_pool2d({ps.k}, {ps.st}, {ps.p});
    benchmark::DoNotOptimize(y);
    if (train) {
      Tensor dx = x.window_scatter("max", g, {1, 1, ps.k, ps.k}, {1, 1, ps.st, ps.st},
                                   {{0, 0}, {0, 0}, {ps.p, ps.p}, {ps.p, ps.p}});
      benchmark::DoNotOptimize(dx);
    }
  }
  report_bytes(state, ps.bytes());
}

// oneDNN max pooling on plain NCHW memory, as a NCHW user runs it: forward inference, or (train)
// forward training (its workspace records each window's winner) and the backward primitive.
void onednn_max_pool(benchmark::State& state, PoolShape ps, bool train) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::desc src_md({ps.n, ps.c, ps.hw, ps.hw}, memory::data_type::f32, tag::nchw);
  const memory::desc dst_md({ps.n, ps.c, ps.out(), ps.out()}, memory::data_type::f32, tag::nchw);
  const auto desc = [&](dnnl::prop_kind prop) {
    return dnnl::pooling_v2_forward::desc(prop, dnnl::algorithm::pooling_max, src_md, dst_md, {ps.st, ps.st},
                                          {ps.k, ps.k}, {0, 0}, {ps.p, ps.p}, {ps.p, ps.p});
  };
  const dnnl::pooling_v2_forward::primitive_desc pd(
      desc(train ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference), eng);
  const dnnl::pooling_v2_forward pool(pd);
  memory src = filled(src_md, eng, s, 1), dst(dst_md, eng), diff_dst = filled(dst_md, eng, s, 2),
         diff_src(src_md, eng);
  std::optional<dnnl::pooling_v2_backward> back;
  memory workspace;
  if (train) {
    const dnnl::pooling_v2_backward::primitive_desc bpd(
        dnnl::pooling_v2_backward::desc(dnnl::algorithm::pooling_max, src_md, dst_md, {ps.st, ps.st},
                                        {ps.k, ps.k}, {0, 0}, {ps.p, ps.p}, {ps.p, ps.p}),
        eng, pd);
    back.emplace(bpd);
    workspace = memory(pd.workspace_desc(), eng);
  }
  for (auto _ : state) {
    if (!train) {
      pool.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    } else {
      pool.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_WORKSPACE, workspace}});
      back->execute(s, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}, {DNNL_ARG_WORKSPACE, workspace}});
    }
    s.wait();
  }
  report_bytes(state, ps.bytes());
  state.SetLabel(pd.impl_info_str());
}

}  // namespace

void register_linalg() {
  struct Shape3 {
    int64_t m, k, n;
  };
  const std::vector<Shape3> shapes = {
      {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
      {64, 768, 3072}, {8, 384, 384},   {1, 2048, 5632}};
  for (DType t : {DType::F32, DType::BF16}) {
    for (const Shape3& s : shapes) {
      const std::string name = std::string("matmul_") + type_name(t) + "_" + std::to_string(s.m) +
                               "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
      benchmark::RegisterBenchmark((name + "/wick").c_str(), wick_matmul, s.m, s.k, s.n, t)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->MinTime(0.2);
      benchmark::RegisterBenchmark((name + "/onednn").c_str(), onednn_matmul, s.m, s.k, s.n, t,
                                   false)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->MinTime(0.2);
      // The inference shapes, whose weights are constant: issue 23's targets hold Wick to these.
      if (s.m <= 64) {
        benchmark::RegisterBenchmark((name + "/onednn_prepacked").c_str(), onednn_matmul, s.m, s.k,
                                     s.n, t, true)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime()
            ->MinTime(0.2);
      }
    }
  }
  for (DType t : {DType::F32, DType::BF16}) {
    const std::string name = std::string("conv2d_") + type_name(t) + "_n32c64h56k64r3";
    for (const auto& [suffix, channels_last] :
         {std::pair{"/wick", false}, std::pair{"/wick_channels_last", true}}) {
      benchmark::RegisterBenchmark((name + suffix).c_str(), wick_conv, t, channels_last)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(0.3);
    }
    for (const auto& [suffix, plain] :
         {std::pair{"/onednn", false}, std::pair{"/onednn_nchw_io", true}}) {
      benchmark::RegisterBenchmark((name + suffix).c_str(), onednn_conv, t, plain)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(0.3);
    }
  }
  // ResNet's stem pooling, and the two of the CNN example (bench/train_vs_pytorch.py).
  for (const PoolShape& ps : {PoolShape{16, 64, 112, 3, 2, 1}, PoolShape{128, 16, 28, 2, 2, 0},
                              PoolShape{128, 32, 14, 2, 2, 0}}) {
    for (const bool train : {false, true}) {
      const std::string name = std::string(train ? "maxpool2d_train_f32_" : "maxpool2d_f32_") + ps.name();
      for (const auto& [suffix, fn] : {std::pair{"/wick", &wick_max_pool}, std::pair{"/onednn", &onednn_max_pool}})
        benchmark::RegisterBenchmark((name + suffix).c_str(), fn, ps, train)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(0.2);
    }
  }
}

}  // namespace wick::bench
