// wick/safetensors.hpp — reading and writing weights in the safetensors format
// (https://github.com/huggingface/safetensors: an 8-byte little-endian header length N, N bytes
// of JSON, then the tensors' bytes, C order, little-endian).
//
// Reading maps the file (mmap, read-only) and validates the whole header before any device work:
// lengths, dtype names, shapes (checked products), data_offsets in range, each tensor's byte count
// equal to numel × dtype size, no two tensors overlapping, no byte of the data buffer left
// unindexed (the format requires a buffer "entirely indexed, without holes": a gap or trailing
// bytes are an error, as in the reference implementation), BOOL bytes 0 or 1, and nothing but
// whitespace after the header's JSON (a NUL or any other byte there is refused, as by the
// reference). Every failure is a wick::Error naming the file, the tensor (control characters
// escaped) and the problem.
//
// Limitation: loading is not zero-copy. The plugin ABI has no slot that wraps host memory as a
// device buffer, so each tensor is copied once from the mapping onto its device with
// Tensor::from_bytes, the CPU device included. Zero-copy onto the CPU would need a new ABI slot
// (e.g. buffer_wrap_host) and a mapping kept alive by the storage.
// A file truncated by another process while it is being loaded may raise SIGBUS (a property of
// mmap); files are expected not to change under a reader.
#pragma once

#include <wick/error.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wick::safetensors {

// Largest header accepted (as the reference implementation): 100 MB.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// One tensor of a validated header. begin/end are byte offsets into the data buffer (the bytes
// after the header).
struct Entry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// A validated file: entries sorted by begin offset (ties, empty tensors, in the header's order),
// the __metadata__ strings, and where the data buffer starts (8 + header length).
struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;
};

// Validates a whole file held in memory (`source` names it in errors). Needs no device: this is
// the entry the fuzzer drives.
Header parse(const void* data, size_t size, const std::string& source = "<memory>");

// A tensor name (or any string from a file) fit for an error message: control characters written
// as escapes, never raw: C0 and DEL as \xNN, C1 (U+0080..U+009F) as \u00NN; the rest as it is.
std::string printable_name(const std::string& name);

// The safetensors dtype name of a Wick dtype ("F32", "BOOL", ...).
const char* format_dtype_name(DType dtype);

struct File {
  std::map<std::string, Tensor> tensors;  // ordered by name
  std::map<std::string, std::string> metadata;
};

// Reads `path` (a regular file; FIFOs, devices and directories are refused) onto `device` (an
// invalid Device means Runtime::global().default_device()).
File load(const std::string& path, const Device& device = {});
// The same from bytes in memory.
File load_bytes(const void* data, size_t size, const Device& device = {},
                const std::string& source = "<memory>");

// Writes tensors of any device, dtype and strides as contiguous C-order little-endian data, the
// header padded with spaces to a multiple of 8 bytes; tensors ordered by dtype size (largest
// first), then name, so that each one is aligned to its element size in the file. The file is
// written to a temporary beside `path` ("<path>.tmp.<pid>.<n>"), flushed to disk, then renamed over
// it: a crash leaves the old file or the new one, never half of one, and the next save of `path`
// removes the temporaries whose writer pid no longer runs. A symlink is kept: the file it points to
// (through every link) is the one replaced. The new file keeps the replaced one's permission bits
// (a 0600 checkpoint stays 0600; a new file gets 0666 less the umask); a file no one may write
// (mode 0444) is refused with an error naming it and its mode, and left as it is.
// Names must be non-empty and not "__metadata__".
void save(const std::string& path, const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata = {});
// The bytes save() would write.
std::string save_bytes(const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// ---- state dicts ---------------------------------------------------------------------------------
// Compares what a model expects (name -> a tensor with the expected shape and dtype; its values are
// ignored) with what a file holds. Throws one wick::Error listing every missing name, every extra
// name (unless allow_extra) and every mismatch ("fc.weight: expected [10, 784] f32, found
// [784, 10] f32"); returns normally when they agree.
void check_state_dict(const std::map<std::string, Tensor>& expected, const Header& found,
                      const std::string& source, bool allow_extra = false);
void check_state_dict(const std::map<std::string, Tensor>& expected,
                      const std::map<std::string, Tensor>& found, const std::string& source,
                      bool allow_extra = false);

// Loads `path` after checking it against `expected` on the header alone (nothing is copied to a
// device when the check fails). Each tensor goes to `device`, or, when `device` is invalid, to the
// device of the expected tensor of the same name. Extra tensors in the file are skipped when
// allow_extra, an error otherwise.
std::map<std::string, Tensor> load_state_dict(const std::string& path,
                                              const std::map<std::string, Tensor>& expected,
                                              const Device& device = {}, bool allow_extra = false);

}  // namespace wick::safetensors
