// mpi_transport.cpp — libwick-distributed-mpi.so: the transport table on MPI (transport_abi.h).
// The only Wick code that includes <mpi.h>; libwick-distributed loads it with dlopen when a job has
// more than one rank.
#include "transport_abi.h"

// The C API only (Open MPI and MPICH otherwise pull in their C++ bindings, which need libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool g_initialised_here = false;

int fail(char* err, size_t n, const std::string& what, int code = 0) {
  std::string msg = what;
  if (code != 0) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) == MPI_SUCCESS)
      msg += ": " + std::string(text, static_cast<size_t>(len));
  }
  if (n > 0) std::snprintf(err, n, "%s", msg.c_str());
  return 1;
}

// A message of `bytes` as MPI counts it (MPI counts are ints): `count` of `type`. Up to INT_MAX
// bytes, that many MPI_BYTEs; beyond, one element of a derived type made of 1 GiB blocks and the
// rest, which the caller frees (type_free) once the operation is started (MPI keeps it while the
// operation needs it).
struct Message {
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  bool derived = false;
};

bool message_of(size_t bytes, Message* m, char* err, size_t n, const char* op) {
  if (bytes <= static_cast<size_t>(INT_MAX)) {
    m->count = static_cast<int>(bytes);
    return true;
  }
  constexpr size_t kBlock = size_t(1) << 30;
  MPI_Datatype block = MPI_DATATYPE_NULL, body = MPI_DATATYPE_NULL;
  const size_t blocks = bytes / kBlock, rest = bytes % kBlock;
  int rc = MPI_Type_contiguous(static_cast<int>(kBlock), MPI_BYTE, &block);
  if (rc == MPI_SUCCESS) rc = MPI_Type_contiguous(static_cast<int>(blocks), block, &body);
  if (rc == MPI_SUCCESS) {
    int lengths[2] = {1, static_cast<int>(rest)};
    MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(blocks * kBlock)};
    MPI_Datatype types[2] = {body, MPI_BYTE};
    rc = MPI_Type_create_struct(rest ? 2 : 1, lengths, offsets, types, &m->type);
  }
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&m->type);
  if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
  if (body != MPI_DATATYPE_NULL) MPI_Type_free(&body);
  if (rc != MPI_SUCCESS) {
    fail(err, n, std::string(op) + ": a datatype for a message of " + std::to_string(bytes) +
                     " bytes", rc);
    return false;
  }
  m->count = 1;
  m->derived = true;
  return true;
}

void type_free(Message& m) {
  if (m.derived) MPI_Type_free(&m.type);
}

// The MPI_Request objects handed out as requests, reused: a small collective starts a few and
// tests them within microseconds, where a heap allocation and free each is a visible part. Calls
// come from one thread at a time (transport_abi.h).
std::vector<MPI_Request*> g_free_requests;

MPI_Request* new_request() {
  if (g_free_requests.empty()) return new MPI_Request(MPI_REQUEST_NULL);
  MPI_Request* r = g_free_requests.back();
  g_free_requests.pop_back();
  *r = MPI_REQUEST_NULL;
  return r;
}

void free_request(MPI_Request* r) {
  if (g_free_requests.size() < 64)
    g_free_requests.push_back(r);
  else
    delete r;
}

// Starts one request: `start` fills an MPI_Request handed back as *req.
template <typename Start>
int start_request(void** req, char* err, size_t n, const char* op, Start start) {
  MPI_Request* r = new_request();
  const int rc = start(r);
  if (rc != MPI_SUCCESS) {
    free_request(r);
    return fail(err, n, op, rc);
  }
  *req = r;
  return 0;
}

int init(int* rank, int* size, char* err, size_t n) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return fail(err, n, "MPI_Init_thread", rc);
    g_initialised_here = true;
  }
  // Errors come back as codes (for messages naming the op), not as MPI's default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

void finalize() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (g_initialised_here && !finalised) MPI_Finalize();
  g_initialised_here = false;
}

int ibcast(void* buf, size_t bytes, int root, void** req, char* err, size_t n) {
  Message m;
  if (!message_of(bytes, &m, err, n, "MPI_Ibcast")) return 1;
  const int rc = start_request(req, err, n, "MPI_Ibcast", [&](MPI_Request* r) {
    return MPI_Ibcast(buf, m.count, m.type, root, MPI_COMM_WORLD, r);
  });
  type_free(m);
  return rc;
}

int igather(const void* send, size_t bytes, void* recv, int root, void** req, char* err, size_t n) {
  Message m;
  if (!message_of(bytes, &m, err, n, "MPI_Igather")) return 1;
  const int rc = start_request(req, err, n, "MPI_Igather", [&](MPI_Request* r) {
    return MPI_Igather(send, m.count, m.type, recv, m.count, m.type, root, MPI_COMM_WORLD, r);
  });
  type_free(m);
  return rc;
}

int iallgather(const void* send, size_t bytes, void* recv, void** req, char* err, size_t n) {
  Message m;
  if (!message_of(bytes, &m, err, n, "MPI_Iallgather")) return 1;
  const int rc = start_request(req, err, n, "MPI_Iallgather", [&](MPI_Request* r) {
    return MPI_Iallgather(send, m.count, m.type, recv, m.count, m.type, MPI_COMM_WORLD, r);
  });
  type_free(m);
  return rc;
}

int ibarrier(void** req, char* err, size_t n) {
  return start_request(req, err, n, "MPI_Ibarrier",
                       [&](MPI_Request* r) { return MPI_Ibarrier(MPI_COMM_WORLD, r); });
}

int isend(const void* buf, size_t bytes, int peer, int tag, void** req, char* err, size_t n) {
  Message m;
  if (!message_of(bytes, &m, err, n, "MPI_Isend")) return 1;
  const int rc = start_request(req, err, n, "MPI_Isend", [&](MPI_Request* r) {
    return MPI_Isend(buf, m.count, m.type, peer, tag, MPI_COMM_WORLD, r);
  });
  type_free(m);
  return rc;
}

int irecv(void* buf, size_t bytes, int peer, int tag, void** req, char* err, size_t n) {
  Message m;
  if (!message_of(bytes, &m, err, n, "MPI_Irecv")) return 1;
  const int rc = start_request(req, err, n, "MPI_Irecv", [&](MPI_Request* r) {
    return MPI_Irecv(buf, m.count, m.type, peer, tag, MPI_COMM_WORLD, r);
  });
  type_free(m);
  return rc;
}

int test(void* req, int* done, char* err, size_t n) {
  auto* r = static_cast<MPI_Request*>(req);
  int flag = 0;
  const int rc = MPI_Test(r, &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    free_request(r);
    return fail(err, n, "MPI_Test", rc);
  }
  *done = flag;
  if (flag) free_request(r);
  return 0;
}

void abort_all(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
}

const wick_dist_transport k_table = {sizeof(wick_dist_transport),
                                     WICK_DIST_TRANSPORT_VERSION,
                                     init,
                                     finalize,
                                     ibcast,
                                     igather,
                                     iallgather,
                                     ibarrier,
                                     isend,
                                     irecv,
                                     test,
                                     abort_all};

}  // namespace

extern "C" __attribute__((visibility("default"))) const wick_dist_transport*
wick_distributed_mpi_transport(void) {
  return &k_table;
}
