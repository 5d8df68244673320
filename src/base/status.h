// Status and Result<T>: the one error model used at every module boundary in Govern.
//
// A Status is either ok or carries a Code and a human-readable message. Result<T> holds either a value
// or a non-ok Status. Neither throws; no exception crosses a module's public API. Both are cheap to
// move and safe to copy; they are not synchronised (treat them as values).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace govern {

// Codes follow the gRPC/Abseil canon so that HTTP and protocol layers can map them uniformly.
enum class Code : int {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,  // out of space, over quota, over a concurrency limit
  kFailedPrecondition,
  kAborted,  // a conflict the caller may retry (serialization failure, lost race)
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,  // transient: retry later
  kDataLoss,     // corruption detected
  kUnauthenticated,
};

// Stable lower-case name of a code ("invalid_argument"), used in logs and problem+json "type" URIs.
std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: bad port" (or "ok").
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; ok stays ok.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
inline Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {Code::kOutOfRange, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status DataLoss(std::string m) { return {Code::kDataLoss, std::move(m)}; }
inline Status Unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }

// Maps an errno value to a Status: ENOSPC/EDQUOT -> resource_exhausted, ENOENT -> not_found, and so on.
// The message is "what: strerror(err)".
Status ErrnoStatus(int err, std::string_view what);

// Result<T>: a value or an error. Accessing value() of an error is a programming bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error, or ok when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { assert(ok()); return std::get<T>(v_); }
  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? std::get<T>(v_) : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace govern

#define GOVERN_CONCAT_INNER_(a, b) a##b
#define GOVERN_CONCAT_(a, b) GOVERN_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` (a Status) is not ok.
#define GOVERN_RETURN_IF_ERROR(expr)               \
  do {                                             \
    ::govern::Status govern_status_ = (expr);      \
    if (!govern_status_.ok()) return govern_status_; \
  } while (0)

// `GOVERN_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its error.
#define GOVERN_ASSIGN_OR_RETURN(lhs, expr) \
  GOVERN_ASSIGN_OR_RETURN_IMPL_(GOVERN_CONCAT_(govern_result_, __LINE__), lhs, expr)
#define GOVERN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
