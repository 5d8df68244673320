// Rows: the result of one statement, read by row and column.
//
// Values arrive in PostgreSQL's text format; the typed getters parse them and return an error (never
// crash) when a value is NULL or does not parse. Owns the libpq result; move-only; not synchronised,
// but a Rows may be read from any thread once its statement has returned.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

struct pg_result;

namespace govern::db {

class Rows {
 public:
  Rows() = default;
  explicit Rows(pg_result* result);  // takes ownership

  int size() const;     // number of rows
  int columns() const;  // number of columns
  bool empty() const { return size() == 0; }
  // Rows touched by INSERT/UPDATE/DELETE/COPY (the command tag's count), or 0.
  int64_t affected() const;
  // The command tag ("INSERT 0 1", "COMMIT", "ROLLBACK").
  std::string_view tag() const;
  // Index of the column called `name`, or -1.
  int column(std::string_view name) const;

  bool IsNull(int row, int col) const;
  // The text form of the value ("" for NULL). Valid while this Rows lives.
  std::string_view Text(int row, int col) const;
  std::optional<std::string_view> OptText(int row, int col) const;
  Result<std::string> String(int row, int col) const;  // NULL is an error
  Result<int64_t> Int64(int row, int col) const;
  Result<double> Double(int row, int col) const;
  Result<bool> Bool(int row, int col) const;
  // A bytea value decoded to its raw bytes.
  Result<std::string> Bytes(int row, int col) const;

 private:
  Status Check(int row, int col) const;
  struct Deleter {
    void operator()(pg_result* r) const;
  };
  std::unique_ptr<pg_result, Deleter> res_;
};

}  // namespace govern::db
