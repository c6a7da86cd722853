// Structured log lines in logfmt: time, level, component, message, extra fields.
//   ts=2026-11-22T08:00:00.123Z level=info component=server msg="listening" port=8080
// Level from KFORGE_LOG_LEVEL (debug|info|warn|error), default info.
// Test: ctest -R common_log_test.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kforge {

enum class LogLevel { debug, info, warn, error };

//! Key/value pairs appended to a log line.
using LogFields = std::vector<std::pair<std::string, std::string>>;

//! Writes one line to stderr if `level` is at or above the configured level.
void log(LogLevel level, const std::string& component, const std::string& message,
         const LogFields& fields = {});

//! Sets the minimum level; parses "debug", "info", "warn", "error".
void log_set_level(const std::string& level);

inline void log_info(const std::string& c, const std::string& m, const LogFields& f = {}) {
  log(LogLevel::info, c, m, f);
}
inline void log_warn(const std::string& c, const std::string& m, const LogFields& f = {}) {
  log(LogLevel::warn, c, m, f);
}
inline void log_error(const std::string& c, const std::string& m, const LogFields& f = {}) {
  log(LogLevel::error, c, m, f);
}
inline void log_debug(const std::string& c, const std::string& m, const LogFields& f = {}) {
  log(LogLevel::debug, c, m, f);
}

}  // namespace kforge
