// Tensor and view semantics on the CPU device. Every expected value is worked out by hand.
#include "test_support.hpp"

#include <wick/dispatch.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace wick;
using wick::test::cpu;

namespace {

Tensor arange(int64_t n, const Device& d) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return Tensor::from_vector(v, d);
}

}  // namespace

TEST_CASE("from_vector and to_vector round-trip with C-order strides", "[tensor]") {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, cpu());
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.strides() == std::vector<int64_t>{3, 1});
  CHECK(t.numel() == 6);
  CHECK(t.dtype() == DType::F32);
  CHECK(t.is_contiguous());
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH(Tensor::from_vector<float>({1, 2, 3}, {2, 2}, cpu()),
                    Catch::Contains("needs 4 elements, got 3"));
  CHECK_THROWS_WITH(t.to_vector<double>(), Catch::Contains("dtype is f32"));
}

TEST_CASE("a 0-d scalar has rank 0, one element, and broadcasts", "[tensor]") {
  Tensor s = Tensor::scalar(2.5f, cpu());
  CHECK(s.rank() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.item<float>() == 2.5f);
  Tensor v = Tensor::from_vector<float>({1, 2, 3}, cpu());
  CHECK((v * s).to_vector<float>() == std::vector<float>{2.5f, 5.0f, 7.5f});
  CHECK((s + s).shape() == Shape{});
}

TEST_CASE("reshape infers -1, is a view when contiguous, and rejects bad sizes", "[tensor][view]") {
  Tensor t = arange(12, cpu());
  Tensor r = t.reshape({3, -1});
  CHECK(r.shape() == Shape{3, 4});
  CHECK(r.storage() == t.storage());
  CHECK_THROWS_WITH(t.reshape({5, -1}), Catch::Contains("cannot infer -1"));
  CHECK_THROWS_WITH(t.reshape({5, 2}), Catch::Contains("[12] (12 elements) into [5, 2] (10 elements)"));
  CHECK_THROWS_WITH(t.reshape({-1, -1}), Catch::Contains("more than one -1"));
  // A non-contiguous view is copied first: transpose of [[0,1,2],[3,4,5]] read in C order.
  Tensor tt = arange(6, cpu()).reshape({2, 3}).t().reshape({6});
  CHECK(tt.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("permute and transpose swap strides without copying", "[tensor][view]") {
  Tensor t = arange(24, cpu()).reshape({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == std::vector<int64_t>{1, 12, 4});
  CHECK_FALSE(p.is_contiguous());
  CHECK(p.storage() == t.storage());
  // p[i][j][k] = t[j][k][i] = 12j + 4k + i; first row of p: i=0,j=0: 0,4,8
  const std::vector<float> v = p.contiguous().to_vector<float>();
  CHECK(v[0] == 0);
  CHECK(v[1] == 4);
  CHECK(v[2] == 8);
  CHECK(v[3] == 12);  // i=0, j=1, k=0
  CHECK(v[6] == 1);   // i=1, j=0, k=0
  CHECK_THROWS_WITH(t.permute({0, 0, 1}), Catch::Contains("repeats"));
  CHECK_THROWS_WITH(t.permute({0, 1}), Catch::Contains("2 axes given for a tensor of rank 3"));
  CHECK(t.transpose(0, -1).shape() == Shape{4, 3, 2});
}

TEST_CASE("broadcast_to uses stride 0 and checks compatibility", "[tensor][view]") {
  Tensor row = Tensor::from_vector<float>({1, 2, 3}, {1, 3}, cpu());
  Tensor b = row.broadcast_to({2, 2, 3});
  CHECK(b.strides() == std::vector<int64_t>{0, 0, 1});
  CHECK(b.contiguous().to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3});
  CHECK_THROWS_WITH(row.broadcast_to({2, 4}), Catch::Contains("cannot broadcast [1, 3] to [2, 4]"));
}

TEST_CASE("slice follows Python: negative indices, clamping, negative steps", "[tensor][view]") {
  Tensor x = arange(10, cpu());
  CHECK(x.slice(0, 2, 5).to_vector<float>() == std::vector<float>{2, 3, 4});
  CHECK(x.slice(0, -3, std::nullopt).to_vector<float>() == std::vector<float>{7, 8, 9});
  CHECK(x.slice(0, 8, 2, -2).to_vector<float>() == std::vector<float>{8, 6, 4});
  CHECK(x.slice(0, std::nullopt, std::nullopt, -3).to_vector<float>() == std::vector<float>{9, 6, 3, 0});
  CHECK(x.slice(0, -100, 100, 4).to_vector<float>() == std::vector<float>{0, 4, 8});
  CHECK(x.slice(0, 5, 2).numel() == 0);
  Tensor r = x.flip(0);
  CHECK(r.strides() == std::vector<int64_t>{-1});
  CHECK(r.offset() == 9);
  CHECK(r.to_vector<float>() == std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK_THROWS_WITH(x.slice(0, 0, 5, 0), Catch::Contains("step must not be zero"));
  CHECK_THROWS_WITH(x.slice(1, 0, 5), Catch::Contains("axis 1 is out of range for a tensor of rank 1"));
}

TEST_CASE("slice takes bounds and steps anywhere in int64, as Python's slice does", "[tensor][view][edge]") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Tensor x = arange(10, cpu());
  using V = std::vector<float>;
  // list(range(10))[0:10:2**63-1] == [0]; [9::-2**63] == [9] (Python cuts the step to -(2**63-1)).
  CHECK(x.slice(0, 0, 10, kMax).to_vector<float>() == V{0});
  CHECK(x.slice(0, 9, std::nullopt, kMin).to_vector<float>() == V{9});
  CHECK(x.slice(0, 9, kMin, kMin).to_vector<float>() == V{9});
  CHECK(x.slice(0, kMin, kMax, kMax).to_vector<float>() == V{0});
  CHECK(x.slice(0, kMax, kMin, kMin).to_vector<float>() == V{9});
  CHECK(x.slice(0, 3, std::nullopt, kMax - 1).to_vector<float>() == V{3});
  CHECK(x.slice(0, std::nullopt, std::nullopt, kMin + 1).to_vector<float>() == V{9});
  // Bounds beyond either end clamp, whatever the step's sign.
  CHECK(x.slice(0, kMin, kMax).to_vector<float>() == V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(x.slice(0, kMax, kMin, -1).to_vector<float>() == V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(x.slice(0, -1, kMin, -4).to_vector<float>() == V{9, 5, 1});
  CHECK(x.slice(0, kMax, kMax).numel() == 0);
  CHECK(x.slice(0, kMin, kMin, -1).numel() == 0);
  CHECK(x.slice(0, kMin, -9, kMax).to_vector<float>() == V{0});
  // A slice of a strided view keeps the view's stride where the step does not move.
  const Tensor m = arange(12, cpu()).reshape({3, 4}).t();  // [4, 3], strides [1, 4]
  CHECK(m.slice(1, 2, std::nullopt, kMax).to_vector<float>() == V{8, 9, 10, 11});
  CHECK(m.slice(0, -1, std::nullopt, kMin).to_vector<float>() == V{3, 7, 11});
}

TEST_CASE("narrow refuses a start or length past the axis, even near the int64 limits", "[tensor][view][edge]") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Tensor x = arange(10, cpu());
  CHECK_THROWS_WITH(x.narrow(0, 2, kMax), Catch::Contains("do not fit axis 0 of extent 10"));
  CHECK_THROWS_WITH(x.narrow(0, -1, kMax), Catch::Contains("do not fit axis 0 of extent 10"));
  CHECK_THROWS_WITH(x.narrow(0, kMax, 1), Catch::Contains("do not fit axis 0 of extent 10"));
  CHECK_THROWS_WITH(x.narrow(0, kMin, 1), Catch::Contains("do not fit axis 0 of extent 10"));
  CHECK_THROWS_WITH(x.narrow(0, kMax, 0), Catch::Contains("do not fit axis 0 of extent 10"));
  CHECK(x.narrow(0, 10, 0).numel() == 0);
  CHECK(x.narrow(0, -1, 1).to_vector<float>() == std::vector<float>{9});
}

TEST_CASE("may_share_memory: exact false for disjoint or interleaved views of one storage", "[tensor][view]") {
  const Tensor x = arange(8, cpu());
  CHECK(may_share_memory(x, x.flip(0)));
  CHECK(may_share_memory(x.slice(0, 0, 3), x.slice(0, 2, 5)));      // share element 2
  CHECK(may_share_memory(x.slice(0, 0, std::nullopt, 2), x.slice(0, 2, std::nullopt, 2)));
  CHECK(may_share_memory(x.slice(0, 3, 4).broadcast_to({5}), x.slice(0, 2, 6)));
  CHECK_FALSE(may_share_memory(x.slice(0, 0, 4), x.slice(0, 4, 8)));  // touching ranges
  CHECK_FALSE(may_share_memory(x.slice(0, 0, std::nullopt, 2), x.slice(0, 1, std::nullopt, 2)));
  const Tensor m = x.reshape({4, 2});  // its two columns interleave
  CHECK_FALSE(may_share_memory(m.slice(1, 0, 1), m.slice(1, 1, 2)));
  CHECK(may_share_memory(m.slice(1, 0, 1), m.slice(0, 1, 2)));        // element 2
  CHECK_FALSE(may_share_memory(x, x.clone()));                       // another storage
  CHECK_FALSE(may_share_memory(x.slice(0, 2, 2), x));                // empty
}

TEST_CASE("narrow, squeeze and unsqueeze", "[tensor][view]") {
  Tensor m = arange(12, cpu()).reshape({3, 4});
  CHECK(m.narrow(1, 1, 2).to_vector<float>() == std::vector<float>{1, 2, 5, 6, 9, 10});
  CHECK(m.narrow(0, -1, 1).to_vector<float>() == std::vector<float>{8, 9, 10, 11});
  CHECK_THROWS_WITH(m.narrow(1, 3, 2), Catch::Contains("do not fit axis 1 of extent 4"));
  Tensor u = m.unsqueeze(1);
  CHECK(u.shape() == Shape{3, 1, 4});
  CHECK(u.unsqueeze(-1).shape() == Shape{3, 1, 4, 1});
  CHECK(u.squeeze(1).shape() == Shape{3, 4});
  CHECK(u.unsqueeze(0).squeeze().shape() == Shape{3, 4});
  CHECK_THROWS_WITH(m.squeeze(0), Catch::Contains("has extent 3, not 1"));
}

TEST_CASE("zero-size tensors flow through ops", "[tensor][edge]") {
  Tensor e = Tensor::zeros({0, 3}, DType::F32, cpu());
  CHECK(e.numel() == 0);
  CHECK((e + e).shape() == Shape{0, 3});
  CHECK(e.to_vector<float>().empty());
  // Summing zero rows gives zeros.
  CHECK(e.sum({0}).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(e.matmul(Tensor::zeros({3, 2}, DType::F32, cpu())).shape() == Shape{0, 2});
  // An empty inner dimension gives a zero product.
  Tensor z = Tensor::zeros({2, 0}, DType::F32, cpu()).matmul(Tensor::zeros({0, 2}, DType::F32, cpu()));
  CHECK(z.to_vector<float>() == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("binary ops broadcast NumPy-style and name shapes on mismatch", "[tensor][ops]") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, cpu());
  Tensor col = Tensor::from_vector<float>({10, 20}, {2, 1}, cpu());
  CHECK((a + col).to_vector<float>() == std::vector<float>{11, 12, 13, 24, 25, 26});
  CHECK((a - col).to_vector<float>() == std::vector<float>{-9, -8, -7, -16, -15, -14});
  CHECK((a / col).to_vector<float>() == std::vector<float>{0.1f, 0.2f, 0.3f, 0.2f, 0.25f, 0.3f});
  // A negative-stride operand.
  CHECK((a.flip(1) * a).to_vector<float>() == std::vector<float>{3, 4, 3, 24, 25, 24});
  Tensor bad = Tensor::from_vector<float>({1, 2}, {2}, cpu());
  CHECK_THROWS_WITH(a + bad, Catch::Contains("add: shapes [2, 3] and [2] do not broadcast"));
}

TEST_CASE("integer arithmetic wraps and divides toward zero, and x / 0 is 0", "[tensor][ops][edge]") {
  const int32_t mx = std::numeric_limits<int32_t>::max(), mn = std::numeric_limits<int32_t>::min();
  Tensor a = Tensor::from_vector<int32_t>({mx, -7, 7, mn, 5}, cpu());
  Tensor b = Tensor::from_vector<int32_t>({1, 2, -2, -1, 0}, cpu());
  CHECK((a + b).to_vector<int32_t>() == std::vector<int32_t>{mn, -5, 5, mx, 5});
  CHECK((a / b).to_vector<int32_t>() == std::vector<int32_t>{mx, -3, -3, mn, 0});
  Tensor u = Tensor::from_vector<uint8_t>({250, 3}, cpu());
  CHECK((u + u).to_vector<uint8_t>() == std::vector<uint8_t>{244, 6});
}

TEST_CASE("type promotion follows NumPy for mixed operands", "[tensor][ops]") {
  CHECK(promote_types(DType::I32, DType::F32) == DType::F32);
  CHECK(promote_types(DType::F16, DType::BF16) == DType::F32);
  CHECK(promote_types(DType::U8, DType::I8) == DType::I16);
  CHECK(promote_types(DType::U32, DType::I64) == DType::I64);
  CHECK(promote_types(DType::U64, DType::I64) == DType::F64);
  CHECK(promote_types(DType::Bool, DType::U8) == DType::U8);
  Tensor i = Tensor::from_vector<int32_t>({1, 2}, cpu());
  Tensor f = Tensor::from_vector<double>({0.5, 0.25}, cpu());
  Tensor r = i + f;
  CHECK(r.dtype() == DType::F64);
  CHECK(r.to_vector<double>() == std::vector<double>{1.5, 2.25});
}

TEST_CASE("cast truncates toward zero, saturates, maps NaN to 0 and rounds to nearest-even", "[tensor][cast][edge]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor f = Tensor::from_vector<float>({2.9f, -2.9f, 1e10f, -1e10f, nan, inf, -inf}, cpu());
  CHECK(f.to(DType::I32).to_vector<int32_t>() ==
        std::vector<int32_t>{2, -2, 2147483647, -2147483647 - 1, 0, 2147483647, -2147483647 - 1});
  CHECK(f.to(DType::U8).to_vector<uint8_t>() == std::vector<uint8_t>{2, 0, 255, 0, 0, 255, 0});
  CHECK(f.to(DType::Bool).to_vector<bool>() == std::vector<bool>{true, true, true, true, true, true, true});
  // f16 has 10 mantissa bits: 2049 lies halfway between 2048 and 2050 and rounds to even (2048);
  // 2051 lies between 2050 and 2052 and rounds to even (2052); 65520 overflows to Inf.
  Tensor h = Tensor::from_vector<float>({2049.0f, 2051.0f, 65520.0f, 1e-8f}, cpu()).to(DType::F16);
  const std::vector<float> back = h.to(DType::F32).to_vector<float>();
  CHECK(back[0] == 2048.0f);
  CHECK(back[1] == 2052.0f);
  CHECK(std::isinf(back[2]));
  CHECK(back[3] == 0.0f);  // below half the smallest subnormal (2^-25 ~ 2.98e-8)
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7, rounds to even (1).
  Tensor bh = Tensor::from_vector<float>({1.00390625f, 1.01171875f}, cpu()).to(DType::BF16);
  CHECK(bh.to(DType::F32).to_vector<float>() == std::vector<float>{1.0f, 1.015625f});
  Tensor i = Tensor::from_vector<int32_t>({300, -1}, cpu());
  CHECK(i.to(DType::U8).to_vector<uint8_t>() == std::vector<uint8_t>{44, 255});  // wraps mod 256
}

TEST_CASE("f16 and bf16 arithmetic is computed in f32 and rounded once", "[tensor][ops]") {
  Tensor a = Tensor::from_vector<float>({1.5f, 1000.0f}, cpu()).to(DType::F16);
  Tensor b = Tensor::from_vector<float>({0.25f, 0.5f}, cpu()).to(DType::F16);
  // 1000.5 is not representable in f16 (spacing 0.5 from 512 to 1024 -> it is; 1000.5 exact)
  CHECK((a + b).to(DType::F32).to_vector<float>() == std::vector<float>{1.75f, 1000.5f});
  Tensor c = Tensor::from_vector<float>({256.0f}, cpu()).to(DType::BF16);
  // bf16 spacing at 256 is 2: 256 + 1 = 257 is a tie and rounds to even (256).
  CHECK((c + Tensor::ones({1}, DType::BF16, cpu())).to(DType::F32).to_vector<float>() == std::vector<float>{256.0f});
}

TEST_CASE("matmul: 2-D, batched with broadcasting, 1-D operands, strided inputs", "[tensor][matmul]") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, cpu());
  Tensor b = Tensor::from_vector<float>({7, 8, 9, 10, 11, 12}, {3, 2}, cpu());
  // [[1*7+2*9+3*11, 1*8+2*10+3*12], [4*7+5*9+6*11, 4*8+5*10+6*12]]
  CHECK(a.matmul(b).to_vector<float>() == std::vector<float>{58, 64, 139, 154});
  // Transposed (strided) operand: a @ a^T = [[14, 32], [32, 77]]
  CHECK(a.matmul(a.t()).to_vector<float>() == std::vector<float>{14, 32, 32, 77});
  // Batch broadcast: [2,2,3] x [3,2] -> [2,2,2]; second batch is a * 2
  Tensor batch = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12}, {2, 2, 3}, cpu());
  CHECK(batch.matmul(b).to_vector<float>() == std::vector<float>{58, 64, 139, 154, 116, 128, 278, 308});
  // 1-D: vector @ matrix and matrix @ vector
  Tensor v = Tensor::from_vector<float>({1, 0, -1}, cpu());
  CHECK(v.matmul(b).to_vector<float>() == std::vector<float>{-4, -4});
  CHECK(a.matmul(v).shape() == Shape{2});
  CHECK(a.matmul(v).to_vector<float>() == std::vector<float>{-2, -2});
  // A negative-stride operand is packed first: flip(b, 0) = [[11,12],[9,10],[7,8]]
  CHECK(a.matmul(b.flip(0)).to_vector<float>() == std::vector<float>{50, 56, 131, 146});
  // Integer matmul runs on the reference loop.
  Tensor ia = a.to(DType::I64), ib = b.to(DType::I64);
  CHECK(ia.matmul(ib).to_vector<int64_t>() == std::vector<int64_t>{58, 64, 139, 154});
  CHECK_THROWS_WITH(a.matmul(a), Catch::Contains("inner dimensions 3 and 2 differ"));
}

TEST_CASE("sum over axes with keepdim, and integers widen to 64 bits", "[tensor][reduce]") {
  Tensor t = arange(24, cpu()).reshape({2, 3, 4});
  // Sum over axis 1: element [i][k] = sum_j (12i + 4j + k) = 36i + 12 + 3k
  CHECK(t.sum({1}).to_vector<float>() == std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57});
  CHECK(t.sum({1}, true).shape() == Shape{2, 1, 4});
  // Over axes 0 and 2: [j] = sum_i sum_k (12i + 4j + k) = 2*4*4j + 4*12 + 2*6 = 32j + 60
  CHECK(t.sum({0, -1}).to_vector<float>() == std::vector<float>{60, 92, 124});
  CHECK(t.sum().item<float>() == 276.0f);
  CHECK_THROWS_WITH(t.sum({1, -2}), Catch::Contains("given twice"));
  Tensor i = Tensor::from_vector<int32_t>({2147483647, 1}, cpu());
  Tensor s = i.sum();
  CHECK(s.dtype() == DType::I64);
  CHECK(s.item<int64_t>() == 2147483648LL);
  // A reversed, non-contiguous input.
  CHECK(t.flip(2).sum({2}).to_vector<float>() == std::vector<float>{6, 22, 38, 54, 70, 86});
}

TEST_CASE("NaN and Inf propagate through arithmetic and sums", "[tensor][edge]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Tensor::from_vector<float>({inf, nan, 1.0f}, cpu());
  Tensor b = Tensor::from_vector<float>({-inf, 1.0f, 0.0f}, cpu());
  const std::vector<float> s = (a + b).to_vector<float>();
  CHECK(std::isnan(s[0]));
  CHECK(std::isnan(s[1]));
  CHECK(s[2] == 1.0f);
  CHECK(std::isinf((a / b).to_vector<float>()[2]));
  CHECK(std::isnan(a.sum().item<float>()));
}

TEST_CASE("fill writes every dtype exactly", "[tensor][fill]") {
  CHECK(Tensor::full({2}, -3.0, DType::I8, cpu()).to_vector<int8_t>() == std::vector<int8_t>{-3, -3});
  CHECK(Tensor::full({1}, 0.1, DType::F64, cpu()).item<double>() == 0.1);
  CHECK(Tensor::ones({2}, DType::Bool, cpu()).to_vector<bool>() == std::vector<bool>{true, true});
  CHECK(static_cast<float>(Tensor::full({1}, 0.1, DType::BF16, cpu()).item<bf16>()) == 0.10009765625f);
}

TEST_CASE("element counts and byte sizes that overflow are errors, never a small buffer",
          "[tensor][errors]") {
  const Device cpu = test::cpu();
  CHECK_THROWS_WITH(Tensor::zeros({int64_t{1} << 61}, DType::F64, cpu),
                    Catch::Contains("[2305843009213693952]") &&
                        Catch::Contains("more than 2^63 - 1 bytes"));
  CHECK_THROWS_WITH(Tensor::zeros({int64_t{1} << 32, int64_t{1} << 32}, DType::U8, cpu),
                    Catch::Contains("more than 2^63 - 1 elements"));
  // A 2^62-element broadcast view is fine as a view; materialising it is not.
  const Tensor one = Tensor::zeros({1}, DType::F32, cpu);
  const Tensor wide = one.broadcast_to({int64_t{1} << 31, int64_t{1} << 31});
  CHECK_THROWS_WITH(wide.contiguous(), Catch::Contains("more than 2^63 - 1 bytes"));
  // A reshape whose product wraps to the right count is refused, not accepted.
  CHECK_THROWS_WITH(one.reshape({int64_t{1} << 32, int64_t{1} << 32, 1}),
                    Catch::Contains("more than 2^63 - 1 elements"));
  CHECK_THROWS_WITH(Tensor::zeros({3, -2}, DType::F32, cpu), Catch::Contains("negative"));
  // An empty tensor whose other extents multiply past 2^63 is contiguous: reshaping it is a view
  // (it once recursed without end, found by fuzz_onnx_import).
  const Tensor empty = Tensor::zeros({0, int64_t{1} << 40, int64_t{1} << 40}, DType::F32, cpu);
  CHECK(empty.is_contiguous());
  const Tensor moved = empty.reshape({int64_t{1} << 40, 0, int64_t{1} << 40});
  CHECK(moved.numel() == 0);
  CHECK(moved.shape() == Shape{int64_t{1} << 40, 0, int64_t{1} << 40});
}
