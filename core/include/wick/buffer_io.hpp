// wick/buffer_io.hpp — one buffer_write or buffer_read on a tensor's buffer, at a byte offset into
// the buffer itself (not the tensor's view), and nothing else: for checkers that test a plugin's
// buffers (`wick plugin buffers`). Ordinary code moves data with Tensor::from_bytes and
// copy_to_host.
#pragma once

#include <wick/tensor.hpp>

#include <cstdint>

namespace wick {

// The size of t's buffer in bytes (what buffer_allocate was asked for).
uint64_t buffer_bytes(const Tensor& t);

// buffer_write(t's buffer, offset, src, bytes) on t's device. Throws wick::Error naming the
// plugin's message when the call fails, and before any call when offset + bytes lies past the
// buffer.
void write_buffer_bytes(const Tensor& t, uint64_t offset, const void* src, uint64_t bytes);
// buffer_read(t's buffer, offset, dst, bytes), with the same checks.
void read_buffer_bytes(const Tensor& t, uint64_t offset, void* dst, uint64_t bytes);

}  // namespace wick
