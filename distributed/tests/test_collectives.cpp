// Collectives on every dtype, run by ctest twice: as one process (no MPI: [one-rank] and the
// shared cases) and under mpirun -n 2 (the shared cases and [mpi]). Every rank's input depends on
// its rank, so the expected results follow by hand: rank r holds x_i = (r + 1) * (i + 1) (i the
// element's index), so over N ranks sum_i = (i + 1) * N (N + 1) / 2, max_i = N (i + 1),
// min_i = (i + 1), mean_i = (i + 1) (N + 1) / 2.
#include "test_group.hpp"

#include <wick/distributed/distributed.hpp>
#include <wick/error.hpp>
#include <wick/runtime.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

using namespace wick;
using namespace wick::distributed;

namespace {

constexpr int64_t kCount = 5;

// Rank r's input of `dtype`: (r + 1) * (i + 1) for i in [0, kCount).
Tensor rank_input(DType dtype, int rank) {
  std::vector<double> v;
  for (int64_t i = 0; i < kCount; ++i) v.push_back(double((rank + 1) * (i + 1)));
  return Tensor::from_vector(v, {kCount}).to(dtype);
}

Tensor bool_tensor(const std::vector<uint8_t>& v) {
  return Tensor::from_bytes(v.data(), v.size(), {int64_t(v.size())}, DType::Bool);
}

std::vector<double> as_doubles(const Tensor& t) {
  return t.to(DType::F64).to_vector<double>();
}

const DType kNumeric[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8,
                          DType::I16, DType::I32, DType::I64, DType::U32,  DType::U64};

// The bytes of `t` gathered from every rank must be the same (bit-identical results).
void require_same_bits_everywhere(const Tensor& t) {
  const Tensor all = all_gather(t);
  const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  std::vector<uint8_t> raw(bytes * static_cast<size_t>(pg().size()));
  all.copy_to_host(raw.data(), raw.size());
  for (int r = 1; r < pg().size(); ++r)
    REQUIRE(std::memcmp(raw.data(), raw.data() + r * bytes, bytes) == 0);
}

}  // namespace

TEST_CASE("all_reduce sums, maxes and mins every numeric dtype to the hand-derived values",
          "[collectives]") {
  const int n = pg().size(), r = pg().rank();
  for (DType dtype : kNumeric) {
    INFO("dtype " << dtype_name(dtype) << ", rank " << r << " of " << n);
    Tensor sum = rank_input(dtype, r), mx = rank_input(dtype, r), mn = rank_input(dtype, r);
    all_reduce(sum, ReduceOp::Sum);
    all_reduce(mx, ReduceOp::Max);
    all_reduce(mn, ReduceOp::Min);
    CHECK(sum.dtype() == dtype);
    const std::vector<double> s = as_doubles(sum), a = as_doubles(mx), b = as_doubles(mn);
    for (int64_t i = 0; i < kCount; ++i) {
      CHECK(s[size_t(i)] == double((i + 1) * n * (n + 1) / 2));
      CHECK(a[size_t(i)] == double(n * (i + 1)));
      CHECK(b[size_t(i)] == double(i + 1));
    }
    require_same_bits_everywhere(sum);
  }
}

TEST_CASE("all_reduce mean of the float dtypes is (i + 1) (N + 1) / 2", "[collectives]") {
  const int n = pg().size();
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO("dtype " << dtype_name(dtype));
    Tensor t = rank_input(dtype, pg().rank());
    all_reduce(t, ReduceOp::Mean);
    const std::vector<double> v = as_doubles(t);
    for (int64_t i = 0; i < kCount; ++i) CHECK(v[size_t(i)] == double(i + 1) * (n + 1) / 2.0);
  }
}

TEST_CASE("all_reduce on bool is or for sum and max and and for min", "[collectives]") {
  const int n = pg().size(), r = pg().rank();
  // Element 0: true on rank 0 only. Element 1: true everywhere. Element 2: false everywhere.
  const std::vector<uint8_t> mine = {r == 0, 1, 0};
  Tensor any = bool_tensor(mine), all = bool_tensor(mine);
  all_reduce(any, ReduceOp::Sum);
  all_reduce(all, ReduceOp::Min);
  CHECK(any.to_vector<bool>() == std::vector<bool>{true, true, false});
  CHECK(all.to_vector<bool>() == std::vector<bool>{n == 1, true, false});
}

TEST_CASE("all_reduce in f32 is rounded once from the double sum, the same bits on every rank",
          "[collectives]") {
  // 1 + 2^-24 on every rank: summed in f32 rank by rank, 1 + 2^-24 rounds to 1 each time; the
  // double sum N (1 + 2^-24) rounds to N + N 2^-24, which f32 holds for N = 2 (2 + 2^-23).
  const int n = pg().size();
  Tensor t = Tensor::from_vector<float>({1.0f + 0x1p-23f, 1.0f}, {2});
  all_reduce(t, ReduceOp::Sum);
  const std::vector<float> v = t.to_vector<float>();
  CHECK(v[0] == float(n) * (1.0f + 0x1p-23f));
  CHECK(v[1] == float(n));
  require_same_bits_everywhere(t);
}

TEST_CASE(
    "all_reduce of sizes that split unevenly over the ranks, or into fewer elements than "
    "ranks, gives every element its value",
    "[collectives]") {
  // Each rank owns one part of the elements (the first count % N parts one longer): every size
  // below puts some elements in every part, or leaves parts empty (count < N).
  const int n = pg().size(), r = pg().rank();
  for (int64_t count :
       {int64_t(1), int64_t(2), int64_t(3), int64_t(7), int64_t(1000), int64_t(4099)}) {
    INFO("count " << count << ", rank " << r << " of " << n);
    std::vector<double> v;
    for (int64_t i = 0; i < count; ++i) v.push_back(double((r + 1) * (i % 97 + 1)));
    Tensor f = Tensor::from_vector(v, {count}).to(DType::F32);
    Tensor i32 = Tensor::from_vector(v, {count}).to(DType::I32);
    all_reduce(f, ReduceOp::Mean);
    all_reduce(i32, ReduceOp::Max);
    const std::vector<float> fm = f.to_vector<float>();
    const std::vector<int32_t> im = i32.to_vector<int32_t>();
    for (int64_t i = 0; i < count; ++i) {
      REQUIRE(fm[size_t(i)] == float(double(i % 97 + 1) * (n + 1) / 2.0));
      REQUIRE(im[size_t(i)] == int32_t(n * (i % 97 + 1)));
    }
    require_same_bits_everywhere(f);
  }
}

TEST_CASE("all_reduce sums each element in rank order, whichever rank reduces it",
          "[collectives]") {
  // f64: rank 0 holds 1, every other rank 2^-53. In rank order each addition rounds back to 1
  // (1 + 2^-53 is a tie, to even); any other order adds the small ones first: 1 + (N - 1) 2^-53 > 1
  // for N >= 3. The elements fall in every rank's part.
  const int r = pg().rank();
  const std::vector<double> mine(9, r == 0 ? 1.0 : 0x1p-53);
  Tensor t = Tensor::from_vector(mine, {9});
  all_reduce(t, ReduceOp::Sum);
  CHECK(t.to_vector<double>() == std::vector<double>(9, 1.0));
  require_same_bits_everywhere(t);
}

TEST_CASE("all_reduce of a contiguous tensor and of a strided view of the same values agree",
          "[collectives]") {
  // A contiguous tensor on a device whose buffers are host memory is reduced in its own memory; a
  // view is staged through a copy. Rank r: column 0 holds (r + 1)(i + 1), column 1 holds 100.
  const int n = pg().size(), r = pg().rank();
  std::vector<float> rows;
  for (int i = 0; i < 6; ++i) rows.insert(rows.end(), {float((r + 1) * (i + 1)), 100.0f});
  Tensor base = Tensor::from_vector(rows, {6, 2});
  Tensor column = base.slice(1, 0, 1);  // strided: [6, 1] with stride 2
  Tensor whole = base.slice(1, 0, 1).contiguous();
  all_reduce(column, ReduceOp::Sum);
  all_reduce(whole, ReduceOp::Sum);
  const std::vector<float> b = base.to_vector<float>(), w = whole.to_vector<float>();
  for (int i = 0; i < 6; ++i) {
    CHECK(b[size_t(2 * i)] == float((i + 1) * n * (n + 1) / 2));
    CHECK(b[size_t(2 * i + 1)] == 100.0f);  // the other column is untouched
    CHECK(w[size_t(i)] == b[size_t(2 * i)]);
  }
}

TEST_CASE(
    "all_reduce of f32 at the ends of the range: the mean of the largest floats, and "
    "subnormal means rounded once",
    "[collectives]") {
  // Every rank holds FLT_MAX: the sum overflows to inf for N >= 2, the mean is FLT_MAX (the double
  // sum N FLT_MAX is exact). Rank 0 holds 3 * 2^-149 (a subnormal), the others 0: the mean
  // 3 * 2^-149 / N is 3 * 2^-149 for N = 1, 1.5 * 2^-149 for N = 2 (halfway: to even, 2 * 2^-149),
  // 2^-149 for N = 3.
  const int n = pg().size(), r = pg().rank();
  const float big = std::numeric_limits<float>::max();
  Tensor sum = Tensor::from_vector<float>({big, big}, {2}), mean = sum.clone();
  all_reduce(sum, ReduceOp::Sum);
  all_reduce(mean, ReduceOp::Mean);
  CHECK(mean.to_vector<float>() == std::vector<float>{big, big});
  CHECK(sum.to_vector<float>()[0] == (n == 1 ? big : std::numeric_limits<float>::infinity()));
  Tensor tiny = Tensor::from_vector<float>({r == 0 ? 3 * 0x1p-149f : 0.0f}, {1});
  all_reduce(tiny, ReduceOp::Mean);
  if (n <= 3) {
    const float expected[] = {3 * 0x1p-149f, 2 * 0x1p-149f, 0x1p-149f};
    CHECK(tiny.to_vector<float>()[0] == expected[n - 1]);
  }
}

TEST_CASE("all_reduce mean refuses an integer dtype, naming it", "[collectives]") {
  Tensor t = rank_input(DType::I32, pg().rank());
  CHECK_THROWS_WITH(all_reduce(t, ReduceOp::Mean),
                    Catch::Contains("mean needs a float dtype, not i32"));
}

TEST_CASE("broadcast gives every rank the root's values, for every dtype", "[collectives]") {
  const int n = pg().size();
  for (DType dtype : kNumeric) {
    INFO("dtype " << dtype_name(dtype));
    const int root = n - 1;
    Tensor t = rank_input(dtype, pg().rank());
    broadcast(t, root);
    const std::vector<double> v = as_doubles(t);
    for (int64_t i = 0; i < kCount; ++i) CHECK(v[size_t(i)] == double((root + 1) * (i + 1)));
  }
  Tensor b = bool_tensor({pg().rank() == 0, 0});
  broadcast(b, 0);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false});
}

TEST_CASE("broadcast into a strided view writes through to the base tensor", "[collectives]") {
  Tensor base =
      Tensor::from_vector<float>({float(pg().rank()), 10, float(pg().rank()), 20}, {2, 2});
  Tensor column = base.slice(1, 0, 1);  // [[r], [r]]
  broadcast(column, 0);
  CHECK(base.to_vector<float>() == std::vector<float>{0, 10, 0, 20});
}

TEST_CASE("all_gather stacks every rank's tensor along a new first axis", "[collectives]") {
  const int n = pg().size();
  for (DType dtype : kNumeric) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor all = all_gather(rank_input(dtype, pg().rank()).reshape({1, kCount}));
    REQUIRE(all.shape() == Shape{n, 1, kCount});
    const std::vector<double> v = as_doubles(all);
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < kCount; ++i)
        CHECK(v[size_t(r * kCount + i)] == double((r + 1) * (i + 1)));
  }
}

TEST_CASE("reduce_scatter gives rank r the r-th part of the sum", "[collectives]") {
  const int n = pg().size(), r = pg().rank();
  for (DType dtype : kNumeric) {
    INFO("dtype " << dtype_name(dtype));
    // 2 rows per rank: row j of rank q holds (q + 1) (j + 1) everywhere.
    std::vector<double> rows;
    for (int j = 0; j < 2 * n; ++j)
      for (int k = 0; k < 3; ++k) rows.push_back(double((r + 1) * (j + 1)));
    const Tensor mine =
        reduce_scatter(Tensor::from_vector(rows, {2 * n, 3}).to(dtype), ReduceOp::Sum);
    REQUIRE(mine.shape() == Shape{2, 3});
    const std::vector<double> v = as_doubles(mine);
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        CHECK(v[size_t(j * 3 + k)] == double((2 * r + j + 1) * n * (n + 1) / 2));
  }
}

TEST_CASE("reduce_scatter refuses a first axis that does not divide by the world size",
          "[collectives]") {
  CHECK_THROWS_WITH(reduce_scatter(Tensor::zeros({}, DType::F32)),
                    Catch::Contains("must divide by the world size"));
  if (pg().size() > 1)
    CHECK_THROWS_WITH(reduce_scatter(Tensor::zeros({pg().size() * 2 + 1}, DType::F32)),
                      Catch::Contains("must divide by the world size"));
}

TEST_CASE("async collectives complete on wait, in the order they were started", "[collectives]") {
  const int n = pg().size();
  Tensor a = rank_input(DType::F32, pg().rank()), b = rank_input(DType::I64, pg().rank());
  Work wa = all_reduce_async(a, ReduceOp::Sum);
  Work wb = all_reduce_async(b, ReduceOp::Max);
  Work wg = all_gather_async(Tensor::from_vector<int32_t>({pg().rank()}, {1}));
  Work wbar = barrier_async();
  // Waited in reverse: each waits for the ones before it.
  wbar.wait();
  CHECK(wg.result().to_vector<int32_t>().size() == size_t(n));
  wb.wait();
  wa.wait();
  CHECK(a.to_vector<float>()[4] == float(5 * n * (n + 1) / 2));
  CHECK(b.to_vector<int64_t>()[4] == int64_t(5 * n));
  barrier();
}

TEST_CASE(
    "a blocking small all_reduce agrees with an async one on another rank, and waits behind "
    "one in flight",
    "[collectives]") {
  // A blocking all_reduce of a small tensor in its own memory completes without a Work (the
  // engine's all_reduce_now); all_reduce_async takes the steps. Rank 0 takes the first, the others
  // the second: the same messages, the same result.
  const int n = pg().size(), r = pg().rank();
  Tensor t = rank_input(DType::F32, r);
  if (r == 0)
    all_reduce(t, ReduceOp::Sum);
  else
    all_reduce_async(t, ReduceOp::Sum).wait();
  CHECK(t.to_vector<float>()[4] == float(5 * n * (n + 1) / 2));
  require_same_bits_everywhere(t);
  // The same disagreeing on the shape: every rank gets the error naming each call.
  Tensor shape = Tensor::zeros({r == 0 ? 3 : 4}, DType::F32);
  // (Catch's combined matchers hold their parts by reference: each is written out in its check.)
  if (n > 1 && r == 0)
    CHECK_THROWS_WITH(all_reduce(shape),
                      Catch::Contains("the ranks called different collectives") &&
                          Catch::Contains("(f32 [3], sum)") && Catch::Contains("(f32 [4], sum)"));
  if (n > 1 && r != 0)
    CHECK_THROWS_WITH(all_reduce_async(shape, ReduceOp::Sum).wait(),
                      Catch::Contains("the ranks called different collectives") &&
                          Catch::Contains("(f32 [3], sum)") && Catch::Contains("(f32 [4], sum)"));
  // With an async all_reduce in flight, a blocking one goes after it (MPI's order on every rank).
  Tensor first = rank_input(DType::I64, r), second = rank_input(DType::F64, r);
  Work w = all_reduce_async(first, ReduceOp::Max);
  all_reduce(second, ReduceOp::Min);
  w.wait();
  CHECK(first.to_vector<int64_t>()[4] == int64_t(5 * n));
  CHECK(second.to_vector<double>()[4] == 5.0);
}

// ctest runs this file again with WICK_DEVICE=opencl: every tensor above is then on the OpenCL
// device, staged through host memory by each collective.
TEST_CASE("a collective leaves its tensor on the selected device", "[collectives]") {
  const Device d = Runtime::global().default_device();
  Tensor t = Tensor::from_vector<float>({float(pg().rank() + 1), 2}, {2}, d);
  all_reduce(t, ReduceOp::Sum);
  CHECK(t.device().name() == d.name());
  CHECK(all_gather(t).device().name() == d.name());
  const int n = pg().size();
  CHECK(t.to_vector<float>() == std::vector<float>{float(n * (n + 1) / 2), float(2 * n)});
}

TEST_CASE(
    "ranks calling with different shapes, dtypes or collectives all get an error naming each call",
    "[collectives]") {
  const int n = pg().size(), r = pg().rank();
  if (n == 1) {
    SUCCEED("one rank: nothing to disagree with");
    return;
  }
  // Rank 0 reduces 3 values, the others 4.
  Tensor shape = Tensor::zeros({r == 0 ? 3 : 4}, DType::F32);
  CHECK_THROWS_WITH(all_reduce(shape),
                    Catch::Contains("the ranks called different collectives") &&
                        Catch::Contains("rank 0 all_reduce") && Catch::Contains("(f32 [3], sum)") &&
                        Catch::Contains("rank 1 all_reduce") && Catch::Contains("(f32 [4], sum)"));
  // Rank 0 in f32, the others in i32.
  Tensor dtype = Tensor::zeros({2}, r == 0 ? DType::F32 : DType::I32);
  CHECK_THROWS_WITH(all_reduce(dtype),
                    Catch::Contains("(f32 [2], sum)") && Catch::Contains("(i32 [2], sum)"));
  // Rank 0 broadcasts, the others all-gather.
  Tensor t = Tensor::zeros({2}, DType::F32);
  if (r == 0)
    CHECK_THROWS_WITH(broadcast(t, 0),
                      Catch::Contains("broadcast") && Catch::Contains("all_gather"));
  else
    CHECK_THROWS_WITH(all_gather(t), Catch::Contains("broadcast") && Catch::Contains("all_gather"));
  // The group still works after the refusals: the same calls everywhere succeed.
  Tensor ok = Tensor::from_vector<float>({1}, {1});
  all_reduce(ok);
  CHECK(ok.to_vector<float>()[0] == float(n));
}

TEST_CASE("broadcast of a message over 2 GiB (more than MPI's int count of bytes) arrives whole",
          "[large]") {
  ProcessGroup& g = pg();
  const int64_t n = (int64_t(1) << 31) + 3;  // INT_MAX + 4 bytes
  Tensor t = Tensor::zeros({n}, DType::U8, Runtime::global().default_device());
  auto* bytes = static_cast<uint8_t*>(t.host_data());
  REQUIRE(bytes != nullptr);  // cpu-onednn: the collective works in the tensor's own memory
  // Marks at the start, around 1 GiB, at INT_MAX and at the very end (the message's last block and
  // its rest), each the root's rank-dependent value.
  const std::vector<int64_t> at = {0, (int64_t(1) << 30) - 1, int64_t(1) << 30, (int64_t(1) << 31) - 1,
                                   int64_t(1) << 31, n - 1};
  const int root = g.size() - 1;
  if (g.rank() == root)
    for (size_t k = 0; k < at.size(); ++k) bytes[at[k]] = uint8_t(17 * (k + 1) + root);
  broadcast(t, root);
  bytes = static_cast<uint8_t*>(t.host_data());
  for (size_t k = 0; k < at.size(); ++k) {
    INFO("byte " << at[k]);
    CHECK(int(bytes[at[k]]) == int(17 * (k + 1) + root));
  }
  CHECK(int(bytes[int64_t(1) << 29]) == 0);
}
