#include "services/gateway/governance.h"

#include <openssl/evp.h>

#include "gateway/anthropic.h"
#include "gateway/json_util.h"
#include "gateway/openai.h"

namespace govern::gateway {

std::string VirtualKeyId(std::string_view key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(key.data(), key.size(), md, &n, EVP_sha256(), nullptr) != 1 || n < 8) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 8; ++i) {
    id += kHex[md[i] >> 4];
    id += kHex[md[i] & 15];
  }
  return id;
}

Caller KeyCaller(const VirtualKeyConfig& key) {
  Caller c;
  c.principal_type = "Key";
  c.principal_id = VirtualKeyId(key.key);
  c.org = key.org;
  c.key = key.key;
  return c;
}

Result<Caller> AuthenticateToken(const Governance& g, std::string_view credential) {
  // A gateway API key of the keys service (service_keys.h), checked in memory.
  if (g.service_keys && ServiceKeyRing::LooksLikeKey(credential)) return g.service_keys->Check(credential);
  if (!g.tokens || !TokenAuth::LooksLikeToken(credential))
    return Unauthenticated("missing or unknown API key");
  GOVERN_ASSIGN_OR_RETURN(TokenPrincipal p, g.tokens->Check(credential));
  Caller c;
  c.principal_type = std::move(p.type);
  c.principal_id = std::move(p.id);
  c.org = std::move(p.org);
  c.on_behalf_of = std::move(p.on_behalf_of);
  return c;
}

Admission Admit(const Governance& g, const Caller& caller, WireFormat client, std::string_view model,
                bool stream, size_t body_bytes) {
  Admission a;
  if (g.policy) {
    PolicyQuery q;
    q.principal_type = caller.principal_type;
    q.principal_id = caller.principal_id;
    q.org = caller.org;
    q.model = model;
    q.format = client == WireFormat::kOpenAI ? "openai" : "anthropic";
    q.stream = stream;
    // About four bytes of JSON per prompt token: an estimate for policies, never a bill.
    q.estimated_tokens = static_cast<int64_t>(body_bytes / 4);
    q.on_behalf_of = caller.on_behalf_of;
    GateDecision d = g.policy->Decide(q);
    a.decision = std::string(d.Name());
    a.decision_reason = std::move(d.reason);
    switch (d.kind) {
      case GateDecision::Kind::kAllow:
        break;
      case GateDecision::Kind::kDeny:
        a.ok = false;
        a.status = 403;
        a.message = "denied by policy: " + std::string(caller.Name()) + " may not use the model `" +
                    std::string(model) + "`";
        return a;
      case GateDecision::Kind::kLimited:
        a.ok = false;
        a.status = 429;
        a.message = "policy limit reached (" + a.decision_reason + ")";
        return a;
      case GateDecision::Kind::kUnavailable:
        a.ok = false;
        a.status = 503;
        a.message = "no policy bundle loaded yet";
        return a;
    }
  }
  if (g.budgets && g.budgets->size() > 0) {
    std::string principal = caller.principal_type == "Key" ? "" : caller.Name();
    auto t = g.budgets->Admit(BudgetSubject{caller.org, caller.key, principal});
    if (!t.ok()) {
      a.ok = false;
      a.message = t.status().message();
      if (t.status().code() == Code::kResourceExhausted) {
        a.status = 429;
        a.decision = "budget_exhausted";
      } else {
        a.status = 503;
        a.decision = "budget_unavailable";
      }
      // "budget <id> ..." names the budget.
      std::string_view m = a.message;
      if (m.starts_with("budget ")) {
        m.remove_prefix(7);
        a.decision_reason = std::string(m.substr(0, std::min(m.find(' '), m.find(':'))));
      }
      return a;
    }
    a.ticket = std::move(*t);
  }
  return a;
}

net::Response RefusalResponse(WireFormat client, const Admission& a) {
  bool budget = a.decision == "budget_exhausted";
  nlohmann::json body;
  if (client == WireFormat::kOpenAI) {
    std::string_view type = "api_error", code;
    if (a.status == 403) {
      type = "permission_denied";
      code = "policy_denied";
    } else if (a.status == 429) {
      type = budget ? "insufficient_quota" : "rate_limit_exceeded";
      code = type;
    }
    body = openai::ErrorJson(a.message, type, code);
  } else {
    std::string_view type = "api_error";
    if (a.status == 403) type = "permission_error";
    if (a.status == 429) type = "rate_limit_error";
    body = anthropic::ErrorJson(type, a.message);
  }
  net::Response r(a.status, detail::Dump(body), "application/json");
  // Retrying cannot help a denied request or a spent budget; the SDKs honour this header.
  if (a.status == 403 || budget) r.headers.Set("x-should-retry", "false");
  if (a.status == 429 && !budget) r.headers.Set("Retry-After", "1");
  return r;
}

void Settle(const Governance& g, Admission& a, double cost) {
  if (g.budgets && !a.ticket.empty()) g.budgets->Settle(a.ticket, cost);
}

}  // namespace govern::gateway
