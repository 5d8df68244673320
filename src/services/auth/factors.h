// A user's sign-in factors as an administrator sees them, and their removal.
//
// Factors: the password, a confirmed TOTP second factor, each passkey, and each outside identity linked
// by single sign-on (listed, not removed here). Password, passkeys and linked identities are ways to
// sign in on their own; TOTP only follows a password.
//
// Removal rules (RemoveFactor):
//   - a password or passkey that is the user's last way to sign in is refused (kFailedPrecondition)
//     unless `force` (then the account cannot sign in until an administrator gives it a way again);
//     TOTP can always be removed (the "lost phone" reset);
//   - the user's row is locked for the decision (SELECT ... FOR UPDATE), so two removals racing cannot
//     both see the other factor and leave none;
//   - every removal ends the user's sessions: browser sessions are deleted, pending sign-in challenges
//     dropped, and every live refresh family of the user revoked, its `sid` entering the revocation list
//     (access tokens of those families, and tokens delegated from them, fail once services pull). A
//     factor is removed because it is lost or compromised; whoever holds it may hold a session too;
//   - every removal is recorded in auth_factor_events (who, what, forced, why, what was revoked) in the
//     same transaction as the change.
// Free functions on a Connection: one thread at a time per Connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::db {
class Connection;
}  // namespace govern::db

namespace govern::auth_service {

enum class FactorKind { kPassword, kTotp, kPasskey, kSso };
std::string_view FactorKindName(FactorKind k);
// "password", "totp", "passkey" (kSso is not removable here); kInvalidArgument otherwise.
Result<FactorKind> ParseRemovableFactorKind(std::string_view name);

struct Factor {
  FactorKind kind;
  std::string id;          // passkey: credential id in base64url; sso: "<issuer>|<sub>"; else ""
  bool confirmed = true;   // TOTP: false while enrolment is pending
  int algorithm = 0;       // passkey: COSE algorithm
  int64_t created_at = 0;  // Unix seconds, 0 when not kept
  std::optional<int64_t> last_used_at;
};
// kNotFound when the user does not exist.
Result<std::vector<Factor>> ListFactors(db::Connection& c, std::string_view user_id);

struct RemoveFactorRequest {
  std::string user_id;
  FactorKind kind = FactorKind::kPasskey;
  std::string passkey_id;  // base64url credential id, for kPasskey
  bool force = false;      // allow removing the last way to sign in
  std::string actor;       // who asks (kept in the event)
  std::string reason;      // optional, at most 500 bytes
};
struct RemoveFactorResult {
  int64_t event = 0;  // auth_factor_events.seq
  int sessions_ended = 0;
  int refresh_families_revoked = 0;
  bool was_last = false;  // it was the last way to sign in (only with force)
};
// kNotFound (no such user or factor), kFailedPrecondition (the last way to sign in, without force),
// kInvalidArgument (bad passkey id or reason). `revoke_until` is how long a revoked `sid` stays in the
// revocation list (now + the longest access token lifetime + skew).
Result<RemoveFactorResult> RemoveFactor(db::Connection& c, const RemoveFactorRequest& request, int64_t now_s,
                                        int64_t revoke_until);

struct FactorEvent {
  int64_t seq = 0;
  int64_t at = 0;
  std::string user_id, action, factor, factor_id, actor, reason;
  bool forced = false;
  int sessions_ended = 0, refresh_families_revoked = 0;
};
// The newest `limit` events of a user, newest first.
Result<std::vector<FactorEvent>> ListFactorEvents(db::Connection& c, std::string_view user_id, int limit);

}  // namespace govern::auth_service
