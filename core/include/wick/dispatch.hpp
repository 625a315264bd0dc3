// wick/dispatch.hpp — runs one op on the device of its outputs, or on the CPU when that device's
// plugin declines it (counted, logged once per op/dtype/device, an error in strict mode). The
// Tensor API is built on it, and so are the layers above the core that run an op of the table
// directly; dispatch_in_place is how they write into tensors that already hold data (nn::assign,
// optim's fused Adam step).
#pragma once

#include <wick/tensor.hpp>
#include <wick/wick_plugin.h>

#include <initializer_list>
#include <vector>

namespace wick {

// Outputs are pre-allocated tensors on one device, of any strides that give each element its own
// location (a view writes through to what it views); inputs must be on that device too.
// With a runtime's NaN check on (Runtime::check_nan), an op of its devices that makes a NaN or Inf
// from finite inputs throws wick::Error after it ran (its outputs hold the result).
void dispatch(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& outputs);
// The same for one output, with the operands by pointer: nothing is copied (a Tensor copy costs two
// heap allocations, its shape and strides, which is a good part of a small op's whole cost).
void dispatch(wick_op_code op, const void* params, std::initializer_list<const Tensor*> inputs,
              const Tensor& output);

// dispatch for an elementwise op whose outputs are existing tensors written in place. An input that
// may share memory with an output is first copied (except one that is exactly that output: an
// elementwise op reads each element before writing it), so that no backend sees a source it is
// overwriting. Each output's storage then gets a new version: autograd refuses a backward that
// needs a tensor written since it was saved.
void dispatch_in_place(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& outputs);

// Whether views a and b may share an element (numpy.may_share_memory): false is exact. They share
// none when their storages differ, their byte spans do not intersect, or their offsets differ by
// no multiple of the gcd of their strides (the interleaved views x[0::2] and x[1::2]).
bool may_share_memory(const Tensor& a, const Tensor& b);

}  // namespace wick
