// wick-distributed-fault-check — a rank that dies or hangs makes the others fail within the
// timeout, with an error naming it.
//   mpirun -n 2 wick-distributed-fault-check kill|hang
// Both ranks all-reduce a small tensor step after step; at step 3 rank 1 kills itself (SIGKILL) or
// stops answering (sleeps). Rank 0 must then throw within WICK_DISTRIBUTED_TIMEOUT; it prints
// "fault_check: rank 0 detected the fault after S s: <error>" and checks that the error names
// rank 1 and that S is within the timeout plus 2 s. Exit status 0 when both hold.
#include <wick/distributed/distributed.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace wick;
namespace dist = wick::distributed;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "kill";
  dist::ProcessGroup& g = dist::init();
  const double timeout = g.timeout_seconds();
  std::chrono::steady_clock::time_point fault;
  for (int step = 0; step < 1000; ++step) {
    if (step == 3) {
      fault = std::chrono::steady_clock::now();
      if (g.rank() == 1 && mode == "kill") std::raise(SIGKILL);
      if (g.rank() == 1) {
        std::this_thread::sleep_for(std::chrono::duration<double>(timeout + 3));
        std::_Exit(0);
      }
    }
    Tensor t = Tensor::from_vector<float>({float(step)}, {1});
    try {
      dist::all_reduce(t);
    } catch (const std::exception& e) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - fault).count();
      const std::string what = e.what();
      const bool names = what.find("nothing from rank 1") != std::string::npos;
      const bool in_time = s <= timeout + 2;
      std::printf("fault_check: rank %d detected the fault after %.1f s: %s\nfault_check: %s\n",
                  g.rank(), s, e.what(), names && in_time ? "PASS" : "FAIL");
      std::fflush(stdout);
      // Without MPI_Finalize (the dead rank cannot take part): mpirun then ends the job.
      std::_Exit(names && in_time ? 0 : 1);
    }
  }
  std::printf("fault_check: rank %d saw no fault: FAIL\n", g.rank());
  return 1;
}
