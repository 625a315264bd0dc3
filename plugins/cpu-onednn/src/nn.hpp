// nn.hpp — the files behind register_nn: convolution and the window ops.
#pragma once

#include "kernels.hpp"

#include <optional>

namespace wick::cpu {

void register_conv(KernelTable& table);    // conv.cpp
void register_window(KernelTable& table);  // window.cpp: window reductions and select-and-scatter

}  // namespace wick::cpu
