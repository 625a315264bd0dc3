// log.hpp — the core's one logging sink (stderr), filtered by [log] level.
#pragma once

#include <string>

namespace wick {

enum class LogLevel { Off = 0, Error = 1, Warn = 2, Info = 3, Debug = 4 };

// Parses "off".."debug"; unknown text gives Warn (config validation rejects it earlier).
LogLevel parse_log_level(const std::string& text);
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
void log(LogLevel level, const std::string& message);

}  // namespace wick
