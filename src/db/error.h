// How PostgreSQL errors become Govern Statuses.
//
// Every error from this folder carries the SQLSTATE at the start of its message
// ("sqlstate 23505: duplicate key value violates unique constraint ...") so callers can branch on it
// with SqlStateOf() without a second error type. Messages come from the server or libpq and never
// contain the connection string or a password. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "base/status.h"

namespace govern::db {

// Maps a SQLSTATE to a Code: 23505 -> AlreadyExists, 40001/40P01 -> Aborted, 08xxx/57P0x -> Unavailable,
// 28xxx -> Unauthenticated, 42501 -> PermissionDenied, 22xxx/42xxx -> InvalidArgument, 53xxx/54xxx ->
// ResourceExhausted, 57014 -> Cancelled, 23xxx/25xxx -> FailedPrecondition, anything else -> Internal.
Code CodeForSqlState(std::string_view sqlstate);

// A Status with the code for `sqlstate` and the message "sqlstate <sqlstate>: <message>".
Status SqlError(std::string_view sqlstate, std::string_view message);

// The SQLSTATE carried by a Status made by SqlError, or "" when there is none.
std::string_view SqlStateOf(const Status& status);

// True for serialization failure (40001) and deadlock (40P01): the transaction may be run again.
bool IsRetryableConflict(const Status& status);

// True when the status says the connection is gone (class 08, 57P01-57P03): reconnecting may help.
bool IsConnectionLoss(const Status& status);

}  // namespace govern::db
