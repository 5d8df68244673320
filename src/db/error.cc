// SQLSTATE to Status mapping.
#include "db/error.h"

#include <string>

namespace govern::db {
namespace {
constexpr std::string_view kPrefix = "sqlstate ";
}

Code CodeForSqlState(std::string_view s) {
  if (s.size() != 5) return Code::kInternal;
  if (s == "23505") return Code::kAlreadyExists;
  if (s == "40001" || s == "40P01") return Code::kAborted;
  if (s == "57014") return Code::kCancelled;
  if (s == "42501") return Code::kPermissionDenied;
  if (s == "53300") return Code::kUnavailable;  // too many connections: transient
  if (s == "55P03") return Code::kAborted;      // lock not available (NOWAIT)
  std::string_view cls = s.substr(0, 2);
  if (cls == "08") return Code::kUnavailable;
  if (s == "57P01" || s == "57P02" || s == "57P03") return Code::kUnavailable;
  if (cls == "28") return Code::kUnauthenticated;
  if (cls == "22" || cls == "42") return Code::kInvalidArgument;
  if (cls == "53" || cls == "54") return Code::kResourceExhausted;
  if (cls == "23" || cls == "25" || cls == "2B" || cls == "55") return Code::kFailedPrecondition;
  if (cls == "0A") return Code::kUnimplemented;
  if (s == "XX001" || s == "XX002") return Code::kDataLoss;  // data or index corrupted
  return Code::kInternal;
}

Status SqlError(std::string_view sqlstate, std::string_view message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.remove_suffix(1);
  std::string m(kPrefix);
  m += sqlstate;
  m += ": ";
  m += message;
  return Status(CodeForSqlState(sqlstate), std::move(m));
}

std::string_view SqlStateOf(const Status& status) {
  std::string_view m = status.message();
  // WithContext() may have put "context: " in front, so search rather than require a prefix.
  size_t at = m.find(kPrefix);
  if (at == std::string_view::npos || m.size() < at + kPrefix.size() + 5) return {};
  return m.substr(at + kPrefix.size(), 5);
}

bool IsRetryableConflict(const Status& status) {
  std::string_view s = SqlStateOf(status);
  return s == "40001" || s == "40P01";
}

bool IsConnectionLoss(const Status& status) {
  std::string_view s = SqlStateOf(status);
  return s.substr(0, 2) == "08" || s == "57P01" || s == "57P02" || s == "57P03";
}

}  // namespace govern::db
