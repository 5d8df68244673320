// Governance: what the proxy consults besides its virtual keys, all in-process and with no database
// statement on the request path: Govern access tokens (token_auth.h), the Cedar policy check
// (policy_gate.h) and spend budgets (budget.h). Each part is optional; a proxy without a Governance
// behaves as before (virtual keys only, every authenticated request allowed, no budgets).
//
// The proxy calls, in order, on the server's event loop:
//   AuthenticateToken  for a credential that is not a known virtual key (401 when it is no valid token)
//   Admit              once the model's route is known: policy, then budgets (403, 429 or 503 refusals)
//   Settle             when the usage record is made, with the request's cost
//
// Thread-safe: every function may be called from any thread at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "net/http.h"
#include "services/gateway/budget.h"
#include "services/gateway/policy_gate.h"
#include "services/gateway/proxy.h"
#include "services/gateway/service_keys.h"
#include "services/gateway/token_auth.h"

namespace govern::gateway {

struct Governance {
  std::unique_ptr<TokenAuth> tokens;    // null: only virtual keys authenticate
  std::unique_ptr<PolicyGate> policy;   // null: no policy check, every request is allowed (the default)
  std::unique_ptr<BudgetBook> budgets;  // null or empty: no budgets
  // Gateway API keys from the keys service (service_keys.h: gvg_<key_id>_<secret>, gateway.keys.*);
  // null: none. Checked, like tokens, for a credential that is not a routes-file virtual key.
  std::unique_ptr<ServiceKeyRing> service_keys;
};

// Who made a request.
struct Caller {
  std::string principal_type;  // "Key", "Agent", "User"
  std::string principal_id;    // the key id (VirtualKeyId) for a virtual key
  std::string org;
  std::string key;  // the whole virtual key ("" for a token), for budgets of scope key and team
  std::string on_behalf_of;
  // As budgets and usage records name it: "Key:382c52b398d5d78f", "Agent:cli_1", "User:usr_1".
  std::string Name() const { return principal_type + ":" + principal_id; }
};

Caller KeyCaller(const VirtualKeyConfig& key);
// The caller behind a Govern access token, or a gateway API key of the keys service (service_keys.h);
// kUnauthenticated (message safe for the client) when it is neither (or they are not configured).
Result<Caller> AuthenticateToken(const Governance& g, std::string_view credential);

struct Admission {
  bool ok = true;
  int status = 200;             // the refusal's status: 403 (policy), 429 (budget or bundle limit), 503
  std::string message;          // for the client and the record's error
  std::string decision;         // "allow", "deny", "limit", "no_bundle", "budget_exhausted", "" (no policy)
  std::string decision_reason;  // the determining policies, "limit:<id>", or the budget's id
  BudgetBook::Ticket ticket;    // reservations to settle
};

// Policy first (a denied request reserves nothing), then every budget that applies.
Admission Admit(const Governance& g, const Caller& caller, WireFormat client, std::string_view model,
                bool stream, size_t body_bytes);
// The refusal in the client SDK's shape: 403 {"error":{"type":"permission_denied","code":"policy_denied"}}
// / Anthropic permission_error; a budget's 429 {"error":{"type":"insufficient_quota","code":
// "insufficient_quota"}} / Anthropic rate_limit_error, with `x-should-retry: false` (the SDKs would
// otherwise retry a 429); a bundle limit's 429 as a rate limit; 503 as an api_error.
net::Response RefusalResponse(WireFormat client, const Admission& a);

void Settle(const Governance& g, Admission& a, double cost);

}  // namespace govern::gateway
