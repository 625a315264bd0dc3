#include <wick/gpu/program_cache.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace wick::gpu {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'W', 'I', 'C', 'K', 'O', 'C', 'L', '1'};

struct Header {
  char magic[8];
  uint64_t key;
  uint64_t size;
  uint64_t checksum;
};

std::string cache_dir(const std::string& kind) {
  std::string variable = "WICK_";
  for (char c : kind) variable += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  variable += "_CACHE";
  const char* off = ::secure_getenv(variable.c_str());
  if (off != nullptr && std::string(off) == "0") return "";
  if (const char* xdg = ::secure_getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/wick/" + kind;
  if (const char* home = ::secure_getenv("HOME"); home != nullptr && home[0] == '/')
    return std::string(home) + "/.cache/wick/" + kind;
  return "";
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

ProgramCache::ProgramCache(const std::string& kind, const std::string& identity,
                           const std::string& source) {
  key_ = fnv1a64(source.data(), source.size(), fnv1a64(identity.data(), identity.size()));
  const std::string dir = cache_dir(kind);
  if (dir.empty() || source.empty()) return;
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(key_));
  path_ = dir + "/" + name;
}

std::optional<std::vector<unsigned char>> ProgramCache::load() const {
  if (path_.empty()) return std::nullopt;
  std::error_code ec;
  if (!fs::is_regular_file(path_, ec)) return std::nullopt;  // not a FIFO or a directory
  std::ifstream in(path_, std::ios::binary);
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return std::nullopt;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key != key_ || h.size == 0 ||
      h.size > (uint64_t(1) << 31))
    return std::nullopt;
  std::vector<unsigned char> binary(static_cast<size_t>(h.size));
  if (!in.read(reinterpret_cast<char*>(binary.data()), static_cast<std::streamsize>(binary.size())))
    return std::nullopt;
  if (in.peek() != std::ifstream::traits_type::eof()) return std::nullopt;  // trailing bytes
  if (fnv1a64(binary.data(), binary.size()) != h.checksum) return std::nullopt;
  return binary;
}

void ProgramCache::store(const std::vector<unsigned char>& binary) const {
  if (path_.empty() || binary.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  if (ec) return;
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.key = key_;
    h.size = binary.size();
    h.checksum = fnv1a64(binary.data(), binary.size());
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(binary.data()),
              static_cast<std::streamsize>(binary.size()));
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path_, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace wick::gpu
