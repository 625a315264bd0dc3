// matmul.hpp — the matmul kernel as a function other kernels of this plugin call (attention).
#pragma once

#include "kernels.hpp"

namespace wick::cpu {

// c = a x b over [..., M, K] x [..., K, N] -> [..., M, N]: same dtype, same batch dims (broadcast
// ones have stride 0), any strides. Never uses prepacked weights: the caller may write b's buffer
// again within its own op (only the matmul op itself packs, matmul.cpp).
void run_matmul(Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                const wick_tensor_desc& c);

// c = a x b for the integer dtypes other than bool, as run_matmul takes them (matmul_int.cpp):
// wrapping in c's width, accumulated in 32 or 64 bits, vectorised. False for other dtypes.
bool matmul_int(const Context& ctx, const wick_tensor_desc& a, const wick_tensor_desc& b,
                const wick_tensor_desc& c);

}  // namespace wick::cpu
