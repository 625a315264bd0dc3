// reduce.hpp — the one reduction of every rank's raw values (each part's owner runs it;
// reduce.cpp).
#pragma once

#include <wick/distributed/distributed.hpp>

#include <cstdint>

namespace wick::distributed {

// inputs[r] points at rank r's `count` values of `dtype`; `out` gets their element-wise
// reduction, combined in rank order 0, 1, ..., ranks-1 (so that whichever rank runs it, the result
// has the same bits): floats in double and rounded
// to the dtype once (NaN wins max and min), integers in 64 bits (sums wrap as the dtype does), bool
// as or (sum, max) and and (min). Mean divides the double sum by `ranks`; it needs a float dtype.
// `out` may be one of the inputs (each block of values is read before it is written).
void reduce_ranks(const uint8_t* const* inputs, int ranks, size_t count, DType dtype, ReduceOp op,
                  uint8_t* out);

// Whether `op` applies to `dtype` ("" when it does, else the reason).
std::string reduce_refusal(DType dtype, ReduceOp op);

}  // namespace wick::distributed
