// program_cache.hpp — compiled OpenCL programs kept on disk, so that a second process pays no
// compile: $XDG_CACHE_HOME/wick/opencl/ (else ~/.cache/wick/opencl/), one file per key. The key
// hashes everything the binary depends on (platform, device, driver and OpenCL versions, build
// options, the program source); a file carries the key and a checksum of its payload, and one that
// does not match (corrupt, truncated, stale, another device's) is ignored and rewritten, never
// trusted. WICK_OPENCL_CACHE=0 turns the cache off.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wick::opencl {

class ProgramCache {
 public:
  // `identity`: the device, driver and build facts; `source`: the program's source (empty: no
  // cache).
  ProgramCache(const std::string& identity, const std::string& source);

  // The cached binary for this key, or nullopt (no cache, no file, or a file that does not verify).
  std::optional<std::vector<unsigned char>> load() const;
  // Stores a binary (written to a temporary file and renamed, so readers never see half a file).
  // Failures (read-only home, full disk) are ignored: the cache is only an optimisation.
  void store(const std::vector<unsigned char>& binary) const;
  // Where this key's file lives; empty when the cache is off.
  const std::string& path() const { return path_; }

 private:
  uint64_t key_ = 0;
  std::string path_;
};

// 64-bit FNV-1a of text (the key and the checksum).
uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = 0xcbf29ce484222325ull);

}  // namespace wick::opencl
