// The policy sidecar (`govern serve policy-agent`): runs beside an agent, polls the bundle server for
// its organisation's signed bundle (If-None-Match, so an unchanged bundle costs a 304), verifies each
// new one against trusted public keys and swaps it in while decisions continue; answers decisions over
// HTTP on loopback and over a Unix socket. docs/policy-agent.md is the reference.
//
// Failure behaviour: a bundle that fails verification or does not compile is refused and the old one
// keeps serving (the reason is logged and shown by GET /v1/status). The last good bundle is kept on
// disk (<data_dir>/policy-agent/bundle.tar.gz, written durably) and loaded at start, so the sidecar
// decides even when the server is unreachable from the start. With no bundle loaded it answers 503,
// never a decision.
//
// Configuration keys (under "policy.agent."): server, key, org, trust, poll_interval, listen, socket.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::policy_service {

std::unique_ptr<services::Service> NewPolicyAgent();

}  // namespace govern::policy_service
