// wick/npy.hpp — NumPy's .npy files (format versions 1.0, 2.0 and 3.0) to and from tensors.
//
//   wick::Tensor x = wick::read_npy("x.npy", device);   // any dtype Wick has
//   wick::write_npy("y.npy", y);                         // version 1.0 (2.0 for a long header)
//
// Read: little-endian or byte-order-free types ('<f4', '|u1', '|b1', ...), C or Fortran order
// (a Fortran-ordered array is transposed into C order), any shape of at most 2^40 elements.
// NumPy's uint16 ('<u2'), which Wick lacks, is widened to u32 (every value exact). Refused with a
// wick::Error naming the file and what is wrong: a big-endian or structured dtype, a dtype Wick
// has no type for (complex, strings, objects, datetimes), a malformed header, a data size that
// does not match the shape. Write: C order, the tensor's dtype (bf16, which NumPy lacks, is
// refused: convert first).
#pragma once

#include <wick/tensor.hpp>

#include <string>

namespace wick {

Tensor read_npy(const std::string& path, const Device& device = {});
// The same from bytes in memory; `where` names them in errors.
Tensor parse_npy(const void* data, size_t size, const std::string& where, const Device& device = {});
// Writes `t` (any device, any strides) to `path` through a temporary file renamed into place.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace wick
