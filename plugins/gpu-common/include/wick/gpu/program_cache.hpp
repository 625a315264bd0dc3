// wick/gpu/program_cache.hpp — compiled GPU programs kept on disk, so that a second process pays
// no compile: $XDG_CACHE_HOME/wick/<kind>/ (else ~/.cache/wick/<kind>/; kind "opencl" or "cuda"),
// one file per key. The key hashes everything the binary depends on (device, driver and compiler
// versions, build options, the program source); a file carries the key and a checksum of its
// payload, and one that does not match (corrupt, truncated, stale, another device's) is ignored
// and rewritten, never trusted. WICK_OPENCL_CACHE=0 / WICK_CUDA_CACHE=0 turn it off.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wick::gpu {

class ProgramCache {
 public:
  // `kind`: "opencl" or "cuda" (the directory, and WICK_<KIND>_CACHE); `identity`: the device,
  // driver and build facts; `source`: the program's source (empty: no cache).
  ProgramCache(const std::string& kind, const std::string& identity, const std::string& source);

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

}  // namespace wick::gpu
