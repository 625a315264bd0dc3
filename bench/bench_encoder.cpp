// One BERT encoder layer at inference (all-MiniLM-L6-v2's sizes: hidden 384, 12 heads of 32,
// feed-forward 1536, GELU erf, post-layer-norm), sequence 128 or 32, batch 1, composed from Wick's
// Tensor ops under no-grad. Its reference is PyTorch 2's same layer in bench/torch2_reference.py,
// which runs this case in a separate process, interleaved; wick_bench holds the Wick side only.
// Self-registering, so the file only needs its line in bench/CMakeLists.txt.
#include "bench_common.hpp"

#include <wick/autograd.hpp>

#include <string>

namespace wick::bench {

namespace {

constexpr int64_t kHidden = 384, kHeads = 12, kFfn = 1536;

struct EncoderWeights {
  Tensor wqkv, bqkv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2;
  EncoderWeights()
      : wqkv(random({kHidden, 3 * kHidden}, DType::F32, 11) * 0.05),
        bqkv(random({3 * kHidden}, DType::F32, 12) * 0.05),
        wo(random({kHidden, kHidden}, DType::F32, 13) * 0.05),
        bo(random({kHidden}, DType::F32, 14) * 0.05),
        g1(random({kHidden}, DType::F32, 15) * 0.1 + 1.0),
        b1(random({kHidden}, DType::F32, 16) * 0.1),
        w1(random({kHidden, kFfn}, DType::F32, 17) * 0.05),
        c1(random({kFfn}, DType::F32, 18) * 0.05),
        w2(random({kFfn, kHidden}, DType::F32, 19) * 0.05),
        c2(random({kHidden}, DType::F32, 20) * 0.05),
        g2(random({kHidden}, DType::F32, 21) * 0.1 + 1.0),
        b2(random({kHidden}, DType::F32, 22) * 0.1) {}
};

// x: [1, s, hidden]. The same sequence of ops as torch2_reference.py's encoder_layer.
Tensor encoder_layer(const Tensor& x, const EncoderWeights& w) {
  const int64_t s = x.shape()[1];
  const Tensor qkv = (x.matmul(w.wqkv) + w.bqkv).reshape({1, s, 3, kHeads, kHidden / kHeads});
  const Tensor q = qkv.narrow(2, 0, 1).reshape({1, s, kHeads, kHidden / kHeads}).permute({0, 2, 1, 3});
  const Tensor k = qkv.narrow(2, 1, 1).reshape({1, s, kHeads, kHidden / kHeads}).permute({0, 2, 1, 3});
  const Tensor v = qkv.narrow(2, 2, 1).reshape({1, s, kHeads, kHidden / kHeads}).permute({0, 2, 1, 3});
  const Tensor ctx = Tensor::attention(q, k, v).permute({0, 2, 1, 3}).reshape({1, s, kHidden});
  const Tensor y = (ctx.matmul(w.wo) + w.bo + x).layer_norm(1, w.g1, w.b1, 1e-12);
  const Tensor h = (y.matmul(w.w1) + w.c1).gelu_erf();
  return (h.matmul(w.w2) + w.c2 + y).layer_norm(1, w.g2, w.b2, 1e-12);
}

void bm_encoder(benchmark::State& state, int64_t s) {
  const autograd::NoGradGuard no_grad;
  const EncoderWeights w;
  const Tensor x = random({1, s, kHidden}, DType::F32, 3);
  for (auto _ : state) {
    const Tensor out = encoder_layer(x, w);
    benchmark::DoNotOptimize(out);
  }
  report_flops(state, 2.0 * double(s) * (4.0 * kHidden * kHidden + 2.0 * kHidden * kFfn) +
                          4.0 * double(s) * double(s) * kHidden);
}

const bool registered = [] {
  for (int64_t s : {32, 128}) {
    const std::string name = "encoder_f32_s" + std::to_string(s) + "h384/wick";
    benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { bm_encoder(st, s); })
        ->Unit(benchmark::kMicrosecond)
        ->MinWarmUpTime(0.2)  // the first layer makes every plan (oneDNN JIT): not timed
        ->UseRealTime();
  }
  return true;
}();

}  // namespace

}  // namespace wick::bench
