// wick/mapped_file.hpp — a file mapped read-only that another process may truncate meanwhile.
//
// Reading a page of a mapping past the file's current end raises SIGBUS, which ends the process
// (and, when a plugin does the reading, used to be reported as the plugin's crash). A MappedFile
// registers its range with a SIGBUS handler that, for a fault inside it, maps a page of zeros over
// the page and lets the read go on; the mapping remembers the fault, and `check_intact` turns it
// into a wick::Error naming the file. A fault anywhere else takes the signal's previous course.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wick {

class MappedFile {
 public:
  // Maps the whole of `path`, a regular file (refused otherwise, naming it, without blocking on a
  // FIFO). Throws wick::Error naming the file and why it cannot be mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // The bytes as they were when mapped; an empty file gives a valid pointer and size 0.
  const uint8_t* data() const;
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Whether any read of the mapping found its page gone (the file shrank, or an I/O error): the
  // bytes read from that page on were zeros, not the file's.
  bool damaged() const;
  // Throws wick::Error "PATH: the file shrank (or could not be read) while mapped, while WHAT:
  // ..." naming the first bad offset and the file's size now, when damaged(); else nothing.
  void check_intact(const std::string& what) const;

 private:
  std::string path_;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int slot_ = -1;  // its entry in the fault handler's table, or -1 (not registered)
};

namespace detail {
// For the host's crash reporter, which may run before the mapping's own handler: absorbs a SIGBUS
// inside a registered mapping (true: return from the handler) and leaves any other signal alone.
// Async-signal-safe.
bool absorb_mapped_fault(int sig, const void* address);
}  // namespace detail

}  // namespace wick
