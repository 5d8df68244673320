// WebAuthn data parsers: JSON through nlohmann (no exceptions), CBOR through cbor.h.
#include "webauthn/parse.h"

#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "webauthn/errors.h"

namespace govern::webauthn {

namespace {

using Json = nlohmann::json;

Status Malformed(std::string_view what) { return MakeError(Error::kMalformed, what); }

Result<Json> ParseJsonObject(std::string_view text, std::string_view what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Malformed(std::string(what) + " is not valid JSON");
  if (!j.is_object()) return Malformed(std::string(what) + " is not a JSON object");
  return j;
}

Result<const std::string*> StringMember(const Json& obj, const char* name, std::string_view what,
                                        bool required = true) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (!required) return static_cast<const std::string*>(nullptr);
    return Malformed(std::string(what) + " has no " + name);
  }
  if (!it->is_string()) return Malformed(std::string(what) + "." + name + " is not a string");
  return &it->get_ref<const std::string&>();
}

Result<std::vector<uint8_t>> B64Member(const Json& obj, const char* name, std::string_view what) {
  GOVERN_ASSIGN_OR_RETURN(const std::string* s, StringMember(obj, name, what));
  auto r = crypto::Base64UrlDecode(*s);
  if (!r.ok())
    return Malformed(std::string(what) + "." + name + " is not base64url: " + r.status().message());
  return std::move(*r);
}

// The common part of both response JSONs: id == rawId, type "public-key"; returns "response".
Result<const Json*> CredentialEnvelope(const Json& j, std::vector<uint8_t>* raw_id) {
  GOVERN_ASSIGN_OR_RETURN(*raw_id, B64Member(j, "rawId", "credential"));
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> id, B64Member(j, "id", "credential"));
  if (id != *raw_id) return Malformed("credential id and rawId differ");
  GOVERN_ASSIGN_OR_RETURN(const std::string* type, StringMember(j, "type", "credential"));
  if (*type != "public-key") return Malformed("credential type is not public-key");
  auto it = j.find("response");
  if (it == j.end() || !it->is_object()) return Malformed("credential has no response object");
  return &*it;
}

}  // namespace

Result<ClientData> ParseClientData(std::string_view client_data_json) {
  if (client_data_json.size() > kMaxClientDataJson) return Malformed("clientDataJSON larger than 64 KiB");
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJsonObject(client_data_json, "clientDataJSON"));
  ClientData cd;
  GOVERN_ASSIGN_OR_RETURN(const std::string* type, StringMember(j, "type", "clientDataJSON"));
  cd.type = *type;
  GOVERN_ASSIGN_OR_RETURN(cd.challenge, B64Member(j, "challenge", "clientDataJSON"));
  GOVERN_ASSIGN_OR_RETURN(const std::string* origin, StringMember(j, "origin", "clientDataJSON"));
  cd.origin = *origin;
  if (auto it = j.find("crossOrigin"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return Malformed("clientDataJSON.crossOrigin is not a boolean");
    cd.cross_origin = it->get<bool>();
  }
  GOVERN_ASSIGN_OR_RETURN(const std::string* top, StringMember(j, "topOrigin", "clientDataJSON", false));
  if (top != nullptr) cd.top_origin = *top;
  return cd;
}

Result<AuthenticatorData> ParseAuthenticatorData(std::span<const uint8_t> data) {
  if (data.size() < 37) return Malformed("authenticator data shorter than 37 bytes");
  if (data.size() > kMaxAuthenticatorData) return Malformed("authenticator data larger than 64 KiB");
  AuthenticatorData ad;
  std::copy(data.begin(), data.begin() + 32, ad.rp_id_hash.begin());
  ad.flags = data[32];
  ad.sign_count =
      (uint32_t{data[33]} << 24) | (uint32_t{data[34]} << 16) | (uint32_t{data[35]} << 8) | data[36];
  size_t pos = 37;
  cbor::Limits limits;
  limits.max_depth = 8;
  limits.max_items = 1024;
  if ((ad.flags & Flags::kAttestedCredentialData) != 0) {
    if (data.size() - pos < 18) return Malformed("attested credential data truncated");
    AttestedCredentialData acd;
    std::copy(data.begin() + 37, data.begin() + 53, acd.aaguid.begin());
    size_t id_len = (size_t{data[53]} << 8) | data[54];
    pos = 55;
    if (data.size() - pos < id_len) return Malformed("credential id runs past the end of authenticator data");
    acd.credential_id.assign(data.begin() + pos, data.begin() + pos + id_len);
    pos += id_len;
    size_t used = 0;
    auto key = cbor::DecodePrefix(data.subspan(pos), &used, limits);
    if (!key.ok()) return Malformed("credential public key: " + key.status().message());
    if (key->type() != cbor::Value::Type::kMap) return Malformed("credential public key is not a CBOR map");
    acd.public_key_cose.assign(data.begin() + pos, data.begin() + pos + used);
    pos += used;
    ad.attested = std::move(acd);
  }
  if ((ad.flags & Flags::kExtensionData) != 0) {
    if (pos == data.size()) return Malformed("ED flag set but no extension data");
    size_t used = 0;
    auto ext = cbor::DecodePrefix(data.subspan(pos), &used, limits);
    if (!ext.ok()) return Malformed("extensions: " + ext.status().message());
    if (ext->type() != cbor::Value::Type::kMap) return Malformed("extensions are not a CBOR map");
    pos += used;
    ad.extensions = std::move(*ext);
  }
  if (pos != data.size()) {
    return Malformed(std::to_string(data.size() - pos) + " bytes after the authenticator data (flags 0x" +
                     crypto::HexEncode(std::span<const uint8_t>(&ad.flags, 1)) + ")");
  }
  return ad;
}

Result<AttestationObject> ParseAttestationObject(std::span<const uint8_t> data) {
  if (data.size() > kMaxAuthenticatorData + 64 * 1024)
    return Malformed("attestation object larger than 128 KiB");
  cbor::Limits limits;
  limits.max_depth = 8;
  limits.max_items = 1024;
  auto v = cbor::Decode(data, limits);
  if (!v.ok()) return Malformed("attestation object: " + v.status().message());
  if (v->type() != cbor::Value::Type::kMap) return Malformed("attestation object is not a CBOR map");
  const cbor::Value* fmt = v->Find("fmt");
  const cbor::Value* stmt = v->Find("attStmt");
  const cbor::Value* auth = v->Find("authData");
  if (fmt == nullptr || fmt->type() != cbor::Value::Type::kText)
    return Malformed("attestation object has no fmt text");
  if (stmt == nullptr || stmt->type() != cbor::Value::Type::kMap)
    return Malformed("attestation object has no attStmt map");
  if (auth == nullptr || auth->type() != cbor::Value::Type::kBytes)
    return Malformed("attestation object has no authData bytes");
  if (v->map().size() != 3)
    return Malformed("attestation object has members other than fmt, attStmt, authData");
  AttestationObject ao;
  ao.fmt = fmt->text();
  ao.att_stmt = *stmt;
  ao.auth_data_raw = auth->bytes();
  GOVERN_ASSIGN_OR_RETURN(ao.auth_data, ParseAuthenticatorData(ao.auth_data_raw));
  return ao;
}

Result<RegistrationResponse> ParseRegistrationResponseJson(std::string_view json) {
  if (json.size() > 512 * 1024) return Malformed("registration response larger than 512 KiB");
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJsonObject(json, "registration response"));
  RegistrationResponse r;
  GOVERN_ASSIGN_OR_RETURN(const Json* resp, CredentialEnvelope(j, &r.raw_id));
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> cdj, B64Member(*resp, "clientDataJSON", "response"));
  r.client_data_json.assign(cdj.begin(), cdj.end());
  GOVERN_ASSIGN_OR_RETURN(r.attestation_object, B64Member(*resp, "attestationObject", "response"));
  if (auto it = resp->find("transports"); it != resp->end() && !it->is_null()) {
    if (!it->is_array()) return Malformed("response.transports is not an array");
    for (const auto& t : *it) {
      if (!t.is_string()) return Malformed("response.transports holds a non-string");
      r.transports.push_back(t.get<std::string>());
    }
  }
  return r;
}

Result<AssertionResponse> ParseAssertionResponseJson(std::string_view json) {
  if (json.size() > 512 * 1024) return Malformed("authentication response larger than 512 KiB");
  GOVERN_ASSIGN_OR_RETURN(Json j, ParseJsonObject(json, "authentication response"));
  AssertionResponse r;
  GOVERN_ASSIGN_OR_RETURN(const Json* resp, CredentialEnvelope(j, &r.raw_id));
  GOVERN_ASSIGN_OR_RETURN(std::vector<uint8_t> cdj, B64Member(*resp, "clientDataJSON", "response"));
  r.client_data_json.assign(cdj.begin(), cdj.end());
  GOVERN_ASSIGN_OR_RETURN(r.authenticator_data, B64Member(*resp, "authenticatorData", "response"));
  GOVERN_ASSIGN_OR_RETURN(r.signature, B64Member(*resp, "signature", "response"));
  GOVERN_ASSIGN_OR_RETURN(const std::string* uh, StringMember(*resp, "userHandle", "response", false));
  if (uh != nullptr && !uh->empty()) {
    auto d = crypto::Base64UrlDecode(*uh);
    if (!d.ok()) return Malformed("response.userHandle is not base64url");
    r.user_handle = std::move(*d);
  }
  return r;
}

}  // namespace govern::webauthn
