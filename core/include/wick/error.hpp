// wick/error.hpp — the one exception type of the Wick C++ API.
#pragma once

#include <stdexcept>
#include <string>

namespace wick {

// Every failure the core reports: bad shapes and dtypes, config errors, plugin errors, fallbacks
// refused in strict mode. The message names what and where, and what to do next where known.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A configuration error; the message starts with "file:line:column: " when the place is known.
class ConfigError : public Error {
 public:
  using Error::Error;
};

}  // namespace wick
