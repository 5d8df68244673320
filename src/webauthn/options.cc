// Options JSON through nlohmann; challenges from crypto/random.h.
#include "webauthn/options.h"

#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "crypto/random.h"

namespace govern::webauthn {

namespace {

nlohmann::json Descriptors(const std::vector<CredentialDescriptor>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : list) {
    nlohmann::json j = {{"type", "public-key"}, {"id", crypto::Base64UrlEncode(d.id)}};
    if (!d.transports.empty()) j["transports"] = d.transports;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

Result<std::vector<uint8_t>> NewChallenge() {
  std::vector<uint8_t> c(kChallengeSize);
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(c));
  return c;
}

std::string CreationOptionsJson(const CreationOptions& o) {
  nlohmann::json params = nlohmann::json::array();
  for (Algorithm a : o.algorithms)
    params.push_back({{"type", "public-key"}, {"alg", static_cast<int64_t>(a)}});
  nlohmann::json j = {
      {"rp", {{"id", o.rp_id}, {"name", o.rp_name}}},
      {"user",
       {{"id", crypto::Base64UrlEncode(o.user_id)},
        {"name", o.user_name},
        {"displayName", o.user_display_name}}},
      {"challenge", crypto::Base64UrlEncode(o.challenge)},
      {"pubKeyCredParams", std::move(params)},
      {"timeout", o.timeout_ms},
      {"excludeCredentials", Descriptors(o.exclude_credentials)},
      {"authenticatorSelection",
       {{"residentKey", o.resident_key},
        {"requireResidentKey", o.resident_key == "required"},
        {"userVerification", o.user_verification}}},
      {"attestation", o.attestation},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RequestOptionsJson(const RequestOptions& o) {
  nlohmann::json j = {
      {"challenge", crypto::Base64UrlEncode(o.challenge)},
      {"timeout", o.timeout_ms},
      {"rpId", o.rp_id},
      {"allowCredentials", Descriptors(o.allow_credentials)},
      {"userVerification", o.user_verification},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace govern::webauthn
