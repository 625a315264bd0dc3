// The same operator through nanobind: the per-call cost of the binding layer alone (run.sh).
#include <nanobind/nanobind.h>
#include <memory>
namespace nb = nanobind;
struct T { std::shared_ptr<int> s; long v; };
NB_MODULE(nbm, m) {
  nb::class_<T>(m, "T").def(nb::init<>())
    .def("__add__", [](const T& a, const T& b) { return T{a.s, a.v + b.v}; });
}
