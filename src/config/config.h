// Configuration: one TOML file, GOVERN_* environment variables and command-line flags.
//
// Every key is declared in a Schema (name, type, default, help), so unknown keys and bad values are
// refused at start with where they came from ("govern.toml:12: log.level: must be one of debug,
// info, warn, error"), and docs/configuration.md is generated from the same declarations
// (`govern config docs`). Precedence, highest first: flags (--set key=value and the dedicated flags),
// then environment (GOVERN_LOG_LEVEL for log.level), then the file, then the default.
//
// Schema and Config are plain values: build them once at start, then share const references across
// threads (const access is thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::config {

enum class Type { kString, kInt, kBool, kDuration, kBytes, kEnum, kStringList };

struct KeySpec {
  std::string key;            // "log.level": lower-case segments joined by dots
  Type type = Type::kString;
  std::string default_value;  // in the same text form a user would write
  std::string help;
  std::vector<std::string> choices;  // kEnum only
  int64_t min = INT64_MIN;           // kInt, kBytes, kDuration (millis) bounds
  int64_t max = INT64_MAX;
  bool secret = false;  // never printed back (`govern config show` masks it)
  // Extra check of the value's text after its type is checked (a listen address, a service name).
  // Its error message becomes the reason, with the value's origin in front.
  std::function<Status(std::string_view)> validate;
};

// The environment variable for a key: "log.level" -> "GOVERN_LOG_LEVEL".
std::string EnvName(std::string_view key);

class Schema {
 public:
  // Declaring the same key twice is a programming error (asserts).
  void Add(KeySpec spec);
  const KeySpec* Find(std::string_view key) const;
  const std::vector<KeySpec>& keys() const { return keys_; }
  // Markdown reference of every key (docs/configuration.md's table).
  std::string Markdown() const;

 private:
  std::vector<KeySpec> keys_;
  std::map<std::string, size_t, std::less<>> index_;
};

// Where a value came from, for error messages and `govern config show`.
struct Origin {
  enum class Kind { kDefault, kFile, kEnv, kFlag } kind = Kind::kDefault;
  std::string where;  // "govern.toml:12", "GOVERN_LOG_LEVEL", "--set"
};

// Parses text forms: "250ms", "5s", "2m", "1h"; a bare number must be 0 (a unit is required, so
// "60" is never silently 60 ms).
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);
// Parses "8MiB", "16KiB", "1GiB", "512" (bytes), "10MB" (10^6).
Result<int64_t> ParseBytes(std::string_view text);

struct LoadOptions {
  std::string file;  // empty: no file
  bool file_required = false;  // true when the user named the file explicitly
  std::vector<std::pair<std::string, std::string>> env;    // usually the process environment
  std::vector<std::pair<std::string, std::string>> flags;  // key=value from the command line
};

class Config {
 public:
  // Validates everything; the first problem found is returned with its origin.
  static Result<Config> Load(const Schema& schema, const LoadOptions& options);

  // Typed getters. Asking for an undeclared key or the wrong type is a programming error (asserts).
  const std::string& GetString(std::string_view key) const;
  int64_t GetInt(std::string_view key) const;
  bool GetBool(std::string_view key) const;
  std::chrono::milliseconds GetDuration(std::string_view key) const;
  int64_t GetBytes(std::string_view key) const;
  std::vector<std::string> GetStringList(std::string_view key) const;
  const Origin& OriginOf(std::string_view key) const;

  // "key = value  # origin" per line, secrets masked.
  std::string Describe() const;

  // GOVERN_* environment variables that name no key and look like no key (tools' own variables, such
  // as GOVERN_TEST_JOBS): the caller may warn. A variable one or two letters away from a key's
  // variable is refused by Load instead, as a typo.
  const std::vector<std::string>& unknown_env() const { return unknown_env_; }

 private:
  struct Value {
    const KeySpec* spec = nullptr;
    std::string text;  // canonical text form
    int64_t number = 0;  // kInt, kBytes, kDuration (millis), kBool (0/1)
    std::vector<std::string> list;
    Origin origin;
  };
  const Value& Get(std::string_view key, Type type) const;
  std::map<std::string, Value, std::less<>> values_;
  std::vector<std::string> unknown_env_;
};

// The process environment as pairs (only GOVERN_* variables).
std::vector<std::pair<std::string, std::string>> ProcessEnv();

}  // namespace govern::config
