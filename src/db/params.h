// Params: the values bound to $1, $2, ... of one statement. SQL text and data never mix.
//
// Strings, integers, doubles and bools are sent in text format, bytea in binary format; an empty
// optional (or std::nullopt) is NULL. Integers carry their type (int4/int8), as do doubles (float8) and
// bools, so "SELECT $1 + $2" resolves; strings are sent untyped, so the server reads them as whatever
// the context needs (text, jsonb, timestamptz, uuid...). A string holding a NUL byte cannot travel in
// text format: adding one records an InvalidArgument error that the statement returns instead of
// running. A value type: copy or move it freely; not synchronised.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::db {

// Raw bytes for a bytea parameter (any bytes, NUL included).
struct Bytea {
  std::string_view data;
};

class Params {
 public:
  Params() = default;
  // Params(a, b, c) is Params().Add(a).Add(b).Add(c).
  template <typename... Ts>
  requires(sizeof...(Ts) > 0) explicit Params(const Ts&... values) { (Add(values), ...); }

  Params& Add(std::string_view v);
  Params& Add(const char* v) { return Add(std::string_view(v)); }
  Params& Add(const std::string& v) { return Add(std::string_view(v)); }
  Params& Add(bool v);
  Params& Add(double v);
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) Params& Add(T v) {
    return AddTyped(std::to_string(v), (sizeof(T) <= 4 && std::is_signed_v<T>) ? kInt4 : kInt8);
  }
  Params& Add(std::nullopt_t);
  Params& Add(Bytea v);
  template <typename T>
  Params& Add(const std::optional<T>& v) {
    return v ? Add(*v) : Add(std::nullopt);
  }

  size_t size() const { return values_.size(); }
  // Ok, or the first problem found while adding (a NUL in a string).
  const Status& error() const { return error_; }

  // For the connection: parallel arrays in the shape libpq wants. Pointers stay valid while *this
  // is alive and unmodified.
  struct Raw {
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats;
    std::vector<unsigned int> types;
  };
  Raw raw() const;
  const std::vector<unsigned int>& types() const { return types_; }

  static constexpr unsigned int kUntyped = 0, kBool = 16, kBytea = 17, kInt8 = 20, kInt4 = 23, kFloat8 = 701;

 private:
  Params& AddTyped(std::string value, unsigned int type);

  std::vector<std::string> values_;
  std::vector<bool> null_;
  std::vector<unsigned int> types_;
  Status error_;
};

}  // namespace govern::db
