// transport.cpp — the local transport, and the MPI module's loader (transport.hpp).
#include "transport.hpp"

#include <wick/error.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace wick::distributed {
namespace {

class LocalTransport final : public Transport {
 public:
  Request ibcast(void*, size_t, int) override { return nullptr; }
  Request igather(const void* send, size_t bytes, void* recv, int) override {
    if (bytes) std::memcpy(recv, send, bytes);
    return nullptr;
  }
  Request iallgather(const void* send, size_t bytes, void* recv) override {
    return igather(send, bytes, recv, 0);
  }
  Request ibarrier() override { return nullptr; }
  Request isend(const void*, size_t, int peer, int) override { throw no_peer(peer); }
  Request irecv(void*, size_t, int peer, int) override { throw no_peer(peer); }
  bool test(Request) override { return true; }

 private:
  static Error no_peer(int peer) {
    return Error("wick::distributed: rank " + std::to_string(peer) +
                 " does not exist in a job of one rank");
  }
};

class MpiTransport final : public Transport {
 public:
  MpiTransport(void* handle, const wick_dist_transport* table) : handle_(handle), t_(table) {}
  ~MpiTransport() override {
    t_->finalize();
    // The handle stays open: MPI's own libraries may still run exit handlers.
    (void)handle_;
  }
  Request ibcast(void* buf, size_t bytes, int root) override {
    return call([&](void** r, char* e, size_t n) { return t_->ibcast(buf, bytes, root, r, e, n); });
  }
  Request igather(const void* send, size_t bytes, void* recv, int root) override {
    return call(
        [&](void** r, char* e, size_t n) { return t_->igather(send, bytes, recv, root, r, e, n); });
  }
  Request iallgather(const void* send, size_t bytes, void* recv) override {
    return call(
        [&](void** r, char* e, size_t n) { return t_->iallgather(send, bytes, recv, r, e, n); });
  }
  Request ibarrier() override {
    return call([&](void** r, char* e, size_t n) { return t_->ibarrier(r, e, n); });
  }
  Request isend(const void* buf, size_t bytes, int peer, int tag) override {
    return call(
        [&](void** r, char* e, size_t n) { return t_->isend(buf, bytes, peer, tag, r, e, n); });
  }
  Request irecv(void* buf, size_t bytes, int peer, int tag) override {
    return call(
        [&](void** r, char* e, size_t n) { return t_->irecv(buf, bytes, peer, tag, r, e, n); });
  }
  bool test(Request request) override {
    if (!request) return true;
    int done = 0;
    char err[512];  // not zeroed: test() runs in every poll, and the module writes a message
    err[0] = '\0';
    if (t_->test(request, &done, err, sizeof err) != 0)
      throw Error(std::string("wick::distributed: ") + err);
    return done != 0;
  }

 private:
  template <typename F>
  Request call(F f) {
    void* request = nullptr;
    char err[512] = "";
    if (f(&request, err, sizeof err) != 0) throw Error(std::string("wick::distributed: ") + err);
    return request;
  }
  void* handle_;
  const wick_dist_transport* t_;
};

}  // namespace

std::string module_path(const char* variable, const char* file) {
  if (const char* p = std::getenv(variable); p && *p) return p;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&make_local_transport), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / file).string();
  return file;
}

std::unique_ptr<Transport> make_local_transport() {
  return std::make_unique<LocalTransport>();
}

std::unique_ptr<Transport> load_mpi_transport(int* rank, int* size) {
  const std::string path = module_path("WICK_DISTRIBUTED_MPI_MODULE", "libwick-distributed-mpi.so");
  // RTLD_GLOBAL: Open MPI's own components (dlopen'ed by libmpi) resolve libmpi's symbols.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error(
        "wick::distributed: a job of more than one rank needs the MPI backend module, which could "
        "not be "
        "loaded from " +
        path + " (" + (why ? why : "unknown reason") +
        "). Build Wick with MPI installed (Debian: apt install libopenmpi-dev openmpi-bin; CMake "
        "then "
        "builds libwick-distributed-mpi.so), or set WICK_DISTRIBUTED_MPI_MODULE to its path");
  }
  auto entry =
      reinterpret_cast<wick_dist_transport_entry>(dlsym(handle, WICK_DIST_TRANSPORT_ENTRY));
  const wick_dist_transport* table = entry ? entry() : nullptr;
  if (!table || table->struct_size < sizeof(wick_dist_transport) ||
      table->version != WICK_DIST_TRANSPORT_VERSION) {
    dlclose(handle);
    throw Error("wick::distributed: " + path + " is not a Wick MPI module of transport version " +
                std::to_string(WICK_DIST_TRANSPORT_VERSION) +
                " (no entry " WICK_DIST_TRANSPORT_ENTRY
                " or another version): rebuild it with this Wick");
  }
  char err[512] = "";
  if (table->init(rank, size, err, sizeof err) != 0)
    throw Error(std::string("wick::distributed: MPI initialisation failed: ") + err);
  return std::make_unique<MpiTransport>(handle, table);
}

}  // namespace wick::distributed
