// A tiny relying party for the browser test: serves a page and four JSON endpoints that call
// govern_webauthn, keeping one user, its credentials and the pending challenges in memory. It plays the
// part the auth service will play (challenges single use, the counter stored after each sign-in), so
// the browser test exercises the library exactly as the service will call it.
//
// Prints "PORT <n>" once listening on 127.0.0.1, then serves until stdin closes. With
// PASSKEY_FIXTURE_DIR set, every verified response is also written there as JSON (the captured
// fixtures of src/webauthn/testdata come from this).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "crypto/encoding.h"
#include "net/http_server.h"
#include "net/router.h"
#include "webauthn/ceremony.h"
#include "webauthn/options.h"
#include "webauthn/parse.h"

namespace {

using govern::Result;
using govern::net::Method;
using govern::net::Request;
using govern::net::Response;
namespace wa = govern::webauthn;
using Json = nlohmann::json;

constexpr const char* kPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>Govern passkeys test</title></head>
<body><p>Govern passkeys test relying party.</p></body></html>
)";

struct State {
  std::mutex mu;
  std::string rp_id = "localhost";
  std::string origin;
  std::vector<uint8_t> user_handle;
  std::optional<std::vector<uint8_t>> registration_challenge;
  std::optional<std::vector<uint8_t>> login_challenge;
  bool login_requires_uv = false;
  std::map<std::vector<uint8_t>, wa::StoredCredential> credentials;
  std::map<std::vector<uint8_t>, std::vector<std::string>> transports;
  std::string fixture_dir;
  int fixture_seq = 0;
};

Response JsonResponse(int status, const Json& j) { return Response(status, j.dump(), "application/json"); }

Response Refused(const govern::Status& s) {
  return JsonResponse(400, {{"error", std::string(wa::ErrorName(wa::ErrorOf(s)))}, {"message", s.message()}});
}

void SaveFixture(State& st, const std::string& kind, const Json& j) {
  if (st.fixture_dir.empty()) return;
  std::ofstream(st.fixture_dir + "/" + std::to_string(++st.fixture_seq) + "_" + kind + ".json")
      << j.dump(1) << "\n";
}

// Takes the pending challenge: whatever the outcome, it cannot be used twice.
std::vector<uint8_t> Take(std::optional<std::vector<uint8_t>>& c) {
  std::vector<uint8_t> out = c.value_or(std::vector<uint8_t>{});
  c.reset();
  return out;
}

govern::net::Router MakeRouter(State& st) {
  govern::net::Router r;
  r.AddSync(Method::kGet, "/", [](Request&) { return Response(200, kPage, "text/html; charset=utf-8"); });

  r.AddSync(Method::kPost, "/register/options", [&st](Request&) {
    std::lock_guard lock(st.mu);
    auto challenge = wa::NewChallenge();
    if (!challenge.ok()) return JsonResponse(500, {{"error", challenge.status().message()}});
    st.registration_challenge = *challenge;
    wa::CreationOptions o;
    o.rp_id = st.rp_id;
    o.rp_name = "Govern test";
    o.user_id = st.user_handle;
    o.user_name = "alice@example.com";
    o.user_display_name = "Alice";
    o.challenge = *challenge;
    o.resident_key = "required";
    o.user_verification = "preferred";
    for (const auto& [id, c] : st.credentials) o.exclude_credentials.push_back({id, st.transports[id]});
    return Response(200, wa::CreationOptionsJson(o), "application/json");
  });

  r.AddSync(Method::kPost, "/register/verify", [&st](Request& req) {
    std::lock_guard lock(st.mu);
    wa::RegistrationOptions o;
    o.rp = {st.rp_id, {st.origin}, false};
    o.challenge = Take(st.registration_challenge);
    auto resp = wa::ParseRegistrationResponseJson(req.body);
    if (!resp.ok()) return Refused(resp.status());
    auto cred = wa::VerifyRegistration(o, *resp);
    if (!cred.ok()) return Refused(cred.status());
    if (st.credentials.count(cred->id) != 0) return JsonResponse(409, {{"error", "credential_exists"}});
    wa::StoredCredential s;
    s.id = cred->id;
    s.public_key_cose = cred->public_key_cose;
    s.user_handle = st.user_handle;
    s.sign_count = cred->sign_count;
    s.backup_eligible = cred->backup_eligible;
    st.credentials[cred->id] = s;
    st.transports[cred->id] = cred->transports;
    SaveFixture(st, "registration",
                {{"rp_id", st.rp_id},
                 {"origin", st.origin},
                 {"challenge", govern::crypto::Base64UrlEncode(o.challenge)},
                 {"response", Json::parse(req.body)},
                 {"expect",
                  {{"fmt", cred->attestation_format},
                   {"alg", static_cast<int64_t>(cred->algorithm)},
                   {"sign_count", cred->sign_count}}}});
    return JsonResponse(200, {{"ok", true},
                              {"fmt", cred->attestation_format},
                              {"alg", static_cast<int64_t>(cred->algorithm)},
                              {"sign_count", cred->sign_count},
                              {"user_verified", cred->user_verified},
                              {"backup_eligible", cred->backup_eligible}});
  });

  r.AddSync(Method::kPost, "/login/options", [&st](Request& req) {
    std::lock_guard lock(st.mu);
    auto challenge = wa::NewChallenge();
    if (!challenge.ok()) return JsonResponse(500, {{"error", challenge.status().message()}});
    st.login_challenge = *challenge;
    st.login_requires_uv = req.QueryParam("require_uv").value_or("") == "1";
    wa::RequestOptions o;
    o.rp_id = st.rp_id;
    o.challenge = *challenge;
    o.user_verification = "preferred";  // the server enforces UV itself when asked to
    return Response(200, wa::RequestOptionsJson(o), "application/json");
  });

  r.AddSync(Method::kPost, "/login/verify", [&st](Request& req) {
    std::lock_guard lock(st.mu);
    wa::AssertionOptions o;
    o.rp = {st.rp_id, {st.origin}, false};
    o.challenge = Take(st.login_challenge);
    o.require_user_verification = st.login_requires_uv;
    auto resp = wa::ParseAssertionResponseJson(req.body);
    if (!resp.ok()) return Refused(resp.status());
    auto it = st.credentials.find(resp->raw_id);
    if (it == st.credentials.end()) {
      return Refused(wa::MakeError(wa::Error::kUnknownCredential, "no such credential"));
    }
    uint32_t before = it->second.sign_count;
    auto result = wa::VerifyAssertion(o, it->second, *resp);
    if (!result.ok()) return Refused(result.status());
    it->second.sign_count = result->sign_count;
    SaveFixture(st, "assertion",
                {{"rp_id", st.rp_id},
                 {"origin", st.origin},
                 {"challenge", govern::crypto::Base64UrlEncode(o.challenge)},
                 {"public_key", govern::crypto::Base64UrlEncode(it->second.public_key_cose)},
                 {"stored_sign_count", before},
                 {"require_uv", o.require_user_verification},
                 {"user_handle", govern::crypto::Base64UrlEncode(st.user_handle)},
                 {"response", Json::parse(req.body)},
                 {"expect", {{"sign_count", result->sign_count}}}});
    return JsonResponse(200, {{"ok", true},
                              {"sign_count", result->sign_count},
                              {"previous_sign_count", before},
                              {"user_verified", result->user_verified},
                              {"possible_clone", result->possible_clone}});
  });
  return r;
}

}  // namespace

int main() {
  State st;
  auto handle = wa::NewChallenge();  // a random 32-byte user handle, as a real service would make
  if (!handle.ok()) return 1;
  st.user_handle = *handle;
  if (const char* dir = std::getenv("PASSKEY_FIXTURE_DIR")) st.fixture_dir = dir;
  govern::net::ServerConfig config;
  config.workers = 1;
  govern::net::Server server(config, MakeRouter(st));
  if (auto s = server.Start(); !s.ok()) {
    std::cerr << "start: " << s.ToString() << "\n";
    return 1;
  }
  {
    std::lock_guard lock(st.mu);
    st.origin = "http://localhost:" + std::to_string(server.port());
  }
  std::cout << "PORT " << server.port() << std::endl;
  // Serve until the test closes our stdin.
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  server.Stop();
  return 0;
}
