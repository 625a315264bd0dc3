/* nccl_abi.h — the C table between libwick-distributed and its NCCL module
 * (libwick-distributed-nccl.so), which is loaded with dlopen at the first collective on a tensor of
 * a CUDA device (Tensor::native_memory, ABI 1.8), so that libwick-distributed links neither NCCL
 * nor CUDA. The module links the CUDA runtime statically and opens libnccl.so.2 itself, so that it
 * loads anywhere and says what is missing. Private to the distributed layer (built from the same
 * tree): the table is checked by its size and version only.
 *
 * Every call that can fail returns 0 on success, or non-zero after writing a NUL-terminated message
 * into err[0..err_size). Communicators and events are opaque. Calls come from one thread at a time.
 */
#ifndef WICK_DISTRIBUTED_NCCL_ABI_H
#define WICK_DISTRIBUTED_NCCL_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WICK_DIST_NCCL_VERSION 1
#define WICK_DIST_NCCL_ENTRY "wick_distributed_nccl_module"
#define WICK_DIST_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

/* The collectives, and the reductions (ReduceOp's order: sum, mean, max, min). */
enum { WICK_NCCL_ALL_REDUCE = 1, WICK_NCCL_BROADCAST, WICK_NCCL_ALL_GATHER, WICK_NCCL_REDUCE_SCATTER };
enum { WICK_NCCL_SUM = 0, WICK_NCCL_MEAN, WICK_NCCL_MAX, WICK_NCCL_MIN };

typedef struct wick_dist_nccl {
  size_t struct_size;
  int version;
  /* Opens libnccl (WICK_NCCL_LIBRARY, else libnccl.so.2 on the loader's path and in the CUDA
   * toolkit's lib directories) and checks that the CUDA runtime sees a device; writes "NCCL 2.28.9
   * (<path>)" into `about`. Once per process; the same answer after. */
  int (*open)(char* about, size_t about_size, char* err, size_t err_size);
  /* Rank 0's part of making a communicator: a new unique id of WICK_DIST_NCCL_ID_BYTES bytes. */
  int (*unique_id)(void* id, char* err, size_t err_size);
  /* Starts making this rank's communicator on CUDA device `device` (non-blocking: ready() says when
   * it is made). */
  int (*comm_init)(const void* id, int nranks, int rank, int device, void** comm, char* err,
                   size_t err_size);
  /* *ready = 1 once the communicator's last call (its making, or a collective's queueing) is done;
   * an error when it failed. */
  int (*ready)(void* comm, int* ready, char* err, size_t err_size);
  /* Ends the communicator's work in flight (after a timeout or a failure) and frees it. */
  void (*abort)(void* comm);
  /* Frees a communicator whose work is done. */
  void (*destroy)(void* comm);
  /* Queues a collective on `stream` (a cudaStream_t) after the work queued there, `count` elements
   * of `dtype` (wick_dtype) per rank (all_gather: sent; reduce_scatter: received), then an event;
   * *event is polled with test(). `op` for the reductions, `root` for broadcast. Waits at most
   * `timeout_seconds` for NCCL to take the call (a non-blocking communicator may queue it later). */
  int (*collective)(void* comm, int kind, const void* send, void* recv, size_t count, int dtype,
                    int op, int root, void* stream, double timeout_seconds, void** event,
                    char* err, size_t err_size);
  /* *done = 1 when the event completed (it is then freed); an error when the communicator failed.
   */
  int (*test)(void* comm, void* event, int* done, char* err, size_t err_size);
  /* Frees an event not yet completed (its collective was aborted). */
  void (*release)(void* event);
} wick_dist_nccl;

typedef const wick_dist_nccl* (*wick_dist_nccl_entry)(void);

#ifdef __cplusplus
}
#endif

#endif
