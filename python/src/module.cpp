// python/src/module.cpp — the extension module wick._wick: dtypes, devices and the runtime, and
// how a wick::Error becomes a Python exception.
#include "wick_python.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <wick/config.hpp>
#include <wick/registry.hpp>
#include <wick/runtime.hpp>

#include <string>

namespace wick::python {
namespace {

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// A wick::Error is a ValueError when it is about the values, shapes or axes it was given, a
// TypeError when it is about a dtype (the core's messages name it: "dtype", "convert with
// .to(DType::...)", "not defined for f32 tensors"), and a RuntimeError otherwise (a device, a plugin, a file);
// the text is the C++ message unchanged.
void raise_wick_error(const wick::Error& e) {
  const std::string msg = e.what();
  if (dynamic_cast<const ConfigError*>(&e)) {
    PyErr_SetString(PyExc_ValueError, msg.c_str());
  } else if (contains(msg, "dtype") || contains(msg, "DType") || contains(msg, "not defined for")) {
    PyErr_SetString(PyExc_TypeError, msg.c_str());
  } else if (contains(msg, "shape") || contains(msg, "axis") || contains(msg, "broadcast") ||
             contains(msg, "out of range") || contains(msg, "elements, not")) {
    PyErr_SetString(PyExc_ValueError, msg.c_str());
  } else {
    PyErr_SetString(PyExc_RuntimeError, msg.c_str());
  }
}

std::string device_repr(const Device& d) { return "Device('" + d.name() + "')"; }

void bind_dtypes(nb::module_& m) {
  nb::enum_<DType>(m, "DType", "A Wick data type; compare with ==, e.g. x.dtype == wick.float32")
      .value("bool", DType::Bool)
      .value("int8", DType::I8)
      .value("int16", DType::I16)
      .value("int32", DType::I32)
      .value("int64", DType::I64)
      .value("uint8", DType::U8)
      .value("uint32", DType::U32)
      .value("uint64", DType::U64)
      .value("float16", DType::F16)
      .value("bfloat16", DType::BF16)
      .value("float32", DType::F32)
      .value("float64", DType::F64)
      .def_prop_ro("itemsize", [](DType t) { return dtype_size(t); })
      .def_prop_ro("wick_name", [](DType t) { return std::string(dtype_name(t)); })
      .def("__repr__", [](DType t) { return "wick." + std::string(nb::str(nb::cast(t).attr("name")).c_str()); });
  m.def("_promote_types", &promote_types);
}

void bind_devices(nb::module_& m) {
  nb::class_<Device>(m, "Device", "A device served by a loaded plugin: Device('cpu'), Device('opencl:0')")
      .def("__init__", [](Device* self, nb::handle name) { new (self) Device(device_arg(name)); },
           nb::arg("name"))
      .def_prop_ro("name", &Device::name)
      .def_prop_ro("plugin", [](const Device& d) { return d.plugin_name(); })
      .def_prop_ro("index", &Device::index)
      .def_prop_ro("kind", [](const Device& d) { return std::string(to_string(d.kind())); })
      .def_prop_ro("description", &Device::description)
      .def_prop_ro("memory_bytes", &Device::memory_bytes)
      .def("synchronize", &Device::synchronize, nb::call_guard<nb::gil_scoped_release>())
      .def("__eq__", [](const Device& a, nb::handle b) {
        return nb::isinstance<Device>(b) && a == nb::cast<const Device&>(b);
      })
      .def("__hash__", [](const Device& d) { return std::hash<const void*>()(d.handle()); })
      .def("__repr__", &device_repr)
      .def("__str__", &Device::name);
}

void bind_plugins(nb::module_& m) {
  nb::class_<PluginInfo>(m, "PluginInfo", "One plugin the registry found, with its state and why")
      .def_ro("name", &PluginInfo::name)
      .def_ro("version", &PluginInfo::version)
      .def_ro("manifest_path", &PluginInfo::manifest_path)
      .def_ro("library_path", &PluginInfo::library_path)
      .def_prop_ro("state", [](const PluginInfo& p) { return std::string(to_string(p.state)); })
      .def_ro("reason", &PluginInfo::reason)
      .def_prop_ro("abi", [](const PluginInfo& p) {
        return std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor);
      })
      .def_prop_ro("devices", [](const PluginInfo& p) {
        std::vector<std::string> names;
        for (const auto& d : p.devices) names.push_back(d.name);
        return names;
      })
      .def("__repr__", [](const PluginInfo& p) {
        return "PluginInfo(" + p.name + ", " + to_string(p.state) + ": " + p.reason + ")";
      });
}

// wick.configure: the API layer of the config (highest precedence, docs/config.md), applied to
// the process's runtime before its first use, as Runtime::configure does in C++.
void configure(std::optional<std::string> config_file, std::optional<std::vector<std::string>> device,
               std::optional<bool> strict, std::optional<std::vector<std::string>> plugin_paths,
               std::optional<std::string> log_level) {
  ConfigOverrides api;
  api.config_file = std::move(config_file);
  api.devices = std::move(device);
  api.strict = strict;
  if (plugin_paths) api.plugin_paths = *plugin_paths;
  api.log_level = std::move(log_level);
  Runtime::configure(resolve_config({}, api));
}

void bind_runtime_functions(nb::module_& m) {
  m.def("configure", &configure, nb::kw_only(), nb::arg("config_file").none() = nb::none(),
        nb::arg("device").none() = nb::none(), nb::arg("strict").none() = nb::none(),
        nb::arg("plugin_paths").none() = nb::none(), nb::arg("log_level").none() = nb::none(),
        "Sets the configuration before Wick's first use (a config file, a device priority list, "
        "strict mode, extra plugin folders, the log level), over the environment and the user's "
        "file, as docs/config.md says; an error once arrays exist.");
  m.def("devices", [] { return Runtime::global().registry().devices(); },
        "Every device of every usable plugin, in discovery order.");
  m.def("plugins", [] { return Runtime::global().registry().plugins(); },
        "Every plugin found (and every priority entry naming one that was not), with its state.");
  m.def("default_device", [] { return Runtime::global().default_device(); },
        "The device arrays are made on when no device is given (the config's selection).");
  m.def("cpu_device", [] { return Runtime::global().cpu_device(); },
        "The fallback CPU device.");
  m.def("selection_reason", [] { return Runtime::global().selection().reason; });
  m.def("plugin_search_path", [] { return Runtime::global().registry().search_directories(); });
  m.def("strict", [] { return Runtime::global().strict(); });
  m.def("set_strict", [](bool on) { Runtime::global().set_strict(on); }, nb::arg("on"));
  m.def("fallbacks", [] {
    nb::list out;
    for (const FallbackRecord& r : Runtime::global().fallbacks()) {
      nb::dict d;
      d["op"] = r.op;
      d["dtype"] = r.dtype;
      d["device"] = r.device;
      d["plugin"] = r.plugin;
      d["reason"] = r.reason;
      d["count"] = r.count;
      out.append(d);
    }
    return out;
  });
  m.def("reset_fallbacks", [] { Runtime::global().reset_fallbacks(); });
  m.def("manual_seed", &manual_seed, nb::arg("seed"));
}

}  // namespace

void bind_runtime(nb::module_& m) {
  bind_dtypes(m);
  bind_devices(m);
  bind_plugins(m);
  bind_runtime_functions(m);
}

}  // namespace wick::python

NB_MODULE(_wick, m) {
  using namespace wick::python;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const wick::Error& e) {
      raise_wick_error(e);
    }
  });
  bind_runtime(m);
  ArrayClass cls(m, "Array", "A Wick tensor: an array of the Array API standard, on a device");
  bind_array(m, cls);
  bind_ops(m, cls);
  bind_interop(m, cls);
  bind_nn(m, cls);
}
