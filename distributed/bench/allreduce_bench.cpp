// wick-distributed-bench — wick::distributed::all_reduce against plain MPI_Allreduce.
//   mpirun -n 2 wick-distributed-bench [--iterations 50] [--max-bytes 67108864]
// For f32 tensors of 1 KiB to 64 MiB on the selected device (WICK_DEVICE), the median time of one
// sum all-reduce each way, interleaved (Wick's then MPI's, per round) so that a machine shared with
// other work slows both alike. Rank 0 prints one line per size: both medians and MPI / Wick (the
// issue's target is >= 0.9: Wick at most 1/0.9 of MPI's time).
#include <wick/distributed/distributed.hpp>
#include <wick/runtime.hpp>

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace wick;
namespace dist = wick::distributed;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  int iterations = 50;
  int64_t max_bytes = int64_t(64) << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--iterations") iterations = std::stoi(argv[i + 1]);
    if (std::string(argv[i]) == "--max-bytes") max_bytes = std::stoll(argv[i + 1]);
  }
  dist::ProcessGroup& g = dist::init();  // initialises MPI (through the module) when N > 1
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) MPI_Init(&argc, &argv);  // one rank: Wick's collectives are local copies
  const Device device = Runtime::global().default_device();
  if (g.rank() == 0)
    std::printf("all_reduce sum of f32 on %d ranks, %s, median of %d:\n%10s %12s %12s %10s\n",
                g.size(), device.name().c_str(), iterations, "bytes", "wick us", "MPI us",
                "MPI/wick");
  for (int64_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    // Zeros: Wick's sum is in place, and ones would double every round (inf after 128), taking a
    // reduction's slow path for values that are not finite.
    Tensor t = Tensor::zeros({n}, DType::F32, device);
    std::vector<float> host(static_cast<size_t>(n), 0.0f), out(static_cast<size_t>(n));
    std::vector<double> wick_s, mpi_s;
    for (int i = 0; i < iterations + 2; ++i) {
      dist::barrier();
      auto start = std::chrono::steady_clock::now();
      dist::all_reduce(t);
      const double w = seconds_since(start);
      MPI_Barrier(MPI_COMM_WORLD);
      start = std::chrono::steady_clock::now();
      MPI_Allreduce(host.data(), out.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      const double m = seconds_since(start);
      if (i >= 2) {  // two warm-up rounds
        wick_s.push_back(w);
        mpi_s.push_back(m);
      }
    }
    const double wm = median(wick_s), mm = median(mpi_s);
    if (g.rank() == 0)
      std::printf("%10lld %12.1f %12.1f %10.2f\n", (long long)bytes, wm * 1e6, mm * 1e6, mm / wm);
  }
  dist::shutdown();
  if (!initialised) MPI_Finalize();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "wick-distributed-bench: error: %s\n", e.what());
  return 1;
}
