#include <wick/safe_file.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace wick::safe_file {

std::optional<std::string> refuse(const std::string& path, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return std::string("is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    return std::string("is not a regular file (a FIFO, socket or device): refused, since reading "
                       "it could block forever");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return "is " + std::to_string(st.st_size) + " bytes, more than the " +
           std::to_string(max_bytes) + " allowed";
  return std::nullopt;
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  if (auto why = refuse(path, max_bytes)) throw std::runtime_error(path + ": " + *why);
  // O_NONBLOCK: should the file have been swapped for a FIFO since the check, open does not wait.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + ": changed since it was checked (no longer a regular file)");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot read: " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) break;
  }
  ::close(fd);
  if (text.size() > max_bytes)
    throw std::runtime_error(path + ": more than " + std::to_string(max_bytes) + " bytes");
  return text;
}

std::string read_text(const std::string& path) { return read_file(path, kMaxTextBytes); }

std::optional<Nesting> too_deep(const std::string& text) {
  int line = 1, column = 0, depth = 0, dots = 0;
  bool in_key = true;  // before the line's '=' (or inside a [header])
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      dots = 0;
      in_key = true;
      comment = false;
      if (quote == '\'' || quote == '"') quote = 0;  // single-line strings end here (or err later)
      continue;
    }
    if (comment) continue;
    if (quote != 0) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    switch (c) {
      case '#': comment = true; break;
      case '"': case '\'': quote = c; break;
      case '=': in_key = false; break;
      case '.':
        if (in_key && ++dots > kMaxNesting)
          return Nesting{line, column, "key nested deeper than " + std::to_string(kMaxNesting) + " levels"};
        break;
      case '[': case '{':
        if (++depth > kMaxNesting)
          return Nesting{line, column,
                         "arrays or tables nested deeper than " + std::to_string(kMaxNesting) + " levels"};
        break;
      case ']': case '}': --depth; break;
      default: break;
    }
  }
  return std::nullopt;
}

std::optional<std::string> not_whole_elf(const std::string& path) {
  if (auto why = refuse(path, uint64_t{1} << 34)) return why;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  struct stat st {};
  ::fstat(fd, &st);
  const auto size = static_cast<uint64_t>(st.st_size);
  Elf64_Ehdr h{};
  std::optional<std::string> why;
  if (::pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
      std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) {
    why = "is not an ELF file (no ELF header)";
  } else if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_type != ET_DYN) {
    why = "is not a 64-bit ELF shared library";
  } else if (h.e_phentsize != sizeof(Elf64_Phdr) ||
             h.e_phoff + uint64_t{h.e_phnum} * sizeof(Elf64_Phdr) > size) {
    why = "is truncated: its program headers end past the file's " + std::to_string(size) + " bytes";
  } else {
    std::vector<Elf64_Phdr> ph(h.e_phnum);
    if (::pread(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), static_cast<off_t>(h.e_phoff)) !=
        static_cast<ssize_t>(ph.size() * sizeof(Elf64_Phdr))) {
      why = "cannot read its program headers";
    } else {
      for (const Elf64_Phdr& p : ph)
        if (p.p_type == PT_LOAD && p.p_offset + p.p_filesz > size) {
          why = "is truncated: a loadable segment ends at byte " +
                std::to_string(p.p_offset + p.p_filesz) + " of a " + std::to_string(size) +
                "-byte file (mapping it would fault)";
          break;
        }
    }
  }
  ::close(fd);
  return why;
}

std::optional<std::string> world_writable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IWOTH) == 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string(S_ISDIR(st.st_mode) ? "directory " : "file ") + path +
         " is writable by every user (mode " + mode + ")";
}

}  // namespace wick::safe_file
