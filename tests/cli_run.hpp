// cli_run.hpp — the `wick` CLI run as a user runs it, for the tests of its commands: stdout and
// stderr captured apart, and the exit status. Needs WICK_CLI_PATH (the built CLI) defined.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace wick::test {

struct CliRun {
  int status = -1;
  std::string out, err;
};

// Runs the CLI with `args` (already shell-quoted).
inline CliRun wick_cli(const std::string& args) {
  const std::string err_file = "/tmp/wick-test-cli-" + std::to_string(::getpid()) + ".err";
  const std::string cmd = std::string("'") + WICK_CLI_PATH + "' " + args + " 2>" + err_file;
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::remove(err_file.c_str());
  return r;
}

}  // namespace wick::test
