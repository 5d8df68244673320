// TOTP second factor storage and checks.
#include "services/auth/totp.h"

#include "crypto/encoding.h"
#include "db/connection.h"
#include "services/auth/keys.h"
#include "webauthn/totp.h"

namespace govern::auth_service {
namespace {

std::string Aad(std::string_view user_id) { return "totp:" + std::string(user_id); }

struct Stored {
  crypto::SecretBytes secret;
  bool confirmed = false;
  int64_t last_step = 0;
};

Result<std::optional<Stored>> Load(db::Connection& c, const crypto::Aes256GcmKey& key,
                                   std::string_view user_id) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows, c.ExecPrepared("SELECT sealed, confirmed, last_step FROM auth_totp WHERE user_id = $1",
                                    db::Params(user_id)));
  if (rows.empty()) return std::optional<Stored>();
  GOVERN_ASSIGN_OR_RETURN(std::string sealed, rows.Bytes(0, 0));
  GOVERN_ASSIGN_OR_RETURN(std::string plain, Open(key, sealed, Aad(user_id)));
  Stored s;
  s.secret = crypto::SecretBytes::FromString(plain);
  std::fill(plain.begin(), plain.end(), '\0');
  s.confirmed = rows.Text(0, 1) == "t";
  GOVERN_ASSIGN_OR_RETURN(s.last_step, rows.Int64(0, 2));
  return std::optional<Stored>(std::move(s));
}

}  // namespace

Result<TotpEnrolment> BeginTotp(db::Connection& c, const crypto::Aes256GcmKey& key, std::string_view user_id,
                                std::string_view issuer_label, std::string_view account) {
  GOVERN_ASSIGN_OR_RETURN(std::optional<Stored> existing, Load(c, key, user_id));
  if (existing && existing->confirmed)
    return AlreadyExists("a confirmed second factor exists; remove it first");
  GOVERN_ASSIGN_OR_RETURN(crypto::SecretBytes secret, webauthn::NewTotpSecret());
  GOVERN_ASSIGN_OR_RETURN(std::string sealed, Seal(key, crypto::AsString(secret.span()), Aad(user_id)));
  GOVERN_RETURN_IF_ERROR(
      c.Exec("INSERT INTO auth_totp (user_id, sealed, confirmed, last_step) VALUES ($1, $2, false, 0) "
             "ON CONFLICT (user_id) DO UPDATE SET sealed = EXCLUDED.sealed, confirmed = false, last_step = 0",
             db::Params(user_id, db::Bytea{sealed}))
          .status());
  return TotpEnrolment{webauthn::Base32Encode(secret.span()),
                       webauthn::OtpauthUri(issuer_label, account, secret.span())};
}

Status ConfirmTotp(db::Connection& c, const crypto::Aes256GcmKey& key, std::string_view user_id,
                   std::string_view code, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(std::optional<Stored> s, Load(c, key, user_id));
  if (!s) return NotFound("no second factor is being enrolled");
  if (s->confirmed) return AlreadyExists("the second factor is already confirmed");
  auto step = webauthn::VerifyTotp(s->secret.span(), code, now_s, std::nullopt);
  if (!step.ok()) return Unauthenticated("wrong code");
  return c
      .Exec("UPDATE auth_totp SET confirmed = true, last_step = $2 WHERE user_id = $1",
            db::Params(user_id, *step))
      .status();
}

Result<bool> HasTotp(db::Connection& c, std::string_view user_id) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.ExecPrepared("SELECT 1 FROM auth_totp WHERE user_id = $1 AND confirmed", db::Params(user_id)));
  return !rows.empty();
}

Status CheckTotp(db::Connection& c, const crypto::Aes256GcmKey& key, const RateLimitPolicy& limits,
                 std::string_view user_id, std::string_view code, int64_t now_s, int64_t* retry_after) {
  std::string limit_key = "totp:" + std::string(user_id);
  GOVERN_ASSIGN_OR_RETURN(int64_t locked, LockedFor(c, limit_key, now_s));
  if (locked > 0) {
    *retry_after = locked;
    return ResourceExhausted("too many wrong codes; retry later");
  }
  auto s = Load(c, key, user_id);
  if (!s.ok()) return Unavailable("second factor store: " + s.status().message());
  if (!*s || !(*s)->confirmed) return Unauthenticated("no second factor");
  auto step = webauthn::VerifyTotp((*s)->secret.span(), code, now_s, (*s)->last_step);
  if (step.ok()) {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows, c.Exec("UPDATE auth_totp SET last_step = $2 WHERE user_id = $1 AND last_step < $2",
                              db::Params(user_id, *step)));
    if (rows.affected() == 1) {
      (void)ClearFailures(c, limit_key);
      return OkStatus();
    }
  }
  GOVERN_RETURN_IF_ERROR(RecordFailure(c, limit_key, limits.max_failures_account, limits, now_s));
  return Unauthenticated("wrong or already used code");
}

Status RemoveTotp(db::Connection& c, std::string_view user_id) {
  return c.Exec("DELETE FROM auth_totp WHERE user_id = $1", db::Params(user_id)).status();
}

}  // namespace govern::auth_service
