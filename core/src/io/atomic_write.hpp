// atomic_write.hpp — how Wick's writers (safetensors::save, gguf::write) replace a file: whole or
// not at all. Private to core/src.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace wick::io {

// Appends `size` bytes at `data` to the file being written; throws wick::Error naming the file.
using Sink = std::function<void(const void* data, size_t size)>;

// Writes `path` through `body(sink)`: into a fresh temporary beside the file that will be replaced
// ("<target>.tmp.<pid>.<n>", same file system), then fsync, rename over it and fsync of the
// directory. A symlink at `path` is followed (the link stays a link; a dangling one is created
// where it points); the replaced file's mode is kept, and a file no one may write (0444) is refused
// rather than replaced; temporaries left by writers killed before their rename are removed. On any
// error (body's included) the temporary is removed and the old file is untouched.
void write_atomically(const std::string& path, const std::function<void(const Sink&)>& body);

}  // namespace wick::io
