// python/src/convert.cpp — Python objects to wick::Tensor and back: device arguments, scalars,
// nested sequences, and tolist().
#include "wick_python.hpp"

#include <nanobind/stl/string.h>
#include <wick/registry.hpp>
#include <wick/runtime.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace wick::python {

Device device_arg(nb::handle device) {
  if (device.is_none()) return Runtime::global().default_device();
  if (nb::isinstance<Device>(device)) return nb::cast<Device>(device);
  if (!nb::isinstance<nb::str>(device)) {
    throw nb::type_error(("device: expected a wick.Device, a device name or None, not " +
                          std::string(nb::str(device.type().attr("__name__")).c_str())).c_str());
  }
  const std::string name = nb::cast<std::string>(device);
  Device d = Runtime::global().registry().find_device(name);
  if (!d.valid()) {
    std::string have;
    for (const Device& x : Runtime::global().registry().devices()) have += (have.empty() ? "" : ", ") + x.name();
    throw nb::value_error(("device '" + name + "': no usable device of that name (devices: " + have + ")").c_str());
  }
  return d;
}

namespace {

bool is_unsigned(DType t) { return t == DType::U8 || t == DType::U32 || t == DType::U64; }

// The range of an integer dtype, as int64 bounds (u64's upper bound checked separately).
void int_range(DType t, long double& lo, long double& hi) {
  const size_t bits = dtype_size(t) * 8;
  if (is_unsigned(t)) {
    lo = 0;
    hi = std::ldexp(1.0L, static_cast<int>(bits)) - 1;
  } else {
    lo = -std::ldexp(1.0L, static_cast<int>(bits - 1));
    hi = std::ldexp(1.0L, static_cast<int>(bits - 1)) - 1;
  }
}

// A Python int as the bytes of an integer dtype; OverflowError when it does not fit.
void store_int(nb::handle value, DType t, unsigned char* dst) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (PyErr_Occurred()) throw nb::python_error();
  unsigned long long u = static_cast<unsigned long long>(v);
  bool fits = overflow == 0;
  if (overflow > 0 && t == DType::U64) {
    u = PyLong_AsUnsignedLongLong(value.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      fits = false;
    } else {
      fits = true;
    }
  } else if (fits) {
    long double lo, hi;
    int_range(t, lo, hi);
    fits = static_cast<long double>(v) >= lo && static_cast<long double>(v) <= hi;
  }
  if (!fits) {
    raise(PyExc_OverflowError, ("Python int " + std::string(nb::str(value).c_str()) + " is out of the range of " +
         dtype_name(t)).c_str());
  }
  std::memcpy(dst, &u, dtype_size(t));  // little-endian: the low bytes are the value
}

bool is_py_bool(nb::handle v) { return PyBool_Check(v.ptr()); }
bool is_py_int(nb::handle v) { return PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr()); }
bool is_py_float(nb::handle v) { return PyFloat_Check(v.ptr()); }
bool is_py_scalar(nb::handle v) { return is_py_bool(v) || is_py_int(v) || is_py_float(v); }

}  // namespace

DType scalar_dtype(nb::handle value, DType dtype) {
  if (is_py_float(value)) return is_float(dtype) ? dtype : kDefaultFloat;
  if (is_py_int(value)) return dtype == DType::Bool ? kDefaultInt : dtype;
  return dtype;  // a bool goes with any dtype
}

Tensor scalar_tensor(nb::handle value, DType dtype, const Device& device) {
  unsigned char bytes[8] = {};
  if (is_py_bool(value)) {
    store_value(dtype, value.ptr() == Py_True ? 1.0 : 0.0, bytes);
  } else if (is_py_int(value) && !is_float(dtype) && dtype != DType::Bool) {
    store_int(value, dtype, bytes);
  } else if (is_py_int(value) || is_py_float(value)) {
    const double v = PyFloat_AsDouble(value.ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    if (dtype == DType::Bool) {
      bytes[0] = v != 0.0;
    } else if (!is_float(dtype)) {
      throw nb::type_error(("a Python float (" + std::to_string(v) + ") cannot be a scalar of " +
                            dtype_name(dtype)).c_str());
    } else {
      store_value(dtype, v, bytes);
    }
  } else {
    throw nb::type_error("expected a Python bool, int or float");
  }
  return Tensor::from_bytes(bytes, dtype_size(dtype), Shape{}, dtype, device);
}

const Tensor* operand(const Tensor& self, nb::handle other, Tensor& made) {
  // An Array is used where it is: a Tensor copy is two heap allocations (its shape and strides),
  // a fifth of a small op's cost from Python.
  if (nb::isinstance<Tensor>(other)) return nb::inst_ptr<Tensor>(other);
  if (!is_py_scalar(other)) return nullptr;
  made = scalar_tensor(other, scalar_dtype(other, self.dtype()), self.device());
  return &made;
}

namespace {

// Walks a nested sequence of Python scalars: its shape, and the kind of its elements
// (0 bool, 1 int, 2 float).
void scan_nested(nb::handle obj, size_t depth, Shape& shape, int& kind, std::vector<PyObject*>& leaves) {
  if (is_py_scalar(obj)) {
    if (depth != shape.size()) throw nb::value_error("asarray: a nested sequence of ragged shape");
    kind = std::max(kind, is_py_bool(obj) ? 0 : is_py_int(obj) ? 1 : 2);
    leaves.push_back(obj.ptr());
    return;
  }
  if (nb::isinstance<Tensor>(obj)) {
    const Tensor& t = nb::cast<const Tensor&>(obj);
    if (t.rank() != 0) throw nb::value_error("asarray: a sequence of arrays must hold 0-d arrays only");
    if (depth != shape.size()) throw nb::value_error("asarray: a nested sequence of ragged shape");
    kind = std::max(kind, t.dtype() == DType::Bool ? 0 : is_float(t.dtype()) ? 2 : 1);
    leaves.push_back(obj.ptr());
    return;
  }
  if (!PySequence_Check(obj.ptr()) || nb::isinstance<nb::str>(obj) || nb::isinstance<nb::bytes>(obj)) {
    throw nb::type_error(("asarray: cannot make an array of a " +
                          std::string(nb::str(obj.type().attr("__name__")).c_str())).c_str());
  }
  nb::sequence seq = nb::borrow<nb::sequence>(obj);
  const int64_t n = static_cast<int64_t>(nb::len(seq));
  if (depth == shape.size() && leaves.empty()) {
    shape.push_back(n);
  } else if (depth >= shape.size() || shape[depth] != n) {
    throw nb::value_error("asarray: a nested sequence of ragged shape");
  }
  for (nb::handle item : seq) scan_nested(item, depth + 1, shape, kind, leaves);
  // An empty innermost sequence fixes the rank here.
  if (n == 0 && depth + 1 != shape.size() && leaves.empty()) return;
}

Tensor from_nested(nb::handle obj, std::optional<DType> dtype, const Device& device) {
  Shape shape;
  int kind = 0;
  std::vector<PyObject*> leaves;
  scan_nested(obj, 0, shape, kind, leaves);
  if (leaves.empty()) kind = 2;  // an empty sequence: the default float
  const DType t = dtype ? *dtype : kind == 0 ? DType::Bool : kind == 1 ? kDefaultInt : kDefaultFloat;
  const size_t size = dtype_size(t);
  std::vector<unsigned char> bytes(leaves.size() * size);
  for (size_t i = 0; i < leaves.size(); ++i) {
    nb::handle leaf(leaves[i]);
    if (nb::isinstance<Tensor>(leaf)) {
      Tensor v = nb::cast<const Tensor&>(leaf).to(t);
      v.copy_to_host(bytes.data() + i * size, size);
    } else {
      Tensor v = scalar_tensor(leaf, t == DType::Bool || is_float(t) || !is_py_float(leaf) ? t : kDefaultFloat, Device());
      if (v.dtype() != t) throw nb::type_error(("asarray: a Python float cannot be an element of " + std::string(dtype_name(t))).c_str());
      v.copy_to_host(bytes.data() + i * size, size);
    }
  }
  return Tensor::from_bytes(bytes.data(), bytes.size(), shape, t, device);
}

}  // namespace

Tensor from_buffer(nb::handle obj, std::optional<DType> dtype, const Device& device);  // interop.cpp
std::optional<Tensor> from_dlpack_object(nb::handle obj, const Device& device, std::optional<bool> copy);

Tensor to_tensor(nb::handle obj, std::optional<DType> dtype, nb::handle device, std::optional<bool> copy) {
  const bool have_device = !device.is_none();
  if (nb::isinstance<Tensor>(obj)) {
    Tensor t = nb::cast<Tensor>(obj);
    const bool moves = have_device && !(device_arg(device) == t.device());
    const bool casts = dtype && *dtype != t.dtype();
    if (copy && !*copy && (moves || casts)) {
      throw nb::value_error("asarray: copy=False, but the array would have to be copied (another device or dtype)");
    }
    if (moves) t = t.to(device_arg(device));
    if (casts) t = t.to(*dtype);
    if (copy && *copy && !moves && !casts) t = t.clone();
    return t;
  }
  const Device dev = device_arg(device);
  if (is_py_scalar(obj)) {
    if (copy && !*copy) throw nb::value_error("asarray: copy=False for a Python scalar, which must be copied");
    const DType t = dtype ? *dtype : is_py_bool(obj) ? DType::Bool : is_py_int(obj) ? kDefaultInt : kDefaultFloat;
    if (is_py_float(obj) && !is_float(t) && t != DType::Bool) {
      throw nb::type_error(("asarray: a Python float cannot be converted to " + std::string(dtype_name(t))).c_str());
    }
    return scalar_tensor(obj, t, dev);
  }
  if (nb::hasattr(obj, "__dlpack__")) {
    try {
      if (auto t = from_dlpack_object(obj, dev, copy)) return dtype && *dtype != t->dtype() ? t->to(*dtype) : *t;
    } catch (nb::python_error& e) {
      // NumPy does not export a read-only array through DLPack (0.x has no read-only flag); its
      // buffer protocol still gives the elements, to copy.
      if (!e.matches(PyExc_BufferError) || !PyObject_CheckBuffer(obj.ptr()) || (copy && !*copy)) throw;
    }
  }
  if (PyObject_CheckBuffer(obj.ptr())) {
    if (copy && !*copy) throw nb::value_error("asarray: copy=False, but a buffer-protocol object is copied");
    return from_buffer(obj, dtype, dev);
  }
  if (copy && !*copy) throw nb::value_error("asarray: copy=False, but a Python sequence must be copied");
  return from_nested(obj, dtype, dev);
}

namespace {

nb::object element(const unsigned char* p, DType t) {
  switch (t) {
    case DType::Bool: return nb::bool_(*p != 0);
    case DType::I8: return nb::int_(*reinterpret_cast<const int8_t*>(p));
    case DType::U8: return nb::int_(*p);
    case DType::I16: return nb::int_(*reinterpret_cast<const int16_t*>(p));
    case DType::I32: return nb::int_(*reinterpret_cast<const int32_t*>(p));
    case DType::I64: return nb::int_(*reinterpret_cast<const int64_t*>(p));
    case DType::U32: return nb::int_(*reinterpret_cast<const uint32_t*>(p));
    case DType::U64: return nb::steal(PyLong_FromUnsignedLongLong(*reinterpret_cast<const uint64_t*>(p)));
    case DType::F32: return nb::float_(*reinterpret_cast<const float*>(p));
    case DType::F64: return nb::float_(*reinterpret_cast<const double*>(p));
    case DType::F16: return nb::float_(static_cast<float>(*reinterpret_cast<const f16*>(p)));
    case DType::BF16: return nb::float_(static_cast<float>(*reinterpret_cast<const bf16*>(p)));
  }
  throw nb::type_error("unknown dtype");
}

nb::object nest(const unsigned char*& p, const Shape& shape, size_t axis, DType t) {
  if (axis == shape.size()) {
    nb::object v = element(p, t);
    p += dtype_size(t);
    return v;
  }
  nb::list out;
  for (int64_t i = 0; i < shape[axis]; ++i) out.append(nest(p, shape, axis + 1, t));
  return out;
}

}  // namespace

nb::object to_python(const Tensor& t) {
  std::vector<unsigned char> bytes(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  t.copy_to_host(bytes.data(), bytes.size());
  const unsigned char* p = bytes.data();
  return nest(p, t.shape(), 0, t.dtype());
}

}  // namespace wick::python
