// Password sign-in with equal answers, equal work, hash upgrades and rate limits.
#include "services/auth/passwords.h"

#include <algorithm>
#include <cctype>

#include "crypto/encoding.h"
#include "crypto/random.h"
#include "db/connection.h"

namespace govern::auth_service {
namespace {

constexpr std::string_view kRefused = "invalid email or password";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return out;
}

}  // namespace

Result<std::string> MakeDummyHash(const crypto::Argon2Params& params) {
  std::array<uint8_t, 24> random{};
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(random));
  return crypto::HashPassword(crypto::Base64UrlEncode(random), params);
}

Result<int64_t> LockedFor(db::Connection& c, std::string_view key, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.ExecPrepared("SELECT locked_until FROM auth_rate_limits WHERE key = $1", db::Params(key)));
  if (rows.empty()) return int64_t{0};
  GOVERN_ASSIGN_OR_RETURN(int64_t until, rows.Int64(0, 0));
  return std::max<int64_t>(0, until - now_s);
}

Status RecordFailure(db::Connection& c, std::string_view key, int max_failures, const RateLimitPolicy& p,
                     int64_t now_s) {
  // A fixed window per key: a failure after the window closed starts a new one.
  return c
      .ExecPrepared(
          "INSERT INTO auth_rate_limits AS r (key, window_start, failures, locked_until) "
          "VALUES ($1, $2, 1, CASE WHEN 1 >= $3 THEN $2 + $4 ELSE 0 END) "
          "ON CONFLICT (key) DO UPDATE SET "
          "window_start = CASE WHEN r.window_start + $5 <= $2 THEN $2 ELSE r.window_start END, "
          "failures = CASE WHEN r.window_start + $5 <= $2 THEN 1 ELSE r.failures + 1 END, "
          "locked_until = CASE WHEN (CASE WHEN r.window_start + $5 <= $2 THEN 1 ELSE r.failures + 1 END) >= "
          "$3 "
          "THEN $2 + $4 ELSE r.locked_until END",
          db::Params(key, now_s, max_failures, p.lockout_s, p.window_s))
      .status();
}

Status ClearFailures(db::Connection& c, std::string_view key) {
  return c.ExecPrepared("DELETE FROM auth_rate_limits WHERE key = $1", db::Params(key)).status();
}

SignInResult SignInWithPassword(db::Connection& c, const PasswordPolicy& policy, std::string_view org,
                                std::string_view email, std::string_view password, std::string_view source,
                                int64_t now_s) {
  SignInResult out;
  std::string account_key = "account:" + std::string(org.substr(0, 64)) + "/" + Lower(email.substr(0, 254));
  std::string address_key = source.empty() ? std::string() : "addr:" + std::string(source.substr(0, 64));
  for (const std::string* key : {&account_key, &address_key}) {
    if (key->empty()) continue;
    auto locked = LockedFor(c, *key, now_s);
    if (!locked.ok()) {
      out.status = Unavailable("sign-in store: " + locked.status().message());
      return out;
    }
    if (*locked > 0) {
      out.status = ResourceExhausted("too many failed sign-ins; retry later");
      out.retry_after = *locked;
      return out;
    }
  }
  std::optional<User> user;
  if (ValidateOrg(org).ok() && ValidateEmail(email).ok() && password.size() <= 1024) {
    auto found = FindUserByEmail(c, org, email);
    if (!found.ok()) {
      out.status = Unavailable("sign-in store: " + found.status().message());
      return out;
    }
    user = std::move(*found);
  }
  bool usable = user && !user->disabled && !user->password_hash.empty();
  // Same work whether or not the account exists: verify against the dummy when there is no hash.
  Status verified =
      crypto::VerifyPassword(password.substr(0, 1024), usable ? user->password_hash : policy.dummy_hash);
  if (!usable || !verified.ok()) {
    Status s = RecordFailure(c, account_key, policy.limits.max_failures_account, policy.limits, now_s);
    if (s.ok() && !address_key.empty())
      s = RecordFailure(c, address_key, policy.limits.max_failures_address, policy.limits, now_s);
    out.status =
        s.ok() ? Unauthenticated(std::string(kRefused)) : Unavailable("sign-in store: " + s.message());
    return out;
  }
  (void)ClearFailures(c, account_key);
  if (crypto::NeedsRehash(user->password_hash, policy.argon2)) {
    auto fresh = crypto::HashPassword(password, policy.argon2);
    if (fresh.ok() && SetPasswordHash(c, user->user_id, *fresh).ok()) {
      user->password_hash = *fresh;
      out.rehashed = true;
    }
  }
  out.user = std::move(*user);
  return out;
}

}  // namespace govern::auth_service
