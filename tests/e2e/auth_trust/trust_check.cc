// What another Govern service does to accept the auth service's tokens, as a command:
//
//   auth_trust_check [--ring FILE] BASE AUDIENCE TOKEN...
//
// builds a tokens::Checker that trusts nothing but what a tokens::TrustRefresher pulls from BASE
// (/.well-known/jwks.json and /oauth/revocations) and, with --ring, reads from the internal ring file the
// auth service writes (auth.internal_ring_file), refreshes once, and checks each token for AUDIENCE.
// Prints one JSON object per token: {"ok":true,"sub":…,"org":…,"scope":[…],"client_id":…} or
// {"ok":false,"reason":"revoked"}. Exit 0 when every token was accepted, 1 when one was refused, 2 on
// a usage error or a failed pull.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "net/http_client.h"
#include "tokens/checker.h"
#include "tokens/trust_refresher.h"

int main(int argc, char** argv) {
  using namespace govern;
  std::string ring;
  if (argc >= 3 && std::string_view(argv[1]) == "--ring") {
    ring = argv[2];
    argc -= 2;
    argv += 2;
  }
  if (argc < 4) {
    std::fprintf(stderr, "usage: auth_trust_check [--ring FILE] BASE AUDIENCE TOKEN...\n");
    return 2;
  }
  std::string base = argv[1];
  tokens::Checker checker(tokens::CheckerOptions{.issuer = base}, std::make_shared<const tokens::KeySet>());
  net::HttpClient http(net::ClientOptions{});
  tokens::TrustRefresher refresher(tokens::TrustSources{.jwks_url = base + "/.well-known/jwks.json",
                                                        .revocations_url = base + "/oauth/revocations",
                                                        .ring_file = ring},
                                   checker, http);
  if (Status s = refresher.RefreshOnce(); !s.ok()) {
    std::fprintf(stderr, "auth_trust_check: pull failed: %s\n", s.ToString().c_str());
    return 2;
  }
  int rc = 0;
  for (int i = 3; i < argc; ++i) {
    auto claims = checker.Check(argv[i], argv[2]);
    nlohmann::json out;
    if (claims.ok()) {
      out = {{"ok", true},
             {"sub", (*claims)->sub},
             {"org", (*claims)->org},
             {"scope", (*claims)->scope},
             {"client_id", (*claims)->client_id}};
    } else {
      out = {{"ok", false}, {"reason", std::string(tokens::RejectName(tokens::RejectOf(claims.status())))}};
      rc = 1;
    }
    std::printf("%s\n", out.dump().c_str());
  }
  return rc;
}
