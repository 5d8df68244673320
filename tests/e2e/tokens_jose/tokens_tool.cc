// Helper for the jose interop test: issues tokens with Govern's token layer and checks tokens signed by
// someone else, so interop.mjs can drive both directions.
//
//   tokens_tool issue DIR     writes DIR/jwks.json (public keys only) and DIR/tokens.json: access tokens
//                             signed EdDSA, ES256 and RS256, and an ID token with nonce and at_hash
//   tokens_tool check JWKS_FILE TOKEN AUDIENCE ISSUER
//                             prints {"ok":true,"claims":{...}} or {"ok":false,"reason":"expired",...};
//                             exit 0 when accepted, 1 when refused, 2 on a usage or I/O error
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace {

using namespace govern::tokens;
using nlohmann::json;

constexpr const char* kIss = "https://auth.govern.test";

int Fail(const std::string& what) {
  std::cerr << "tokens_tool: " << what << "\n";
  return 2;
}

int64_t Now() { return govern::Clock::Real().UnixMicros() / 1'000'000; }

int Issue(const std::string& dir) {
  json tokens = json::object();
  std::vector<Jwk> jwks;
  for (Alg alg : {Alg::kEdDSA, Alg::kES256, Alg::kRS256}) {
    auto ring = KeyRing::Create(alg, RotationPolicy{}, Now());
    if (!ring.ok()) return Fail(ring.status().ToString());
    // The next key too, as the published set holds it during rotation: jose must pick by kid.
    auto rotated = ring->Rotate(RotationPolicy{}, Now() + 23 * 3600);
    if (!rotated.ok()) return Fail(rotated.status().ToString());
    auto doc = rotated->JwksAt(Now());
    if (!doc.ok()) return Fail(doc.status().ToString());
    auto keys = ParseJwks(*doc);
    for (auto& k : *keys) jwks.push_back(k);
    auto shared = std::make_shared<const KeyRing>(std::move(*rotated));
    Issuer issuer(IssuerOptions{kIss}, shared, shared);
    Claims c;
    c.sub = "user-1";
    c.org = "org-1";
    c.aud = {"govern:telemetry", "govern:policy"};
    c.scope = {"events:write", "events:read"};
    c.client_id = "agent-client";
    c.actors = {{"agent-7", "agent-client"}};
    auto pair = issuer.IssuePair(c, std::chrono::seconds(300));
    if (!pair.ok()) return Fail(pair.status().ToString());
    Claims idc;
    idc.sub = "user-1";
    idc.aud = {"client-a"};
    idc.nonce = "n-0S6_WzA2Mj";
    idc.auth_time = Now() - 10;
    auto id = issuer.IssueId(idc, std::chrono::seconds(600), pair->access);
    if (!id.ok()) return Fail(id.status().ToString());
    std::string name(AlgName(alg));
    tokens[name] = {{"access", pair->access}, {"id", *id}, {"sid", pair->refresh.family}};
  }
  std::ofstream(dir + "/jwks.json") << JwksToJson(jwks);
  std::ofstream(dir + "/tokens.json") << tokens.dump(2);
  return 0;
}

int Check(const std::string& jwks_file, const std::string& token, const std::string& audience,
          const std::string& issuer) {
  std::ifstream in(jwks_file);
  if (!in) return Fail("cannot read " + jwks_file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto keys = KeySet::FromJwks(ss.str());
  if (!keys.ok()) return Fail(keys.status().ToString());
  Checker checker(CheckerOptions{issuer}, std::make_shared<const KeySet>(std::move(*keys)));
  auto r = checker.Check(token, audience);
  json out;
  if (!r.ok()) {
    out = {{"ok", false}, {"reason", RejectName(RejectOf(r.status()))}, {"message", r.status().message()}};
    std::cout << out.dump() << "\n";
    return 1;
  }
  const Claims& c = **r;
  json actors = json::array();
  for (const auto& a : c.actors) actors.push_back({{"sub", a.sub}, {"client_id", a.client_id}});
  out = {{"ok", true},
         {"claims",
          {{"iss", c.iss},
           {"sub", c.sub},
           {"aud", c.aud},
           {"org", c.org},
           {"scope", c.scope},
           {"exp", c.exp},
           {"jti", c.jti},
           {"client_id", c.client_id},
           {"actors", actors}}}};
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "issue" && argc == 3) return Issue(argv[2]);
  if (cmd == "check" && argc == 6) return Check(argv[2], argv[3], argv[4], argv[5]);
  return Fail("usage: tokens_tool issue DIR | check JWKS_FILE TOKEN AUDIENCE ISSUER");
}
