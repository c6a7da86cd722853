// logfmt writer behind common/log.h. One fputs per line so concurrent threads
// do not interleave within a line.
// Test: ctest -R common_log_test.
#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace kforge {
namespace {

LogLevel parse_level(const char* text) {
  std::string s = text ? text : "";
  if (s == "debug") return LogLevel::debug;
  if (s == "warn") return LogLevel::warn;
  if (s == "error") return LogLevel::error;
  return LogLevel::info;
}

std::atomic<int>& min_level() {
  static std::atomic<int> level{static_cast<int>(parse_level(std::getenv("KFORGE_LOG_LEVEL")))};
  return level;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
  }
  return "info";
}

// Quotes a value when it holds spaces, quotes or '='; escapes quotes and newlines.
void append_value(std::string& out, const std::string& value) {
  bool needs_quotes = value.empty();
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') needs_quotes = true;
  }
  if (!needs_quotes) {
    out += value;
    return;
  }
  out += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
}

std::string timestamp_utc() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  return buf;
}

}  // namespace

void log_set_level(const std::string& level) { min_level() = static_cast<int>(parse_level(level.c_str())); }

void log(LogLevel level, const std::string& component, const std::string& message, const LogFields& fields) {
  if (static_cast<int>(level) < min_level().load()) return;
  std::string line = "ts=" + timestamp_utc() + " level=" + level_name(level) + " component=";
  append_value(line, component);
  line += " msg=";
  append_value(line, message);
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    append_value(line, value);
  }
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

}  // namespace kforge
