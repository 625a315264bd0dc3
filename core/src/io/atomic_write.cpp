// atomic_write.cpp — io::write_atomically (atomic_write.hpp): the temporary, its mode, the stale
// temporaries of killed writers, fsync and rename, shared by safetensors::save and gguf::write.
#include "io/atomic_write.hpp"

#include <wick/error.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

namespace wick::io {

namespace {

void write_all(int fd, const void* bytes, size_t size, const std::string& tmp) {
  const auto* data = static_cast<const char*>(bytes);
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

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const Sink&)>& body) {
  const std::string target = save_target(path);
  const std::optional<mode_t> mode = replaced_mode(target);
  remove_stale_temporaries(target);
  std::string tmp;
  int fd = open_temporary(target, path, tmp);
  try {
    if (mode && ::fchmod(fd, *mode) != 0)
      throw Error(tmp + ": cannot set its mode: " + std::strerror(errno));
    body([&](const void* data, size_t size) { write_all(fd, data, size, tmp); });
    if (::fsync(fd) != 0) throw Error(tmp + ": cannot flush to disk: " + std::strerror(errno));
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) throw Error(tmp + ": cannot close: " + std::strerror(errno));
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

}  // namespace wick::io
