// The list of services this binary holds, in start order.
#include "services/admin/admin.h"
#include "services/audit/service.h"
#include "services/auth/service.h"
#include "services/dns/service.h"
#include "services/gateway/service.h"
#include "services/model_stub/service.h"
#include "services/policy/agent.h"
#include "services/policy/server.h"
#include "services/scim/service.h"
#include "services/service.h"
#include "services/streams/service.h"
#include "services/telemetry/service.h"

namespace govern::services {

const std::vector<Registration>& Registry() {
  static const std::vector<Registration> registry = {
      {"admin", "health, readiness, metrics and status of this govern process (HTTP)", &NewAdminService},
      {"telemetry",
       "takes in events (OTLP/HTTP logs, NDJSON), stores each once in PostgreSQL, archives old hours to "
       "Parquet, answers queries with DLP redaction",
       &telemetry::NewTelemetryService},
      {"policy", "stores each organisation's Cedar policy set (versioned), serves signed bundles with ETags",
       &policy_service::NewPolicyServer},
      {"auth",
       "sign-in and tokens: OAuth 2.1 / OIDC provider (code + PKCE, client credentials for agents, rotating "
       "refresh, token exchange), users, groups and clients in PostgreSQL",
       &auth_service::NewAuthService},
      {"scim",
       "directory sync: SCIM 2.0 Users and Groups from Okta, Entra and others into the auth directory (HTTP)",
       &scim_service::NewScimService},
      {"policy-agent",
       "policy sidecar: fetches signed bundles, decides Cedar requests over loopback HTTP and a Unix socket",
       &policy_service::NewPolicyAgent},
      {"audit",
       "audit log: per-organisation hash chains in PostgreSQL, appended in batches by any number of "
       "replicas, "
       "signed checkpoints, proofs, verifiable exports",
       &audit_service::NewAuditService},
      {"dns",
       "authoritative DNS (UDP/TCP, online DNSSEC) over zones in PostgreSQL, changed by an HTTP API; "
       "replicas "
       "follow changes by LISTEN/NOTIFY",
       &dns_service::NewDnsService},
      {"streams",
       "Kafka-compatible broker: topics of partitions in segment logs, every produce on disk before it is "
       "acknowledged",
       &streams_service::NewStreamsService},
      {"model-stub",
       "fake model provider (OpenAI chat, Responses, embeddings, models; Anthropic messages) with "
       "deterministic "
       "answers, a token rate and injected faults, for gateway tests and benchmarks",
       &model_stub::NewModelStubService, /*in_up=*/false},
      // Not in `govern up` until it has routes to serve: Start refuses without gateway.routes_file.
      {"gateway",
       "AI gateway: OpenAI and Anthropic APIs in front of model providers, with virtual keys, rate limits, "
       "metering and usage records",
       &gateway::NewGatewayService, /*in_up=*/false},
  };
  return registry;
}

}  // namespace govern::services
