// transport.hpp — how the collectives move bytes: the one-rank local transport, or the MPI module
// (transport_abi.h) loaded with dlopen. Requests are opaque; nullptr is a request already done.
#pragma once

#include "transport_abi.h"

#include <cstddef>
#include <memory>
#include <string>

namespace wick::distributed {

class Transport {
 public:
  using Request = void*;
  virtual ~Transport() = default;
  virtual Request ibcast(void* buf, size_t bytes, int root) = 0;
  virtual Request igather(const void* send, size_t bytes, void* recv, int root) = 0;
  virtual Request iallgather(const void* send, size_t bytes, void* recv) = 0;
  virtual Request ibarrier() = 0;
  virtual Request isend(const void* buf, size_t bytes, int peer, int tag) = 0;
  virtual Request irecv(void* buf, size_t bytes, int peer, int tag) = 0;
  // True when the request completed (and was freed).
  virtual bool test(Request request) = 0;
};

// One rank, no MPI: gathers are copies, broadcasts and barriers are done at once.
std::unique_ptr<Transport> make_local_transport();

// A module of this layer: the path in environment variable `variable`, else `file` beside this
// library (the build tree's lib/ and an install's lib/ alike).
std::string module_path(const char* variable, const char* file);

// Loads the MPI module and initialises MPI; *rank and *size are MPI's. Throws naming the module,
// where it was looked for and the loader's message when it cannot be loaded.
std::unique_ptr<Transport> load_mpi_transport(int* rank, int* size);

}  // namespace wick::distributed
