// python/src/nn.cpp — autograd on the Array type, the nn layers, losses and parameter store, the
// optimizers and the training data, from Python (wick._wick.autograd, .nn, .optim, .data). The
// models and ONNX are in models.cpp.
//
// Long calls (backward, a layer's forward, an optimizer step, a batch) release the GIL: their
// arguments are converted to C++ objects first, and nothing Python is touched while released.
#include "wick_python.hpp"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <wick/autograd.hpp>
#include <wick/nn/data.hpp>
#include <wick/nn/nn.hpp>
#include <wick/nn/optim.hpp>
#include <wick/safetensors.hpp>

#include <memory>
#include <string>
#include <vector>

namespace wick::python {

void bind_models(nb::module_& m);  // models.cpp: wick._wick.models and wick._wick.onnx

namespace {

using nb::gil_scoped_release;
using Release = nb::call_guard<gil_scoped_release>;

// ---- autograd --------------------------------------------------------------------------------------

// A NoGradGuard whose lifetime Python's `with` delimits (enter and exit on one thread, nested
// last-in first-out, as `with` blocks are).
struct NoGradScope {
  std::unique_ptr<autograd::NoGradGuard> guard;
};

nb::object optional_tensor(const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

// set_requires_grad, with the core's refusal of an integer or bool array as a TypeError.
void set_requires_grad(Tensor& t, bool on) {
  try {
    t.set_requires_grad(on);
  } catch (const Error& e) {
    if (on && !is_float(t.dtype())) throw nb::type_error(e.what());
    throw;
  }
}

void bind_array_autograd(ArrayClass& cls) {
  cls.def_prop_rw("requires_grad", [](const Tensor& t) { return t.requires_grad(); },
                  &set_requires_grad,
                  "Whether backward() accumulates this leaf's gradient into .grad (float arrays only).");
  cls.def("requires_grad_", [](nb::handle self, bool on) {
        set_requires_grad(nb::cast<Tensor&>(self), on);
        return nb::borrow(self);
      }, nb::arg("requires_grad") = true, "Sets requires_grad in place and returns the array.");
  cls.def_prop_ro("is_leaf", &Tensor::is_leaf,
                  "True for arrays no recorded op made (user arrays, and all made without grad).");
  cls.def_prop_rw("grad", [](const Tensor& t) { return optional_tensor(t.grad()); },
                  [](Tensor& t, nb::handle g) { t.set_grad(g.is_none() ? Tensor() : nb::cast<Tensor>(g)); },
                  nb::arg("grad").none(),
                  "The gradient backward() accumulated into this leaf (None before any); assign None to clear it.");
  cls.def_prop_ro("_autograd_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.autograd_meta().get()); },
                  "Equal for two Arrays that are the same autograd variable (0 for none): for de-duplication.");
  cls.def("detach", &Tensor::detach, "The same memory without autograd history (does not require grad).");
  cls.def("backward", [](const Tensor& t, nb::handle seed) {
        Tensor s = seed.is_none() ? Tensor() : to_tensor(seed, t.dtype(), nb::cast(t.device()), std::nullopt);
        gil_scoped_release release;
        t.backward(s);
      }, nb::arg("seed") = nb::none(),
      "Adds d(self)/d(leaf) into every leaf's .grad. A one-element array needs no seed; any other "
      "needs one of its own shape (the vector of the vector-Jacobian product).");
}

void bind_autograd(nb::module_& m) {
  nb::module_ ag = m.def_submodule("autograd", "Reverse-mode automatic differentiation");
  ag.def("is_grad_enabled", &autograd::grad_enabled, "Whether ops record for autograd on this thread.");
  nb::class_<NoGradScope>(ag, "_NoGradScope")
      .def(nb::init<>())
      .def("enter", [](NoGradScope& s) {
        if (s.guard) throw nb::value_error("no_grad: this scope is already entered");
        s.guard = std::make_unique<autograd::NoGradGuard>();
      })
      .def("exit", [](NoGradScope& s) { s.guard.reset(); });
  ag.def("check_gradients", [](nb::callable fn, const std::vector<Tensor>& inputs, double h, uint64_t seed) {
        auto call = [&fn](const std::vector<Tensor>& xs) {
          nb::list args;
          for (const Tensor& x : xs) args.append(nb::cast(x));
          return nb::cast<Tensor>(fn(*args));
        };
        const autograd::GradCheck r = autograd::check_gradients(call, inputs, h, seed);
        return std::make_pair(r.max_error, r.worst);
      }, nb::arg("fn"), nb::arg("inputs"), nb::arg("h") = 1e-6, nb::arg("seed") = 1,
      "Compares autograd with central differences: (max error, the worst element described).");
}

// ---- the parameter store ---------------------------------------------------------------------------

nn::Init make_init(const std::string& kind, double a, double b) {
  using K = nn::Init::Kind;
  static const std::pair<const char*, K> kinds[] = {
      {"zeros", K::Zeros}, {"ones", K::Ones}, {"constant", K::Constant}, {"uniform", K::Uniform},
      {"normal", K::Normal}, {"kaiming_uniform", K::KaimingUniform}, {"kaiming_normal", K::KaimingNormal},
      {"xavier_uniform", K::XavierUniform}, {"xavier_normal", K::XavierNormal}};
  for (const auto& [name, k] : kinds)
    if (kind == name) return nn::Init{k, a, b};
  throw nb::value_error(("init '" + kind + "': expected zeros, ones, constant, uniform, normal, "
                         "kaiming_uniform, kaiming_normal, xavier_uniform or xavier_normal").c_str());
}

void bind_store(nb::module_& m) {
  nb::class_<nn::Path>(m, "Path", "A place in a VarStore's name tree: store.root() / 'encoder' / 0")
      .def("__truediv__", [](const nn::Path& p, const std::string& c) { return p / c; }, nb::keep_alive<0, 1>())
      .def("__truediv__", [](const nn::Path& p, int i) { return p / i; }, nb::keep_alive<0, 1>())
      .def_prop_ro("prefix", &nn::Path::prefix)
      .def("var", [](const nn::Path& p, const std::string& name, const Shape& shape, const std::string& init,
                     double a, double b) { return p.var(name, shape, make_init(init, a, b)); },
           nb::arg("name"), nb::arg("shape"), nb::arg("init") = "zeros", nb::arg("a") = 0.0, nb::arg("b") = 0.0,
           "The trainable parameter `name` here, created with `init` (a, b: its arguments) on first use.")
      .def("buffer", [](const nn::Path& p, const std::string& name, const Shape& shape, const std::string& init,
                        double a, double b) { return p.buffer(name, shape, make_init(init, a, b)); },
           nb::arg("name"), nb::arg("shape"), nb::arg("init") = "zeros", nb::arg("a") = 0.0, nb::arg("b") = 0.0,
           "A state tensor saved with the model but not trained.")
      .def("__repr__", [](const nn::Path& p) { return "Path('" + p.prefix() + "')"; });

  nb::class_<nn::VarStore>(m, "VarStore",
                           "The named parameters of a model (PyTorch's state_dict names), their "
                           "initialisation from a seed, and safetensors save/load.")
      .def("__init__", [](nn::VarStore* self, nb::handle device, DType dtype, uint64_t seed) {
             new (self) nn::VarStore(device_arg(device), dtype, seed);
           }, nb::arg("device") = nb::none(), nb::arg("dtype") = kDefaultFloat, nb::arg("seed") = 0)
      .def("root", &nn::VarStore::root, nb::keep_alive<0, 1>(), "The Path of the empty prefix.")
      .def_prop_ro("device", &nn::VarStore::device)
      .def_prop_ro("dtype", &nn::VarStore::dtype)
      .def_prop_ro("is_trainable", &nn::VarStore::is_trainable, "Whether the parameters require grad.")
      .def("set_trainable", &nn::VarStore::set_trainable, nb::arg("trainable"),
           "Switches every parameter's requires_grad, now and for those created later (freezing).")
      .def("trainable", &nn::VarStore::trainable, "The trainable parameters in creation order.")
      .def("parameters", &nn::VarStore::trainable, "The trainable parameters in creation order.")
      .def("state_dict", &nn::VarStore::state_dict, "Every tensor by name: parameters and buffers.")
      .def("names", &nn::VarStore::names)
      .def("__getitem__", &nn::VarStore::get)
      .def("__contains__", [](const nn::VarStore& s, const std::string& n) { return s.state_dict().count(n) > 0; })
      .def("__len__", [](const nn::VarStore& s) { return s.names().size(); })
      .def("num_parameters", &nn::VarStore::num_parameters)
      .def("save", &nn::VarStore::save, nb::arg("path"), Release(),
           "Writes every tensor to a safetensors file (as PyTorch's save_file would).")
      .def("load", &nn::VarStore::load, nb::arg("path"), nb::arg("allow_extra") = false,
           nb::arg("convert_dtype") = false, Release(),
           "Reads a safetensors file into the existing tensors in place (names and shapes must match).");

  m.def("save_safetensors", [](const std::map<std::string, Tensor>& tensors, const std::string& path,
                               const std::map<std::string, std::string>& metadata) {
        gil_scoped_release release;
        safetensors::save(path, tensors, metadata);
      }, nb::arg("tensors"), nb::arg("path"), nb::arg("metadata") = std::map<std::string, std::string>{},
      "Writes a dict of name -> Array to a safetensors file.");
  m.def("load_safetensors", [](const std::string& path, nb::handle device) {
        const Device d = device_arg(device);
        gil_scoped_release release;
        return safetensors::load(path, d).tensors;
      }, nb::arg("path"), nb::arg("device") = nb::none(), "Reads a safetensors file as a dict of name -> Array.");
}

// ---- layers ----------------------------------------------------------------------------------------

// What every layer has: calling it (the GIL released), forward, train/eval (the thread's mode).
template <class L, class C>
void layer_common(C& cls) {
  cls.def("__call__", [](const L& l, const Tensor& x) { return l(x); }, nb::arg("x"), Release());
  cls.def("forward", [](const L& l, const Tensor& x) { return l(x); }, nb::arg("x"), Release());
  cls.def("train", [](nb::handle self, bool mode) {
        nn::set_training(mode);
        return nb::borrow(self);
      }, nb::arg("mode") = true, "Training mode for Dropout and BatchNorm on this thread (a per-thread setting).");
  cls.def("eval", [](nb::handle self) {
        nn::set_training(false);
        return nb::borrow(self);
      }, "Inference mode on this thread (the same as train(False)).");
  cls.def_prop_ro("training", [](const L&) { return nn::training(); });
}

template <class L>
std::vector<Tensor> weight_and_bias(const L& l) {
  std::vector<Tensor> out{l.weight};
  if (l.bias.defined()) out.push_back(l.bias);
  return out;
}

template <class L, class C>
void weight_bias_props(C& cls) {
  cls.def_prop_ro("weight", [](const L& l) { return l.weight; });
  cls.def_prop_ro("bias", [](const L& l) { return optional_tensor(l.bias); });
  cls.def("parameters", &weight_and_bias<L>);
}

template <class L, class C>
void no_parameters(C& cls) {
  cls.def("parameters", [](const L&) { return std::vector<Tensor>{}; });
}

void bind_param_layers(nb::module_& m) {
  nb::class_<nn::Linear> linear(m, "Linear", "y = x W^T + b, W [out, in]; PyTorch's initialisation.");
  linear.def(nb::init<const nn::Path&, int64_t, int64_t, bool>(), nb::arg("path"), nb::arg("in_features"),
             nb::arg("out_features"), nb::arg("bias") = true);
  layer_common<nn::Linear>(linear);
  weight_bias_props<nn::Linear>(linear);

  nb::class_<nn::Conv2d> conv(m, "Conv2d", "2-D convolution, weight [out, in / groups, k, k].");
  conv.def(nb::init<const nn::Path&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>(),
           nb::arg("path"), nb::arg("in_channels"), nb::arg("out_channels"), nb::arg("kernel_size"),
           nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1,
           nb::arg("bias") = true);
  layer_common<nn::Conv2d>(conv);
  weight_bias_props<nn::Conv2d>(conv);
  conv.def_ro("stride", &nn::Conv2d::stride).def_ro("padding", &nn::Conv2d::padding)
      .def_ro("dilation", &nn::Conv2d::dilation).def_ro("groups", &nn::Conv2d::groups);

  nb::class_<nn::Embedding> emb(m, "Embedding", "Rows of a [num, dim] table for integer ids of any shape.");
  emb.def(nb::init<const nn::Path&, int64_t, int64_t>(), nb::arg("path"), nb::arg("num_embeddings"),
          nb::arg("embedding_dim"));
  layer_common<nn::Embedding>(emb);
  emb.def_prop_ro("weight", [](const nn::Embedding& l) { return l.weight; });
  emb.def("parameters", [](const nn::Embedding& l) { return std::vector<Tensor>{l.weight}; });

  nb::class_<nn::LayerNorm> ln(m, "LayerNorm", "Normalises over the last axes (normalized_shape).");
  ln.def("__init__", [](nn::LayerNorm* self, const nn::Path& p, nb::handle shape, double eps) {
        Shape s = nb::isinstance<nb::int_>(shape) ? Shape{nb::cast<int64_t>(shape)} : nb::cast<Shape>(shape);
        new (self) nn::LayerNorm(p, s, eps);
      }, nb::arg("path"), nb::arg("normalized_shape"), nb::arg("eps") = 1e-5);
  layer_common<nn::LayerNorm>(ln);
  weight_bias_props<nn::LayerNorm>(ln);
  ln.def_ro("eps", &nn::LayerNorm::eps);

  nb::class_<nn::BatchNorm> bn(m, "BatchNorm",
                               "Batch normalisation over axis 1 of [N, C, ...] (BatchNorm1d/2d of PyTorch).");
  bn.def(nb::init<const nn::Path&, int64_t, double, double>(), nb::arg("path"), nb::arg("num_features"),
         nb::arg("eps") = 1e-5, nb::arg("momentum") = 0.1);
  layer_common<nn::BatchNorm>(bn);
  weight_bias_props<nn::BatchNorm>(bn);
  bn.def_prop_ro("running_mean", [](const nn::BatchNorm& l) { return l.running_mean; })
      .def_prop_ro("running_var", [](const nn::BatchNorm& l) { return l.running_var; })
      .def_prop_ro("num_batches_tracked", [](const nn::BatchNorm& l) { return l.num_batches_tracked; });
}

void bind_plain_layers(nb::module_& m) {
  nb::class_<nn::MaxPool2d> mp(m, "MaxPool2d", "2-D max pooling (stride defaults to the kernel).");
  mp.def("__init__", [](nn::MaxPool2d* self, int64_t k, std::optional<int64_t> s, int64_t p) {
        new (self) nn::MaxPool2d(k, s.value_or(0), p);
      }, nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0);
  layer_common<nn::MaxPool2d>(mp);
  no_parameters<nn::MaxPool2d>(mp);

  nb::class_<nn::AvgPool2d> ap(m, "AvgPool2d", "2-D average pooling (stride defaults to the kernel).");
  ap.def("__init__", [](nn::AvgPool2d* self, int64_t k, std::optional<int64_t> s, int64_t p, bool include_pad) {
        new (self) nn::AvgPool2d(k, s.value_or(0), p, include_pad);
      }, nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
      nb::arg("count_include_pad") = true);
  layer_common<nn::AvgPool2d>(ap);
  no_parameters<nn::AvgPool2d>(ap);

  nb::class_<nn::Dropout> dr(m, "Dropout", "Zeroes elements with probability p in training mode.");
  dr.def(nb::init<double>(), nb::arg("p") = 0.5).def_ro("p", &nn::Dropout::p);
  layer_common<nn::Dropout>(dr);
  no_parameters<nn::Dropout>(dr);

  nb::class_<nn::Flatten> fl(m, "Flatten", "[N, d1, d2, ...] -> [N, d1 * d2 * ...].");
  fl.def(nb::init<>());
  layer_common<nn::Flatten>(fl);
  no_parameters<nn::Flatten>(fl);
}

void bind_functions(nb::module_& m) {
  m.def("relu", &nn::relu, Release());
  m.def("sigmoid", &nn::sigmoid, Release());
  m.def("tanh", &nn::tanh, Release());
  m.def("gelu", &nn::gelu, Release());
  m.def("silu", &nn::silu, Release());
  m.def("cross_entropy", &nn::cross_entropy, nb::arg("logits"), nb::arg("labels"), Release(),
        "Mean cross entropy of logits [N, C] (or [N, C, d...]) and integer labels [N] (or [N, d...]).");
  m.def("mse_loss", &nn::mse_loss, nb::arg("input"), nb::arg("target"), Release(), "Mean squared error.");
  m.def("binary_cross_entropy_with_logits", &nn::bce_with_logits, nb::arg("input"), nb::arg("target"), Release(),
        "Mean binary cross entropy of logits, numerically stable.");
  m.def("accuracy", &nn::accuracy, nb::arg("logits"), nb::arg("labels"), Release(),
        "Share of rows whose largest logit is the label.");
  m.def("set_training", &nn::set_training, nb::arg("training"),
        "Training (True) or inference behaviour of Dropout and BatchNorm on this thread.");
  m.def("is_training", &nn::training);
}

// ---- optimizers ------------------------------------------------------------------------------------

std::vector<Tensor> param_list(nb::handle params) {
  std::vector<Tensor> out;
  for (nb::handle p : params) out.push_back(nb::cast<Tensor>(p));
  return out;
}

void bind_optim(nb::module_ m) {
  nb::class_<optim::Optimizer>(m, "Optimizer", "The optimizers' base: step(), zero_grad(), state_dict(), load_state_dict().")
      .def("step", &optim::Optimizer::step, Release(), "One update of every parameter that has a gradient.")
      .def("zero_grad", [](optim::Optimizer& o, bool set_to_none) {
        (void)set_to_none;  // Wick clears gradients; the next backward makes fresh ones
        o.zero_grad();
      }, nb::arg("set_to_none") = true, "Clears every parameter's gradient (.grad becomes None).")
      .def("state_dict", &optim::Optimizer::state_dict, "The state by '<param index>.<name>' and 'step'.")
      .def("load_state_dict", &optim::Optimizer::load_state_dict, nb::arg("state"),
           "Replaces the state with what state_dict() gave for the same parameters (resuming from a "
           "checkpoint); a missing, unknown or misshapen entry is an error naming it.")
      .def_prop_ro("params", &optim::Optimizer::params);

  nb::class_<optim::SGD, optim::Optimizer>(m, "SGD", "torch.optim.SGD's update, with momentum and Nesterov.")
      .def("__init__", [](optim::SGD* self, nb::handle params, double lr, double momentum, double dampening,
                          double weight_decay, bool nesterov) {
             new (self) optim::SGD(param_list(params), {lr, momentum, dampening, weight_decay, nesterov});
           }, nb::arg("params"), nb::arg("lr") = 0.01, nb::arg("momentum") = 0.0, nb::arg("dampening") = 0.0,
           nb::arg("weight_decay") = 0.0, nb::arg("nesterov") = false)
      .def_prop_rw("lr", [](const optim::SGD& o) { return o.options.lr; },
                   [](optim::SGD& o, double lr) { o.options.lr = lr; })
      .def_prop_rw("momentum", [](const optim::SGD& o) { return o.options.momentum; },
                   [](optim::SGD& o, double v) { o.options.momentum = v; });

  auto adam_init = [](bool decoupled) {
    return [decoupled](optim::Adam* self, nb::handle params, double lr, std::pair<double, double> betas,
                       double eps, double weight_decay) {
      optim::AdamOptions o{lr, betas.first, betas.second, eps, weight_decay};
      if (decoupled)
        new (self) optim::AdamW(param_list(params), o);
      else
        new (self) optim::Adam(param_list(params), o);
    };
  };
  nb::class_<optim::Adam, optim::Optimizer> adam(m, "Adam", "torch.optim.Adam's update (L2 weight decay).");
  adam.def("__init__", adam_init(false), nb::arg("params"), nb::arg("lr") = 1e-3,
           nb::arg("betas") = std::make_pair(0.9, 0.999), nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 0.0)
      .def_prop_rw("lr", [](const optim::Adam& o) { return o.options.lr; },
                   [](optim::Adam& o, double lr) { o.options.lr = lr; })
      .def_prop_ro("steps", &optim::Adam::steps);
  nb::class_<optim::AdamW, optim::Adam>(m, "AdamW", "torch.optim.AdamW's update (decoupled weight decay).")
      .def("__init__", [init = adam_init(true)](optim::AdamW* self, nb::handle params, double lr,
                                                 std::pair<double, double> betas, double eps, double wd) {
             init(self, params, lr, betas, eps, wd);
           }, nb::arg("params"), nb::arg("lr") = 1e-3, nb::arg("betas") = std::make_pair(0.9, 0.999),
           nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 0.01);
}

// ---- data ------------------------------------------------------------------------------------------

data::BatchOptions batch_options(int64_t batch_size, bool drop_last, std::optional<Shape> image_shape,
                                 nb::handle device) {
  data::BatchOptions o;
  o.batch_size = batch_size;
  o.drop_last = drop_last;
  o.image_shape = image_shape.value_or(Shape{});
  o.device = device_arg(device);
  return o;
}

void bind_data(nb::module_ m) {
  nb::class_<data::Dataset>(m, "Dataset", "Images [N, ...] and labels [N] in host memory, with a seeded order.")
      .def(nb::init<const Tensor&, const Tensor&>(), nb::arg("images"), nb::arg("labels"))
      .def_static("from_idx", &data::Dataset::from_idx, nb::arg("images_path"), nb::arg("labels_path"), Release(),
                  "Reads two IDX files (raw or gzip'd), as Fashion-MNIST's.")
      .def("__len__", &data::Dataset::size)
      .def_prop_ro("sample_shape", &data::Dataset::sample_shape)
      .def("shuffle", &data::Dataset::shuffle, nb::arg("seed"), "A seeded order (the same on every machine).")
      .def("unshuffle", &data::Dataset::unshuffle)
      .def("num_batches", [](const data::Dataset& d, int64_t batch_size, bool drop_last) {
        return d.num_batches(batch_options(batch_size, drop_last, std::nullopt, nb::none()));
      }, nb::arg("batch_size") = 64, nb::arg("drop_last") = false)
      .def("batch", [](const data::Dataset& d, int64_t index, int64_t batch_size, bool drop_last,
                       std::optional<Shape> image_shape, nb::handle device) {
        const data::BatchOptions o = batch_options(batch_size, drop_last, image_shape, device);
        gil_scoped_release release;
        data::Batch b = d.batch(index, o);
        return std::make_pair(b.images, b.labels);
      }, nb::arg("index"), nb::arg("batch_size") = 64, nb::arg("drop_last") = false,
      nb::arg("image_shape") = nb::none(), nb::arg("device") = nb::none(),
      "Batch `index` of the current order: (images f32 scaled to [0, 1], labels int64).");
  m.def("read_idx", [](const std::string& path, nb::handle device) {
        const Device d = device_arg(device);
        gil_scoped_release release;
        return data::read_idx(path, d);
      }, nb::arg("path"), nb::arg("device") = nb::none(), "An IDX file (raw or gzip'd) as an Array.");
  m.def("find_fashion_mnist", [](const std::string& dir) {
        const data::FashionMnistFiles f = data::find_fashion_mnist(dir);
        nb::dict d;
        d["dir"] = f.dir;
        d["train_images"] = f.train_images;
        d["train_labels"] = f.train_labels;
        d["test_images"] = f.test_images;
        d["test_labels"] = f.test_labels;
        return d;
      }, nb::arg("dir") = "",
      "Fashion-MNIST's four files: `dir`, else $WICK_FASHION_MNIST_DIR, else Debian's dataset-fashion-mnist.");
}

}  // namespace

void bind_nn(nb::module_& m, ArrayClass& cls) {
  bind_array_autograd(cls);
  bind_autograd(m);
  nb::module_ nn_m = m.def_submodule("nn", "Layers, losses and the parameter store");
  bind_store(nn_m);
  bind_param_layers(nn_m);
  bind_plain_layers(nn_m);
  bind_functions(nn_m);
  bind_optim(m.def_submodule("optim", "Optimizers"));
  bind_data(m.def_submodule("data", "Training data"));
  bind_models(m);
}

}  // namespace wick::python
