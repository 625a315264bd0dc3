// Matmul, convolution, window reductions, select-and-scatter and the fused ops on the CPU device
// (docs/ops/nn.md). Every op x dtype pair of the table is checked against NumPy-generated fixtures
// (tests/data/gen_nn.py writes tests/data/nn/*.json); the edge cases are worked by hand.
#include "ops_nn_fixtures.hpp"

#include <wick/direct.hpp>

#include <algorithm>
#include <numeric>
#include <random>

using namespace wick;
using namespace wick::test::nn;
using wick::test::cpu;

// ---- matmul -------------------------------------------------------------------------------------

TEST_CASE("matmul matches NumPy for every dtype", "[nn][matmul]") {
  for (const json& c : fixture("matmul.json")["cases"]) {
    for (DType t : kAll) {
      if (is_unsigned(t) && c["signed"].get<bool>()) continue;
      INFO(label(c, t));
      const Tensor out = make(c["a"], t).matmul(make(c["b"], t));
      CHECK(out.dtype() == t);
      CHECK(mismatches(out, t == DType::Bool ? c["out_bool"] : c["out"]) == "");
    }
  }
}

TEST_CASE("integer matmul above the small-product loop wraps in the output's width", "[nn][matmul]") {
  // Hand-worked: 3 * 2 summed 1100 times is 6600, which is -56 in int8 (6600 - 26 * 256) and 200
  // in uint8.
  const Tensor threes = Tensor::full({64, 1100}, 3, DType::I32, cpu()),
               twos = Tensor::full({1100, 64}, 2, DType::I32, cpu());
  CHECK(threes.matmul(twos).to_vector<int32_t>() == std::vector<int32_t>(64 * 64, 6600));
  CHECK(threes.to(DType::I8).matmul(twos.to(DType::I8)).to_vector<int8_t>() ==
        std::vector<int8_t>(64 * 64, -56));
  CHECK(threes.to(DType::U8).matmul(twos.to(DType::U8)).to_vector<uint8_t>() ==
        std::vector<uint8_t>(64 * 64, 200));
  // Random operands (non-negative for the unsigned types), batched, b transposed, against a triple
  // loop in 64-bit modular arithmetic.
  std::mt19937 rng(7);
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::I32, DType::U32, DType::I64, DType::U64}) {
    INFO(dtype_name(t));
    std::uniform_int_distribution<int64_t> dist(is_unsigned(t) ? 0 : -100000, 100000);
    std::vector<int64_t> av(2 * 37 * 301), bv(141 * 301);
    for (auto& v : av) v = dist(rng);
    for (auto& v : bv) v = dist(rng);
    const Tensor a = Tensor::from_vector(av, {2, 37, 301}, cpu()).to(t);
    const Tensor b = Tensor::from_vector(bv, {141, 301}, cpu()).to(t).permute({1, 0});
    // The operands as the dtype holds them (narrow types wrapped), as 64-bit patterns (every value
    // here is below 2^63).
    const auto bits_of = [&](const Tensor& x) {
      std::vector<uint64_t> out;
      const int64_t n = x.numel();
      const Tensor d = x.contiguous();
      for (int64_t v : d.to(DType::I64).to_vector<int64_t>()) out.push_back(static_cast<uint64_t>(v));
      REQUIRE(static_cast<int64_t>(out.size()) == n);
      return out;
    };
    const std::vector<uint64_t> ai = bits_of(a), bi = bits_of(b);
    const int bits = static_cast<int>(dtype_size(t)) * 8;
    const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    const std::vector<uint64_t> got = bits_of(a.matmul(b));
    size_t wrong = 0;
    for (int64_t e = 0; e < 2 * 37; ++e)
      for (int64_t j = 0; j < 141; ++j) {
        uint64_t sum = 0;
        for (int64_t p = 0; p < 301; ++p)
          sum += ai[static_cast<size_t>(e * 301 + p)] * bi[static_cast<size_t>(p * 141 + j)];
        wrong += (got[static_cast<size_t>(e * 141 + j)] & mask) != (sum & mask);
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("matmul reads transposed and negative-stride operands", "[nn][matmul]") {
  for (const json& c : fixture("matmul.json")["cases"]) {
    const int ra = static_cast<int>(shape_of(c["a"]).size()),
              rb = static_cast<int>(shape_of(c["b"]).size());
    if (ra < 2 || rb < 2) continue;
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I32}) {
      if (is_unsigned(t) && c["signed"].get<bool>()) continue;
      INFO(label(c, t));
      std::vector<int> order(static_cast<size_t>(ra));
      std::iota(order.begin(), order.end(), 0);
      std::swap(order[static_cast<size_t>(ra - 2)], order[static_cast<size_t>(ra - 1)]);
      const Tensor a = make_permuted(c["a"], t, order);
      REQUIRE_FALSE(a.is_contiguous());
      const Tensor b = make_flipped(c["b"], t, rb - 1);
      CHECK(mismatches(a.matmul(b), c["out"]) == "");
      CHECK(mismatches(make(c["a"], t).matmul(make_flipped(c["b"], t, rb - 2)), c["out"]) == "");
      // Stride 2 along both axes of a row: oneDNN has only its reference kernel for it, so the
      // operands are packed dense.
      CHECK(mismatches(make_spread(c["a"], t).matmul(make(c["b"], t)), c["out"]) == "");
    }
  }
}

TEST_CASE("matmul of empty operands gives zeros or an empty result", "[nn][matmul][edge]") {
  for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
    INFO(dtype_name(t));
    const Tensor z = Tensor::zeros({2, 0}, t, cpu()).matmul(Tensor::zeros({0, 3}, t, cpu()));
    CHECK(mismatches(z, literal({2, 3}, {0, 0, 0, 0, 0, 0})) == "");
    CHECK(Tensor::zeros({0, 4}, t, cpu()).matmul(Tensor::zeros({4, 3}, t, cpu())).shape() ==
          Shape{0, 3});
    CHECK(Tensor::zeros({5, 0, 4}, t, cpu()).matmul(Tensor::zeros({4, 3}, t, cpu())).shape() ==
          Shape{5, 0, 3});
  }
}

TEST_CASE("matmul propagates NaN and Inf on the small and the oneDNN paths", "[nn][matmul][edge]") {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    INFO(dtype_name(t));
    // [[1, nan], [inf, 1]] x [[1, 1], [0, 1]] = [[nan, nan], [inf, inf]] (inf * 0 + 1 * 0 is nan?
    // no: row 2 is inf*1 + 1*0 = inf and inf*1 + 1*1 = inf).
    const Tensor a = make({1, kNaN, kInf, 1}, {2, 2}, t);
    const Tensor b = make({1, 1, 0, 1}, {2, 2}, t);
    CHECK(mismatches(a.matmul(b), literal({2, 2}, {kNaN, kNaN, kInf, kInf})) == "");
    // inf * 0 is nan.
    CHECK(mismatches(make({kInf}, {1, 1}, t).matmul(make({0}, {1, 1}, t)),
                     literal({1, 1}, {kNaN})) == "");
    // 48 x 64 x 48 ones (147456 multiply-adds, the oneDNN path) with one NaN at a[3][5]: row 3 is
    // NaN, every other element is 64.
    std::vector<double> ones(48 * 64, 1.0);
    ones[3 * 64 + 5] = kNaN;
    const Tensor big = make(ones, {48, 64}, t).matmul(Tensor::ones({64, 48}, t, cpu()));
    std::vector<double> want(48 * 48, 64.0);
    for (int j = 0; j < 48; ++j) want[static_cast<size_t>(3 * 48 + j)] = kNaN;
    CHECK(mismatches(big, literal({48, 48}, want)) == "");
  }
}

// ---- convolution --------------------------------------------------------------------------------

TEST_CASE("conv matches NumPy for every dtype", "[nn][conv]") {
  for (const json& c : fixture("conv.json")["cases"]) {
    for (DType t : kNumeric) {
      if (is_unsigned(t) && c["signed"].get<bool>()) continue;
      INFO(label(c, t));
      const Tensor x = make(c["x"], t), w = make(c["w"], t);
      if (!needs_plugin(c)) {
        CHECK(mismatches(conv_of(x, w, c), c["out"]) == "");
        continue;
      }
      // Negative padding and input dilation have no Tensor::conv spelling: run the plugin's op.
      const auto strides = c["strides"].get<std::vector<int64_t>>(),
                 lo = c["padding_lo"].get<std::vector<int64_t>>(),
                 hi = c["padding_hi"].get<std::vector<int64_t>>(),
                 dil = c["dilations"].get<std::vector<int64_t>>(),
                 idil = c["input_dilations"].get<std::vector<int64_t>>();
      wick_conv_params p{sizeof(wick_conv_params),
                         static_cast<int32_t>(strides.size()),
                         strides.data(),
                         lo.data(),
                         hi.data(),
                         dil.data(),
                         idil.data(),
                         c["groups"].get<int64_t>()};
      const Tensor out = Tensor::empty(shape_of(c["out"]), t, cpu());
      const DirectResult r = run_op_direct(cpu(), WICK_OP_CONV, &p, {x, w}, {out});
      REQUIRE(r.status == DirectResult::Status::Ran);
      CHECK(mismatches(out, c["out"]) == "");
    }
  }
}

TEST_CASE("conv reads channels-last and transposed and flipped layouts", "[nn][conv]") {
  for (const json& c : fixture("conv.json")["cases"]) {
    if (needs_plugin(c) || shape_of(c["x"]).size() != 4) continue;
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I32}) {
      if (is_unsigned(t) && c["signed"].get<bool>()) continue;
      INFO(label(c, t));
      const Tensor w = make(c["w"], t);
      const Tensor nhwc = make_permuted(c["x"], t, {0, 2, 3, 1});
      REQUIRE(nhwc.strides()[1] == 1);
      const Tensor y = conv_of(nhwc, w, c);
      CHECK(mismatches(y, c["out"]) == "");
      // A channels-last input gives a channels-last output: [N, O, H, W] stored as [N, H, W, O]
      // (with one channel, both layouts are the same and the output is plain).
      if (shape_of(c["x"])[1] > 1 && shape_of(c["w"])[0] > 1) {
        CHECK(y.strides()[1] == 1);
        CHECK(y.permute({0, 2, 3, 1}).is_contiguous());
      }
      CHECK(mismatches(conv_of(make_flipped(c["x"], t, 3), make_flipped(c["w"], t, 2), c),
                       c["out"]) == "");
      CHECK(mismatches(conv_of(make(c["x"], t), make_permuted(c["w"], t, {1, 0, 2, 3}), c),
                       c["out"]) == "");
    }
  }
}

TEST_CASE("conv_bias adds a bias per output channel and conv_bias_relu clamps, fused or composed",
          "[nn][conv][fused]") {
  for (const json& c : fixture("conv.json")["cases"]) {
    if (needs_plugin(c)) continue;
    const Shape ys = shape_of(c["out"]);
    const int64_t o = ys[1], per = std::accumulate(ys.begin() + 2, ys.end(), int64_t{1}, std::multiplies<>());
    std::vector<double> bias(static_cast<size_t>(o));
    for (int64_t i = 0; i < o; ++i) bias[static_cast<size_t>(i)] = (i % 2 == 0 ? 0.75 : -1.5) * double(i + 1) / 4;
    std::vector<double> plus = values_of(c["out"]), relu = plus;
    for (size_t i = 0; i < plus.size(); ++i) {
      plus[i] += bias[(i / static_cast<size_t>(per)) % static_cast<size_t>(o)];
      relu[i] = std::max(0.0, plus[i]);
    }
    std::vector<int64_t> padding;
    for (const auto& [lo, hi] : pairs(c)) padding.insert(padding.end(), {lo, hi});
    const auto strides = c["strides"].get<std::vector<int64_t>>(), dil = c["dilations"].get<std::vector<int64_t>>();
    for (DType t : kFloats) {
      INFO(label(c, t));
      const Tensor w = make(c["w"], t), b = make(bias, {o}, t);
      const bool nhwc_fits = shape_of(c["x"]).size() == 4;
      for (const Tensor& x : {make(c["x"], t), nhwc_fits ? make_permuted(c["x"], t, {0, 2, 3, 1}) : make(c["x"], t)}) {
        for (bool r : {false, true}) {
          const Tensor y = x.conv_bias(w, b, r, strides, padding, dil, c["groups"].get<int64_t>());
          CHECK(mismatches(y, literal(ys, r ? relu : plus)) == "");
        }
      }
    }
  }
  // cpu-onednn runs the f32 ops fused (one oneDNN primitive) and declines the others.
  const Tensor x = Tensor::ones({1, 2, 3, 3}, DType::F32, cpu()), w = Tensor::ones({4, 2, 2, 2}, DType::F32, cpu());
  const Tensor b = Tensor::zeros({4}, DType::F32, cpu()), y = Tensor::empty({1, 4, 2, 2}, DType::F32, cpu());
  const std::vector<int64_t> one{1, 1}, zero{0, 0};
  const wick_conv_params p{sizeof(wick_conv_params), 2, one.data(), zero.data(), zero.data(), one.data(), nullptr, 1};
  for (wick_op_code op : {WICK_OP_CONV_BIAS, WICK_OP_CONV_BIAS_RELU}) {
    CHECK(query_op_direct(cpu(), op, &p, {x, w, b}, {y}) == WICK_SUPPORT_YES);
    CHECK(query_op_direct(cpu(), op, &p, {x.to(DType::F64), w.to(DType::F64), b.to(DType::F64)},
                          {y.to(DType::F64)}) == WICK_SUPPORT_NO_DTYPE);
  }
}

TEST_CASE("conv_bias_relu keeps NaN and rejects a bias that is not [O]", "[nn][conv][fused][edge]") {
  for (DType t : {DType::F32, DType::F64}) {
    INFO(dtype_name(t));
    // 1x1 kernel: each output is x * 2 + bias; the NaN stays NaN through the ReLU.
    const Tensor x = make({kNaN, -1, 3, 0.25}, {1, 1, 2, 2}, t);
    const Tensor y = x.conv_bias(Tensor::full({2, 1, 1, 1}, 2.0, t, cpu()), make({0.5, -1}, {2}, t), true);
    CHECK(mismatches(y, literal({1, 2, 2, 2}, {kNaN, 0, 6.5, 1, kNaN, 0, 5, 0})) == "");
  }
  // Finite operands whose products overflow (inf - inf is NaN in some summation orders): the
  // fused op gives exactly what conv, add and relu give, NaN and infinities included.
  const Tensor big = make({3e38, 3e38, -3e38, 3e38, 1, 2, 3, 4}, {1, 2, 2, 2}, DType::F32);
  const Tensor wb = make({2, -2, 2, 2, -1, 1}, {3, 2, 1, 1}, DType::F32), bb = make({1, -1, 0.5}, {3}, DType::F32);
  const std::vector<float> fused = big.conv_bias(wb, bb, true).to_vector<float>();
  const std::vector<float> composed = (big.conv(wb) + bb.reshape({1, 3, 1, 1})).relu().to_vector<float>();
  REQUIRE(fused.size() == composed.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO(i << ": fused " << fused[i] << ", composed " << composed[i]);
    CHECK((fused[i] == composed[i] || (std::isnan(fused[i]) && std::isnan(composed[i]))));
  }
  const Tensor x = Tensor::zeros({1, 2, 3, 3}, DType::F32, cpu()), w = Tensor::zeros({4, 2, 2, 2}, DType::F32, cpu());
  CHECK_THROWS_WITH(x.conv_bias(w, Tensor::zeros({2}, DType::F32, cpu()), true),
                    Catch::Contains("the bias [2] must be [O] for the weight [4, 2, 2, 2]"));
}

TEST_CASE("conv of zero-size operands", "[nn][conv][edge]") {
  for (DType t : {DType::F32, DType::BF16, DType::F64, DType::I8}) {
    INFO(dtype_name(t));
    // No images: an empty result.
    CHECK(
        Tensor::zeros({0, 2, 4, 4}, t, cpu()).conv(Tensor::zeros({3, 2, 3, 3}, t, cpu())).shape() ==
        Shape{0, 3, 2, 2});
    // No input channels: every output is an empty sum, 0.
    const Tensor y =
        Tensor::zeros({1, 0, 3, 3}, t, cpu()).conv(Tensor::zeros({2, 0, 2, 2}, t, cpu()));
    CHECK(mismatches(y, literal({1, 2, 2, 2}, std::vector<double>(8, 0.0))) == "");
  }
}

TEST_CASE("conv propagates NaN only to the outputs whose window covers it", "[nn][conv][edge]") {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    INFO(dtype_name(t));
    // A 4x4 image of ones with NaN at (0, 0), a 2x2 kernel of ones: only output (0, 0) sees it.
    std::vector<double> x(16, 1.0);
    x[0] = kNaN;
    const Tensor y = make(x, {1, 1, 4, 4}, t).conv(Tensor::ones({1, 1, 2, 2}, t, cpu()));
    CHECK(mismatches(y, literal({1, 1, 3, 3}, {kNaN, 4, 4, 4, 4, 4, 4, 4, 4})) == "");
    // Inf * 0 is NaN: an infinite input under a zero weight.
    const Tensor z = make({kInf, 1}, {1, 1, 2}, t).conv(make({0, 1}, {1, 1, 2}, t));
    CHECK(mismatches(z, literal({1, 1, 1}, {kNaN})) == "");
  }
}

TEST_CASE("conv rejects mismatched groups and kernels larger than the padded input",
          "[nn][conv][edge]") {
  const Tensor x = Tensor::zeros({1, 4, 5, 5}, DType::F32, cpu());
  CHECK_THROWS_WITH(x.conv(Tensor::zeros({6, 3, 3, 3}, DType::F32, cpu()), {}, {}, {}, 2),
                    Catch::Contains("do not fit groups = 2"));
  CHECK_THROWS_WITH(x.conv(Tensor::zeros({2, 4, 7, 3}, DType::F32, cpu())),
                    Catch::Contains("smaller than the dilated kernel (7)"));
  CHECK_THROWS_WITH(x.conv(Tensor::zeros({2, 4, 3}, DType::F32, cpu())),
                    Catch::Contains("of the same rank"));
  CHECK_THROWS_WITH(x.to(DType::Bool).conv(Tensor::zeros({2, 4, 3, 3}, DType::Bool, cpu())),
                    Catch::Contains("bool"));
}

// ---- window reductions --------------------------------------------------------------------------

TEST_CASE("window reductions match NumPy for every dtype", "[nn][window]") {
  for (const json& c : fixture("window.json")["cases"]) {
    const auto window = c["window"].get<std::vector<int64_t>>(),
               strides = c["strides"].get<std::vector<int64_t>>(),
               dil = c["dilations"].get<std::vector<int64_t>>();
    for (const std::string op : {"sum", "prod", "max", "min"}) {
      for (DType t : kAll) {
        if (is_unsigned(t) && c["signed"].get<bool>()) continue;
        INFO(label(c, t) + " " + op);
        const Tensor y = make(c["x"], t).window_reduce(op, window, strides, pairs(c), dil);
        if (t == DType::Bool) {
          // max is any, min is all; sum and prod count in i64.
          CHECK(y.dtype() == (op == "sum" || op == "prod" ? DType::I64 : DType::Bool));
          CHECK(mismatches(y, c["bool_" + op]) == "");
        } else {
          CHECK(y.dtype() == t);
          CHECK(mismatches(y, c[op]) == "");
        }
      }
    }
  }
}

TEST_CASE("window max and min propagate NaN", "[nn][window][edge]") {
  for (DType t : kFloats) {
    INFO(dtype_name(t));
    const Tensor x = make({1, kNaN, 3, 2, 5}, {5}, t);
    CHECK(mismatches(x.window_reduce("max", {2}), literal({4}, {kNaN, kNaN, 3, 5})) == "");
    CHECK(mismatches(x.window_reduce("min", {2}), literal({4}, {kNaN, kNaN, 2, 2})) == "");
    CHECK(mismatches(x.window_reduce("sum", {2}), literal({4}, {kNaN, kNaN, 5, 7})) == "");
    // -inf and inf are ordinary values; padding never beats them.
    const Tensor y = make({-kInf, kInf}, {2}, t);
    CHECK(mismatches(y.window_reduce("max", {2}, {1}, {{1, 1}}),
                     literal({3}, {-kInf, kInf, kInf})) == "");
    CHECK(mismatches(y.window_reduce("min", {2}, {1}, {{1, 1}}),
                     literal({3}, {-kInf, -kInf, kInf})) == "");
  }
}

TEST_CASE("max_pool2d propagates NaN and keeps infinities", "[nn][window][pool][edge]") {
  for (DType t : kFloats) {
    INFO(dtype_name(t));
    // A 4x4 image 1..16 with NaN at (0, 1) and -inf at (3, 3): 2x2 windows, stride 2.
    std::vector<double> v(16);
    for (size_t i = 0; i < 16; ++i) v[i] = static_cast<double>(i + 1);
    v[1] = kNaN;
    v[15] = -kInf;
    const Tensor x = make(v, {1, 1, 4, 4}, t);
    CHECK(mismatches(x.max_pool2d({2}), literal({1, 1, 2, 2}, {kNaN, 8, 14, 15})) == "");
    // Without the NaN: the same windows' maxima.
    v[1] = 2;
    CHECK(mismatches(make(v, {1, 1, 4, 4}, t).max_pool2d({2}),
                     literal({1, 1, 2, 2}, {6, 8, 14, 15})) == "");
  }
}

TEST_CASE("window reductions of flipped and 0-d and zero-size tensors", "[nn][window][edge]") {
  // [1, 2, 3, 4, 5] flipped is [5, 4, 3, 2, 1]: pairwise sums 9, 7, 5, 3.
  const Tensor flipped = Tensor::from_vector<float>({1, 2, 3, 4, 5}, cpu()).flip(0);
  CHECK(flipped.window_reduce("sum", {2}).to_vector<float>() == std::vector<float>{9, 7, 5, 3});
  // Every other window of a transposed [[1, 2], [3, 4]] = [[1, 3], [2, 4]]: maxima over columns.
  const Tensor tr = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}, cpu()).t();
  CHECK(tr.window_reduce("max", {2, 1}).to_vector<int32_t>() == std::vector<int32_t>{2, 4});
  const Tensor s = Tensor::scalar<double>(7.5, cpu()).window_reduce("prod", {});
  CHECK(s.rank() == 0);
  CHECK(s.item<double>() == 7.5);
  CHECK(Tensor::zeros({0, 3}, DType::F32, cpu()).window_reduce("max", {1, 2}).shape() ==
        Shape{0, 2});
  // A window longer than the (unpadded) axis fits nowhere.
  CHECK(Tensor::ones({2}, DType::F32, cpu()).window_reduce("sum", {3}).shape() == Shape{0});
  CHECK_THROWS_WITH(Tensor::ones({2, 2}, DType::F32, cpu()).window_reduce("mean", {1, 1}),
                    Catch::Contains("unknown reduction \"mean\""));
  CHECK_THROWS_WITH(Tensor::ones({2, 2}, DType::F32, cpu()).window_reduce("sum", {2}),
                    Catch::Contains("one entry per axis"));
}

TEST_CASE("max_pool2d and avg_pool2d on a 4x4 image", "[nn][window][pool]") {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i + 1);  // 1..16, row-major
  const Tensor x = Tensor::from_vector(v, {1, 1, 4, 4}, cpu());
  CHECK(x.max_pool2d({2}).to_vector<float>() == std::vector<float>{6, 8, 14, 16});
  CHECK(x.avg_pool2d({2, 2}).to_vector<float>() == std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f});
  // kernel 3, stride 2, padding 1: the windows cover rows/cols {0,1}, {1,2,3} of the image.
  // Real elements: (0,0) 1,2,5,6 = 14 of 4; (0,1) 2,3,4,6,7,8 = 30 of 6; (1,0) 5,6,9,10,13,14 = 57
  // of 6; (1,1) 6,7,8,10,11,12,14,15,16 = 99 of 9.
  CHECK(x.max_pool2d({3}, {2}, {1}).to_vector<float>() == std::vector<float>{6, 8, 14, 16});
  CHECK(mismatches(x.avg_pool2d({3}, {2}, {1}),
                   literal({1, 1, 2, 2}, {14.0 / 4, 30.0 / 6, 57.0 / 6, 99.0 / 9})) == "");
  CHECK(mismatches(x.avg_pool2d({3}, {2}, {1}, true),
                   literal({1, 1, 2, 2}, {14.0 / 9, 30.0 / 9, 57.0 / 9, 99.0 / 9})) == "");
  // Integers average to f32; bf16 stays bf16.
  const Tensor xi = x.to(DType::I32).avg_pool2d({2});
  CHECK(xi.dtype() == DType::F32);
  CHECK(xi.to_vector<float>() == std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f});
  const Tensor xb = x.to(DType::BF16).avg_pool2d({2});
  CHECK(xb.dtype() == DType::BF16);
  CHECK(floats(xb) == std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f});
  // Padding larger than the kernel: the corner windows hold only padding (max: -inf, average of no
  // elements: 0 / 0).
  const Tensor big = Tensor::ones({1, 1, 1, 1}, DType::F32, cpu());
  CHECK(mismatches(big.max_pool2d({1}, {1}, {1}),
                   literal({1, 1, 3, 3},
                           {-kInf, -kInf, -kInf, -kInf, 1, -kInf, -kInf, -kInf, -kInf})) == "");
  CHECK(mismatches(big.avg_pool2d({1}, {1}, {1}),
                   literal({1, 1, 3, 3}, {kNaN, kNaN, kNaN, kNaN, 1, kNaN, kNaN, kNaN, kNaN})) ==
        "");
  CHECK_THROWS_WITH(Tensor::ones({4}, DType::F32, cpu()).max_pool2d({2}),
                    Catch::Contains("rank >= 2"));
}

// ---- select and scatter -------------------------------------------------------------------------

TEST_CASE("window_scatter matches the reference select-and-scatter for every dtype",
          "[nn][scatter]") {
  for (const json& c : fixture("scatter.json")["cases"]) {
    const auto window = c["window"].get<std::vector<int64_t>>(),
               strides = c["strides"].get<std::vector<int64_t>>();
    for (const std::string op : {"max", "min"}) {
      for (DType t : kNumeric) {
        INFO(label(c, t) + " " + op);
        const Tensor y =
            make(c["x"], t).window_scatter(op, make(c["source"], t), window, strides, pairs(c));
        CHECK(mismatches(y, c[op]) == "");
      }
    }
  }
}

TEST_CASE("window_scatter selects the first NaN and starts from init_value",
          "[nn][scatter][edge]") {
  for (DType t : kFloats) {
    INFO(dtype_name(t));
    // Windows [1, nan] and [nan, 3] both select the NaN at index 1.
    const Tensor x = make({1, kNaN, 3}, {3}, t);
    const Tensor src = make({10, 20}, {2}, t);
    CHECK(mismatches(x.window_scatter("max", src, {2}), literal({3}, {0, 30, 0})) == "");
    CHECK(mismatches(x.window_scatter("min", src, {2}), literal({3}, {0, 30, 0})) == "");
    // Ties: [2, 2, 2] with windows of 2 select the first of each window: indices 0 and 1.
    CHECK(mismatches(make({2, 2, 2}, {3}, t).window_scatter("max", src, {2}),
                     literal({3}, {10, 20, 0})) == "");
  }
  // init_value has no Tensor spelling: run the plugin's op. Every element starts at 0.5.
  const Tensor x = Tensor::from_vector<float>({1, 5, 3, 4}, cpu());
  const Tensor src = Tensor::from_vector<float>({2, 7}, cpu());
  const Tensor out = Tensor::empty({4}, DType::F32, cpu());
  const int64_t window = 2, stride = 2, zero = 0, one = 1;
  const wick_window_params p{
      sizeof(wick_window_params), 1, &window, &stride, &zero, &zero, &one, 0.5};
  REQUIRE(run_op_direct(cpu(), WICK_OP_WINDOW_SCATTER_MAX, &p, {x, src}, {out}).status ==
          DirectResult::Status::Ran);
  CHECK(out.to_vector<float>() == std::vector<float>{0.5f, 2.5f, 0.5f, 7.5f});
  CHECK_THROWS_WITH(x.window_scatter("max", Tensor::from_vector<float>({1, 2, 3}, cpu()), {2}, {2}),
                    Catch::Contains("must have the window output's shape [2]"));
  // Zero-size operands and sources: an empty result, or the init value (0) everywhere.
  CHECK(Tensor::zeros({0, 4}, DType::F32, cpu())
            .window_scatter("max", Tensor::zeros({0, 2}, DType::F32, cpu()), {1, 2}, {1, 2})
            .shape() == Shape{0, 4});
  CHECK(Tensor::ones({2}, DType::I32, cpu())
            .window_scatter("min", Tensor::zeros({0}, DType::I32, cpu()), {3})
            .to_vector<int32_t>() == std::vector<int32_t>{0, 0});
}

// ---- fused ops ----------------------------------------------------------------------------------

TEST_CASE("fused ops match NumPy for every float dtype", "[nn][fused]") {
  for (const json& c : fixture("fused.json")["cases"]) {
    for (DType t : kFloats) {
      INFO(label(c, t));
      const Tensor y = run_fused(c, t, cpu());
      CHECK(y.dtype() == t);
      CHECK(mismatches(y, c["out"], fused_tolerance(t)) == "");
    }
  }
}

TEST_CASE("softmax of infinities and NaN and large values", "[nn][fused][edge]") {
  for (DType t : kFloats) {
    INFO(dtype_name(t));
    // -inf takes no weight; equal values share it.
    CHECK(mismatches(make({-kInf, 0, 0}, {3}, t).softmax(0), literal({3}, {0, 0.5, 0.5})) == "");
    // Large values do not overflow (e^100 is beyond f32): softmax([100, 101]) = [1, e] / (1 + e).
    const double e = std::exp(1.0);
    CHECK(mismatches(make({100, 101}, {2}, t).softmax(0), literal({2}, {1 / (1 + e), e / (1 + e)}),
                     fused_tolerance(t)) == "");
    CHECK(mismatches(make({100, 101}, {2}, t).log_softmax(0),
                     literal({2}, {-std::log1p(e), 1 - std::log1p(e)}), fused_tolerance(t)) == "");
    // A row of -inf, a NaN or +inf has no distribution: NaN throughout (as in NumPy and PyTorch).
    CHECK(mismatches(make({-kInf, -kInf, 1, 1}, {2, 2}, t).softmax(1),
                     literal({2, 2}, {kNaN, kNaN, 0.5, 0.5})) == "");
    CHECK(mismatches(make({kNaN, 1, 2}, {3}, t).softmax(0), literal({3}, {kNaN, kNaN, kNaN})) ==
          "");
    CHECK(mismatches(make({kInf, 1}, {2}, t).softmax(0), literal({2}, {kNaN, kNaN})) == "");
    CHECK(make(std::vector<double>{}, {2, 0}, t).softmax(-1).shape() == Shape{2, 0});
  }
  // A transposed (non-contiguous) input along either axis: [[0, ln 3], [0, 0]]^T.
  const double l3 = std::log(3.0);
  const Tensor x = Tensor::from_vector<double>({0, l3, 0, 0}, {2, 2}, cpu()).to(DType::F32).t();
  // Columns [0, ln 3] and [0, 0]; rows [0, 0] and [ln 3, 0].
  CHECK(mismatches(x.softmax(0), literal({2, 2}, {0.25, 0.5, 0.75, 0.5})) == "");
  CHECK(mismatches(x.softmax(1), literal({2, 2}, {0.5, 0.5, 0.75, 0.25})) == "");
  CHECK_THROWS_WITH(Tensor::ones({3}, DType::I32, cpu()).softmax(0),
                    Catch::Contains("needs a floating-point tensor"));
}

TEST_CASE("softmax and log_softmax of a 0-d tensor are 1 and 0 on every device",
          "[nn][fused][edge][opencl]") {
  for (const Device& dev : test::cpu_and_opencl()) {
    for (DType t : kFloats) {
      INFO(dev.name() << " " << dtype_name(t));
      const Tensor s = Tensor::scalar(2.5f, dev).to(t);
      for (int axis : {0, -1}) {
        CHECK(s.softmax(axis).shape() == Shape{});
        CHECK(s.softmax(axis).to(DType::F64).item<double>() == 1.0);
        CHECK(s.log_softmax(axis).to(DType::F64).item<double>() == 0.0);
      }
      CHECK_THROWS_WITH(s.softmax(1), Catch::Contains("axis 1 is out of range"));
    }
    // The gradient through a 0-d softmax is 0: the output does not depend on the input.
    Tensor x = Tensor::scalar(0.5f, dev);
    x.set_requires_grad();
    x.softmax(0).backward();
    CHECK(x.grad().item<float>() == 0.0f);
  }
  // NaN and +-inf have no distribution, as in a longer line; integers are no input for softmax.
  for (float v : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()}) {
    CHECK(std::isnan(Tensor::scalar(v, cpu()).softmax(0).item<float>()));
    CHECK(std::isnan(Tensor::scalar(v, cpu()).log_softmax(-1).item<float>()));
  }
  CHECK_THROWS_WITH(Tensor::scalar(int32_t{1}, cpu()).softmax(0),
                    Catch::Contains("needs a floating-point tensor"));
}

namespace {

// v rounded to nearest-even in a binary format of `precision` significand bits whose smallest
// normal is 2^(min_exp - 1) (bf16: 8, -125; f16: 11, -13), from long double: dividing by the
// quantum (a power of two) is exact, and rintl rounds half to even.
long double round_to_format(long double v, int precision, int min_exp) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(std::fabs(v), &e);
  const long double quantum = std::ldexp(1.0L, std::max(e, min_exp) - precision);
  return std::rint(v / quantum) * quantum;
}

}  // namespace

TEST_CASE("16-bit float softmax and log_softmax round once: each element is the exact value "
          "correctly rounded",
          "[nn][fused][rounding]") {
  // 256 x 1000 values in [-6, 6], the reference in long double (64-bit significand), rounded once.
  constexpr int64_t kRows = 256, kCols = 1000;
  std::mt19937_64 gen(20261201);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  std::vector<float> raw(static_cast<size_t>(kRows * kCols));
  for (float& v : raw) v = dist(gen);
  for (DType t : {DType::BF16, DType::F16}) {
    const int precision = t == DType::BF16 ? 8 : 11, min_exp = t == DType::BF16 ? -125 : -13;
    const Tensor x = Tensor::from_vector<float>(raw, {kRows, kCols}, cpu()).to(t);
    const std::vector<float> xs = x.to(DType::F32).to_vector<float>();  // exact
    for (bool log : {false, true}) {
      INFO(dtype_name(t) << (log ? " log_softmax" : " softmax"));
      const std::vector<float> got =
          (log ? x.log_softmax(1) : x.softmax(1)).to(DType::F32).to_vector<float>();
      int64_t wrong = 0;
      std::string first;
      for (int64_t r = 0; r < kRows; ++r) {
        const float* row = xs.data() + r * kCols;
        const long double m = *std::max_element(row, row + kCols);
        long double sum = 0;
        for (int64_t c = 0; c < kCols; ++c) sum += std::exp(static_cast<long double>(row[c]) - m);
        for (int64_t c = 0; c < kCols; ++c) {
          const long double d = static_cast<long double>(row[c]) - m;
          const long double exact = log ? d - std::log(sum) : std::exp(d) / sum;
          const long double want = round_to_format(exact, precision, min_exp);
          const float g = got[static_cast<size_t>(r * kCols + c)];
          if (static_cast<long double>(g) == want) continue;
          if (wrong++ > 0) continue;
          std::ostringstream where;
          where.precision(9);
          where << "[" << r << ", " << c << "]: got " << g << ", correctly rounded "
                << static_cast<double>(want) << " (exact " << static_cast<double>(exact) << ")";
          first = where.str();
        }
      }
      INFO(wrong << " of " << kRows * kCols << " elements not correctly rounded; first " << first);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("norms of constant rows and mismatched parameters", "[nn][fused][edge]") {
  for (DType t : kFloats) {
    INFO(dtype_name(t));
    // Variance 0: (x - mean) / sqrt(eps) = 0, then the bias.
    const Tensor x = Tensor::full({2, 3}, 5.0, t, cpu());
    const Tensor bias = make({1, 2, 3}, {3}, t);
    CHECK(mismatches(x.layer_norm(1, {}, bias), literal({2, 3}, {1, 2, 3, 1, 2, 3})) == "");
    CHECK(mismatches(Tensor::zeros({2, 3}, t, cpu()).rms_norm(),
                     literal({2, 3}, {0, 0, 0, 0, 0, 0})) == "");
    // rms_norm of [3, 4]: rms = sqrt(12.5); eps 0.
    CHECK(mismatches(make({3, 4}, {2}, t).rms_norm({}, 0.0),
                     literal({2}, {3 / std::sqrt(12.5), 4 / std::sqrt(12.5)})) == "");
  }
  // Zero-size inputs give zero-size outputs.
  CHECK(Tensor::zeros({0, 4}, DType::F32, cpu()).layer_norm(1).shape() == Shape{0, 4});
  CHECK(Tensor::zeros({3, 0}, DType::BF16, cpu()).rms_norm().shape() == Shape{3, 0});
  CHECK(Tensor::zeros({0, 2, 5}, DType::F32, cpu())
            .batch_norm(Tensor::zeros({2}, DType::F32, cpu()), Tensor::ones({2}, DType::F32, cpu()))
            .shape() == Shape{0, 2, 5});
  const Tensor x = Tensor::ones({2, 3}, DType::F32, cpu());
  CHECK_THROWS_WITH(x.layer_norm(1, Tensor::ones({2}, DType::F32, cpu())),
                    Catch::Contains("weight [2] must have shape [3]"));
  CHECK_THROWS_WITH(x.layer_norm(3), Catch::Contains("normalized_rank 3 must be in [1, 2]"));
  CHECK_THROWS_WITH(
      x.batch_norm(Tensor::ones({2}, DType::F32, cpu()), Tensor::ones({3}, DType::F32, cpu())),
      Catch::Contains("mean [2] must have shape [3]"));
}

TEST_CASE("attention with a bool mask and broadcast batches and the default scale",
          "[nn][fused][attention]") {
  // k = [[1, 0], [0, 1]], v = [[1, 2], [3, 4]]. Query [1, 0] with scale 1 scores [1, 0], so the
  // weights are [p, 1 - p] with p = e / (e + 1) and out = [p + 3 (1 - p), 2 p + 4 (1 - p)] =
  // [3 - 2p, 4 - 2p]. Query [0, 1] mirrors it with p' = 1 / (e + 1).
  const double e = std::exp(1.0), p = e / (e + 1), p2 = 1 / (e + 1);
  // With the default scale 1/sqrt(2), query [1, 0] scores [1/sqrt(2), 0].
  const double s = std::exp(1 / std::sqrt(2.0)), ps = s / (s + 1);
  for (DType t : kFloats) {
    INFO(dtype_name(t));
    const Tensor q = make({1, 0, 0, 1}, {2, 1, 1, 2}, t);  // two batches of one query
    const Tensor k = make({1, 0, 0, 1}, {1, 2, 2}, t);     // broadcast over the batch
    const Tensor v = make({1, 2, 3, 4}, {1, 2, 2}, t);
    CHECK(mismatches(Tensor::attention(q, k, v, {}, 1.0),
                     literal({2, 1, 1, 2}, {3 - 2 * p, 4 - 2 * p, 3 - 2 * p2, 4 - 2 * p2})) == "");
    // A bool mask: true attends, false does not. Only key 0: out = v[0] = [1, 2].
    const Tensor mask = make({1, 0}, {1, 2}, DType::Bool);
    CHECK(mismatches(Tensor::attention(q, k, v, mask, 1.0), literal({2, 1, 1, 2}, {1, 2, 1, 2})) ==
          "");
    CHECK(mismatches(Tensor::attention(q.narrow(0, 0, 1), k, v),
                     literal({1, 1, 1, 2}, {3 - 2 * ps, 4 - 2 * ps})) == "");
  }
  // No queries: no rows. No keys: every weight row is empty and the output is 0 (an empty sum).
  CHECK(Tensor::attention(Tensor::zeros({0, 2}, DType::F32, cpu()),
                          Tensor::ones({3, 2}, DType::F32, cpu()),
                          Tensor::ones({3, 4}, DType::F32, cpu()))
            .shape() == Shape{0, 4});
  CHECK(Tensor::attention(Tensor::ones({2, 2}, DType::F32, cpu()),
                          Tensor::zeros({0, 2}, DType::F32, cpu()),
                          Tensor::zeros({0, 4}, DType::F32, cpu()))
            .to_vector<float>() == std::vector<float>(8, 0.0f));
  const Tensor q = Tensor::ones({2, 3}, DType::F32, cpu());
  CHECK_THROWS_WITH(Tensor::attention(q, Tensor::ones({4, 2}, DType::F32, cpu()),
                                      Tensor::ones({4, 2}, DType::F32, cpu())),
                    Catch::Contains("disagree"));
}
