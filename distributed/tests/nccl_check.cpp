// wick-distributed-nccl-check — the collectives of CUDA tensors on NCCL, for the GPU device check
// (scripts/gpu-check.sh): every dtype through all_reduce (sum, mean for floats, max and min for the
// others), broadcast, all_gather, reduce_scatter, a strided tensor (NCCL on a copy), and a
// gradient bucket packed on the device, each against values worked out here on the host.
//   WICK_DISTRIBUTED_NCCL=on wick-distributed-nccl-check [device]      (default device: cuda)
// Runs as one rank, or as each rank of `mpirun -n N`. Prints one line per check and exits 0 when
// all hold, 1 when one fails, 2 when the device is not a CUDA device (no NCCL path to check).
#include <wick/autograd.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/distributed/distributed.hpp>
#include <wick/runtime.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace wick;
namespace dist = wick::distributed;

namespace {

int g_failures = 0;

void report(bool ok, const std::string& what, const std::string& detail = "") {
  if (!ok) ++g_failures;
  std::printf("%s %s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : (": " + detail).c_str());
}

// Rank r's value at element i: small integers, exact in every dtype (bool: a pattern of 0 and 1).
double value(int64_t i, int r, DType dtype) {
  if (dtype == DType::Bool) return (i + r) % 3 == 0 ? 1 : 0;
  return static_cast<double>(i % 7 + 1 + r);
}

Tensor rank_tensor(const Shape& shape, int r, DType dtype, const Device& device) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = value(i, r, dtype);
  return Tensor::from_vector<double>(v, shape).to(dtype).to(device);
}

std::vector<double> host_values(const Tensor& t) {
  return t.to(Runtime::global().registry().find_device("cpu-onednn")).to(DType::F64).to_vector<double>();
}

// The reduction over ranks 0..n-1 of element i, worked out on the host.
double expected(int64_t i, int n, DType dtype, dist::ReduceOp op) {
  double acc = value(i, 0, dtype);
  for (int r = 1; r < n; ++r) {
    const double v = value(i, r, dtype);
    if (dtype == DType::Bool)
      acc = op == dist::ReduceOp::Min ? (acc && v) : (acc || v);
    else if (op == dist::ReduceOp::Max)
      acc = std::max(acc, v);
    else if (op == dist::ReduceOp::Min)
      acc = std::min(acc, v);
    else
      acc += v;
  }
  return op == dist::ReduceOp::Mean ? acc / n : acc;
}

std::string first_difference(const std::vector<double>& got, const std::function<double(int64_t)>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want(int64_t(i)))
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want(int64_t(i)));
  return "";
}

void check(const std::string& what, const std::function<std::string()>& body) {
  try {
    const std::string d = body();
    report(d.empty(), what, d);
  } catch (const std::exception& e) {
    report(false, what, std::string("threw: ") + e.what());
  }
}

void check_dtype(DType dtype, const Device& dev, int rank, int n) {
  const std::string name = dtype_name(dtype);
  std::vector<dist::ReduceOp> ops;
  if (is_float(dtype)) ops = {dist::ReduceOp::Sum, dist::ReduceOp::Mean};
  else ops = {dist::ReduceOp::Sum, dist::ReduceOp::Max, dist::ReduceOp::Min};
  for (dist::ReduceOp op : ops)
    check(std::string("all_reduce ") + dist::reduce_op_name(op) + " " + name, [&] {
      Tensor t = rank_tensor({10, 100}, rank, dtype, dev);
      if (!t.native_memory()) return std::string("the tensor names no CUDA memory (ABI 1.8)");
      dist::all_reduce(t, op);
      return first_difference(host_values(t), [&](int64_t i) { return expected(i, n, dtype, op); });
    });
  check("broadcast from the last rank " + name, [&] {
    Tensor t = rank_tensor({1000}, rank, dtype, dev);
    dist::broadcast(t, n - 1);
    return first_difference(host_values(t), [&](int64_t i) { return value(i, n - 1, dtype); });
  });
  check("all_gather " + name, [&] {
    const Tensor t = dist::all_gather(rank_tensor({4, 25}, rank, dtype, dev));
    if (t.shape() != Shape{n, 4, 25}) return std::string("shape");
    return first_difference(host_values(t), [&](int64_t i) { return value(i % 100, int(i / 100), dtype); });
  });
  check("reduce_scatter sum " + name, [&] {
    const Tensor t = dist::reduce_scatter(rank_tensor({n * 10, 10}, rank, dtype, dev), dist::ReduceOp::Sum);
    if (t.shape() != Shape{10, 10}) return std::string("shape");
    return first_difference(host_values(t), [&](int64_t i) {
      return expected(i + rank * 100, n, dtype, dist::ReduceOp::Sum);
    });
  });
}

}  // namespace

int main(int argc, char** argv) try {
  dist::ProcessGroup& g = dist::init();
  const int rank = g.rank(), n = g.size();
  const Device dev = Runtime::global().registry().find_device(argc > 1 ? argv[1] : "cuda");
  std::printf("rank %d of %d, device %s, NCCL: %s\n", rank, n, dev.valid() ? dev.name().c_str() : "none",
              dist::nccl_status().c_str());
  if (!dev.valid() || !Tensor::zeros({1}, DType::F32, dev).native_memory()) {
    std::printf("no CUDA device here: nothing of the NCCL path to check\n");
    dist::shutdown();
    return 2;
  }
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8, DType::I16,
                  DType::I32, DType::I64, DType::U32, DType::U64, DType::Bool})
    check_dtype(d, dev, rank, n);
  check("all_reduce sum of a transposed (strided) f32 view", [&] {
    Tensor base = rank_tensor({20, 30}, rank, DType::F32, dev);
    Tensor t = base.t();
    dist::all_reduce(t, dist::ReduceOp::Sum);
    return first_difference(host_values(base), [&](int64_t i) { return expected(i, n, DType::F32, dist::ReduceOp::Sum); });
  });
  check("all_reduce_gradients: a bucket packed on the device, averaged", [&] {
    std::vector<Tensor> params = {Tensor::zeros({3, 4}, DType::F32, dev).set_requires_grad(),
                                  Tensor::zeros({5}, DType::F32, dev).set_requires_grad()};
    params[0].set_grad(rank_tensor({3, 4}, rank, DType::F32, dev));
    params[1].set_grad(rank_tensor({5}, rank, DType::F32, dev));
    dist::all_reduce_gradients(params);
    std::string d = first_difference(host_values(params[0].grad()),
                                     [&](int64_t i) { return expected(i, n, DType::F32, dist::ReduceOp::Mean); });
    if (d.empty())
      d = first_difference(host_values(params[1].grad()),
                           [&](int64_t i) { return expected(i, n, DType::F32, dist::ReduceOp::Mean); });
    return d;
  });
  std::printf("%s: %d failed\n", g_failures ? "FAILED" : "passed", g_failures);
  dist::shutdown();
  return g_failures ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "wick-distributed-nccl-check: error: %s\n", e.what());
  return 1;
}
