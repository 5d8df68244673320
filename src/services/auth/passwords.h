// Password sign-in: Argon2id check, hash upgrade, and rate limits per account and per source address.
//
// SignInWithPassword gives one answer, kUnauthenticated "invalid email or password", for an unknown
// email, a disabled user, a user without a password and a wrong password, and does the same work for
// all of them: when there is no stored hash it verifies against a dummy hash made with the current
// parameters, so the time taken does not tell whether the account exists.
//
// Rate limits are failure counts in auth_rate_limits (shared by every auth replica): `max_failures`
// failures of one key inside `window` lock that key for `lockout`. Keys are "account:<org>/<email>"
// (so guessing one account's password is capped wherever it comes from) and "addr:<source>" (so one
// source cannot spray many accounts). A locked key is refused before any hashing, with kResourceExhausted
// and the seconds to wait (the HTTP layer answers 429 with Retry-After). A success clears the account key.
//
// Thread-safe as far as the Connection allows (one thread per connection).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "crypto/password.h"
#include "services/auth/store.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

struct RateLimitPolicy {
  int max_failures_account = 5;
  int max_failures_address = 50;
  int64_t window_s = 900;
  int64_t lockout_s = 900;
};

struct PasswordPolicy {
  crypto::Argon2Params argon2;
  RateLimitPolicy limits;
  std::string dummy_hash;  // MakeDummyHash(argon2): verified when there is no real hash
};

// A PHC string of a random password with `params`, for equal-time refusals.
Result<std::string> MakeDummyHash(const crypto::Argon2Params& params);

// Seconds `key` stays locked at `now_s` (0: not locked).
Result<int64_t> LockedFor(db::Connection& c, std::string_view key, int64_t now_s);
// Counts a failure of `key`; locks it when the count reaches `max_failures` within the window.
Status RecordFailure(db::Connection& c, std::string_view key, int max_failures, const RateLimitPolicy& p,
                     int64_t now_s);
Status ClearFailures(db::Connection& c, std::string_view key);

struct SignInResult {
  Status status;            // ok, kUnauthenticated, kResourceExhausted (locked), kUnavailable
  int64_t retry_after = 0;  // seconds, with kResourceExhausted
  User user;                // when ok
  bool rehashed = false;    // the stored hash was upgraded to the current parameters
};

// `source` is the client's address (may be empty when unknown: then only the account limit applies).
SignInResult SignInWithPassword(db::Connection& c, const PasswordPolicy& policy, std::string_view org,
                                std::string_view email, std::string_view password, std::string_view source,
                                int64_t now_s);

}  // namespace govern::auth_service
