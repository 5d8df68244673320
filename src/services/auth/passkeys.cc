// Passkey ceremonies over PostgreSQL.
#include "services/auth/passkeys.h"

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "db/connection.h"
#include "webauthn/options.h"

namespace govern::auth_service {
namespace {

constexpr int64_t kChallengeLifetime = 300;

std::vector<uint8_t> HandleOf(std::string_view user_id) { return {user_id.begin(), user_id.end()}; }

Result<std::vector<uint8_t>> TakeChallenge(db::Connection& c, std::string_view key, std::string_view kind,
                                           int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.Exec("DELETE FROM auth_challenges WHERE challenge_hash = $1 AND kind = $2 RETURNING payload, "
             "expires_at",
             db::Params(key, kind)));
  if (rows.empty()) return Unauthenticated("no pending passkey ceremony");
  GOVERN_ASSIGN_OR_RETURN(int64_t expires, rows.Int64(0, 1));
  if (expires < now_s) return Unauthenticated("the passkey ceremony expired");
  return crypto::Base64UrlDecode(rows.Text(0, 0));
}

}  // namespace

Result<std::string> BeginPasskeyRegistration(db::Connection& c, const webauthn::RelyingParty& rp,
                                             std::string_view rp_name, const User& user, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> challenge, webauthn::NewChallenge());
  webauthn::CreationOptions o;
  o.rp_id = rp.id;
  o.rp_name = rp_name;
  o.user_id = HandleOf(user.user_id);
  o.user_name = user.email;
  o.user_display_name = user.display_name.empty() ? user.email : user.display_name;
  o.challenge = challenge;
  o.resident_key = "required";
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows existing,
      c.Exec("SELECT credential_id FROM auth_passkeys WHERE user_id = $1", db::Params(user.user_id)));
  for (int i = 0; i < existing.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(std::string id, existing.Bytes(i, 0));
    o.exclude_credentials.push_back({std::vector<uint8_t>(id.begin(), id.end()), {}});
  }
  // One pending registration per user: a new one replaces the last.
  std::string key = "reg:" + user.user_id;
  GOVERN_RETURN_IF_ERROR(
      c.Exec("INSERT INTO auth_challenges (challenge_hash, kind, user_id, payload, expires_at) VALUES ($1, "
             "'passkey-reg', $2, $3, $4) ON CONFLICT (challenge_hash) DO UPDATE SET payload = "
             "EXCLUDED.payload, "
             "expires_at = EXCLUDED.expires_at",
             db::Params(key, user.user_id, crypto::Base64UrlEncode(challenge), now_s + kChallengeLifetime))
          .status());
  return webauthn::CreationOptionsJson(o);
}

Status FinishPasskeyRegistration(db::Connection& c, const webauthn::RelyingParty& rp, const User& user,
                                 const webauthn::RegistrationResponse& response, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> challenge,
                          TakeChallenge(c, "reg:" + user.user_id, "passkey-reg", now_s));
  webauthn::RegistrationOptions o;
  o.rp = rp;
  o.challenge = std::move(challenge);
  o.require_user_verification = true;
  o.now_unix_seconds = now_s;
  GOVERN_ASSIGN_OR_RETURN(webauthn::Credential cred, webauthn::VerifyRegistration(o, response));
  std::string transports;
  for (const auto& t : cred.transports) transports += (transports.empty() ? "" : ",") + t;
  auto rows = c.Exec(
      "INSERT INTO auth_passkeys (credential_id, user_id, public_key, algorithm, sign_count, transports, "
      "aaguid, "
      "backup_eligible, backup_state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
      db::Params(db::Bytea{crypto::AsString(cred.id)}, user.user_id,
                 db::Bytea{crypto::AsString(cred.public_key_cose)}, static_cast<int64_t>(cred.algorithm),
                 static_cast<int64_t>(cred.sign_count), transports, db::Bytea{crypto::AsString(cred.aaguid)},
                 cred.backup_eligible, cred.backup_state));
  if (!rows.ok() && rows.status().code() == Code::kAlreadyExists)
    return AlreadyExists("this passkey is already registered");
  return rows.status();
}

Result<PasskeyChallenge> BeginPasskeySignIn(db::Connection& c, const webauthn::RelyingParty& rp,
                                            int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> challenge, webauthn::NewChallenge());
  GOVERN_ASSIGN_OR_RETURN(std::string handle, NewSecret("gvp_"));
  GOVERN_RETURN_IF_ERROR(
      c.Exec("INSERT INTO auth_challenges (challenge_hash, kind, payload, expires_at) VALUES "
             "($1, 'passkey-auth', $2, $3)",
             db::Params(HashHex(handle), crypto::Base64UrlEncode(challenge), now_s + kChallengeLifetime))
          .status());
  webauthn::RequestOptions o;
  o.rp_id = rp.id;
  o.challenge = std::move(challenge);
  o.user_verification = "required";
  return PasskeyChallenge{handle, webauthn::RequestOptionsJson(o)};
}

Result<User> FinishPasskeySignIn(db::Connection& c, const webauthn::RelyingParty& rp, std::string_view handle,
                                 const webauthn::AssertionResponse& response, int64_t now_s) {
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> challenge,
                          TakeChallenge(c, HashHex(handle), "passkey-auth", now_s));
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      c.Exec("SELECT user_id, public_key, sign_count, backup_eligible FROM auth_passkeys WHERE "
             "credential_id = $1",
             db::Params(db::Bytea{crypto::AsString(response.raw_id)})));
  if (rows.empty()) return Unauthenticated("unknown passkey");
  std::string user_id(rows.Text(0, 0));
  GOVERN_ASSIGN_OR_RETURN(std::string key, rows.Bytes(0, 1));
  GOVERN_ASSIGN_OR_RETURN(int64_t count, rows.Int64(0, 2));
  webauthn::StoredCredential stored{response.raw_id, std::vector<uint8_t>(key.begin(), key.end()),
                                    HandleOf(user_id), static_cast<uint32_t>(count), rows.Text(0, 3) == "t"};
  webauthn::AssertionOptions o;
  o.rp = rp;
  o.challenge = std::move(challenge);
  o.require_user_verification = true;
  auto result = webauthn::VerifyAssertion(o, stored, response);
  if (!result.ok()) return Unauthenticated("passkey refused: " + result.status().message());
  GOVERN_RETURN_IF_ERROR(
      c.Exec("UPDATE auth_passkeys SET sign_count = $2, backup_state = $3, last_used_at = now() "
             "WHERE credential_id = $1",
             db::Params(db::Bytea{crypto::AsString(response.raw_id)},
                        static_cast<int64_t>(result->sign_count), result->backup_state))
          .status());
  GOVERN_ASSIGN_OR_RETURN(User user, GetUser(c, user_id));
  if (user.disabled) return Unauthenticated("the user is disabled");
  return user;
}

}  // namespace govern::auth_service
