// `wick run` and `wick inspect`: ONNX models from the command line, on wick::onnx::Model.
#include "commands.hpp"

#include <wick/error.hpp>
#include <wick/npy.hpp>
#include <wick/onnx/model.hpp>
#include <wick/runtime.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace wick::cli {

namespace {

namespace fs = std::filesystem;

std::string bytes_text(int64_t b) {
  char buf[64];
  if (b >= (int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

// An output's file name: the value's name with every character outside [A-Za-z0-9._-] made '_'.
std::string file_stem(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "output";
  return s;
}

// Every model input given, none unknown; a missing one named with its declared type and shape.
std::map<std::string, Tensor> read_feeds(const onnx::Model& model, const std::vector<std::string>& args,
                                         const Device& device) {
  std::map<std::string, Tensor> feeds = read_npy_inputs(args, device);
  for (const auto& feed : feeds) {
    bool known = false;
    for (const onnx::ModelValue& in : model.inputs()) known = known || in.name == feed.first;
    if (!known) throw Error("--input " + feed.first + ": the model has no input of that name");
  }
  std::string missing;
  for (const onnx::ModelValue& in : model.inputs())
    if (!feeds.count(in.name)) missing += "\n  --input " + in.name + "=FILE.npy  (" + in.describe() + ")";
  if (!missing.empty()) throw Error("the model needs these inputs:" + missing);
  return feeds;
}

void write_outputs(const onnx::Model& model, const std::vector<Tensor>& outs, const std::string& dir) {
  if (!dir.empty()) fs::create_directories(dir);
  std::set<std::string> stems;
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string& name = model.outputs()[i].name;
    std::cout << "output " << name << ": " << dtype_name(outs[i].dtype()) << " " << shape_to_string(outs[i].shape());
    if (!dir.empty()) {
      std::string stem = file_stem(name);
      while (!stems.insert(stem).second) stem += "_";
      const std::string path = (fs::path(dir) / (stem + ".npy")).string();
      write_npy(path, outs[i]);
      std::cout << " -> " << path;
    }
    std::cout << "\n";
  }
}

void print_fallbacks(std::ostream& os) {
  const auto records = Runtime::global().fallbacks();
  if (records.empty()) return;
  os << "fell back to the CPU:\n";
  for (const FallbackRecord& r : records)
    os << "  " << r.op << " (" << r.dtype << ") on " << r.device << ": " << r.reason << ", x" << r.count << "\n";
}

}  // namespace

std::map<std::string, Tensor> read_npy_inputs(const std::vector<std::string>& args, const Device& device) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      throw Error("--input " + arg + ": expected NAME=FILE.npy");
    const std::string name = arg.substr(0, eq);
    if (feeds.count(name)) throw Error("--input " + name + " is given twice");
    feeds.emplace(name, read_npy(arg.substr(eq + 1), device));
  }
  return feeds;
}

int run_onnx_run(const ConfigOverrides& overrides, const OnnxRunArgs& args) {
  Runtime::configure(resolve_config(overrides));
  const Device device = Runtime::global().default_device();
  onnx::ModelOptions options;
  options.optimize = !args.no_optimize;
  const onnx::Model model = onnx::Model::load(args.model, device, options);
  const std::map<std::string, Tensor> feeds = read_feeds(model, args.inputs, device);
  std::vector<onnx::Value> values;
  for (const onnx::ModelValue& in : model.inputs()) values.push_back(onnx::Value::of(feeds.at(in.name)));
  std::vector<double> ms;
  onnx::RunStats stats;
  stats.measure_memory = args.stats;
  std::vector<onnx::Value> outs;
  for (int r = 0; r < std::max(args.repeat, 1); ++r) {
    outs = model.run_values(values, &stats);
    ms.push_back(stats.seconds * 1e3);
    std::fprintf(stderr, "run %d: %.3f ms\n", r + 1, ms.back());
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].kind != onnx::Value::Kind::Tensor)
      throw Error("output '" + model.outputs()[i].name + "' is a " + onnx::kind_name(outs[i].kind) +
                  ", which .npy cannot hold");
    tensors.push_back(outs[i].tensor);
  }
  write_outputs(model, tensors, args.output_dir);
  if (ms.size() > 1) {
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    std::fprintf(stderr, "median of %zu runs: %.3f ms (min %.3f, max %.3f)\n", sorted.size(),
                 sorted[sorted.size() / 2], sorted.front(), sorted.back());
  }
  if (args.stats) {
    std::cerr << "device " << device.name() << "; " << stats.nodes << " nodes run (" << model.proto().graph.nodes.size()
              << " in the file; optimiser: " << model.optimize_report().summary() << ")\n"
              << "peak memory of the run's tensors " << bytes_text(stats.peak_bytes) << ", initializers "
              << bytes_text(stats.initializer_bytes) << "\n";
  }
  print_fallbacks(std::cerr);
  return 0;
}

}  // namespace wick::cli
