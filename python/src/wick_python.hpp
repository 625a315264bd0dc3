// python/src/wick_python.hpp — what the extension's source files share: the registration function
// of each part of the module, and the conversions between Python objects and wick::Tensor.
#pragma once

#include <nanobind/nanobind.h>
#include <wick/tensor.hpp>

#include <optional>
#include <string>

namespace wick::python {

namespace nb = nanobind;

void bind_runtime(nb::module_& m);    // module.cpp: dtypes, devices, the runtime, errors
using ArrayClass = nb::class_<Tensor>;  // the Array type: each part adds its methods to it
void bind_array(nb::module_& m, ArrayClass& cls);    // array.cpp: properties, operators, indexing
void bind_ops(nb::module_& m, ArrayClass& cls);      // ops.cpp: the core ops as methods, creation
void bind_interop(nb::module_& m, ArrayClass& cls);  // interop.cpp: DLPack, buffer protocol, NumPy
void bind_nn(nb::module_& m, ArrayClass& cls);       // nn.cpp: autograd, nn, optimizers, models, onnx

// Raises the Python exception `type` (PyExc_OverflowError, PyExc_IndexError, ...) with `message`.
[[noreturn]] inline void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

// ---- convert.cpp -------------------------------------------------------------------------------
// The device a `device=` argument names: None is the default device, a Device itself, or a name
// ("cpu", "opencl:0") looked up like the config's priority entries. Throws ValueError naming it.
Device device_arg(nb::handle device);
// A Python bool, int or float as a 0-d tensor of `dtype` on `device`: exact for every integer that
// fits the dtype (OverflowError naming both when it does not).
Tensor scalar_tensor(nb::handle value, DType dtype, const Device& device);
// The dtype a Python scalar takes beside an array of `dtype` (the Array API's rule: the array's
// dtype when the scalar's kind fits it; a float scalar with an integer or bool array gives the
// default float dtype, an int scalar with a bool array the default integer dtype).
DType scalar_dtype(nb::handle value, DType dtype);
// The other operand of a binary operator: the Array itself, or a Python scalar made into `made`
// (scalar_tensor); nullptr for anything else (the operator then returns NotImplemented).
const Tensor* operand(const Tensor& self, nb::handle other, Tensor& made);
// Any object as a tensor: an Array, a Python scalar, a nested sequence of them, an object with
// __dlpack__ or the buffer protocol (NumPy arrays). dtype/device: as asked, else as the object has
// (the Array API's defaults for Python data: bool, int64, float32).
Tensor to_tensor(nb::handle obj, std::optional<DType> dtype, nb::handle device, std::optional<bool> copy);
// The tensor as nested Python lists of bool, int or float (a 0-d tensor as one scalar).
nb::object to_python(const Tensor& t);

// ---- ops.cpp: the Array API's arithmetic where it differs from the core's -------------------------
Tensor true_divide(const Tensor& a, const Tensor& b);   // integers divide as the default float
Tensor floor_divide(const Tensor& a, const Tensor& b);  // rounds toward -inf (Python's //)
Tensor remainder(const Tensor& a, const Tensor& b);     // the sign of the divisor (Python's %)
Tensor bitwise_invert(const Tensor& a);                 // ~: logical not for bool
Tensor bitwise_binary(const char* op, const Tensor& a, const Tensor& b);  // and/or/xor, bool too

inline constexpr DType kDefaultFloat = DType::F32;
inline constexpr DType kDefaultInt = DType::I64;

}  // namespace wick::python
