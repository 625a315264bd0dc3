#include "commands.hpp"

#include <wick/registry.hpp>

#include <iostream>

namespace wick::cli {

int run_config_check(const ConfigOverrides& overrides, const std::string& file) {
  ConfigOverrides with_file = overrides;
  with_file.config_file = file;
  const Config config = resolve_config(with_file);
  // Device names can only be checked against the plugins that exist.
  PluginRegistry registry(config);
  // Options are checked by the plugins themselves: each one found was initialised with its table.
  const std::vector<OptionProblem> problems = check_plugin_options(registry, config);
  for (const OptionProblem& p : problems)
    std::cerr << "wick: " << p.where.to_string() << ": " << p.message << "\n";
  if (!problems.empty()) {
    std::cerr << "wick: " << file << ": " << problems.size() << " problem"
              << (problems.size() == 1 ? "" : "s") << " with plugin options\n";
    return 1;
  }
  const Selection selection = select_device(registry, config);
  std::cout << "# " << file << ": OK\n";
  std::cout << "# selected device: " << selection.reason << "\n";
  std::cout << config.to_toml();
  return 0;
}

int run_config_default() {
  std::cout << default_config_text();
  return 0;
}

}  // namespace wick::cli
