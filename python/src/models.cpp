// python/src/models.cpp — the models layer and ONNX from Python (wick._wick.models, .onnx):
// sentence embeddings with a BERT directory, text generation with a causal LM directory or a GGUF
// file, and ONNX models run on a device. Each is loaded once and then called with the GIL
// released (generate, embed, run): their inputs become C++ values first.
#include "wick_python.hpp"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <wick/models/bert.hpp>
#include <wick/models/generate.hpp>
#include <wick/models/gguf.hpp>
#include <wick/onnx/model.hpp>
#include <wick/tokenizers/tokenizer.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wick::python {
namespace {

namespace fs = std::filesystem;
using nb::gil_scoped_release;

models::LoadOptions load_options(nb::handle device, std::optional<DType> dtype, bool trainable) {
  models::LoadOptions o;
  o.device = device_arg(device);
  o.dtype = dtype;
  o.trainable = trainable;
  return o;
}

tokenizers::Tokenizer directory_tokenizer(const fs::path& dir) {
  const models::ModelDir md = models::ModelDir::open(dir);
  if (md.tokenizer.empty())
    throw Error("model directory " + dir.string() + " has no tokenizer.json (needed to turn text into tokens)");
  return tokenizers::Tokenizer::from_file(md.tokenizer.string());
}

// ---- sentence embeddings ---------------------------------------------------------------------------

// A BERT encoder with its pooling and tokenizer: what `wick embed` runs.
struct Embedder {
  std::unique_ptr<models::SentenceEmbedder> model;
  std::unique_ptr<tokenizers::Tokenizer> tok;
  Device device;

  Embedder(const fs::path& dir, const models::LoadOptions& o) : device(o.device) {
    if (fs::exists(dir / "modules.json")) {
      model = models::SentenceEmbedder::load(dir, o);
    } else {  // the encoder's mean-pooled hidden states, not normalised (as `wick embed`)
      auto bert = models::BertModel::load(dir, o);
      const int64_t max_len = bert->config().max_position_embeddings;
      model = std::make_unique<models::SentenceEmbedder>(std::move(bert), models::PoolingConfig{}, max_len);
    }
    tok = std::make_unique<tokenizers::Tokenizer>(directory_tokenizer(dir));
    tokenizers::Truncation trunc;
    trunc.max_length = static_cast<size_t>(model->max_seq_length());
    tok->set_truncation(trunc);
    tokenizers::Padding pad = tok->padding().value_or(tokenizers::Padding{});
    pad.length = std::nullopt;  // to the longest text of the batch, as sentence-transformers pads
    pad.side = tokenizers::Padding::Side::Right;
    tok->set_padding(pad);
  }

  Tensor embed(const std::vector<std::string>& texts) const {
    if (texts.empty()) throw Error("embed: no text given");
    const auto enc = tok->encode_batch(texts);
    const int64_t rows = static_cast<int64_t>(enc.size()), cols = static_cast<int64_t>(enc[0].size());
    std::vector<int64_t> ids, mask;
    for (const auto& e : enc) {
      ids.insert(ids.end(), e.ids.begin(), e.ids.end());
      mask.insert(mask.end(), e.attention_mask.begin(), e.attention_mask.end());
    }
    return model->encode(Tensor::from_vector(ids, Shape{rows, cols}, device),
                         Tensor::from_vector(mask, Shape{rows, cols}, device));
  }
};

void bind_embedder(nb::module_& m) {
  nb::class_<Embedder>(m, "SentenceEmbedder",
                       "A BERT encoder with sentence-transformers' pooling and its tokenizer.")
      .def("__init__", [](Embedder* self, const std::string& dir, nb::handle device, std::optional<DType> dtype) {
             const models::LoadOptions o = load_options(device, dtype, false);
             gil_scoped_release release;
             new (self) Embedder(dir, o);
           }, nb::arg("path"), nb::arg("device") = nb::none(), nb::arg("dtype").none() = kDefaultFloat)
      .def("embed", [](const Embedder& e, nb::handle texts) {
             std::vector<std::string> v = nb::isinstance<nb::str>(texts)
                                              ? std::vector<std::string>{nb::cast<std::string>(texts)}
                                              : nb::cast<std::vector<std::string>>(texts);
             gil_scoped_release release;
             return e.embed(v);
           }, nb::arg("texts"),
           "Embeddings [len(texts), dim] f32 of a list of texts (one text gives one row), tokenized, "
           "truncated and padded as sentence-transformers does.")
      .def("encode", [](const Embedder& e, const Tensor& ids, std::optional<Tensor> mask) {
             gil_scoped_release release;
             return e.model->encode(ids, mask.value_or(Tensor()));
           }, nb::arg("input_ids"), nb::arg("attention_mask") = nb::none(),
           "Embeddings [B, dim] of token ids [B, T] and their attention mask [B, T].")
      .def("tokenize", [](const Embedder& e, const std::string& text) {
             const auto ids = e.tok->encode(text).ids;
             return std::vector<int64_t>(ids.begin(), ids.end());
           }, nb::arg("text"))
      .def_prop_ro("dimension", [](const Embedder& e) { return e.model->model().config().hidden_size; })
      .def_prop_ro("max_seq_length", [](const Embedder& e) { return e.model->max_seq_length(); })
      .def_prop_ro("device", [](const Embedder& e) { return e.device; });
}

// ---- causal language models ------------------------------------------------------------------------

struct LanguageModel {
  std::unique_ptr<models::CausalLM> lm;
  std::unique_ptr<tokenizers::Tokenizer> tok;
  models::GenerationConfig defaults;

  LanguageModel(const fs::path& path, models::LoadOptions o, bool round_activations) {
    o.round_activations = round_activations;
    if (models::is_gguf_file(path)) {  // opened once, for the model and its tokenizer
      const gguf::GgufFile file(path.string());
      lm = models::LlamaForCausalLM::from_gguf(file, o);
      tok = std::make_unique<tokenizers::Tokenizer>(models::tokenizer_from_gguf(file));
      defaults.stop_token_ids = lm->special_tokens().eos;
    } else {
      lm = models::load_causal_lm(path, o);
      tok = std::make_unique<tokenizers::Tokenizer>(directory_tokenizer(path));
      defaults = models::read_generation_config(path);
    }
  }
};

struct GenerateArgs {
  std::optional<int64_t> max_tokens, top_k;
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<uint64_t> seed;
  std::optional<std::vector<int64_t>> stop_token_ids;

  models::GenerationConfig apply(models::GenerationConfig g) const {
    if (max_tokens) g.max_new_tokens = *max_tokens;
    if (temperature) g.temperature = *temperature;
    if (top_k) g.top_k = *top_k;
    if (top_p) g.top_p = *top_p;
    if (repetition_penalty) g.repetition_penalty = *repetition_penalty;
    if (seed) g.seed = *seed;
    if (stop_token_ids) g.stop_token_ids = *stop_token_ids;
    g.validate();
    return g;
  }
};

// The new tokens of each prompt row. `on_token` (may be empty) runs for each token with the GIL
// held again; the rest runs without it.
std::vector<std::vector<int64_t>> generate_ids(const LanguageModel& m, const std::vector<std::vector<int64_t>>& prompts,
                                               const GenerateArgs& a, const models::TokenCallback& on_token = {}) {
  const models::GenerationConfig g = a.apply(m.defaults);
  gil_scoped_release release;
  return models::generate(*m.lm, prompts, g, on_token).tokens;
}

std::string decode_stream(const tokenizers::Tokenizer& tok, const std::vector<int64_t>& ids) {
  tokenizers::DecodeStream stream(tok);
  std::string text;
  for (int64_t id : ids)
    if (auto piece = stream.step(static_cast<int32_t>(id))) text += *piece;
  return text;
}

#define WICK_GENERATE_ARGS                                                                        \
  nb::kw_only(), nb::arg("max_tokens") = nb::none(), nb::arg("temperature") = nb::none(),           \
      nb::arg("top_k") = nb::none(), nb::arg("top_p") = nb::none(),                                 \
      nb::arg("repetition_penalty") = nb::none(), nb::arg("seed") = nb::none(), nb::arg("stop_token_ids") = nb::none()

void bind_language_model(nb::module_& m) {
  nb::class_<LanguageModel>(m, "CausalLM",
                            "A decoder-only language model (Llama 2/3, Mistral, Qwen2, GPT-2, GGUF) with its tokenizer.")
      .def("__init__", [](LanguageModel* self, const std::string& path, nb::handle device, std::optional<DType> dtype,
                          bool round_activations) {
             const models::LoadOptions o = load_options(device, dtype, false);
             gil_scoped_release release;
             new (self) LanguageModel(path, o, round_activations);
           }, nb::arg("path"), nb::arg("device") = nb::none(), nb::arg("dtype").none() = kDefaultFloat,
           nb::arg("round_activations") = true)
      .def("generate", [](const LanguageModel& lm, const std::string& prompt, std::optional<int64_t> max_tokens,
                          std::optional<double> temperature, std::optional<int64_t> top_k, std::optional<double> top_p,
                          std::optional<double> rep, std::optional<uint64_t> seed,
                          std::optional<std::vector<int64_t>> stop, nb::handle on_token) {
             const auto enc = lm.tok->encode(prompt);
             if (enc.ids.empty()) throw nb::value_error("generate: the prompt encodes to no tokens");
             const GenerateArgs a{max_tokens, top_k, temperature, top_p, rep, seed, stop};
             models::TokenCallback stream_text;
             tokenizers::DecodeStream stream(*lm.tok);
             if (!on_token.is_none()) {
               stream_text = [&](int64_t, int64_t id) {
                 const auto piece = stream.step(static_cast<int32_t>(id));
                 if (!piece) return true;
                 nb::gil_scoped_acquire acquire;
                 nb::object r = on_token(*piece);
                 return r.is_none() || nb::cast<bool>(nb::bool_(r));
               };
             }
             const auto out = generate_ids(lm, {std::vector<int64_t>(enc.ids.begin(), enc.ids.end())}, a, stream_text);
             return decode_stream(*lm.tok, out[0]);
           }, nb::arg("prompt"), WICK_GENERATE_ARGS, nb::arg("on_token") = nb::none(),
           "The text generated after `prompt` (greedy unless temperature > 0; the directory's "
           "generation_config.json gives the defaults, the keywords override them). on_token: called "
           "with each piece of text as it completes (streaming); returning False stops.")
      .def("generate_ids", [](const LanguageModel& lm, const std::vector<std::vector<int64_t>>& prompts,
                              std::optional<int64_t> max_tokens, std::optional<double> temperature,
                              std::optional<int64_t> top_k, std::optional<double> top_p, std::optional<double> rep,
                              std::optional<uint64_t> seed, std::optional<std::vector<int64_t>> stop) {
             return generate_ids(lm, prompts, {max_tokens, top_k, temperature, top_p, rep, seed, stop});
           }, nb::arg("prompts"), WICK_GENERATE_ARGS,
           "The new token ids of each prompt (lists of ids; a batch is left-padded as transformers does).")
      .def("forward", [](const LanguageModel& lm, const Tensor& ids, std::optional<Tensor> mask) {
             gil_scoped_release release;
             return lm.lm->forward(ids, mask.value_or(Tensor()));
           }, nb::arg("input_ids"), nb::arg("attention_mask") = nb::none(), "Logits [B, T, V] f32 of ids [B, T].")
      .def("encode", [](const LanguageModel& lm, const std::string& text) {
             const auto ids = lm.tok->encode(text).ids;
             return std::vector<int64_t>(ids.begin(), ids.end());
           }, nb::arg("text"), "The prompt's token ids.")
      .def("decode", [](const LanguageModel& lm, const std::vector<int64_t>& ids) { return decode_stream(*lm.tok, ids); },
           nb::arg("ids"), "Text of token ids (special tokens skipped).")
      .def_prop_ro("model_type", [](const LanguageModel& lm) { return lm.lm->model_type(); })
      .def_prop_ro("vocab_size", [](const LanguageModel& lm) { return lm.lm->vocab_size(); })
      .def_prop_ro("eos_token_ids", [](const LanguageModel& lm) { return lm.defaults.stop_token_ids; })
      .def_prop_ro("device", [](const LanguageModel& lm) { return lm.lm->device(); })
      .def_prop_ro("dtype", [](const LanguageModel& lm) { return lm.lm->dtype(); });
}

void bind_models_module(nb::module_ m) {
  bind_embedder(m);
  bind_language_model(m);
  m.def("model_type", [](const std::string& path) -> std::string {
        if (models::is_gguf_file(path)) return "gguf";
        return models::ModelDir::open(path).model_type();
      }, nb::arg("path"), "config.json's model_type of a model directory, or 'gguf' for a GGUF file.");
}

// ---- ONNX ------------------------------------------------------------------------------------------

std::string value_kind(onnx::Value::Kind k) {
  return k == onnx::Value::Kind::Tensor ? "tensor" : k == onnx::Value::Kind::Sequence ? "sequence" : "optional";
}

// Each input of the model from `feeds` (a dict by name, a sequence in input order, or one array for
// a model of one input); objects that are not Arrays become arrays of the declared dtype.
std::vector<Tensor> onnx_feeds(const onnx::Model& model, nb::handle feeds) {
  const auto& ins = model.inputs();
  std::vector<nb::handle> objs;
  if (nb::isinstance<nb::dict>(feeds)) {
    nb::dict d = nb::borrow<nb::dict>(feeds);
    for (const auto& in : ins) {
      if (!d.contains(in.name.c_str())) throw nb::key_error(("run: no value for the input '" + in.name + "'").c_str());
      objs.push_back(d[in.name.c_str()]);
    }
    if (d.size() != ins.size()) throw nb::value_error("run: the dict names an input the model does not have");
  } else if (ins.size() == 1 && (nb::isinstance<Tensor>(feeds) || nb::hasattr(feeds, "__array_interface__"))) {
    objs.push_back(feeds);
  } else {
    for (nb::handle h : feeds) objs.push_back(h);
    if (objs.size() != ins.size())
      throw nb::value_error(("run: the model has " + std::to_string(ins.size()) + " inputs; " +
                             std::to_string(objs.size()) + " were given").c_str());
  }
  std::vector<Tensor> out;
  nb::object device = nb::cast(model.device());
  for (size_t i = 0; i < ins.size(); ++i) {
    const bool is_array = nb::isinstance<Tensor>(objs[i]);
    std::optional<DType> dtype;
    if (!is_array && ins[i].kind == onnx::Value::Kind::Tensor) dtype = ins[i].dtype;
    out.push_back(to_tensor(objs[i], dtype, device, std::nullopt));
  }
  return out;
}

void bind_onnx(nb::module_ m) {
  nb::class_<onnx::ModelValue>(m, "ValueInfo", "A graph input or output as the model declares it.")
      .def_ro("name", &onnx::ModelValue::name)
      .def_ro("dtype", &onnx::ModelValue::dtype)
      .def_prop_ro("kind", [](const onnx::ModelValue& v) { return value_kind(v.kind); })
      .def_prop_ro("shape", [](const onnx::ModelValue& v) -> nb::object {
        if (!v.has_shape) return nb::none();
        nb::list l;
        for (int64_t d : v.shape) l.append(d < 0 ? nb::none() : nb::cast(d));
        return nb::tuple(l);
      }, "The declared shape (None for an unknown extent), or None when the model declares none.")
      .def("__repr__", [](const onnx::ModelValue& v) { return "ValueInfo('" + v.name + "', " + v.describe() + ")"; });

  nb::class_<onnx::Model>(m, "Model", "An ONNX model loaded for inference on one device.")
      .def("__init__", [](onnx::Model* self, const std::string& path, nb::handle device, bool optimize) {
             const Device d = device_arg(device);
             onnx::ModelOptions o;
             o.optimize = optimize;
             gil_scoped_release release;
             new (self) onnx::Model(onnx::Model::load(path, d, o));
           }, nb::arg("path"), nb::arg("device") = nb::none(), nb::arg("optimize") = true)
      .def_prop_ro("inputs", &onnx::Model::inputs)
      .def_prop_ro("outputs", &onnx::Model::outputs)
      .def_prop_ro("opset", &onnx::Model::opset)
      .def_prop_ro("device", &onnx::Model::device)
      .def("run", [](const onnx::Model& model, nb::handle feeds) {
             const std::vector<Tensor> ins = onnx_feeds(model, feeds);
             std::vector<Tensor> outs;
             {
               gil_scoped_release release;
               outs = model.run(ins);
             }
             nb::dict d;
             for (size_t i = 0; i < outs.size(); ++i) d[model.outputs()[i].name.c_str()] = nb::cast(outs[i]);
             return d;
           }, nb::arg("inputs"),
           "Runs the graph: inputs as a dict of name -> array (or a list in input order); returns a "
           "dict of output name -> Array.");
}

}  // namespace

void bind_models(nb::module_& m) {
  bind_models_module(m.def_submodule("models", "Hugging Face model directories and GGUF files"));
  bind_onnx(m.def_submodule("onnx", "ONNX models"));
}

}  // namespace wick::python
