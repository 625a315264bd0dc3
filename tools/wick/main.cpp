// wick — the command-line front end: devices, config, demo, conformance, plugin checks, models.
#include "commands.hpp"
#include "terminal.hpp"

#include <wick/wick_plugin.h>
#include <wick/error.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include <unistd.h>

namespace {

// The options every subcommand shares, as given on the command line.
struct GlobalOptions {
  std::string config_file, devices, log_level;
  bool strict = false;
  std::vector<std::string> plugin_paths;

  void add_to(CLI::App& app) {
    app.add_option("--config", config_file,
                   "Config file (else WICK_CONFIG, else ~/.config/wick/config.toml)");
    app.add_option("--device", devices,
                   "Device priority, comma-separated, e.g. opencl,cpu (else WICK_DEVICE)");
    app.add_flag("--strict", strict, "Make any fallback an error (else WICK_STRICT)");
    app.add_option("--plugin-path", plugin_paths,
                   "Extra plugin directory, searched first (repeatable)");
    app.add_option("--log-level", log_level,
                   "off, error, warn, info or debug (else WICK_LOG_LEVEL)");
  }
  wick::ConfigOverrides overrides() const {
    wick::ConfigOverrides cli;
    if (!config_file.empty()) cli.config_file = config_file;
    // The config layer splits the comma list and rejects empty or repeated entries.
    if (!devices.empty()) cli.devices = std::vector<std::string>{devices};
    if (strict) cli.strict = true;
    cli.plugin_paths = plugin_paths;
    if (!log_level.empty()) cli.log_level = log_level;
    return cli;
  }
};

CLI::App* add_conformance_command(CLI::App& app, wick::cli::ConformanceArgs& conf) {
  CLI::App* conf_cmd = app.add_subcommand(
      "conformance", "Run the conformance suite on backends (docs/conformance.md)");
  conf_cmd
      ->add_option("--backend", conf.backend,
                   "Plugin names, plugin paths or 'all', comma-separated")
      ->capture_default_str();
  conf_cmd->add_option("--op", conf.op,
                       "Op name globs, comma-separated (ONNX: the op type, e.g. Add)");
  conf_cmd->add_option("--dtype", conf.dtype, "Dtype globs, comma-separated (excludes ONNX cases)");
  conf_cmd->add_option("--case", conf.case_pattern, "Case id globs, comma-separated");
  conf_cmd->add_option("--mode", conf.mode,
                       "test, support (claimed capability), perf or grad (autograd against finite differences)")
      ->check(CLI::IsMember({"test", "support", "perf", "grad"}))
      ->capture_default_str();
  conf_cmd->add_option("--report", conf.report_dir, "Report directory")->capture_default_str();
  conf_cmd->add_option("--expectations", conf.expectations,
                       "Expectations file (XFAIL/SKIP entries)");
  conf_cmd->add_option("--jobs", conf.jobs, "Worker processes per backend")->capture_default_str();
  conf_cmd->add_option("--suite", conf.suite, "Case sources: golden, diff, onnx")
      ->capture_default_str();
  conf_cmd->add_option("--timeout", conf.timeout, "Per-case timeout in seconds")
      ->capture_default_str();
  conf_cmd->add_option("--seed", conf.seed, "Base seed (case seed = hash(base, case id))")
      ->capture_default_str();
  conf_cmd->add_option("--reference", conf.reference, "Reference backend of the differential mode")
      ->capture_default_str();
  conf_cmd->add_option("--onnx-dir", conf.onnx_dir, "ONNX node-test directory")
      ->capture_default_str();
  conf_cmd->add_option("--golden-dir", conf.data_dir, "Golden data directory");
  conf_cmd->add_option("--tolerances", conf.tolerances, "Tolerance table (TOML)");
  conf_cmd->add_option("--tolerance-overrides", conf.overrides_file,
                       "Tolerance overrides (TOML, a reason each)");
  conf_cmd
      ->add_option("--fail-on", conf.fail_on,
                   "Exit non-zero on: crash (CRASH/TIMEOUT), fail (also FAIL), never")
      ->check(CLI::IsMember({"crash", "fail", "never"}))
      ->capture_default_str();
  conf_cmd->add_flag("--list", conf.list, "List the selected cases and exit");
  conf_cmd->add_flag("--coverage", conf.coverage,
                     "List every op of the op table with its number of golden cases, and exit");
  return conf_cmd;
}

// `wick config check FILE` and `wick config default`.
struct ConfigCommands {
  CLI::App* check;
  CLI::App* print_default;
};

ConfigCommands add_config_command(CLI::App& app, std::string& check_file) {
  CLI::App* config_cmd = app.add_subcommand("config", "Check or print configuration");
  config_cmd->require_subcommand(1);
  CLI::App* check_cmd = config_cmd->add_subcommand(
      "check", "Validate a config file and print the effective configuration");
  check_cmd->add_option("file", check_file, "The TOML file to check")->required();
  CLI::App* default_cmd =
      config_cmd->add_subcommand("default", "Print the embedded default configuration");
  return {check_cmd, default_cmd};
}

// `wick plugin check PLUGIN` and its in-process stages `wick plugin probe|buffers|leaks PLUGIN`.
struct PluginCommands {
  CLI::App* check;
  CLI::App* probe;
  CLI::App* buffers;
  CLI::App* leaks;
};

PluginCommands add_plugin_command(CLI::App& app, wick::cli::PluginCheckArgs& check,
                                  std::string& probe_target) {
  CLI::App* plugin_cmd = app.add_subcommand("plugin", "Check a plugin (a vendor's first command)");
  plugin_cmd->require_subcommand(1);
  CLI::App* plugin_check_cmd = plugin_cmd->add_subcommand(
      "check", "Probe, claimed capability, smoke set and conformance, each in a child process; "
               "a verdict naming the next thing to fix");
  plugin_check_cmd->add_option("plugin", check.target, "A manifest or library path, or a plugin name")
      ->required();
  plugin_check_cmd->add_option("--report", check.report_dir, "Report directory")->capture_default_str();
  plugin_check_cmd->add_option("--suite", check.suite, "Conformance case sources")->capture_default_str();
  plugin_check_cmd->add_option("--jobs", check.jobs, "Worker processes")->capture_default_str();
  plugin_check_cmd->add_option("--timeout", check.case_timeout, "Per-case timeout in seconds")
      ->capture_default_str();
  CLI::App* plugin_probe_cmd = plugin_cmd->add_subcommand(
      "probe", "Load and initialize one plugin here; print its state and devices as JSON");
  plugin_probe_cmd->add_option("plugin", probe_target, "A manifest or library path, or a plugin name")
      ->required();
  CLI::App* buffers_cmd = plugin_cmd->add_subcommand(
      "buffers", "Write buffers on each device and read them back (sizes, offsets, canaries); JSON");
  buffers_cmd->add_option("plugin", probe_target, "A manifest or library path, or a plugin name")->required();
  CLI::App* leaks_cmd = plugin_cmd->add_subcommand(
      "leaks", "Run the smoke set here, comparing device free memory and heap before and after; JSON");
  leaks_cmd->add_option("plugin", probe_target, "A manifest or library path, or a plugin name")->required();
  return {plugin_check_cmd, plugin_probe_cmd, buffers_cmd, leaks_cmd};
}

// `wick embed`, `wick generate` and `wick quantize` (cmd_models.cpp).
struct ModelCommands {
  CLI::App* embed;
  CLI::App* generate;
  CLI::App* quantize;
};
struct ModelArgs {
  wick::cli::EmbedArgs embed;
  wick::cli::GenerateArgs gen;
  wick::cli::QuantizeArgs quant;
};

// Runs the model subcommand that was parsed; -1 when none was.
int run_model_command(const ModelCommands& c, const wick::ConfigOverrides& cli, const ModelArgs& a) {
  if (c.embed->parsed()) return wick::cli::run_embed(cli, a.embed);
  if (c.generate->parsed()) return wick::cli::run_generate(cli, a.gen);
  if (c.quantize->parsed()) return wick::cli::run_quantize(cli, a.quant);
  return -1;
}

ModelCommands add_model_commands(CLI::App& app, ModelArgs& args) {
  wick::cli::EmbedArgs& embed = args.embed;
  wick::cli::GenerateArgs& gen = args.gen;
  wick::cli::QuantizeArgs& quant = args.quant;
  const auto dtypes = CLI::IsMember({"f32", "bf16", "f16", "auto"});
  CLI::App* embed_cmd = app.add_subcommand("embed", "Sentence embeddings of texts with a model directory");
  embed_cmd->add_option("--model", embed.model, "A sentence-transformers or BERT model directory")->required();
  embed_cmd->add_option("texts", embed.texts, "The texts, one embedding each")->required();
  embed_cmd->add_flag("--json", embed.json, "Print JSON instead of one vector per line");
  embed_cmd->add_option("--dtype", embed.dtype, "f32, bf16, f16 or auto (the checkpoint's own)")
      ->check(dtypes)->capture_default_str();
  CLI::App* gen_cmd = app.add_subcommand("generate", "Generate text with a causal LM, streamed");
  gen_cmd->add_option("--model", gen.model,
                      "A Llama-family or GPT-2 model directory with tokenizer.json, or a llama/qwen2 GGUF file")
      ->required();
  gen_cmd->add_option("--prompt", gen.prompt, "The prompt text")->required();
  gen_cmd->add_option("--max-tokens", gen.max_tokens, "New tokens at most (else generation_config.json, else 32)");
  gen_cmd->add_option("--temperature", gen.temperature, "0: greedy; > 0: sampling");
  gen_cmd->add_option("--top-k", gen.top_k, "Sample among the k most likely tokens (0: off)");
  gen_cmd->add_option("--top-p", gen.top_p, "Sample among the most likely tokens of total probability p");
  gen_cmd->add_option("--repetition-penalty", gen.repetition_penalty, "Penalty of seen tokens (1: off)");
  gen_cmd->add_option("--seed", gen.seed, "Seed of the sampling");
  gen_cmd->add_option("--dtype", gen.dtype, "f32, bf16, f16 or auto (the checkpoint's own)")
      ->check(dtypes)->capture_default_str();
  gen_cmd->add_flag("--exact-activations", gen.exact_activations,
                    "GGUF models: multiply the quantized weights by x as it is, not rounded to 8 bits "
                    "first as llama.cpp does (slower; docs/models.md)");
  CLI::App* quant_cmd = app.add_subcommand("quantize", "Write a Llama-family model directory as a GGUF file");
  quant_cmd->add_option("--model", quant.model, "A llama or qwen2 model directory (config.json, safetensors)")
      ->required();
  quant_cmd->add_option("--type", quant.type, "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, F16 or F32")->required();
  quant_cmd->add_option("--output", quant.output, "The GGUF file to write (replaced whole)")->required();
  return {embed_cmd, gen_cmd, quant_cmd};
}

// `wick run` and `wick inspect` (cmd_onnx.cpp, cmd_onnx_inspect.cpp).
struct OnnxCommands {
  CLI::App* run;
  CLI::App* inspect;
};

OnnxCommands add_onnx_commands(CLI::App& app, wick::cli::OnnxRunArgs& run, wick::cli::OnnxInspectArgs& inspect) {
  CLI::App* run_cmd = app.add_subcommand("run", "Run an ONNX model on the selected device (docs/onnx.md)");
  run_cmd->add_option("model", run.model, "The .onnx file")->required();
  run_cmd->add_option("--input", run.inputs, "NAME=FILE.npy, one per model input (repeatable)");
  run_cmd->add_option("--output", run.output_dir, "Write each output to DIR/<name>.npy");
  run_cmd->add_option("--repeat", run.repeat, "Run N times, printing each run's time")->check(CLI::Range(1, 1000000));
  run_cmd->add_flag("--stats", run.stats, "Print nodes run, the optimiser's work and peak memory");
  run_cmd->add_flag("--no-optimize", run.no_optimize, "Run the graph as the file has it (no folding or fusion)");
  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Describe an ONNX model and what each device would run");
  inspect_cmd->add_option("model", inspect.model, "The .onnx file")->required();
  inspect_cmd->add_option("--input", inspect.inputs, "NAME=FILE.npy for the probe run (else zeros)");
  inspect_cmd->add_option("--symbolic-extent", inspect.symbolic_extent, "Extent of symbolic dims in the probe's zeros")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))->capture_default_str();
  inspect_cmd->add_flag("--no-probe{false}", inspect.probe, "Do not run the model on each device");
  return {run_cmd, inspect_cmd};
}

std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line.append(argv[i]);  // not `" " + std::string(...)`: GCC 12's -Wrestrict misfires on it
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  // Redirected output is line-buffered, so that a plugin that crashes or hangs the process (or a
  // check killed from outside) leaves every finished line in the file.
  if (::isatty(STDOUT_FILENO) == 0) std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  // Nothing from a file or a plugin may drive the terminal (docs/security.md).
  wick::cli::EscapeControls escape_out(std::cout), escape_err(std::cerr);
  CLI::App app{
      "wick: a tensor runtime whose device backends are plugins.\n"
      "Run `wick devices` to see what this machine can use."};
  app.require_subcommand(1);
  // Global options may also follow the subcommand: `wick devices --strict`.
  app.fallthrough();
  app.set_version_flag("--version", std::string("wick ") + WICK_CLI_VERSION + " (plugin ABI " +
                                        std::to_string(WICK_ABI_MAJOR) + "." +
                                        std::to_string(WICK_ABI_MINOR) + ")");
  GlobalOptions global;
  global.add_to(app);

  bool json = false;
  CLI::App* devices_cmd = app.add_subcommand(
      "devices", "List plugins, their state and devices, and the selected device");
  devices_cmd->add_flag("--json", json, "Print JSON instead of a table");

  std::string check_file;
  const ConfigCommands config_cmds = add_config_command(app, check_file);
  CLI::App* check_cmd = config_cmds.check;
  CLI::App* default_cmd = config_cmds.print_default;

  CLI::App* demo_cmd =
      app.add_subcommand("demo", "Run a small computation on the selected device and check it");

  wick::cli::ConformanceArgs conf;
  CLI::App* conf_cmd = add_conformance_command(app, conf);

  wick::cli::PluginCheckArgs check;
  std::string probe_target;
  const PluginCommands plugin_cmds = add_plugin_command(app, check, probe_target);

  ModelArgs model_args;
  const ModelCommands model_cmds = add_model_commands(app, model_args);
  wick::cli::OnnxRunArgs onnx_run;
  wick::cli::OnnxInspectArgs onnx_inspect;
  const OnnxCommands onnx_cmds = add_onnx_commands(app, onnx_run, onnx_inspect);
  CLI::App* plugin_check_cmd = plugin_cmds.check;
  CLI::App* plugin_probe_cmd = plugin_cmds.probe;

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  const wick::ConfigOverrides cli = global.overrides();
  try {
    if (devices_cmd->parsed()) return wick::cli::run_devices(cli, json);
    if (check_cmd->parsed()) return wick::cli::run_config_check(cli, check_file);
    if (default_cmd->parsed()) return wick::cli::run_config_default();
    if (demo_cmd->parsed()) return wick::cli::run_demo(cli);
    if (plugin_check_cmd->parsed()) return wick::cli::run_plugin_check(cli, check);
    if (plugin_probe_cmd->parsed()) return wick::cli::run_plugin_probe(cli, probe_target);
    if (plugin_cmds.buffers->parsed()) return wick::cli::run_plugin_buffers(cli, probe_target);
    if (plugin_cmds.leaks->parsed()) return wick::cli::run_plugin_leaks(cli, probe_target);
    if (const int rc = run_model_command(model_cmds, cli, model_args); rc >= 0) return rc;
    if (onnx_cmds.run->parsed()) return wick::cli::run_onnx_run(cli, onnx_run);
    if (onnx_cmds.inspect->parsed()) return wick::cli::run_onnx_inspect(cli, onnx_inspect);
    if (conf_cmd->parsed()) {
      conf.command_line = command_line(argc, argv);
      return wick::cli::run_conformance(cli, conf);
    }
  } catch (const wick::ConfigError& e) {
    std::cerr << "wick: config error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "wick: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
