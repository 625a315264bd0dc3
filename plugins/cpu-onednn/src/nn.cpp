// register_nn: convolution (conv.cpp) and the window ops (window.cpp).
#include "nn.hpp"

namespace wick::cpu {

void register_nn(KernelTable& table) {
  register_conv(table);
  register_window(table);
}

}  // namespace wick::cpu
