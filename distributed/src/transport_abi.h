/* transport_abi.h — the C table between libwick-distributed and its MPI module
 * (libwick-distributed-mpi.so), which is loaded with dlopen only when a job has more than one
 * rank, so that libwick-distributed itself never links MPI. Private to the distributed layer: the
 * module is built from the same tree, so the table is checked only by its size and version.
 *
 * Every call returns 0 on success, or non-zero after writing a NUL-terminated message into
 * err[0..err_size). Requests are opaque; test() frees a request once it reports it done. Calls are
 * made from one thread at a time (the module asks MPI for MPI_THREAD_SERIALIZED). */
#ifndef WICK_DISTRIBUTED_TRANSPORT_ABI_H
#define WICK_DISTRIBUTED_TRANSPORT_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WICK_DIST_TRANSPORT_VERSION 1
#define WICK_DIST_TRANSPORT_ENTRY "wick_distributed_mpi_transport"

typedef struct wick_dist_transport {
  size_t struct_size;
  int version;
  /* MPI_Init_thread (once per process; a no-op when MPI is already initialised), then the world
   * communicator's rank and size. */
  int (*init)(int* rank, int* size, char* err, size_t err_size);
  /* MPI_Finalize, when init initialised MPI. */
  void (*finalize)(void);
  /* Non-blocking collectives and point-to-point transfers of raw bytes over the world
   * communicator. Buffers must stay valid until test() reports the request done. */
  int (*ibcast)(void* buf, size_t bytes, int root, void** req, char* err, size_t err_size);
  int (*igather)(const void* send, size_t bytes, void* recv, int root, void** req, char* err,
                 size_t err_size);
  int (*iallgather)(const void* send, size_t bytes, void* recv, void** req, char* err,
                    size_t err_size);
  int (*ibarrier)(void** req, char* err, size_t err_size);
  int (*isend)(const void* buf, size_t bytes, int peer, int tag, void** req, char* err,
               size_t err_size);
  int (*irecv)(void* buf, size_t bytes, int peer, int tag, void** req, char* err, size_t err_size);
  /* *done = 1 when the request completed (it is then freed), 0 when still in flight. */
  int (*test)(void* req, int* done, char* err, size_t err_size);
  /* MPI_Abort on the world communicator: ends every rank (after a timeout, so none hangs). */
  void (*abort)(int code);
} wick_dist_transport;

typedef const wick_dist_transport* (*wick_dist_transport_entry)(void);

#ifdef __cplusplus
}
#endif

#endif
