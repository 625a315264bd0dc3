// buffer_io.cpp — single buffer_write / buffer_read calls for checkers (wick/buffer_io.hpp).
#include <wick/buffer_io.hpp>

#include "tensor/storage.hpp"

#include <wick/error.hpp>

#include <string>

namespace wick {

namespace {

Storage& storage_of(const Tensor& t, uint64_t offset, uint64_t bytes, const char* call) {
  if (!t.defined()) throw Error(std::string(call) + ": undefined tensor");
  Storage& s = *t.storage();
  if (offset > s.bytes || bytes > s.bytes - offset)
    throw Error(std::string(call) + " of " + std::to_string(bytes) + " bytes at offset " +
                std::to_string(offset) + " lies past the buffer's " + std::to_string(s.bytes) +
                " bytes on " + s.device.name());
  return s;
}

}  // namespace

uint64_t buffer_bytes(const Tensor& t) {
  return t.defined() ? t.storage()->bytes : 0;
}

void write_buffer_bytes(const Tensor& t, uint64_t offset, const void* src, uint64_t bytes) {
  storage_of(t, offset, bytes, "buffer_write").write(offset, src, bytes);
}

void read_buffer_bytes(const Tensor& t, uint64_t offset, void* dst, uint64_t bytes) {
  storage_of(t, offset, bytes, "buffer_read").read(offset, dst, bytes);
}

}  // namespace wick
