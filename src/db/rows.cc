// Rows: typed access to a libpq result.
#include "db/rows.h"

#include <libpq-fe.h>

#include <charconv>
#include <cstdlib>

#include "base/ascii.h"

namespace govern::db {

void Rows::Deleter::operator()(pg_result* r) const { PQclear(r); }

Rows::Rows(pg_result* result) : res_(result) {}

int Rows::size() const { return res_ ? PQntuples(res_.get()) : 0; }
int Rows::columns() const { return res_ ? PQnfields(res_.get()) : 0; }

int64_t Rows::affected() const {
  if (!res_) return 0;
  const char* n = PQcmdTuples(res_.get());
  int64_t v = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

std::string_view Rows::tag() const { return res_ ? PQcmdStatus(res_.get()) : ""; }

int Rows::column(std::string_view name) const {
  for (int c = 0; c < columns(); ++c) {
    if (name == PQfname(res_.get(), c)) return c;
  }
  return -1;
}

Status Rows::Check(int row, int col) const {
  if (row < 0 || row >= size() || col < 0 || col >= columns()) {
    return OutOfRange("no value at row " + std::to_string(row) + ", column " + std::to_string(col));
  }
  if (PQgetisnull(res_.get(), row, col)) {
    return FailedPrecondition(std::string("column ") + PQfname(res_.get(), col) + " is NULL");
  }
  return OkStatus();
}

bool Rows::IsNull(int row, int col) const {
  if (row < 0 || row >= size() || col < 0 || col >= columns()) return true;
  return PQgetisnull(res_.get(), row, col) != 0;
}

std::string_view Rows::Text(int row, int col) const {
  if (IsNull(row, col)) return {};
  return {PQgetvalue(res_.get(), row, col), static_cast<size_t>(PQgetlength(res_.get(), row, col))};
}

std::optional<std::string_view> Rows::OptText(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Text(row, col);
}

Result<std::string> Rows::String(int row, int col) const {
  GOVERN_RETURN_IF_ERROR(Check(row, col));
  return std::string(Text(row, col));
}

Result<int64_t> Rows::Int64(int row, int col) const {
  GOVERN_RETURN_IF_ERROR(Check(row, col));
  std::string_view t = Text(row, col);
  int64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) {
    return InvalidArgument("not an integer: " + std::string(t.substr(0, 40)));
  }
  return v;
}

Result<double> Rows::Double(int row, int col) const {
  GOVERN_RETURN_IF_ERROR(Check(row, col));
  std::string_view t = Text(row, col);
  // from_chars does not read "Infinity"/"NaN" spelled PostgreSQL's way; strtod does.
  std::string s(t);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return InvalidArgument("not a number: " + s.substr(0, 40));
  return v;
}

Result<bool> Rows::Bool(int row, int col) const {
  GOVERN_RETURN_IF_ERROR(Check(row, col));
  std::string_view t = Text(row, col);
  if (t == "t") return true;
  if (t == "f") return false;
  return InvalidArgument("not a boolean: " + std::string(t.substr(0, 40)));
}

Result<std::string> Rows::Bytes(int row, int col) const {
  GOVERN_RETURN_IF_ERROR(Check(row, col));
  std::string_view t = Text(row, col);
  if (t.size() < 2 || t[0] != '\\' || t[1] != 'x' || t.size() % 2 != 0) {
    return InvalidArgument("not a bytea in hex format");
  }
  std::string out;
  out.reserve((t.size() - 2) / 2);
  for (size_t i = 2; i < t.size(); i += 2) {
    int hi = HexDigitValue(t[i]), lo = HexDigitValue(t[i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgument("bad hex digit in bytea");
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

}  // namespace govern::db
