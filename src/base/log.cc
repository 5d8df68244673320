// The process-wide log sink.
#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace govern::log {
namespace {

std::atomic<int> g_min_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kText)};
std::atomic<int> g_fd{2};
std::mutex g_write_mu;

std::string_view LevelName(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

// JSON string escaping; also used for quoted logfmt values so both formats escape the same way.
void AppendEscaped(std::string& out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) return true;
  }
  return false;
}

void AppendTime(std::string& out, int64_t unix_micros) {
  time_t secs = static_cast<time_t>(unix_micros / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[96];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_micros % 1000000));
  out += buf;
}

}  // namespace

bool ParseLevel(std::string_view s, Level* out) {
  if (s == "debug") *out = Level::kDebug;
  else if (s == "info") *out = Level::kInfo;
  else if (s == "warn" || s == "warning") *out = Level::kWarn;
  else if (s == "error") *out = Level::kError;
  else return false;
  return true;
}

bool ParseFormat(std::string_view s, Format* out) {
  if (s == "text") *out = Format::kText;
  else if (s == "json") *out = Format::kJson;
  else return false;
  return true;
}

void Configure(Level min_level, Format format, int fd) {
  g_min_level.store(static_cast<int>(min_level));
  g_format.store(static_cast<int>(format));
  g_fd.store(fd);
}

Level MinLevel() { return static_cast<Level>(g_min_level.load(std::memory_order_relaxed)); }

bool Enabled(Level level) {
  return static_cast<int>(level) >= g_min_level.load(std::memory_order_relaxed);
}

std::string FormatLine(Format format, int64_t unix_micros, Level level, std::string_view component,
                       std::string_view message, std::initializer_list<Field> fields) {
  std::string line;
  line.reserve(128);
  if (format == Format::kJson) {
    line += "{\"ts\":\"";
    AppendTime(line, unix_micros);
    line += "\",\"level\":\"";
    line += LevelName(level);
    line += "\",\"component\":\"";
    AppendEscaped(line, component);
    line += "\",\"msg\":\"";
    AppendEscaped(line, message);
    line += '"';
    for (const Field& f : fields) {
      line += ",\"";
      AppendEscaped(line, f.key);
      line += "\":";
      if (f.quoted) {
        line += '"';
        AppendEscaped(line, f.value);
        line += '"';
      } else {
        line += f.value;
      }
    }
    line += "}\n";
    return line;
  }
  line += "ts=";
  AppendTime(line, unix_micros);
  line += " level=";
  line += LevelName(level);
  line += " component=";
  line += component;
  line += " msg=\"";
  AppendEscaped(line, message);
  line += '"';
  for (const Field& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    if (f.quoted && NeedsQuotes(f.value)) {
      line += '"';
      AppendEscaped(line, f.value);
      line += '"';
    } else {
      line += f.value;
    }
  }
  line += '\n';
  return line;
}

void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  std::string line = FormatLine(static_cast<Format>(g_format.load(std::memory_order_relaxed)), now, level,
                                component, message, fields);
  int fd = g_fd.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_write_mu);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // Nowhere left to report a failing log sink.
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Sync() {
  int fd = g_fd.load();
  ::fsync(fd);  // EINVAL on a pipe or terminal is expected and harmless.
}

}  // namespace govern::log
