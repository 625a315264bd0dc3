// python/src/nn.cpp — autograd, the nn layers and optimizers, the models and ONNX from Python.
#include "wick_python.hpp"

namespace wick::python {

void bind_nn(nb::module_&, ArrayClass&) {}

}  // namespace wick::python
