// safetensors.cpp — loading (mmap, then one copy per tensor onto its device; MappedFile), saving (temporary
// file, fsync, rename) and state-dict checks. The header's validation is safetensors_header.cpp.
#include <wick/safetensors.hpp>

#include <wick/mapped_file.hpp>
#include <wick/safe_file.hpp>
#include <wick/shape.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; a big-endian host would need byte swaps here");

namespace wick::safetensors {
namespace {

// One tensor of the file on `device`. With `mapped`, a page of it gone (the file was truncated
// while mapped: the copy read zeros there) is an error naming the file, never the zeros.
Tensor copy_entry(const uint8_t* file, const Header& h, const Entry& e, const Device& device,
                  const std::string& source, const MappedFile* mapped = nullptr) {
  Tensor t;
  try {
    t = Tensor::from_bytes(file + h.data_start + e.begin, e.end - e.begin, e.shape, e.dtype,
                           device);
  } catch (const Error& err) {
    if (mapped != nullptr) mapped->check_intact("copying tensor '" + printable_name(e.name) + "'");
    throw Error(source + ": tensor '" + printable_name(e.name) + "': " + err.what());
  }
  if (mapped != nullptr) mapped->check_intact("copying tensor '" + printable_name(e.name) + "'");
  return t;
}

// The header of a mapped file; an error that comes from the file shrinking under the parse says so.
Header parse_mapped(const MappedFile& m) {
  try {
    return parse(m.data(), m.size(), m.path());
  } catch (const Error&) {
    m.check_intact("reading its header");
    throw;
  }
}

// What save() writes before the data: the header (length and padded JSON) and the tensors in
// file order.
struct Plan {
  std::string prefix;
  std::vector<std::pair<std::string, Tensor>> order;
};

Plan plan(const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata, const std::string& target) {
  Plan p;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      throw Error(target + ": a tensor may not be named '" + name + "'");
    if (!t.defined()) throw Error(target + ": tensor '" + printable_name(name) + "' is undefined");
    p.order.emplace_back(name, t);
  }
  // Largest element first keeps every tensor aligned to its element size (the data starts at a
  // multiple of 8).
  std::stable_sort(p.order.begin(), p.order.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second.dtype()) > dtype_size(b.second.dtype());
  });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : p.order) {
    const uint64_t bytes = bytes_of(t.shape(), t.dtype());
    header[name] = {{"dtype", format_dtype_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(target + ": a tensor name or metadata string is not valid UTF-8 (" + e.what() + ")");
  }
  json.append((8 - json.size() % 8) % 8, ' ');
  p.prefix.resize(8);
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) p.prefix[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  p.prefix += json;
  return p;
}

std::vector<char> host_bytes(const Tensor& t) {
  std::vector<char> buf(static_cast<size_t>(bytes_of(t.shape(), t.dtype())));
  t.copy_to_host(buf.data(), buf.size());  // any device, any strides: C order
  return buf;
}

void write_all(int fd, const char* data, size_t size, const std::string& tmp) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(tmp + ": cannot write: " + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// The directory holding `path` ("." for a bare name).
std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// The file a save writes: `path`, or, when it is a symlink, the file it points to (through every
// link; created where a dangling one points), so that the link stays a link.
std::string save_target(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string link(4096, '\0');
    const ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
    if (n < 0 || static_cast<size_t>(n) == link.size())
      throw Error(path + ": cannot read the symlink " + p + ": " + std::strerror(errno));
    link.resize(static_cast<size_t>(n));
    p = link[0] == '/' ? link : parent_dir(p) + "/" + link;
  }
  throw Error(path + ": too many levels of symbolic links");
}

// The mode of the file a save replaces, for the new file to keep (a 0600 checkpoint stays 0600);
// none for a new file (open(2) applies the umask, as for any new file). A file no one may write
// (0444) is refused rather than replaced: the rename would bypass its permissions (root's too).
std::optional<mode_t> replaced_mode(const std::string& target) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return std::nullopt;
  const mode_t mode = st.st_mode & 0777;
  if (S_ISREG(st.st_mode) && (mode & 0222) == 0) {
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    throw Error(target + ": is read-only (mode " + octal +
                "): save does not replace it (make it writable first)");
  }
  return mode;
}

// A temporary beside `target` is named "<target>.tmp.<pid>.<n>"; true for such a name (the part
// after "<target>.tmp.") and its writer's pid.
bool temporary_pid(const char* rest, pid_t& pid) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(rest, &end, 10);
  if (errno || end == rest || *rest < '0' || *rest > '9' || *end != '.' || v <= 0 ||
      v > std::numeric_limits<pid_t>::max())
    return false;
  const char* n = end + 1;
  if (*n == '\0') return false;
  for (; *n; ++n)
    if (*n < '0' || *n > '9') return false;
  pid = static_cast<pid_t>(v);
  return true;
}

// Removes the temporaries of `target` left by saves killed before their rename: those whose
// writer pid no longer runs (kill(pid, 0) fails with ESRCH). Best effort.
void remove_stale_temporaries(const std::string& target) {
  const size_t slash = target.find_last_of('/');
  const std::string prefix = target.substr(slash == std::string::npos ? 0 : slash + 1) + ".tmp.";
  DIR* dir = ::opendir(parent_dir(target).c_str());
  if (!dir) return;
  while (const dirent* e = ::readdir(dir)) {
    pid_t pid = 0;
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0 ||
        !temporary_pid(e->d_name + prefix.size(), pid) || pid == ::getpid())
      continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) (void)::unlinkat(::dirfd(dir), e->d_name, 0);
  }
  ::closedir(dir);
}

// A fresh temporary beside `target` (same file system, so rename is atomic), open for writing.
int open_temporary(const std::string& target, const std::string& path, std::string& tmp) {
  static std::atomic<unsigned> counter{0};
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw Error(path + ": cannot create a temporary file beside it: " + std::strerror(errno));
  return fd;
}

struct Described {
  DType dtype;
  Shape shape;
};

void check(const std::map<std::string, Tensor>& expected, const std::map<std::string, Described>& found,
           const std::string& source, bool allow_extra) {
  std::vector<std::string> missing, extra, mismatched;
  for (const auto& [name, t] : expected) {
    auto it = found.find(name);
    if (it == found.end()) {
      missing.push_back(printable_name(name));
    } else if (it->second.dtype != t.dtype() || it->second.shape != t.shape()) {
      mismatched.push_back(printable_name(name) + ": expected " + shape_to_string(t.shape()) + " " +
                           dtype_name(t.dtype()) + ", found " + shape_to_string(it->second.shape) +
                           " " + dtype_name(it->second.dtype));
    }
  }
  if (!allow_extra)
    for (const auto& [name, d] : found)
      if (!expected.count(name)) extra.push_back(printable_name(name));
  if (missing.empty() && extra.empty() && mismatched.empty()) return;
  std::string msg = source + ": the tensors do not match the expected parameters:";
  const auto list = [&](const char* what, const std::vector<std::string>& names, const char* sep) {
    if (names.empty()) return;
    msg += std::string("\n  ") + what + " (" + std::to_string(names.size()) + "): ";
    for (size_t i = 0; i < names.size(); ++i) msg += (i ? sep : "") + names[i];
  };
  list("missing", missing, ", ");
  list("extra", extra, ", ");
  list("mismatched", mismatched, "; ");
  throw Error(msg);
}

std::map<std::string, Described> describe(const Header& h) {
  std::map<std::string, Described> out;
  for (const Entry& e : h.entries) out[e.name] = Described{e.dtype, e.shape};
  return out;
}

}  // namespace

File load_bytes(const void* data, size_t size, const Device& device, const std::string& source) {
  const Header h = parse(data, size, source);
  File out;
  out.metadata = h.metadata;
  for (const Entry& e : h.entries)
    out.tensors[e.name] = copy_entry(static_cast<const uint8_t*>(data), h, e, device, source);
  return out;
}

File load(const std::string& path, const Device& device) {
  const MappedFile m(path);
  const Header h = parse_mapped(m);
  File out;
  out.metadata = h.metadata;
  for (const Entry& e : h.entries) out.tensors[e.name] = copy_entry(m.data(), h, e, device, path, &m);
  return out;
}

std::string save_bytes(const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  Plan p = plan(tensors, metadata, "<memory>");
  std::string out = std::move(p.prefix);
  for (const auto& [name, t] : p.order) {
    const std::vector<char> buf = host_bytes(t);
    out.append(buf.data(), buf.size());
  }
  return out;
}

void save(const std::string& path, const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata) {
  const Plan p = plan(tensors, metadata, path);
  const std::string target = save_target(path);
  const std::optional<mode_t> mode = replaced_mode(target);
  remove_stale_temporaries(target);
  std::string tmp;
  int fd = open_temporary(target, path, tmp);
  try {
    if (mode && ::fchmod(fd, *mode) != 0)
      throw Error(tmp + ": cannot set its mode: " + std::strerror(errno));
    write_all(fd, p.prefix.data(), p.prefix.size(), tmp);
    for (const auto& [name, t] : p.order) {
      const std::vector<char> buf = host_bytes(t);
      write_all(fd, buf.data(), buf.size(), tmp);
    }
    if (::fsync(fd) != 0) throw Error(tmp + ": cannot flush to disk: " + std::strerror(errno));
    if (::close(fd) != 0) {
      fd = -1;
      throw Error(tmp + ": cannot close: " + std::strerror(errno));
    }
    fd = -1;
    if (::rename(tmp.c_str(), target.c_str()) != 0)
      throw Error(target + ": cannot rename " + tmp + " over it: " + std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on a directory).
  const int dfd = ::open(parent_dir(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void check_state_dict(const std::map<std::string, Tensor>& expected, const Header& found,
                      const std::string& source, bool allow_extra) {
  check(expected, describe(found), source, allow_extra);
}

void check_state_dict(const std::map<std::string, Tensor>& expected,
                      const std::map<std::string, Tensor>& found, const std::string& source,
                      bool allow_extra) {
  std::map<std::string, Described> d;
  for (const auto& [name, t] : found) d[name] = Described{t.dtype(), t.shape()};
  check(expected, d, source, allow_extra);
}

std::map<std::string, Tensor> load_state_dict(const std::string& path,
                                              const std::map<std::string, Tensor>& expected,
                                              const Device& device, bool allow_extra) {
  const MappedFile m(path);
  const Header h = parse_mapped(m);
  check_state_dict(expected, h, path, allow_extra);
  std::map<std::string, Tensor> out;
  for (const Entry& e : h.entries) {
    auto it = expected.find(e.name);
    if (it == expected.end()) continue;  // an extra tensor, allowed
    out[e.name] =
        copy_entry(m.data(), h, e, device.valid() ? device : it->second.device(), path, &m);
  }
  return out;
}

}  // namespace wick::safetensors
