// python/src/interop.cpp — exchange with other array libraries: DLPack (__dlpack__,
// __dlpack_device__, from_dlpack) and the buffer protocol (bytes, array.array, memoryview).
#include "wick_python.hpp"

#include <dlpack/dlpack.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <wick/runtime.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace wick::python {
namespace {

// DLPack 0.6 (Debian's header) has no bool code; 0.8 and later give it 6.
constexpr uint8_t kDLBoolCode = 6;

DLDataType dl_dtype(DType t) {
  DLDataType d;
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::Bool: d.code = kDLBoolCode; break;
    case DType::I8: case DType::I16: case DType::I32: case DType::I64: d.code = kDLInt; break;
    case DType::U8: case DType::U32: case DType::U64: d.code = kDLUInt; break;
    case DType::BF16: d.code = kDLBfloat; break;
    default: d.code = kDLFloat; break;
  }
  return d;
}

DType wick_dtype(DLDataType d) {
  const std::string what = "DLPack dtype (code " + std::to_string(d.code) + ", " + std::to_string(d.bits) +
                           " bits, " + std::to_string(d.lanes) + " lanes)";
  if (d.lanes != 1) throw nb::type_error((what + ": vector lanes are not supported").c_str());
  if (d.code == kDLFloat && d.bits == 32) return DType::F32;
  if (d.code == kDLFloat && d.bits == 64) return DType::F64;
  if (d.code == kDLFloat && d.bits == 16) return DType::F16;
  if (d.code == kDLBfloat && d.bits == 16) return DType::BF16;
  if (d.code == kDLInt && d.bits == 8) return DType::I8;
  if (d.code == kDLInt && d.bits == 16) return DType::I16;
  if (d.code == kDLInt && d.bits == 32) return DType::I32;
  if (d.code == kDLInt && d.bits == 64) return DType::I64;
  if (d.code == kDLUInt && d.bits == 8) return DType::U8;
  if (d.code == kDLUInt && d.bits == 32) return DType::U32;
  if (d.code == kDLUInt && d.bits == 64) return DType::U64;
  if (d.code == kDLBoolCode && d.bits == 8) return DType::Bool;
  throw nb::type_error((what + " has no Wick dtype").c_str());
}

// The DLPack device type of a Wick device: host memory is kDLCPU; a GPU plugin's device is
// kDLCUDA (cuda) or kDLOpenCL (opencl); anything else kDLExtDev.
std::pair<int, int> dl_device(const Device& d) {
  if (d.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) return {kDLCPU, 0};
  if (d.plugin_name() == "cuda") return {kDLCUDA, d.index()};
  if (d.plugin_name() == "opencl") return {kDLOpenCL, d.index()};
  return {kDLExtDev, d.index()};
}

// What a capsule keeps alive: the tensor whose memory it describes (or a host copy of it), and
// the shape and strides arrays DLTensor points into.
struct Exported {
  Tensor tensor;
  std::vector<unsigned char> copy;  // the elements when the tensor's memory has no host address
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

void delete_exported(DLManagedTensor* m) { delete static_cast<Exported*>(m->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // A consumer renames the capsule "used_dltensor" and calls the deleter itself.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  } else {
    PyErr_Clear();
  }
}

// A capsule over the tensor's own memory (its host address and strides) where its device gives
// one and it may be written (a read-only tensor views a mapped file: a consumer's write would
// fault); else over a C-order host copy when `copy_allowed`, else BufferError. `force_copy`:
// always the copy (copy=True).
nb::object export_capsule(const Tensor& t, bool copy_allowed, bool force_copy) {
  auto e = std::make_unique<Exported>();
  e->tensor = t;
  e->shape = t.shape();
  void* data = (force_copy || t.is_read_only()) ? nullptr : t.host_data();
  if (data != nullptr) {
    e->strides = t.strides();
  } else {
    if (!copy_allowed) {
      raise(PyExc_BufferError, ("__dlpack__: copy=False, but this " + t.device().name() + " array " +
                                (t.is_read_only() ? "is read-only (a mapped file)" : "has no host address") +
                                " to share").c_str());
    }
    e->copy.resize(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
    if (!e->copy.empty()) t.copy_to_host(e->copy.data(), e->copy.size());
    data = e->copy.data();
    e->strides.resize(e->shape.size());
    int64_t s = 1;
    for (size_t i = e->shape.size(); i-- > 0;) {
      e->strides[i] = s;
      s *= e->shape[i];
    }
  }
  DLTensor& d = e->managed.dl_tensor;
  d.data = data;
  d.device = DLDevice{kDLCPU, 0};
  d.ndim = static_cast<int>(e->shape.size());
  d.dtype = dl_dtype(t.dtype());
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &delete_exported;
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", &capsule_destructor);
  if (!cap) throw nb::python_error();
  e.release();  // the capsule (or its consumer) owns it now
  return nb::steal(cap);
}

// Keeps an imported DLManagedTensor alive as long as the Wick tensor over its memory.
std::shared_ptr<const void> keep_managed(DLManagedTensor* m) {
  return std::shared_ptr<const void>(m, [](const void* p) {
    auto* mt = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (mt->deleter) mt->deleter(mt);
  });
}

}  // namespace

std::optional<Tensor> from_dlpack_object(nb::handle obj, const Device& device, std::optional<bool> copy) {
  if (nb::hasattr(obj, "__dlpack_device__")) {
    nb::tuple dev = nb::borrow<nb::tuple>(obj.attr("__dlpack_device__")());
    const int type = nb::cast<int>(dev[0]);
    if (type != kDLCPU && type != kDLCUDAHost) {
      raise(PyExc_BufferError, ("from_dlpack: the object's memory is on DLPack device type " + std::to_string(type) +
                                "; Wick imports host memory (kDLCPU) only: move it to the CPU first").c_str());
    }
  }
  // The 2023.12 protocol passes max_version; the producers of Debian 12 (NumPy 1.24, PyTorch 1.13)
  // take only stream, and give a DLPack 0.x capsule.
  nb::object cap = obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    throw nb::type_error("from_dlpack: __dlpack__ did not return an unused 'dltensor' capsule");
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  std::shared_ptr<const void> owner = keep_managed(m);
  const DLTensor& d = m->dl_tensor;
  const DType t = wick_dtype(d.dtype);
  HostMemoryOptions options;
  if (d.strides != nullptr) options.strides.assign(d.strides, d.strides + d.ndim);
  options.writable = true;  // DLPack 0.x has no read-only flag; NumPy refuses to export read-only arrays
  Tensor out = Tensor::from_host_memory(owner, static_cast<unsigned char*>(d.data) + d.byte_offset,
                                        Shape(d.shape, d.shape + d.ndim), t, device, options);
  if (copy && *copy) return out.is_host_view() ? out.clone() : out;
  if (copy && !*copy && !out.is_host_view()) {
    raise(PyExc_BufferError, ("from_dlpack: copy=False, but " + device.name() +
                              " cannot view this memory (it copied it)").c_str());
  }
  return out;
}

Tensor from_buffer(nb::handle obj, std::optional<DType> dtype, const Device& device) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_RECORDS_RO | PyBUF_FORMAT) != 0) throw nb::python_error();
  struct Release { Py_buffer* v; ~Release() { PyBuffer_Release(v); } } release{&view};
  std::string fmt = view.format ? view.format : "B";
  if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')) fmt = fmt.substr(1);
  DType t;
  if (fmt == "f") t = DType::F32; else if (fmt == "d") t = DType::F64; else if (fmt == "e") t = DType::F16;
  else if (fmt == "b") t = DType::I8; else if (fmt == "B") t = DType::U8; else if (fmt == "h") t = DType::I16;
  else if (fmt == "i" || (fmt == "l" && view.itemsize == 4)) t = DType::I32;
  else if (fmt == "q" || (fmt == "l" && view.itemsize == 8)) t = DType::I64;
  else if (fmt == "I" || (fmt == "L" && view.itemsize == 4)) t = DType::U32;
  else if (fmt == "Q" || (fmt == "L" && view.itemsize == 8)) t = DType::U64;
  else if (fmt == "?") t = DType::Bool;
  else throw nb::type_error(("asarray: buffer format '" + fmt + "' has no Wick dtype").c_str());
  Shape shape(view.shape, view.shape + view.ndim);
  std::vector<unsigned char> dense(static_cast<size_t>(view.len));
  if (PyBuffer_ToContiguous(dense.data(), &view, view.len, 'C') != 0) throw nb::python_error();
  Tensor out = Tensor::from_bytes(dense.data(), dense.size(), shape, t, device);
  return dtype && *dtype != t ? out.to(*dtype) : out;
}

// A writable NumPy array over the tensor's own memory (nanobind exports it through the buffer
// protocol: NumPy < 2 marks every DLPack import read-only), or None where the memory has no host
// address or is read-only (a mapped file). The NumPy array keeps the tensor's memory alive.
nb::object numpy_view(const Tensor& t) {
  if (t.is_read_only() || t.dtype() == DType::BF16) return nb::none();
  void* data = t.host_data();
  if (data == nullptr) return nb::none();
  auto* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  const DLDataType d = dl_dtype(t.dtype());
  const nb::dlpack::dtype dt{d.code, d.bits, d.lanes};
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  const std::vector<int64_t> strides = t.strides();
  return nb::cast(nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, strides.data(), dt,
                                         nb::device::cpu::value));
}

void bind_interop(nb::module_& m, ArrayClass& cls) {
  cls.def("_numpy_view", &numpy_view);
  cls.def("__dlpack_device__", [](const Tensor& t) { return dl_device(t.device()); });
  cls.def("__dlpack__", [](const Tensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_dev,
                           std::optional<bool> copy) {
        (void)stream;       // host memory: nothing to order
        (void)max_version;  // Debian's DLPack 0.6 capsule, which every consumer takes
        const bool on_host = dl_device(t.device()).first == kDLCPU;
        if (!dl_dev.is_none()) {
          const int type = nb::cast<int>(nb::borrow<nb::tuple>(dl_dev)[0]);
          if (type != kDLCPU && type != dl_device(t.device()).first) {
            raise(PyExc_BufferError, "__dlpack__: dl_device names a device Wick cannot export to");
          }
          if (type == kDLCPU && !on_host && !(copy && *copy)) {
            raise(PyExc_BufferError, "__dlpack__: the array is not in host memory; a copy to the CPU needs copy=True");
          }
        } else if (!on_host) {
          raise(PyExc_BufferError, ("__dlpack__: " + t.device().name() +
                                    " memory has no DLPack export; ask for a host copy with dl_device=(1, 0), copy=True").c_str());
        }
        return export_capsule(t, !(copy && !*copy), copy && *copy);
      }, nb::kw_only(), nb::arg("stream").none() = nb::none(), nb::arg("max_version").none() = nb::none(),
      nb::arg("dl_device").none() = nb::none(), nb::arg("copy").none() = nb::none());
  m.def("from_dlpack", [](nb::handle x, nb::handle device, std::optional<bool> copy) {
        // Wick's own arrays (any device) need no capsule: the array itself, moved or copied as asked.
        if (nb::isinstance<Tensor>(x)) return to_tensor(x, std::nullopt, device, copy);
        Tensor t = *from_dlpack_object(x, Runtime::global().cpu_device(), copy);
        if (!device.is_none()) {
          const Device d = device_arg(device);
          if (!(d == t.device())) {
            if (copy && !*copy) throw nb::value_error("from_dlpack: copy=False, but the device differs from the producer's");
            return t.to(d);
          }
        }
        return t;
      }, nb::arg("x"), nb::kw_only(), nb::arg("device").none() = nb::none(), nb::arg("copy").none() = nb::none());
}

}  // namespace wick::python
