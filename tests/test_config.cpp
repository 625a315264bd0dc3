// Tests of wick/config.hpp: the schema, its error messages, the layering of
// default < file < environment < command line < API, and the example configs in configs/.
// Fixture files live in tests/data/config/; every expected line and column below is counted by
// hand from the fixture text (lines and columns are 1-based).
#include <wick/config.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using wick::Config;
using wick::ConfigError;
using wick::ConfigOverrides;
using wick::OptionValue;

const std::string kData = WICK_TEST_DATA_DIR "/config";
const std::string kConfigsDir = WICK_TEST_DATA_DIR "/../../configs";

std::string fixture(const std::string& name) { return kData + "/" + name; }

// The message of the ConfigError `f` throws, or a marker when it throws none.
template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

std::string parse_error(const std::string& text) {
  return config_error([&] { wick::apply_config_text(wick::default_config(), text, "t.toml"); });
}

Config parse(const std::string& text) {
  return wick::apply_config_text(wick::default_config(), text, "t.toml");
}

std::vector<std::string> names(const Config& config) {
  std::vector<std::string> out;
  for (const auto& entry : config.priority) out.push_back(entry.name);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fake environment: EnvLookup is a plain function pointer, so the variables live in a global
// that each test sets through FakeEnv and that is emptied again when it ends.
std::map<std::string, std::string>& fake_variables() {
  static std::map<std::string, std::string> variables;
  return variables;
}

std::optional<std::string> fake_env(const char* name) {
  const auto found = fake_variables().find(name);
  if (found == fake_variables().end()) return std::nullopt;
  return found->second;
}

struct FakeEnv {
  explicit FakeEnv(std::initializer_list<std::pair<const std::string, std::string>> variables) {
    fake_variables() = variables;
  }
  ~FakeEnv() { fake_variables().clear(); }
  FakeEnv(const FakeEnv&) = delete;
  FakeEnv& operator=(const FakeEnv&) = delete;
};

Config resolve(const ConfigOverrides& cli = {}, const ConfigOverrides& api = {}) {
  return wick::resolve_config(cli, api, &fake_env);
}

std::string normal(const std::string& path) { return fs::path(path).lexically_normal().string(); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// The default

TEST_CASE("the default config is cuda, opencl, cpu, not strict, log level warn", "[config]") {
  const Config config = wick::default_config();
  CHECK(names(config) == std::vector<std::string>{"cuda", "opencl:gpu", "opencl:accelerator", "cpu"});
  CHECK_FALSE(config.strict);
  CHECK(config.log_level == "warn");
  CHECK(config.plugin_paths.empty());
  CHECK(config.disabled_plugins.empty());
  CHECK(config.plugin_options.empty());
  CHECK(config.layers == std::vector<std::string>{"default"});
}

TEST_CASE("the default config is itself a config document, with locations in it", "[config]") {
  const Config config = wick::default_config();
  REQUIRE_FALSE(config.priority.empty());
  CHECK(config.priority[0].where.file == "<embedded default>");
  CHECK(config.priority[0].where.line > 0);
  CHECK(config.strict_where.file == "<embedded default>");
  CHECK(config.log_level_where.file == "<embedded default>");
  const Config reparsed = wick::apply_config_text(Config{}, wick::default_config_text(), "copy");
  CHECK(names(reparsed) == names(config));
}

TEST_CASE("resolving with no file, environment, flags or API gives the default", "[config]") {
  FakeEnv env({});
  const Config config = resolve();
  CHECK(names(config) == std::vector<std::string>{"cuda", "opencl:gpu", "opencl:accelerator", "cpu"});
  CHECK(config.log_level == "warn");
  CHECK(config.layers == std::vector<std::string>{"default"});
}

TEST_CASE("a null environment lookup reads no variables", "[config]") {
  const Config config = wick::resolve_config({}, {}, nullptr);
  CHECK(config.layers == std::vector<std::string>{"default"});
}

// ---------------------------------------------------------------------------------------------
// Reading every setting

TEST_CASE("a file sets every key, each with its line and column", "[config]") {
  const std::string path = fixture("all-settings.toml");
  const Config config = wick::apply_config_file(wick::default_config(), path);

  CHECK(names(config) == std::vector<std::string>{"opencl:1", "gpu", "cpu"});
  // priority = ["opencl:1", "gpu", "cpu"] on line 3: the strings start at columns 13, 25, 32.
  CHECK(config.priority[0].where.to_string() == path + ":3:13");
  CHECK(config.priority[1].where.to_string() == path + ":3:25");
  CHECK(config.priority[2].where.to_string() == path + ":3:32");
  CHECK(config.strict);
  CHECK(config.strict_where.to_string() == path + ":4:10");
  CHECK(config.disabled_plugins == std::vector<std::string>{"cuda"});
  CHECK(config.disabled_where.to_string() == path + ":8:11");
  CHECK(config.log_level == "debug");
  CHECK(config.log_level_where.to_string() == path + ":17:9");
  CHECK(config.layers == std::vector<std::string>{"default", path});
}

TEST_CASE("relative plugin paths resolve against the config file's directory", "[config]") {
  const std::string path = fixture("all-settings.toml");
  const Config config = wick::apply_config_file(wick::default_config(), path);
  // paths = ["plugins", "../shared-plugins", "/opt/wick/plugins"] in tests/data/config/.
  CHECK(config.plugin_paths == std::vector<std::string>{
                                   WICK_TEST_DATA_DIR "/config/plugins",
                                   WICK_TEST_DATA_DIR "/shared-plugins",
                                   "/opt/wick/plugins",
                               });
  REQUIRE(config.plugin_paths_where.size() == 3);
  CHECK(config.plugin_paths_where[1].to_string() == path + ":7:21");
}

TEST_CASE("relative plugin paths do not depend on the current directory", "[config]") {
  const fs::path before = fs::current_path();
  fs::current_path("/");
  const Config config = wick::apply_config_file(Config{}, fixture("file-layer.toml"));
  fs::current_path(before);
  CHECK(config.plugin_paths == std::vector<std::string>{WICK_TEST_DATA_DIR "/config/plugins"});
}

TEST_CASE("per-plugin tables become typed options, in file order", "[config]") {
  const std::string path = fixture("all-settings.toml");
  const Config config = wick::apply_config_file(wick::default_config(), path);
  REQUIRE(config.plugin_options.count("cpu-onednn") == 1);
  const wick::PluginOptions& options = config.plugin_options.at("cpu-onednn");
  CHECK(options.where.to_string() == path + ":10:1");
  REQUIRE(options.values.size() == 4);
  CHECK(options.values[0] == std::pair<std::string, OptionValue>{"threads", int64_t{2}});
  CHECK(options.values[1] == std::pair<std::string, OptionValue>{"verbose", true});
  CHECK(options.values[2] == std::pair<std::string, OptionValue>{"scale", 0.5});
  CHECK(options.values[3] == std::pair<std::string, OptionValue>{"isa", std::string("avx2")});
}

TEST_CASE("plugin option tables may be written inline or with a quoted name", "[config]") {
  const Config config = parse(
      "[plugins]\n"
      "opencl = { device_type = \"gpu\", platform = 1 }\n"
      "[plugins.\"vendor.npu\"]\n"
      "fast = false\n");
  REQUIRE(config.plugin_options.count("opencl") == 1);
  CHECK(config.plugin_options.at("opencl").values ==
        std::vector<std::pair<std::string, OptionValue>>{{"device_type", std::string("gpu")},
                                                         {"platform", int64_t{1}}});
  CHECK(config.plugin_options.at("opencl").where.to_string() == "t.toml:2:10");
  REQUIRE(config.plugin_options.count("vendor.npu") == 1);
  CHECK(config.plugin_options.at("vendor.npu").values ==
        std::vector<std::pair<std::string, OptionValue>>{{"fast", false}});
}

TEST_CASE("a document replaces only the values it sets", "[config]") {
  const Config config = parse("[log]\nlevel = \"debug\"\n");
  CHECK(config.log_level == "debug");
  CHECK(names(config) == std::vector<std::string>{"cuda", "opencl:gpu", "opencl:accelerator", "cpu"});
  CHECK(config.layers == std::vector<std::string>{"default", "t.toml"});
}

TEST_CASE("an empty document is a valid config", "[config]") {
  CHECK(names(parse("")) == std::vector<std::string>{"cuda", "opencl:gpu", "opencl:accelerator", "cpu"});
  CHECK(names(parse("# only a comment\n")) == std::vector<std::string>{"cuda", "opencl:gpu", "opencl:accelerator", "cpu"});
}

// ---------------------------------------------------------------------------------------------
// Errors: each names file:line:column, what is wrong, and a close match where there is one

TEST_CASE("a misspelled key names file, line, column and the close match", "[config][errors]") {
  const std::string path = fixture("misspelled-key.toml");
  // "  prority = ..." is line 3; the key starts at column 3.
  CHECK(config_error([&] { wick::apply_config_file(wick::default_config(), path); }) ==
        path + ":3:3: unknown key 'prority' in [devices]; did you mean 'priority'?");
}

TEST_CASE("an unknown table names its place and the close match", "[config][errors]") {
  const std::string path = fixture("unknown-table.toml");
  // "[device]" is line 2; the name starts at column 2.
  CHECK(config_error([&] { wick::apply_config_file(wick::default_config(), path); }) ==
        path + ":2:2: unknown table 'device'; did you mean 'devices'?");
}

TEST_CASE("unknown names far from every known one list the choices instead", "[config][errors]") {
  CHECK(parse_error("[gadgets]\n") ==
        "t.toml:1:2: unknown table 'gadgets'; expected 'devices', 'plugins', 'log' or 'debug'");
  CHECK(parse_error("[devices]\nfoo = 1\n") ==
        "t.toml:2:1: unknown key 'foo' in [devices]; expected 'priority', 'strict' or 'fallback'");
  CHECK(parse_error("[log]\ncolour = true\n") ==
        "t.toml:2:1: unknown key 'colour' in [log]; expected 'level'");
  CHECK(parse_error("[plugins]\nfoo = 1\n") ==
        "t.toml:2:1: unknown key 'foo' in [plugins]; expected 'paths', 'disable', 'probe_timeout_ms' or "
                                            "'allow_world_writable', or a table "
        "[plugins.foo] of options for plugin 'foo'");
}

TEST_CASE("unknown keys get close matches in every table", "[config][errors]") {
  CHECK(parse_error("[devices]\nstrcit = true\n") ==
        "t.toml:2:1: unknown key 'strcit' in [devices]; did you mean 'strict'?");
  CHECK(parse_error("[plugins]\npahts = [\"x\"]\n") ==
        "t.toml:2:1: unknown key 'pahts' in [plugins]; did you mean 'paths'?");
  CHECK(parse_error("[plugins]\ndisabled = [\"x\"]\n") ==
        "t.toml:2:1: unknown key 'disabled' in [plugins]; did you mean 'disable'?");
  CHECK(parse_error("[log]\nlevle = \"warn\"\n") ==
        "t.toml:2:1: unknown key 'levle' in [log]; did you mean 'level'?");
}

TEST_CASE("a key written outside its table suggests the table", "[config][errors]") {
  CHECK(parse_error("priority = [\"cpu\"]\n") ==
        "t.toml:1:1: unknown key 'priority'; did you mean 'devices.priority'?");
  CHECK(parse_error("\n  level = \"info\"\n") ==
        "t.toml:2:3: unknown key 'level'; did you mean 'log.level'?");
}

TEST_CASE("a plugin's table under [devices] points to [plugins]", "[config][errors]") {
  CHECK(parse_error("[devices.cuda]\nx = 1\n") ==
        "t.toml:1:10: unknown key 'cuda' in [devices]; expected 'priority', 'strict' or 'fallback' (options "
        "for a plugin go in [plugins.cuda])");
}

TEST_CASE("a TOML syntax error keeps toml++'s description and place", "[config][errors]") {
  const std::string path = fixture("syntax-error.toml");
  // "strict = yes" is line 3; the value starts at column 10.
  const std::string message =
      config_error([&] { wick::apply_config_file(wick::default_config(), path); });
  CHECK_THAT(message, Catch::StartsWith(path + ":3:10: "));
  CHECK_THAT(message, Catch::Contains("could not determine value type"));
}

TEST_CASE("a repeated key is a syntax error at the repetition", "[config][errors]") {
  CHECK_THAT(parse_error("[devices]\nstrict = true\nstrict = false\n"),
             Catch::StartsWith("t.toml:3:") && Catch::Contains("strict"));
}

TEST_CASE("each key refuses a value of the wrong type", "[config][errors]") {
  CHECK(parse_error("[devices]\npriority = \"cuda\"\n") ==
        "t.toml:2:12: 'devices.priority' must be an array of strings, e.g. [\"cuda\", \"cpu\"], "
        "not a string");
  CHECK(parse_error("[devices]\npriority = [\"cuda\", 3]\n") ==
        "t.toml:2:21: 'devices.priority[1]' must be a string, not an integer");
  CHECK(parse_error("[devices]\nstrict = \"yes\"\n") ==
        "t.toml:2:10: 'devices.strict' must be a boolean (true or false), not a string");
  CHECK(parse_error("[devices]\nstrict = 1\n") ==
        "t.toml:2:10: 'devices.strict' must be a boolean (true or false), not an integer");
  CHECK(
      parse_error("[plugins]\npaths = \"dir\"\n") ==
      "t.toml:2:9: 'plugins.paths' must be an array of strings, e.g. [\"plugins\"], not a string");
  CHECK(parse_error("[plugins]\npaths = [\"a\", [\"b\"]]\n") ==
        "t.toml:2:15: 'plugins.paths[1]' must be a string, not an array");
  CHECK(parse_error("[plugins]\ndisable = { cuda = true }\n") ==
        "t.toml:2:11: 'plugins.disable' must be an array of strings, e.g. [\"cuda\"], not a table");
  CHECK(parse_error("[log]\nlevel = 3\n") ==
        "t.toml:2:9: 'log.level' must be a string, one of 'off', 'error', 'warn', 'info' or "
        "'debug', not an integer");
  CHECK(parse_error("devices = [\"cuda\"]\n") ==
        "t.toml:1:11: 'devices' must be a table ([devices]), not an array");
  CHECK(parse_error("log = \"debug\"\n") ==
        "t.toml:1:7: 'log' must be a table ([log]), not a string");
}

TEST_CASE("an unknown log level lists the levels or suggests one", "[config][errors]") {
  CHECK(parse_error("[log]\nlevel = \"verbose\"\n") ==
        "t.toml:2:9: unknown log level 'verbose'; expected 'off', 'error', 'warn', 'info' or "
        "'debug'");
  CHECK(parse_error("[log]\nlevel = \"wran\"\n") ==
        "t.toml:2:9: unknown log level 'wran'; did you mean 'warn'?");
}

TEST_CASE("an empty priority list is an error", "[config][errors]") {
  CHECK(parse_error("[devices]\npriority = []\n") ==
        "t.toml:2:12: 'devices.priority' is empty; list at least one device, e.g. [\"cpu\"]");
}

TEST_CASE("an empty string in a list is an error", "[config][errors]") {
  CHECK(parse_error("[devices]\npriority = [\"cuda\", \"\"]\n") ==
        "t.toml:2:21: 'devices.priority[1]' is an empty string");
  CHECK(parse_error("[plugins]\npaths = [\"\"]\n") ==
        "t.toml:2:10: 'plugins.paths[0]' is an empty string");
}

TEST_CASE("a device listed twice is an error at the second one", "[config][errors]") {
  // priority = ["cuda", "cpu", "cuda"]: the strings start at columns 13, 21 and 28.
  CHECK(parse_error("[devices]\npriority = [\"cuda\", \"cpu\", \"cuda\"]\n") ==
        "t.toml:2:28: device 'cuda' is listed twice in devices.priority (first at line 2, "
        "column 13); remove one");
}

TEST_CASE("device names are not checked here: the registry knows the plugins", "[config]") {
  CHECK(names(parse("[devices]\npriority = [\"no-such-plugin\", \"cpu\"]\n")) ==
        std::vector<std::string>{"no-such-plugin", "cpu"});
}

TEST_CASE("plugin options must be booleans, integers, floats or strings", "[config][errors]") {
  CHECK(parse_error("[plugins.cpu-onednn]\nthreads = [1, 2]\n") ==
        "t.toml:2:11: option 'threads' of [plugins.cpu-onednn] must be a boolean, integer, float "
        "or string, not an array");
  CHECK(parse_error("[plugins.cpu-onednn]\nisa = { avx = true }\n") ==
        "t.toml:2:7: option 'isa' of [plugins.cpu-onednn] must be a boolean, integer, float or "
        "string, not a table");
  CHECK(parse_error("[plugins.cpu-onednn.isa]\navx = true\n") ==
        "t.toml:1:1: option 'isa' of [plugins.cpu-onednn] must be a boolean, integer, float or "
        "string, not a table");
  CHECK(parse_error("[plugins.cuda]\nsince = 2024-01-01\n") ==
        "t.toml:2:9: option 'since' of [plugins.cuda] must be a boolean, integer, float or "
        "string, not a date");
}

TEST_CASE("a missing or unreadable file is an error naming the path", "[config][errors]") {
  const std::string missing = fixture("no-such-file.toml");
  CHECK(config_error([&] { wick::apply_config_file(Config{}, missing); }) ==
        missing + ": config file does not exist");
  CHECK(config_error([&] { wick::apply_config_file(Config{}, kData); }) ==
        kData + ": is a directory, not a config file");
}

// ---------------------------------------------------------------------------------------------
// Layering: default < file < environment < command line < API

TEST_CASE("WICK_CONFIG names the file layer", "[config][layers]") {
  const std::string path = fixture("file-layer.toml");
  FakeEnv env({{"WICK_CONFIG", path}});
  const Config config = resolve();
  CHECK(names(config) == std::vector<std::string>{"opencl", "cpu"});
  CHECK(config.log_level == "info");
  CHECK(config.layers == std::vector<std::string>{"default", path});
}

TEST_CASE("the --config flag beats WICK_CONFIG and the API's file beats --config", "[config][layers]") {
  const std::string env_file = fixture("file-layer.toml");        // log level info
  const std::string cli_file = fixture("other-file-layer.toml");  // log level error
  FakeEnv env({{"WICK_CONFIG", env_file}});
  ConfigOverrides cli;
  cli.config_file = cli_file;
  CHECK(resolve(cli).layers == std::vector<std::string>{"default", cli_file});
  CHECK(resolve(cli).log_level == "error");
  ConfigOverrides api;
  api.config_file = env_file;
  CHECK(resolve(cli, api).layers == std::vector<std::string>{"default", env_file});
  CHECK(resolve(cli, api).log_level == "info");
}

TEST_CASE("an explicitly named file that does not exist names the layer that named it",
          "[config][layers][errors]") {
  const std::string missing = fixture("no-such-file.toml");
  ConfigOverrides named;
  named.config_file = missing;
  {
    FakeEnv env({{"WICK_CONFIG", missing}});
    CHECK(config_error([] { resolve(); }) ==
          "env WICK_CONFIG: config file '" + missing + "' does not exist");
  }
  FakeEnv env({});
  CHECK(config_error([&] { resolve(named); }) ==
        "--config: config file '" + missing + "' does not exist");
  CHECK(config_error([&] { resolve({}, named); }) ==
        "api: config file '" + missing + "' does not exist");
}

TEST_CASE("the user's config file is found through XDG_CONFIG_HOME, else HOME",
          "[config][layers]") {
  const std::string xdg_file = fixture("xdg/wick/config.toml");            // log level error
  const std::string home_file = fixture("home/.config/wick/config.toml");  // log level info
  {
    FakeEnv env({{"XDG_CONFIG_HOME", kData + "/xdg"}, {"HOME", kData + "/home"}});
    CHECK(resolve().layers == std::vector<std::string>{"default", xdg_file});
    CHECK(resolve().log_level == "error");
  }
  {
    FakeEnv env({{"HOME", kData + "/home"}});
    CHECK(resolve().layers == std::vector<std::string>{"default", home_file});
    CHECK(resolve().log_level == "info");
  }
  {
    // The XDG base directory spec: a relative XDG_CONFIG_HOME is ignored.
    FakeEnv env({{"XDG_CONFIG_HOME", "relative/xdg"}, {"HOME", kData + "/home"}});
    CHECK(resolve().layers == std::vector<std::string>{"default", home_file});
  }
  {
    // Set but empty counts as unset.
    FakeEnv env({{"XDG_CONFIG_HOME", ""}, {"HOME", kData + "/home"}});
    CHECK(resolve().layers == std::vector<std::string>{"default", home_file});
  }
}

TEST_CASE("the user's config file is optional", "[config][layers]") {
  FakeEnv env({{"XDG_CONFIG_HOME", kData + "/no-such-dir"}, {"HOME", kData + "/no-such-home"}});
  CHECK(resolve().layers == std::vector<std::string>{"default"});
}

TEST_CASE("an explicit file replaces the user's file", "[config][layers]") {
  const std::string path = fixture("file-layer.toml");
  FakeEnv env({{"WICK_CONFIG", path}, {"XDG_CONFIG_HOME", kData + "/xdg"}});
  CHECK(resolve().layers == std::vector<std::string>{"default", path});
}

TEST_CASE("precedence: file < environment < command line < API", "[config][layers]") {
  const std::string path = fixture("file-layer.toml");  // priority opencl, cpu; level info
  FakeEnv env({{"WICK_CONFIG", path},
               {"WICK_DEVICE", "cuda:1, cpu"},
               {"WICK_STRICT", "yes"},
               {"WICK_LOG_LEVEL", "debug"}});

  const Config from_env = resolve();
  CHECK(names(from_env) == std::vector<std::string>{"cuda:1", "cpu"});
  CHECK(from_env.priority[0].where.to_string() == "env WICK_DEVICE");
  CHECK(from_env.strict);
  CHECK(from_env.strict_where.to_string() == "env WICK_STRICT");
  CHECK(from_env.log_level == "debug");
  CHECK(from_env.log_level_where.to_string() == "env WICK_LOG_LEVEL");
  CHECK(from_env.layers == std::vector<std::string>{"default", path, "env WICK_DEVICE",
                                                    "env WICK_STRICT", "env WICK_LOG_LEVEL"});

  ConfigOverrides cli;
  cli.devices = std::vector<std::string>{"opencl"};
  cli.strict = false;
  cli.log_level = "error";
  const Config from_cli = resolve(cli);
  CHECK(names(from_cli) == std::vector<std::string>{"opencl"});
  CHECK(from_cli.priority[0].where.to_string() == "--device");
  CHECK_FALSE(from_cli.strict);
  CHECK(from_cli.strict_where.to_string() == "--strict");
  CHECK(from_cli.log_level == "error");
  CHECK(from_cli.log_level_where.to_string() == "--log-level");
  CHECK(from_cli.layers == std::vector<std::string>{"default", path, "env WICK_DEVICE",
                                                    "env WICK_STRICT", "env WICK_LOG_LEVEL",
                                                    "--device", "--strict", "--log-level"});

  ConfigOverrides api;
  api.devices = std::vector<std::string>{"cpu"};
  api.log_level = "off";
  const Config from_api = resolve(cli, api);
  CHECK(names(from_api) == std::vector<std::string>{"cpu"});
  CHECK(from_api.priority[0].where.to_string() == "api");
  CHECK_FALSE(from_api.strict);  // the API left strict alone: --strict's value stands
  CHECK(from_api.log_level == "off");
  CHECK(from_api.layers.back() == "api");
  CHECK(from_api.layers.size() == from_cli.layers.size() + 1);
}

TEST_CASE("each layer overrides only what it sets", "[config][layers]") {
  FakeEnv env({{"WICK_LOG_LEVEL", "info"}});
  const Config config = resolve();
  CHECK(config.log_level == "info");
  CHECK(names(config) == std::vector<std::string>{"cuda", "opencl:gpu", "opencl:accelerator", "cpu"});
  CHECK_FALSE(config.strict);
}

TEST_CASE("device lists from flags and the API may be comma lists or separate entries",
          "[config][layers]") {
  FakeEnv env({});
  ConfigOverrides cli;
  cli.devices = std::vector<std::string>{"cuda,opencl", " cpu "};
  CHECK(names(resolve(cli)) == std::vector<std::string>{"cuda", "opencl", "cpu"});
}

TEST_CASE("WICK_STRICT accepts 1/0, true/false and yes/no in any case", "[config][layers]") {
  for (const char* yes : {"1", "true", "TRUE", "yes", "Yes"}) {
    FakeEnv env({{"WICK_STRICT", yes}});
    CHECK(resolve().strict);
  }
  for (const char* no : {"0", "false", "False", "no", "NO"}) {
    FakeEnv env({{"WICK_STRICT", no}, {"WICK_CONFIG", fixture("all-settings.toml")}});
    CHECK_FALSE(resolve().strict);  // the file said true
  }
}

TEST_CASE("bad environment values are errors naming the variable", "[config][layers][errors]") {
  {
    FakeEnv env({{"WICK_STRICT", "maybe"}});
    CHECK(config_error([] { resolve(); }) ==
          "env WICK_STRICT: 'maybe' is not a boolean; use 1, 0, true, false, yes or no");
  }
  {
    FakeEnv env({{"WICK_LOG_LEVEL", "verbose"}});
    CHECK(config_error([] { resolve(); }) ==
          "env WICK_LOG_LEVEL: unknown log level 'verbose'; expected 'off', 'error', 'warn', "
          "'info' or 'debug'");
  }
  {
    FakeEnv env({{"WICK_LOG_LEVEL", "DEBUG"}});
    CHECK(config_error([] { resolve(); }) ==
          "env WICK_LOG_LEVEL: unknown log level 'DEBUG'; did you mean 'debug'?");
  }
  {
    FakeEnv env({{"WICK_DEVICE", "cuda,,cpu"}});
    CHECK(config_error([] { resolve(); }) ==
          "env WICK_DEVICE: empty device name in 'cuda,,cpu'; give a comma-separated list such "
          "as cuda,cpu");
  }
  {
    FakeEnv env({{"WICK_DEVICE", "cpu,cuda,cpu"}});
    CHECK(config_error([] { resolve(); }) ==
          "env WICK_DEVICE: device 'cpu' is listed twice in the device list; remove one");
  }
}

TEST_CASE("bad flag and API values are errors naming the flag or the API",
          "[config][layers][errors]") {
  FakeEnv env({});
  ConfigOverrides bad_level;
  bad_level.log_level = "loud";
  CHECK(config_error([&] { resolve(bad_level); }) ==
        "--log-level: unknown log level 'loud'; expected 'off', 'error', 'warn', 'info' or "
        "'debug'");
  ConfigOverrides no_devices;
  no_devices.devices = std::vector<std::string>{};
  CHECK(config_error([&] { resolve({}, no_devices); }) ==
        "api: no devices given; give a comma-separated list such as cuda,cpu");
  ConfigOverrides twice;
  twice.devices = std::vector<std::string>{"cuda", "cuda"};
  CHECK(config_error([&] { resolve(twice); }) ==
        "--device: device 'cuda' is listed twice in the device list; remove one");
}

TEST_CASE("empty environment variables count as unset", "[config][layers]") {
  FakeEnv env(
      {{"WICK_DEVICE", ""}, {"WICK_STRICT", ""}, {"WICK_LOG_LEVEL", ""}, {"WICK_CONFIG", ""}});
  CHECK(resolve().layers == std::vector<std::string>{"default"});
}

TEST_CASE("plugin paths: the highest layer's directories are searched first", "[config][layers]") {
  const std::string path = fixture("file-layer.toml");  // paths = ["plugins"]
  FakeEnv env({{"WICK_CONFIG", path}});
  ConfigOverrides cli;
  cli.plugin_paths = {"/cli/a", "/cli/b"};
  ConfigOverrides api;
  api.plugin_paths = {"/api/c"};
  const Config config = resolve(cli, api);
  CHECK(config.plugin_paths == std::vector<std::string>{"/api/c", "/cli/a", "/cli/b",
                                                        WICK_TEST_DATA_DIR "/config/plugins"});
  REQUIRE(config.plugin_paths_where.size() == 4);
  CHECK(config.plugin_paths_where[0].to_string() == "api");
  CHECK(config.plugin_paths_where[1].to_string() == "--plugin-path");
  CHECK(config.plugin_paths_where[3].file == path);
}

TEST_CASE("plugin paths from flags are made absolute against the current directory",
          "[config][layers]") {
  FakeEnv env({});
  ConfigOverrides cli;
  cli.plugin_paths = {"rel/dir"};
  CHECK(resolve(cli).plugin_paths ==
        std::vector<std::string>{normal((fs::current_path() / "rel/dir").string())});
}

TEST_CASE("secure_env reads the process environment", "[config]") {
  ::setenv("WICK_TEST_CONFIG_VARIABLE", "value", 1);
  CHECK(wick::secure_env("WICK_TEST_CONFIG_VARIABLE") == std::optional<std::string>("value"));
  ::unsetenv("WICK_TEST_CONFIG_VARIABLE");
  CHECK_FALSE(wick::secure_env("WICK_TEST_CONFIG_VARIABLE").has_value());
}

// ---------------------------------------------------------------------------------------------
// to_toml

TEST_CASE("to_toml names the layer of each value", "[config][to_toml]") {
  FakeEnv env({{"WICK_DEVICE", "opencl,cpu"}});
  ConfigOverrides cli;
  cli.strict = true;
  const std::string text = resolve(cli).to_toml();
  CHECK_THAT(text, Catch::Contains("priority = [\"opencl\", \"cpu\"]  # from env WICK_DEVICE\n"));
  CHECK_THAT(text, Catch::Contains("strict = true  # from --strict\n"));
  CHECK_THAT(text, Catch::Contains("level = \"warn\"  # from <embedded default>:"));
  CHECK_THAT(text, Catch::Contains("# Layers, lowest precedence first: default, env WICK_DEVICE, "
                                   "--strict\n"));
}

TEST_CASE("to_toml round trip: the emitted TOML reads back to the same values",
          "[config][to_toml]") {
  const std::string path = fixture("all-settings.toml");
  FakeEnv env({{"WICK_CONFIG", path}, {"WICK_LOG_LEVEL", "info"}});
  ConfigOverrides cli;
  cli.plugin_paths = {"/cli/plugins"};
  Config config = resolve(cli);
  // Values that need escaping or exact float text.
  config.plugin_options["vendor.npu"].values = {{"name", std::string("a \"quoted\"\\ name\n")},
                                                {"third", 1.0 / 3.0},
                                                {"big", 1e300},
                                                {"whole", 2.0},
                                                {"min", int64_t{-9223372036854775807 - 1}},
                                                {"key with space", false}};

  const std::string text = config.to_toml();
  const Config back = wick::apply_config_text(Config{}, text, "round-trip");
  CHECK(names(back) == names(config));
  CHECK(back.strict == config.strict);
  CHECK(back.plugin_paths == config.plugin_paths);
  CHECK(back.disabled_plugins == config.disabled_plugins);
  CHECK(back.log_level == config.log_level);
  REQUIRE(back.plugin_options.size() == config.plugin_options.size());
  for (const auto& [plugin, options] : config.plugin_options) {
    INFO("plugin " << plugin);
    CHECK(back.plugin_options.at(plugin).values == options.values);
  }
  // Per-element comments when the paths come from different layers.
  CHECK_THAT(text, Catch::Contains("  \"/cli/plugins\",  # from --plugin-path\n"));
}

TEST_CASE("to_toml of the default reads back as the default", "[config][to_toml]") {
  const Config config = wick::default_config();
  const Config back = wick::apply_config_text(Config{}, config.to_toml(), "round-trip");
  CHECK(names(back) == names(config));
  CHECK(back.strict == config.strict);
  CHECK(back.log_level == config.log_level);
  CHECK(back.plugin_paths.empty());
}

// ---------------------------------------------------------------------------------------------
// Helpers

TEST_CASE("SourceLocation prints file:line:column, or just the layer", "[config]") {
  CHECK(wick::SourceLocation{"a.toml", 3, 7}.to_string() == "a.toml:3:7");
  CHECK(wick::SourceLocation{"env WICK_DEVICE", 0, 0}.to_string() == "env WICK_DEVICE");
}

TEST_CASE("closest_match suggests only close candidates", "[config]") {
  const std::vector<std::string> keys = {"priority", "strict"};
  CHECK(wick::closest_match("prority", keys) == std::optional<std::string>("priority"));
  CHECK(wick::closest_match("Priority", keys) == std::optional<std::string>("priority"));
  CHECK(wick::closest_match("stritc", keys) == std::optional<std::string>("strict"));  // swap
  CHECK_FALSE(wick::closest_match("verbose", keys).has_value());
  CHECK_FALSE(wick::closest_match("x", keys).has_value());
  CHECK_FALSE(wick::closest_match("prority", {}).has_value());
  // max(1, 3 / 3) = 1 edit allowed for three letters: "cdu" is 1 from "cpu", "gou" 2 from "cuda".
  CHECK(wick::closest_match("cdu", {"cpu", "gpu"}) == std::optional<std::string>("cpu"));
  CHECK_FALSE(wick::closest_match("gou", {"cuda"}).has_value());
  // Ties go to the earlier candidate.
  CHECK(wick::closest_match("cxu", {"cpu", "cu"}) == std::optional<std::string>("cpu"));
}

// ---------------------------------------------------------------------------------------------
// configs/

TEST_CASE("every example in configs/ is a valid config", "[config][examples]") {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(kConfigsDir)) {
    if (entry.path().extension() != ".toml") continue;
    found.push_back(entry.path().filename().string());
    INFO("config " << entry.path().string());
    CHECK_NOTHROW(wick::apply_config_file(wick::default_config(), entry.path().string()));
  }
  for (const char* expected : {"default.toml", "cpu-only.toml", "gpu-first.toml", "strict.toml",
                               "extra-plugin-dir.toml"}) {
    INFO("configs/" << expected);
    CHECK(std::find(found.begin(), found.end(), expected) != found.end());
  }
}

TEST_CASE("configs/default.toml is the embedded default, word for word", "[config][examples]") {
  CHECK(read_file(kConfigsDir + "/default.toml") == wick::default_config_text());
}

TEST_CASE("configs/extra-plugin-dir.toml points at the build tree's fixture plugins",
          "[config][examples]") {
  const Config config =
      wick::apply_config_file(wick::default_config(), kConfigsDir + "/extra-plugin-dir.toml");
  CHECK(config.plugin_paths ==
        std::vector<std::string>{normal(WICK_TEST_DATA_DIR "/../../build/tests/fixtures/plugins")});
}

TEST_CASE("the example configs say what they promise", "[config][examples]") {
  const Config cpu_only =
      wick::apply_config_file(wick::default_config(), kConfigsDir + "/cpu-only.toml");
  CHECK(names(cpu_only) == std::vector<std::string>{"cpu"});
  CHECK(cpu_only.disabled_plugins == std::vector<std::string>{"cuda", "opencl"});
  const Config strict =
      wick::apply_config_file(wick::default_config(), kConfigsDir + "/strict.toml");
  CHECK(strict.strict);
  const Config gpu_first =
      wick::apply_config_file(wick::default_config(), kConfigsDir + "/gpu-first.toml");
  CHECK(names(gpu_first) == std::vector<std::string>{"cuda:0", "gpu", "cpu"});
}
