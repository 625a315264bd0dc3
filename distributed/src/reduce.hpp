// reduce.hpp — the one reduction of every rank's raw values (rank 0 runs it; reduce.cpp).
#pragma once

#include <wick/distributed/distributed.hpp>

#include <cstdint>

namespace wick::distributed {

// `all` holds `ranks` consecutive arrays of `count` values of `dtype`; `out` gets their
// element-wise reduction, combined in rank order 0, 1, ..., ranks-1: floats in double and rounded
// to the dtype once (NaN wins max and min), integers in 64 bits (sums wrap as the dtype does), bool
// as or (sum, max) and and (min). Mean divides the double sum by `ranks`; it needs a float dtype.
void reduce_ranks(const uint8_t* all, int ranks, size_t count, DType dtype, ReduceOp op,
                  uint8_t* out);

// Whether `op` applies to `dtype` ("" when it does, else the reason).
std::string reduce_refusal(DType dtype, ReduceOp op);

}  // namespace wick::distributed
