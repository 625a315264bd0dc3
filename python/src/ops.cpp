// python/src/ops.cpp — the core's ops as methods of the Array type (x.exp(), x.sum(axes), ...),
// which the Array API namespace (wick/_array_api.py) is written with, the arithmetic whose Python
// meaning differs from the core's (/, //, %), and the creation functions.
#include "wick_python.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

namespace wick::python {

namespace {
Tensor zero_like(const Tensor& t) { return Tensor::zeros({}, t.dtype(), t.device()); }
bool is_int_or_bool(DType t) { return !is_float(t); }
}  // namespace

Tensor true_divide(const Tensor& a, const Tensor& b) {
  if (is_int_or_bool(a.dtype()) && is_int_or_bool(b.dtype())) return a.to(kDefaultFloat).div(b.to(kDefaultFloat));
  return a.div(b);
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  if (is_float(promote_types(a.dtype(), b.dtype()))) return a.div(b).floor();
  // Integers: the core's division truncates; one less where the remainder is not 0 and the
  // operands' signs differ (b == 0 gives the core's 0).
  const Tensor q = a.div(b);
  const Tensor r = a.rem(b);
  const Tensor z = zero_like(r);
  const Tensor adjust = r.ne(z).logical_and(r.lt(z).logical_xor(b.lt(zero_like(b))));
  return q.sub(adjust.to(q.dtype()));
}

Tensor remainder(const Tensor& a, const Tensor& b) {
  // The core's rem has the dividend's sign (C fmod); Python's % the divisor's: add b where the
  // remainder is not 0 and the signs differ; a zero remainder takes the divisor's sign.
  const Tensor r = a.rem(b);
  const Tensor z = zero_like(r);
  const Tensor bb = b.to(r.dtype());
  const Tensor fix = r.ne(z).logical_and(r.lt(z).logical_xor(bb.lt(z)));
  Tensor out = Tensor::where(fix, r.add(bb), r);
  if (is_float(out.dtype())) {
    // copysign(0, b) for a zero remainder: 0 * sign-of-b keeps IEEE's signed zero (-0 for b < 0).
    const Tensor zero_signed = Tensor::where(bb.lt(z), Tensor::full({}, -0.0, out.dtype(), out.device()), z);
    out = Tensor::where(out.eq(z), zero_signed, out);
  }
  return out;
}

Tensor bitwise_invert(const Tensor& a) {
  return a.dtype() == DType::Bool ? a.logical_not() : a.bitwise_not();
}

Tensor bitwise_binary(const char* op, const Tensor& a, const Tensor& b) {
  const std::string o = op;
  if (a.dtype() == DType::Bool && b.dtype() == DType::Bool) {
    return o == "and" ? a.logical_and(b) : o == "or" ? a.logical_or(b) : a.logical_xor(b);
  }
  if (is_float(a.dtype()) || is_float(b.dtype())) {
    throw nb::type_error(("bitwise_" + o + ": takes integer or bool arrays, not " + dtype_name(a.dtype()) +
                          " and " + dtype_name(b.dtype())).c_str());
  }
  return o == "and" ? a.bitwise_and(b) : o == "or" ? a.bitwise_or(b) : a.bitwise_xor(b);
}

namespace {

Tensor other_operand(const Tensor& a, nb::handle b) {
  Tensor made;
  const Tensor* o = operand(a, b, made);
  if (o == nullptr) {
    throw nb::type_error(("expected an Array or a Python scalar, not " +
                          std::string(nb::str(b.type().attr("__name__")).c_str())).c_str());
  }
  return *o;
}

std::vector<int> axes_arg(const Tensor& t, nb::handle axes) {
  std::vector<int> out;
  if (axes.is_none()) {
    for (int i = 0; i < t.rank(); ++i) out.push_back(i);
  } else if (PyLong_Check(axes.ptr())) {
    out.push_back(nb::cast<int>(axes));
  } else {
    for (nb::handle h : axes) out.push_back(nb::cast<int>(h));
  }
  return out;
}

#define WICK_UNARY(name) cls.def(#name, [](const Tensor& t) { return t.name(); })
#define WICK_BINARY(name) \
  cls.def(#name, [](const Tensor& a, nb::handle b) { return a.name(other_operand(a, b)); }, nb::arg("other"))
#define WICK_REDUCE(name)                                                                       \
  cls.def(#name, [](const Tensor& t, nb::handle axes, bool keepdim) {                           \
        return t.name(axes_arg(t, axes), keepdim);                                              \
      }, nb::arg("axes").none() = nb::none(), nb::arg("keepdim") = false)

void bind_elementwise(ArrayClass& cls) {
  WICK_UNARY(neg); WICK_UNARY(abs); WICK_UNARY(sign); WICK_UNARY(exp); WICK_UNARY(log);
  WICK_UNARY(sqrt); WICK_UNARY(rsqrt); WICK_UNARY(recip); WICK_UNARY(sqr); WICK_UNARY(tanh);
  WICK_UNARY(erf); WICK_UNARY(sigmoid); WICK_UNARY(sin); WICK_UNARY(cos); WICK_UNARY(tan);
  WICK_UNARY(asin); WICK_UNARY(acos); WICK_UNARY(atan); WICK_UNARY(sinh); WICK_UNARY(cosh);
  WICK_UNARY(asinh); WICK_UNARY(acosh); WICK_UNARY(atanh); WICK_UNARY(expm1); WICK_UNARY(log1p);
  WICK_UNARY(cbrt); WICK_UNARY(erfc); WICK_UNARY(erfinv); WICK_UNARY(floor); WICK_UNARY(ceil);
  WICK_UNARY(relu); WICK_UNARY(gelu); WICK_UNARY(gelu_erf); WICK_UNARY(silu); WICK_UNARY(isnan);
  WICK_UNARY(isinf); WICK_UNARY(logical_not); WICK_UNARY(bitwise_not); WICK_UNARY(popcount);
  WICK_UNARY(clz);
  cls.def("round", [](const Tensor& t, bool half_to_even) { return t.round(half_to_even); },
          nb::arg("half_to_even") = false);
  cls.def("elu", &Tensor::elu, nb::arg("alpha") = 1.0);
  cls.def("affine", &Tensor::affine, nb::arg("mul"), nb::arg("add"));
  cls.def("powf", &Tensor::powf, nb::arg("exponent"));
  cls.def("clamp", &Tensor::clamp, nb::arg("lo"), nb::arg("hi"));
  WICK_BINARY(add); WICK_BINARY(sub); WICK_BINARY(mul); WICK_BINARY(div); WICK_BINARY(maximum);
  WICK_BINARY(minimum); WICK_BINARY(pow); WICK_BINARY(rem); WICK_BINARY(atan2); WICK_BINARY(eq);
  WICK_BINARY(ne); WICK_BINARY(lt); WICK_BINARY(le); WICK_BINARY(gt); WICK_BINARY(ge);
  WICK_BINARY(bitwise_and); WICK_BINARY(bitwise_or); WICK_BINARY(bitwise_xor); WICK_BINARY(shl);
  WICK_BINARY(shr); WICK_BINARY(logical_and); WICK_BINARY(logical_or); WICK_BINARY(logical_xor);
  cls.def("matmul", &Tensor::matmul, nb::call_guard<nb::gil_scoped_release>());
}

void bind_reductions(ArrayClass& cls) {
  WICK_REDUCE(sum); WICK_REDUCE(prod); WICK_REDUCE(max); WICK_REDUCE(min); WICK_REDUCE(mean);
  WICK_REDUCE(all); WICK_REDUCE(any);
  cls.def("argmax", &Tensor::argmax, nb::arg("axis"), nb::arg("keepdim") = false, nb::arg("last") = false);
  cls.def("argmin", &Tensor::argmin, nb::arg("axis"), nb::arg("keepdim") = false, nb::arg("last") = false);
  cls.def("cumsum", &Tensor::cumsum, nb::arg("axis"), nb::arg("reverse") = false, nb::arg("exclusive") = false);
  cls.def("cumprod", &Tensor::cumprod, nb::arg("axis"), nb::arg("reverse") = false, nb::arg("exclusive") = false);
  cls.def("min_all", &Tensor::min_all);
  cls.def("max_all", &Tensor::max_all);
  cls.def("count_nan", &Tensor::count_nan);
}

void bind_views(ArrayClass& cls) {
  cls.def("reshape", [](const Tensor& t, const Shape& s) { return t.reshape(s); }, nb::arg("shape"));
  cls.def("permute", &Tensor::permute, nb::arg("axes"));
  cls.def("transpose", &Tensor::transpose, nb::arg("a"), nb::arg("b"));
  cls.def("broadcast_to", &Tensor::broadcast_to, nb::arg("shape"));
  cls.def("slice", &Tensor::slice, nb::arg("axis"), nb::arg("start").none(), nb::arg("stop").none(),
          nb::arg("step") = 1);
  cls.def("narrow", &Tensor::narrow, nb::arg("axis"), nb::arg("start"), nb::arg("length"));
  cls.def("flip", &Tensor::flip, nb::arg("axis"));
  cls.def("squeeze", [](const Tensor& t, std::optional<int> axis) { return axis ? t.squeeze(*axis) : t.squeeze(); },
          nb::arg("axis").none() = nb::none());
  cls.def("unsqueeze", &Tensor::unsqueeze, nb::arg("axis"));
  cls.def("contiguous", &Tensor::contiguous);
  cls.def("clone", &Tensor::clone);
  cls.def("copy_", [](Tensor& t, const Tensor& src) { t.copy_(src); }, nb::arg("src"));
}

void bind_indexing(ArrayClass& cls) {
  cls.def("index_select", &Tensor::index_select, nb::arg("ids"), nb::arg("axis"));
  cls.def("gather", &Tensor::gather, nb::arg("axis"), nb::arg("ids"));
  cls.def("scatter", &Tensor::scatter, nb::arg("axis"), nb::arg("ids"), nb::arg("src"), nb::arg("mode") = "set");
  cls.def("index_reduce", &Tensor::index_reduce, nb::arg("axis"), nb::arg("ids"), nb::arg("src"), nb::arg("mode"));
  cls.def("sort", &Tensor::sort, nb::arg("axis") = -1, nb::arg("descending") = false, nb::arg("stable") = true);
  cls.def("argsort", &Tensor::argsort, nb::arg("axis") = -1, nb::arg("descending") = false);
  cls.def("topk", &Tensor::topk, nb::arg("k"), nb::arg("axis") = -1, nb::arg("largest") = true);
}

Shape shape_arg(nb::handle shape) {
  if (PyLong_Check(shape.ptr())) return Shape{nb::cast<int64_t>(shape)};
  Shape s;
  for (nb::handle h : shape) s.push_back(nb::cast<int64_t>(nb::int_(h)));
  for (int64_t d : s) if (d < 0) throw nb::value_error(("a shape's extents must be >= 0, not " + shape_to_string(s)).c_str());
  return s;
}

void bind_creation(nb::module_& m) {
  m.def("asarray", &to_tensor, nb::arg("obj").none(), nb::kw_only(), nb::arg("dtype").none() = nb::none(),
        nb::arg("device").none() = nb::none(), nb::arg("copy").none() = nb::none(),
        "The Array API's asarray: an Array, Python scalars and sequences, DLPack or buffer objects.");
  m.def("zeros", [](nb::handle shape, std::optional<DType> dtype, nb::handle device) {
        return Tensor::zeros(shape_arg(shape), dtype.value_or(kDefaultFloat), device_arg(device));
      }, nb::arg("shape"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none());
  m.def("ones", [](nb::handle shape, std::optional<DType> dtype, nb::handle device) {
        return Tensor::ones(shape_arg(shape), dtype.value_or(kDefaultFloat), device_arg(device));
      }, nb::arg("shape"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none());
  m.def("empty", [](nb::handle shape, std::optional<DType> dtype, nb::handle device) {
        return Tensor::empty(shape_arg(shape), dtype.value_or(kDefaultFloat), device_arg(device));
      }, nb::arg("shape"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none());
  m.def("_full", [](nb::handle shape, nb::handle value, DType dtype, nb::handle device) {
        return scalar_tensor(value, dtype, device_arg(device)).broadcast_to(shape_arg(shape)).clone();
      }, nb::arg("shape"), nb::arg("value"), nb::arg("dtype"), nb::arg("device").none());
  m.def("_scalar_dtype", &scalar_dtype);
  m.def("_arange", [](double start, double stop, double step, DType dtype, nb::handle device) {
        return Tensor::arange(start, stop, step, dtype, device_arg(device));
      }, nb::arg("start"), nb::arg("stop"), nb::arg("step"), nb::arg("dtype"), nb::arg("device").none());
  m.def("_iota", [](nb::handle shape, int axis, DType dtype, nb::handle device) {
        return Tensor::iota(shape_arg(shape), axis, dtype, device_arg(device));
      }, nb::arg("shape"), nb::arg("axis"), nb::arg("dtype"), nb::arg("device").none());
  m.def("rand", [](nb::handle shape, double lo, double hi, DType dtype, nb::handle device, std::optional<uint64_t> seed) {
        return Tensor::rand(shape_arg(shape), lo, hi, dtype, device_arg(device), seed);
      }, nb::arg("shape"), nb::arg("lo") = 0.0, nb::arg("hi") = 1.0, nb::kw_only(), nb::arg("dtype") = kDefaultFloat,
      nb::arg("device").none() = nb::none(), nb::arg("seed").none() = nb::none());
  m.def("randn", [](nb::handle shape, double mean, double std, DType dtype, nb::handle device, std::optional<uint64_t> seed) {
        return Tensor::randn(shape_arg(shape), mean, std, dtype, device_arg(device), seed);
      }, nb::arg("shape"), nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::kw_only(), nb::arg("dtype") = kDefaultFloat,
      nb::arg("device").none() = nb::none(), nb::arg("seed").none() = nb::none());
  m.def("_where", &Tensor::where);
  m.def("_cat", &Tensor::cat);
  m.def("_stack", &Tensor::stack);
  m.def("_true_divide", &true_divide);
  m.def("_floor_divide", &floor_divide);
  m.def("_remainder", &remainder);
  m.def("_bitwise_invert", &bitwise_invert);
  m.def("_bitwise", [](const std::string& op, const Tensor& a, const Tensor& b) { return bitwise_binary(op.c_str(), a, b); });
  m.def("_operand", [](const Tensor& a, nb::handle b) { return other_operand(a, b); });
}

}  // namespace

void bind_ops(nb::module_& m, ArrayClass& cls) {
  bind_elementwise(cls);
  bind_reductions(cls);
  bind_views(cls);
  bind_indexing(cls);
  bind_creation(m);
}

}  // namespace wick::python
