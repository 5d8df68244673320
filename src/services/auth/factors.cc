// Sign-in factors: listing and administrator removal (factors.h has the rules).
#include "services/auth/factors.h"

#include "base/log.h"
#include "crypto/encoding.h"
#include "db/connection.h"
#include "services/auth/store.h"

namespace govern::auth_service {

std::string_view FactorKindName(FactorKind k) {
  switch (k) {
    case FactorKind::kPassword:
      return "password";
    case FactorKind::kTotp:
      return "totp";
    case FactorKind::kPasskey:
      return "passkey";
    case FactorKind::kSso:
      return "sso";
  }
  return "?";
}

Result<FactorKind> ParseRemovableFactorKind(std::string_view name) {
  if (name == "password") return FactorKind::kPassword;
  if (name == "totp") return FactorKind::kTotp;
  if (name == "passkey") return FactorKind::kPasskey;
  return InvalidArgument("factor must be password, totp or passkey");
}

Result<std::vector<Factor>> ListFactors(db::Connection& c, std::string_view user_id) {
  GOVERN_ASSIGN_OR_RETURN(User user, GetUser(c, user_id));
  std::vector<Factor> out;
  if (!user.password_hash.empty()) out.push_back({.kind = FactorKind::kPassword});
  GOVERN_ASSIGN_OR_RETURN(db::Rows totp, c.ExecPrepared("SELECT confirmed FROM auth_totp WHERE user_id = $1",
                                                        db::Params(user_id)));
  if (!totp.empty()) {
    GOVERN_ASSIGN_OR_RETURN(bool confirmed, totp.Bool(0, 0));
    out.push_back({.kind = FactorKind::kTotp, .confirmed = confirmed});
  }
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows keys,
      c.ExecPrepared("SELECT credential_id, algorithm, extract(epoch FROM created_at)::bigint, "
                     "extract(epoch FROM last_used_at)::bigint FROM auth_passkeys WHERE user_id = $1 "
                     "ORDER BY created_at, credential_id",
                     db::Params(user_id)));
  for (int i = 0; i < keys.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(std::string id, keys.Bytes(i, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t alg, keys.Int64(i, 1));
    GOVERN_ASSIGN_OR_RETURN(int64_t created, keys.Int64(i, 2));
    Factor f{.kind = FactorKind::kPasskey,
             .id = crypto::Base64UrlEncode(id),
             .algorithm = static_cast<int>(alg),
             .created_at = created};
    if (!keys.IsNull(i, 3)) {
      GOVERN_ASSIGN_OR_RETURN(int64_t used, keys.Int64(i, 3));
      f.last_used_at = used;
    }
    out.push_back(std::move(f));
  }
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows links,
      c.ExecPrepared("SELECT identity FROM auth_sso_links WHERE user_id = $1 ORDER BY identity",
                     db::Params(user_id)));
  for (int i = 0; i < links.size(); ++i)
    out.push_back({.kind = FactorKind::kSso, .id = std::string(links.Text(i, 0))});
  return out;
}

Result<RemoveFactorResult> RemoveFactor(db::Connection& c, const RemoveFactorRequest& request, int64_t now_s,
                                        int64_t revoke_until) {
  if (request.reason.size() > 500) return InvalidArgument("reason is longer than 500 bytes");
  if (request.kind == FactorKind::kSso) return InvalidArgument("factor must be password, totp or passkey");
  std::string credential;
  if (request.kind == FactorKind::kPasskey) {
    auto raw = crypto::Base64UrlDecode(request.passkey_id);
    if (!raw.ok() || raw->empty() || raw->size() > 1023)
      return InvalidArgument("the passkey id is not a credential id in base64url");
    credential.assign(raw->begin(), raw->end());
  }
  RemoveFactorResult result;
  std::string org;
  Status s = c.Transact([&](db::Connection& tx) -> Status {
    result = {};
    GOVERN_ASSIGN_OR_RETURN(db::Rows user, tx.Exec("SELECT org, subject, COALESCE(password_hash, '') <> '' "
                                                   "FROM auth_users WHERE user_id = $1 FOR UPDATE",
                                                   db::Params(request.user_id)));
    if (user.empty()) return NotFound("no such user");
    org = std::string(user.Text(0, 0));
    std::string subject(user.Text(0, 1));
    GOVERN_ASSIGN_OR_RETURN(bool has_password, user.Bool(0, 2));
    GOVERN_ASSIGN_OR_RETURN(db::Rows counts,
                            tx.Exec("SELECT (SELECT count(*) FROM auth_passkeys WHERE user_id = $1), "
                                    "(SELECT count(*) FROM auth_sso_links WHERE user_id = $1)",
                                    db::Params(request.user_id)));
    GOVERN_ASSIGN_OR_RETURN(int64_t passkeys, counts.Int64(0, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t links, counts.Int64(0, 1));
    int64_t ways = (has_password ? 1 : 0) + passkeys + links;

    switch (request.kind) {
      case FactorKind::kPassword: {
        if (!has_password) return NotFound("the user has no password");
        GOVERN_RETURN_IF_ERROR(tx.Exec("UPDATE auth_users SET password_hash = NULL WHERE user_id = $1",
                                       db::Params(request.user_id))
                                   .status());
        break;
      }
      case FactorKind::kTotp: {
        GOVERN_ASSIGN_OR_RETURN(db::Rows gone, tx.Exec("DELETE FROM auth_totp WHERE user_id = $1 RETURNING 1",
                                                       db::Params(request.user_id)));
        if (gone.empty()) return NotFound("the user has no TOTP factor");
        break;
      }
      case FactorKind::kPasskey: {
        GOVERN_ASSIGN_OR_RETURN(
            db::Rows gone,
            tx.Exec("DELETE FROM auth_passkeys WHERE credential_id = $1 AND user_id = $2 RETURNING 1",
                    db::Params(db::Bytea{credential}, request.user_id)));
        if (gone.empty()) return NotFound("the user has no such passkey");
        break;
      }
      case FactorKind::kSso:
        return InvalidArgument("factor must be password, totp or passkey");
    }
    if (request.kind != FactorKind::kTotp && ways <= 1) {
      if (!request.force)
        return FailedPrecondition(
            "this is the user's last way to sign in; remove it with force to lock the account");
      result.was_last = true;
    }

    // End what the removed factor may have opened.
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows sessions,
        tx.Exec("DELETE FROM auth_sessions WHERE user_id = $1 RETURNING 1", db::Params(request.user_id)));
    result.sessions_ended = sessions.size();
    GOVERN_RETURN_IF_ERROR(
        tx.Exec("DELETE FROM auth_challenges WHERE user_id = $1", db::Params(request.user_id)).status());
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows families,
        tx.Exec("WITH f AS (UPDATE auth_refresh_families SET revoked = true WHERE org = $1 AND subject = $2 "
                "AND NOT revoked AND expires_at > $3 RETURNING family), "
                "i AS (INSERT INTO auth_revocations (kind, id, expires_at) SELECT 'sid', family, $4 FROM f "
                "ON CONFLICT DO NOTHING) SELECT count(*) FROM f",
                db::Params(org, subject, now_s, revoke_until)));
    GOVERN_ASSIGN_OR_RETURN(int64_t revoked, families.Int64(0, 0));
    result.refresh_families_revoked = static_cast<int>(revoked);

    GOVERN_ASSIGN_OR_RETURN(
        db::Rows event,
        tx.Exec("INSERT INTO auth_factor_events (at, org, user_id, action, factor, factor_id, actor, forced, "
                "reason, sessions_ended, families_revoked) VALUES ($1, $2, $3, 'remove', $4, $5, $6, $7, $8, "
                "$9, $10) RETURNING seq",
                db::Params(now_s, org, request.user_id, FactorKindName(request.kind), request.passkey_id,
                           request.actor, result.was_last, request.reason, result.sessions_ended,
                           result.refresh_families_revoked)));
    GOVERN_ASSIGN_OR_RETURN(result.event, event.Int64(0, 0));
    return OkStatus();
  });
  if (!s.ok()) {
    if (s.code() == Code::kFailedPrecondition && s.message().starts_with("this is the user's last way"))
      log::Warn("auth", "factor removal refused: last way to sign in",
                {{"user", request.user_id},
                 {"factor", std::string(FactorKindName(request.kind))},
                 {"actor", request.actor}});
    return s;
  }
  log::Info("auth", "factor removed",
            {{"user", request.user_id},
             {"org", org},
             {"factor", std::string(FactorKindName(request.kind))},
             {"id", request.passkey_id},
             {"actor", request.actor},
             {"forced", result.was_last},
             {"sessions_ended", static_cast<int64_t>(result.sessions_ended)},
             {"refresh_families_revoked", static_cast<int64_t>(result.refresh_families_revoked)},
             {"event", result.event}});
  return result;
}

Result<std::vector<FactorEvent>> ListFactorEvents(db::Connection& c, std::string_view user_id, int limit) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.ExecPrepared(
          "SELECT seq, at, user_id, action, factor, factor_id, actor, forced, reason, sessions_ended, "
          "families_revoked FROM auth_factor_events WHERE user_id = $1 ORDER BY seq DESC LIMIT $2",
          db::Params(user_id, static_cast<int64_t>(limit))));
  std::vector<FactorEvent> out;
  for (int i = 0; i < rows.size(); ++i) {
    FactorEvent e;
    GOVERN_ASSIGN_OR_RETURN(e.seq, rows.Int64(i, 0));
    GOVERN_ASSIGN_OR_RETURN(e.at, rows.Int64(i, 1));
    e.user_id = rows.Text(i, 2);
    e.action = rows.Text(i, 3);
    e.factor = rows.Text(i, 4);
    e.factor_id = rows.Text(i, 5);
    e.actor = rows.Text(i, 6);
    GOVERN_ASSIGN_OR_RETURN(e.forced, rows.Bool(i, 7));
    e.reason = rows.Text(i, 8);
    GOVERN_ASSIGN_OR_RETURN(int64_t ended, rows.Int64(i, 9));
    GOVERN_ASSIGN_OR_RETURN(int64_t revoked, rows.Int64(i, 10));
    e.sessions_ended = static_cast<int>(ended);
    e.refresh_families_revoked = static_cast<int>(revoked);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace govern::auth_service
