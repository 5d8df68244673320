// Parsers for the data a WebAuthn client and authenticator send (W3C webauthn-2 §5.8.1, §6.1, §6.5).
//
// Each takes outside bytes and returns the parsed structure or Error::kMalformed (see errors.h) with a
// message naming what is wrong; none of them checks anything a ceremony decides (challenge, origin,
// flags): ceremony.h does that. Size limits keep a hostile input small: clientDataJSON up to 64 KiB,
// attestation objects and authenticator data up to 64 KiB, CBOR nesting up to 8 levels. Pure functions
// over plain values: thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "webauthn/cbor.h"

namespace govern::webauthn {

inline constexpr size_t kMaxClientDataJson = 64 * 1024;
inline constexpr size_t kMaxAuthenticatorData = 64 * 1024;
inline constexpr size_t kMaxCredentialId = 1023;  // §5.8.3 (larger ids are parsed, refused by ceremonies)

// CollectedClientData (§5.8.1). tokenBinding is ignored (no browser sends it any more).
struct ClientData {
  std::string type;                // "webauthn.create" or "webauthn.get" (checked by the ceremonies)
  std::vector<uint8_t> challenge;  // decoded from base64url
  std::string origin;
  bool cross_origin = false;
  std::optional<std::string> top_origin;  // Level 3, present when cross_origin
};
Result<ClientData> ParseClientData(std::string_view client_data_json);

// Authenticator data flags (§6.1).
struct Flags {
  static constexpr uint8_t kUserPresent = 0x01;
  static constexpr uint8_t kUserVerified = 0x04;
  static constexpr uint8_t kBackupEligible = 0x08;
  static constexpr uint8_t kBackupState = 0x10;
  static constexpr uint8_t kAttestedCredentialData = 0x40;
  static constexpr uint8_t kExtensionData = 0x80;
};

struct AttestedCredentialData {
  std::array<uint8_t, 16> aaguid{};
  std::vector<uint8_t> credential_id;
  std::vector<uint8_t> public_key_cose;  // the COSE_Key exactly as encoded (what the service stores)
};

struct AuthenticatorData {
  std::array<uint8_t, 32> rp_id_hash{};
  uint8_t flags = 0;
  uint32_t sign_count = 0;
  std::optional<AttestedCredentialData> attested;  // present iff flag AT
  std::optional<cbor::Value> extensions;           // present iff flag ED (a CBOR map)

  bool user_present() const { return (flags & Flags::kUserPresent) != 0; }
  bool user_verified() const { return (flags & Flags::kUserVerified) != 0; }
  bool backup_eligible() const { return (flags & Flags::kBackupEligible) != 0; }
  bool backup_state() const { return (flags & Flags::kBackupState) != 0; }
};
// Refuses data shorter than 37 bytes, an AT or ED flag without its data, data without its flag, and
// trailing bytes.
Result<AuthenticatorData> ParseAuthenticatorData(std::span<const uint8_t> data);

// The attestation object (§6.5.4): {"fmt": text, "attStmt": map, "authData": bytes}.
struct AttestationObject {
  std::string fmt;
  cbor::Value att_stmt;                // a map; interpreted by the format's verifier
  std::vector<uint8_t> auth_data_raw;  // signed as is
  AuthenticatorData auth_data;
};
Result<AttestationObject> ParseAttestationObject(std::span<const uint8_t> data);

// What navigator.credentials.create() returns, decoded from PublicKeyCredential.toJSON()
// (RegistrationResponseJSON: base64url fields, unpadded).
struct RegistrationResponse {
  std::vector<uint8_t> raw_id;
  std::string client_data_json;
  std::vector<uint8_t> attestation_object;
  std::vector<std::string> transports;  // response.transports, passed through for storage
};
Result<RegistrationResponse> ParseRegistrationResponseJson(std::string_view json);

// What navigator.credentials.get() returns (AuthenticationResponseJSON).
struct AssertionResponse {
  std::vector<uint8_t> raw_id;
  std::string client_data_json;
  std::vector<uint8_t> authenticator_data;
  std::vector<uint8_t> signature;
  std::optional<std::vector<uint8_t>> user_handle;  // absent or empty in the JSON: nullopt
};
Result<AssertionResponse> ParseAssertionResponseJson(std::string_view json);

}  // namespace govern::webauthn
