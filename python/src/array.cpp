// python/src/array.cpp — the Array type (a wick::Tensor): its attributes, conversions, operators
// and indexing, as the Array API standard's array object has them.
#include "wick_python.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <wick/autograd.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace wick::python {
namespace {

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

nb::tuple shape_tuple(const Tensor& t) {
  nb::list l;
  for (int64_t d : t.shape()) l.append(d);
  return nb::tuple(l);
}

// x OP other (reflected: other OP x), or NotImplemented for an operand that is neither an Array
// nor a Python scalar.
template <BinaryFn F>
nb::object binary(const Tensor& self, nb::handle other) {
  Tensor made;
  const Tensor* o = operand(self, other, made);
  if (o == nullptr) return nb::borrow(Py_NotImplemented);
  return nb::cast(F(self, *o));
}
template <BinaryFn F>
nb::object reflected(const Tensor& self, nb::handle other) {
  Tensor made;
  const Tensor* o = operand(self, other, made);
  if (o == nullptr) return nb::borrow(Py_NotImplemented);
  return nb::cast(F(*o, self));
}
// x OP= other: the result is written into x, which keeps its dtype and shape (the Array API: an
// in-place op whose promoted dtype or broadcast shape differs from x's is an error).
template <BinaryFn F>
nb::object in_place(nb::handle self_h, nb::handle other) {
  Tensor& self = nb::cast<Tensor&>(self_h);
  Tensor made;
  const Tensor* o = operand(self, other, made);
  if (o == nullptr) return nb::borrow(Py_NotImplemented);
  Tensor r = F(self, *o);
  if (r.dtype() != self.dtype()) {
    throw nb::type_error(("in-place operator: the result's dtype " + std::string(dtype_name(r.dtype())) +
                          " differs from the array's " + dtype_name(self.dtype())).c_str());
  }
  if (r.shape() != self.shape()) {
    throw nb::value_error(("in-place operator: the result's shape " + shape_to_string(r.shape()) +
                           " differs from the array's " + shape_to_string(self.shape())).c_str());
  }
  self.copy_(r);
  return nb::borrow(self_h);
}

Tensor add(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor sub(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor mul(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor pow_(const Tensor& a, const Tensor& b) { return a.pow(b); }
Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }
Tensor and_(const Tensor& a, const Tensor& b) { return bitwise_binary("and", a, b); }
Tensor or_(const Tensor& a, const Tensor& b) { return bitwise_binary("or", a, b); }
Tensor xor_(const Tensor& a, const Tensor& b) { return bitwise_binary("xor", a, b); }
Tensor shl(const Tensor& a, const Tensor& b) { return a.shl(b); }
Tensor shr(const Tensor& a, const Tensor& b) { return a.shr(b); }
Tensor eq(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor ne(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor lt(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor le(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor gt(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor ge(const Tensor& a, const Tensor& b) { return a.ge(b); }

#define WICK_BINARY_OP(name, fn)                                  \
  cls.def("__" name "__", &binary<fn>, nb::arg("other").none());   \
  cls.def("__r" name "__", &reflected<fn>, nb::arg("other").none()); \
  cls.def("__i" name "__", &in_place<fn>, nb::arg("other").none())

void bind_operators(ArrayClass& cls) {
  WICK_BINARY_OP("add", add);
  WICK_BINARY_OP("sub", sub);
  WICK_BINARY_OP("mul", mul);
  WICK_BINARY_OP("truediv", true_divide);
  WICK_BINARY_OP("floordiv", floor_divide);
  WICK_BINARY_OP("mod", remainder);
  WICK_BINARY_OP("pow", pow_);
  WICK_BINARY_OP("matmul", matmul);
  WICK_BINARY_OP("and", and_);
  WICK_BINARY_OP("or", or_);
  WICK_BINARY_OP("xor", xor_);
  WICK_BINARY_OP("lshift", shl);
  WICK_BINARY_OP("rshift", shr);
  cls.def("__eq__", &binary<eq>, nb::arg("other").none());
  cls.def("__ne__", &binary<ne>, nb::arg("other").none());
  cls.def("__lt__", &binary<lt>, nb::arg("other").none());
  cls.def("__le__", &binary<le>, nb::arg("other").none());
  cls.def("__gt__", &binary<gt>, nb::arg("other").none());
  cls.def("__ge__", &binary<ge>, nb::arg("other").none());
  cls.def("__neg__", [](const Tensor& a) { return a.dtype() == DType::Bool ? a.to(kDefaultInt).neg() : a.neg(); });
  cls.def("__pos__", [](const Tensor& a) { return a; });
  cls.def("__abs__", [](const Tensor& a) { return a.abs(); });
  cls.def("__invert__", &bitwise_invert);
  cls.attr("__hash__") = nb::none();
}

// The one value of a one-element array, as a Python scalar.
nb::object item(const Tensor& t) {
  if (t.numel() != 1) {
    throw nb::value_error(("only an array of one element converts to a Python scalar; this one has " +
                           std::to_string(t.numel())).c_str());
  }
  return to_python(t.reshape({}));
}

void bind_conversions(ArrayClass& cls) {
  cls.def("__bool__", [](const Tensor& t) { return nb::bool_(PyObject_IsTrue(item(t).ptr()) == 1); });
  cls.def("__float__", [](const Tensor& t) { return nb::float_(item(t)); });
  cls.def("__int__", [](const Tensor& t) {
    nb::object v = item(t);
    if (PyFloat_Check(v.ptr())) {
      const double d = PyFloat_AsDouble(v.ptr());
      if (std::isnan(d)) throw nb::value_error("cannot convert a NaN array to an integer");
      if (std::isinf(d)) raise(PyExc_OverflowError, "cannot convert an infinite array to an integer");
    }
    return nb::int_(v);
  });
  cls.def("__index__", [](const Tensor& t) {
    if (is_float(t.dtype()) || t.dtype() == DType::Bool) {
      throw nb::type_error(("__index__: only integer arrays are indices, not " + std::string(dtype_name(t.dtype()))).c_str());
    }
    return nb::int_(item(t));
  });
  cls.def("__complex__", [](const Tensor& t) {
    return nb::steal(PyComplex_FromDoubles(nb::cast<double>(nb::float_(item(t))), 0.0));
  });
  cls.def("item", &item);
  cls.def("tolist", &to_python);
  cls.def("__len__", [](const Tensor& t) {
    if (t.rank() == 0) throw nb::type_error("len() of a 0-d array");
    return t.shape()[0];
  });
  cls.def("__repr__", [](const Tensor& t) {
    const std::string values = t.numel() <= 1000 ? std::string(nb::repr(to_python(t)).c_str())
                                                 : "<" + std::to_string(t.numel()) + " elements>";
    return "Array(" + values + ", dtype=" + dtype_name(t.dtype()) + ", device=" + t.device().name() + ")";
  });
}

void bind_attributes(ArrayClass& cls) {
  cls.def_prop_ro("dtype", &Tensor::dtype);
  cls.def_prop_ro("shape", &shape_tuple);
  cls.def_prop_ro("ndim", &Tensor::rank);
  cls.def_prop_ro("size", &Tensor::numel);
  cls.def_prop_ro("device", &Tensor::device);
  cls.def_prop_ro("strides", [](const Tensor& t) { return t.strides(); });
  cls.def_prop_ro("T", [](const Tensor& t) {
    if (t.rank() != 2) throw nb::value_error(("x.T needs a 2-d array; this one is " + std::to_string(t.rank()) + "-d (use x.mT or permute_dims)").c_str());
    return t.t();
  });
  cls.def_prop_ro("mT", [](const Tensor& t) {
    if (t.rank() < 2) throw nb::value_error("x.mT needs an array of at least 2 dimensions");
    return t.t();
  });
  cls.def("to_device", [](const Tensor& t, nb::handle device, nb::handle stream) {
        if (!stream.is_none()) throw nb::value_error("to_device: Wick has no streams; pass stream=None");
        return t.to(device_arg(device));
      }, nb::arg("device"), nb::kw_only(), nb::arg("stream") = nb::none());
  cls.def("astype", [](const Tensor& t, DType d) { return t.to(d); }, nb::arg("dtype"));
  cls.def("__array_namespace__", [](const Tensor&, nb::handle api_version) {
        if (!api_version.is_none()) {
          const std::string v = nb::cast<std::string>(api_version);
          if (v != "2021.12" && v != "2022.12" && v != "2023.12") {
            throw nb::value_error(("__array_namespace__: api_version '" + v + "' is not one Wick implements (2023.12)").c_str());
          }
        }
        return nb::module_::import_("wick");
      }, nb::kw_only(), nb::arg("api_version") = nb::none());
  cls.def("__copy__", [](const Tensor& t) { return t.clone(); });
  cls.def("__deepcopy__", [](const Tensor& t, nb::handle) { return t.clone(); }, nb::arg("memo"));
  cls.def("is_contiguous", &Tensor::is_contiguous);
  cls.def("summary", &Tensor::summary);
}

// ---- indexing ------------------------------------------------------------------------------------

int64_t index_value(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) return nb::cast<int64_t>(nb::int_(h.attr("__index__")()));
  return nb::cast<int64_t>(nb::int_(h));
}

bool is_int_index(nb::handle h) {
  if (PyBool_Check(h.ptr())) return false;
  if (PyLong_Check(h.ptr())) return true;
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    return t.rank() == 0 && !is_float(t.dtype()) && t.dtype() != DType::Bool;
  }
  return PyIndex_Check(h.ptr()) && !nb::isinstance<Tensor>(h);
}

bool is_bool_array(nb::handle h) {
  if (PyBool_Check(h.ptr())) return true;
  return nb::isinstance<Tensor>(h) && nb::cast<const Tensor&>(h).dtype() == DType::Bool;
}

bool is_int_array(nb::handle h) {
  if (!nb::isinstance<Tensor>(h)) return false;
  const Tensor& t = nb::cast<const Tensor&>(h);
  return t.rank() > 0 && !is_float(t.dtype()) && t.dtype() != DType::Bool;
}

// The flat positions of the true elements of a bool mask (on the host), as an i64 tensor.
Tensor true_positions(const Tensor& mask, const Device& device) {
  std::vector<bool> m = mask.to_vector<bool>();
  std::vector<int64_t> pos;
  for (size_t i = 0; i < m.size(); ++i) if (m[i]) pos.push_back(static_cast<int64_t>(i));
  return Tensor::from_vector<int64_t>(pos, Shape{static_cast<int64_t>(pos.size())}, device);
}

// x[mask] for a bool mask over x's leading axes starting at `axis`.
Tensor mask_select(const Tensor& t, int axis, const Tensor& mask) {
  for (int i = 0; i < mask.rank(); ++i) {
    // A mask extent of 0 selects nothing from an axis of any extent (the suite's reading); any
    // other extent must be the axis's.
    if (axis + i >= t.rank() || (t.shape()[axis + i] != mask.shape()[i] && mask.shape()[i] != 0)) {
      raise(PyExc_IndexError, ("boolean index of shape " + shape_to_string(mask.shape()) + " does not match the array's shape " +
           shape_to_string(t.shape()) + " at axis " + std::to_string(axis)).c_str());
    }
  }
  if (mask.numel() == 0) {
    Shape s(t.shape().begin(), t.shape().begin() + axis);
    s.push_back(0);
    s.insert(s.end(), t.shape().begin() + axis + mask.rank(), t.shape().end());
    return Tensor::zeros(s, t.dtype(), t.device());
  }
  Shape flat(t.shape().begin(), t.shape().begin() + axis);
  int64_t n = 1;
  for (int i = 0; i < mask.rank(); ++i) n *= mask.shape()[i];
  flat.push_back(n);
  flat.insert(flat.end(), t.shape().begin() + axis + mask.rank(), t.shape().end());
  return t.reshape(flat).index_select(true_positions(mask, t.device()), axis);
}

struct Key {
  std::vector<nb::handle> items;
  size_t consumed = 0;  // the array axes the key's items take up (not None, not Ellipsis)
};

Key parse_key(nb::handle key, int rank) {
  Key k;
  if (nb::isinstance<nb::tuple>(key)) {
    for (nb::handle h : nb::borrow<nb::tuple>(key)) k.items.push_back(h);
  } else {
    k.items.push_back(key);
  }
  int ellipses = 0;
  for (nb::handle h : k.items) {
    if (h.is_none()) continue;
    if (h.ptr() == Py_Ellipsis) { ++ellipses; continue; }
    if (is_bool_array(h) && nb::isinstance<Tensor>(h)) k.consumed += nb::cast<const Tensor&>(h).rank();
    else if (!PyBool_Check(h.ptr())) k.consumed += 1;
  }
  if (ellipses > 1) raise(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
  if (k.consumed > static_cast<size_t>(rank)) {
    raise(PyExc_IndexError, ("too many indices: the array is " + std::to_string(rank) + "-d, the index has " + std::to_string(k.consumed)).c_str());
  }
  return k;
}

Tensor index(const Tensor& self, nb::handle key_h) {
  const Key key = parse_key(key_h, self.rank());
  Tensor t = self;
  int axis = 0;
  for (nb::handle h : key.items) {
    if (h.is_none()) {
      t = t.unsqueeze(axis++);
    } else if (h.ptr() == Py_Ellipsis) {
      axis += self.rank() - static_cast<int>(key.consumed);
    } else if (PySlice_Check(h.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(h.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      nb::object s = nb::borrow(h);
      auto bound = [](nb::handle v) { return v.is_none() ? std::optional<int64_t>() : std::optional<int64_t>(index_value(v)); };
      t = t.slice(axis++, bound(s.attr("start")), bound(s.attr("stop")), step);
    } else if (is_int_index(h)) {
      const int64_t n = t.shape()[axis];
      int64_t i = index_value(h);
      if (i < -n || i >= n) {
        raise(PyExc_IndexError, ("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) + " of size " + std::to_string(n)).c_str());
      }
      if (i < 0) i += n;
      t = t.narrow(axis, i, 1).squeeze(axis);
    } else if (is_bool_array(h)) {
      const Tensor mask = nb::isinstance<Tensor>(h) ? nb::cast<const Tensor&>(h)
                                                    : Tensor::scalar<bool>(h.ptr() == Py_True, t.device());
      if (mask.rank() == 0) {
        t = t.unsqueeze(axis);
        if (!mask.item<bool>()) t = t.narrow(axis, 0, 0);
        ++axis;
      } else {
        t = mask_select(t, axis, mask);
        ++axis;
      }
    } else if (is_int_array(h)) {
      const Tensor& ids = nb::cast<const Tensor&>(h);
      const int64_t n = t.shape()[axis];
      if (ids.numel() > 0 && (ids.min_all() < -n || ids.max_all() >= n)) {
        raise(PyExc_IndexError, ("an index array holds a value out of bounds for axis " + std::to_string(axis) + " of size " + std::to_string(n)).c_str());
      }
      Tensor flat = ids.to(DType::I64).reshape({-1});
      flat = Tensor::where(flat.lt(Tensor::scalar<int64_t>(0, flat.device())), flat + static_cast<double>(n), flat);
      Tensor sel = t.index_select(flat, axis);
      Shape s(sel.shape().begin(), sel.shape().begin() + axis);
      s.insert(s.end(), ids.shape().begin(), ids.shape().end());
      s.insert(s.end(), sel.shape().begin() + axis + 1, sel.shape().end());
      t = sel.reshape(s);
      axis += ids.rank();
    } else {
      raise(PyExc_IndexError, ("an index must be an int, a slice, ..., None, or a bool or integer array, not " +
           std::string(nb::str(h.type().attr("__name__")).c_str())).c_str());
    }
  }
  return t;
}

bool has_mask(nb::handle key) {
  if (is_bool_array(key) && nb::isinstance<Tensor>(key) && nb::cast<const Tensor&>(key).rank() > 0) return true;
  if (!nb::isinstance<nb::tuple>(key)) return false;
  for (nb::handle h : nb::borrow<nb::tuple>(key)) {
    if (is_bool_array(h) && nb::isinstance<Tensor>(h) && nb::cast<const Tensor&>(h).rank() > 0) return true;
    if (is_int_array(h)) return true;
  }
  return is_int_array(key);
}

void set_index(Tensor& self, nb::handle key, nb::handle value) {
  Tensor v = nb::isinstance<Tensor>(value) ? nb::cast<Tensor>(value)
                                           : to_tensor(value, self.dtype(), nb::cast(self.device()), std::nullopt);
  if (has_mask(key)) {
    // A whole-array bool mask: where(mask, value, x), written back into x.
    if (!(is_bool_array(key) && nb::isinstance<Tensor>(key))) {
      raise(PyExc_IndexError, "assignment through an integer array index, or a bool mask inside a tuple, is not supported");
    }
    const Tensor& mask = nb::cast<const Tensor&>(key);
    Shape ms = mask.shape();
    while (static_cast<int>(ms.size()) < self.rank()) ms.push_back(1);
    Tensor m = mask.reshape(ms);
    if (v.rank() > 0) {
      // x[mask] = values (one per true element): scatter them to the true positions.
      Tensor flat_self = self.reshape({-1});
      Tensor pos = true_positions(mask, self.device());
      Tensor cur = index(self, key);
      Tensor vals = v.to(self.dtype()).broadcast_to(cur.shape()).reshape({-1});
      if (mask.rank() != self.rank()) raise(PyExc_IndexError, "assignment of an array through a partial bool mask is not supported");
      self.copy_(flat_self.index_reduce(0, pos, vals, "set").reshape(self.shape()));
      return;
    }
    self.copy_(Tensor::where(m, v.to(self.dtype()), self));
    return;
  }
  Tensor view = index(self, key);
  view.copy_(v);
}

}  // namespace

void bind_array(nb::module_& m, ArrayClass& cls) {
  bind_attributes(cls);
  bind_conversions(cls);
  bind_operators(cls);
  cls.def("__getitem__", &index, nb::arg("key").none());
  cls.def("__setitem__", [](Tensor& self, nb::handle key, nb::handle value) { set_index(self, key, value); },
          nb::arg("key").none(), nb::arg("value").none());
  m.attr("newaxis") = nb::none();
}

}  // namespace wick::python
