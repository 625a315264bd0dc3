// commands.hpp — the subcommands of the `wick` CLI.
#pragma once

#include <wick/config.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wick::cli {

// `wick devices [--json]`: every plugin with its state and reason, and the selected device.
int run_devices(const ConfigOverrides& overrides, bool json);
// `wick config check FILE`: validates FILE (and the device names against the plugins found),
// then prints the effective configuration.
int run_config_check(const ConfigOverrides& overrides, const std::string& file);
// `wick config default`: prints the embedded default configuration.
int run_config_default();
// `wick demo`: a small computation on the selected device, checked against hand-worked values.
int run_demo(const ConfigOverrides& overrides);

// `wick embed --model DIR TEXT...`: sentence embeddings (sentence-transformers' pipeline where the
// directory has modules.json), one vector per line or JSON.
struct EmbedArgs {
  std::string model, dtype = "f32";
  std::vector<std::string> texts;
  bool json = false;
};
int run_embed(const ConfigOverrides& overrides, const EmbedArgs& args);
// `wick generate --model DIR --prompt TEXT`: the new text streamed to stdout as tokens come, the
// token counts and rates to stderr. Unset settings come from the directory's generation_config.json.
struct GenerateArgs {
  std::string model, prompt, dtype = "f32";
  std::optional<int64_t> max_tokens, top_k;
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<uint64_t> seed;
  bool exact_activations = false;  // models::LoadOptions::round_activations off
};
int run_generate(const ConfigOverrides& overrides, const GenerateArgs& args);

// `wick quantize --model DIR --type Q4_0 --output FILE.gguf`: a Llama-family model directory
// written as a GGUF file (models::convert_to_gguf).
struct QuantizeArgs {
  std::string model, type, output;
};
int run_quantize(const ConfigOverrides& overrides, const QuantizeArgs& args);

// `wick run model.onnx --input NAME=FILE.npy ...`: runs an ONNX model on the selected device,
// prints each run's time, and writes each output as OUTPUT_DIR/<name>.npy.
struct OnnxRunArgs {
  std::string model, output_dir;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  int repeat = 1;
  bool stats = false, no_optimize = false;
};
int run_onnx_run(const ConfigOverrides& overrides, const OnnxRunArgs& args);
// `wick inspect model.onnx`: inputs, outputs, opsets, op counts, refusals, and per usable device
// whether it runs and which Wick ops fall back to the CPU (a probe run on zeros or --input files).
struct OnnxInspectArgs {
  std::string model;
  std::vector<std::string> inputs;
  int64_t symbolic_extent = 1;
  bool probe = true;
};
int run_onnx_inspect(const ConfigOverrides& overrides, const OnnxInspectArgs& args);
// The --input NAME=FILE.npy arguments of both, read onto `device` (a malformed or repeated one is
// a wick::Error naming it).
std::map<std::string, Tensor> read_npy_inputs(const std::vector<std::string>& args, const Device& device);

// `wick conformance`: the conformance suite on one or more backends (docs/conformance.md).
struct ConformanceArgs {
  std::string backend = "cpu-onednn";  // names, paths or "all", comma-separated
  std::string op, dtype, case_pattern;  // comma-separated globs
  std::string mode = "test";            // test, support, perf
  std::string report_dir = "conformance-report";
  std::string expectations;
  int jobs = 1;
  std::string suite = "golden,diff,onnx";
  double timeout = 30;
  uint64_t seed = 20240601;
  std::string reference = "cpu-onednn";
  std::string onnx_dir = "/usr/share/libonnx-testdata/data/node";
  std::string data_dir, tolerances, overrides_file;
  std::string fail_on = "crash";  // crash, fail, never
  bool list = false, coverage = false;
  std::string command_line;
};
int run_conformance(const ConfigOverrides& overrides, const ConformanceArgs& args);
// The conformance data (golden/data, tolerances.toml, tolerance-overrides.toml): the source
// tree's conformance/ in a build tree, share/wick/conformance when installed;
// WICK_CONFORMANCE_DIR overrides both.
std::string conformance_data_dir();

// `s` as one word of a POSIX shell command (repro lines).
std::string shell_quote(const std::string& s);

// The ops of `wick plugin check`'s smoke set (comma-separated, as `--op` takes them).
inline constexpr const char* kSmokeOps = "copy,fill,add";

// The stages of `plugin check` that load the plugin into this process; each prints one JSON line.
// A PATH always means that file (another manifest of its name in the search path gives way, with a
// note). `wick plugin probe PATH|NAME`: loads and initializes one plugin and prints its state,
// reason, versions and devices (with what their properties get wrong).
int run_plugin_probe(const ConfigOverrides& overrides, const std::string& target);
// `wick plugin buffers PATH|NAME`: writes buffers on every device and reads them back (sizes,
// offsets, canaries); prints the first byte that does not read back as written.
int run_plugin_buffers(const ConfigOverrides& overrides, const std::string& target);
// `wick plugin leaks PATH|NAME`: runs the smoke set in this process and compares the memory (the
// device's free memory, the heap) before and after; prints a leak with its buffers and bytes.
int run_plugin_leaks(const ConfigOverrides& overrides, const std::string& target);
// `wick plugin check PATH|NAME`: probe, claimed capability, smoke set and conformance, each in a
// child process, then a verdict naming the next thing to fix (exit 0 on PASS, 1 on FAIL).
struct PluginCheckArgs {
  std::string target;
  std::string report_dir = "plugin-check-report";
  std::string suite = "golden,diff,onnx";
  int jobs = 2;
  double case_timeout = 30;    // seconds per conformance case
  double probe_timeout = 30;   // seconds for the probe child
  double stage_timeout = 1800; // seconds for each conformance stage
};
int run_plugin_check(const ConfigOverrides& overrides, const PluginCheckArgs& args);

}  // namespace wick::cli
