// Structured logging: one line per event, with a time, a level, a component and key=value fields.
//
// Two formats: "text" (logfmt: ts=... level=info component=wal msg="..." key=value) and "json" (one
// JSON object per line). A line is written with a single write(2), so lines from different threads
// never interleave. Thread-safe. The sink is process-wide: Configure() it once at start.
//
// Never pass secrets (tokens, passwords, keys) as fields: log lines leave the process.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace govern::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kText, kJson };

// Parses "debug", "info", "warn", "error"; returns false on anything else.
bool ParseLevel(std::string_view s, Level* out);
bool ParseFormat(std::string_view s, Format* out);

// One key=value pair. Numbers and booleans are written bare, strings quoted when needed.
struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, const char* v) : key(k), value(v ? v : ""), quoted(true) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v), quoted(true) {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>>
  Field(std::string_view k, T v) : key(k), value(std::to_string(v)), quoted(false) {}

  std::string_view key;
  std::string value;
  bool quoted;
};

// Sets the minimum level, the format and the file descriptor lines go to (default: info, text, 2).
void Configure(Level min_level, Format format, int fd = 2);
Level MinLevel();
bool Enabled(Level level);

// Writes one line. Cheap when the level is disabled.
void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields = {});

// fsyncs the sink when it is a file (called at shutdown so the last lines survive).
void Sync();

inline void Debug(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, c, m, f);
}
inline void Info(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  Write(Level::kInfo, c, m, f);
}
inline void Warn(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  Write(Level::kWarn, c, m, f);
}
inline void Error(std::string_view c, std::string_view m, std::initializer_list<Field> f = {}) {
  Write(Level::kError, c, m, f);
}

// Formats one line without writing it (exposed for tests).
std::string FormatLine(Format format, int64_t unix_micros, Level level, std::string_view component,
                       std::string_view message, std::initializer_list<Field> fields);

}  // namespace govern::log
