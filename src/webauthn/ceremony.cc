// The registration and authentication ceremonies, step by step as W3C webauthn-2 §7.1 and §7.2 list
// them, and the packed attestation verifier (§8.2).
#include "webauthn/ceremony.h"

#include <openssl/asn1.h>
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>

#include "crypto/bytes.h"
#include "crypto/sha256.h"
#include "webauthn/openssl_verify.h"

namespace govern::webauthn {

namespace {

// Steps shared by both ceremonies over the client data: type, challenge, origin, cross-origin.
Result<ClientData> CheckClientData(const RelyingParty& rp, std::string_view json, std::string_view want_type,
                                   std::span<const uint8_t> challenge) {
  GOVERN_ASSIGN_OR_RETURN(ClientData cd, ParseClientData(json));
  if (cd.type != want_type) return MakeError(Error::kWrongType, "clientData.type is \"" + cd.type + "\"");
  if (challenge.empty() || !crypto::ConstantTimeEquals(cd.challenge, challenge)) {
    return MakeError(Error::kChallengeMismatch, "clientData.challenge is not the one issued");
  }
  if (std::find(rp.origins.begin(), rp.origins.end(), cd.origin) == rp.origins.end()) {
    return MakeError(Error::kOriginNotAllowed, cd.origin);
  }
  if (cd.cross_origin && !rp.allow_cross_origin) {
    return MakeError(
        Error::kCrossOriginNotAllowed,
        "crossOrigin is true" + (cd.top_origin ? " (top origin " + *cd.top_origin + ")" : std::string()));
  }
  return cd;
}

// Steps shared over the authenticator data: RP ID hash, UP, UV, backup flags.
Status CheckAuthenticatorData(const RelyingParty& rp, const AuthenticatorData& ad, bool require_uv) {
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest want, crypto::Sha256(rp.id));
  if (!crypto::ConstantTimeEquals(ad.rp_id_hash, want)) {
    return MakeError(Error::kRpIdHashMismatch, "rpIdHash is not SHA-256(\"" + rp.id + "\")");
  }
  if (!ad.user_present()) return MakeError(Error::kUserNotPresent, "the UP flag is clear");
  if (require_uv && !ad.user_verified()) return MakeError(Error::kUserNotVerified, "the UV flag is clear");
  if (ad.backup_state() && !ad.backup_eligible()) {
    return MakeError(Error::kBackupFlagsInvalid, "BS is set without BE");
  }
  return OkStatus();
}

std::vector<uint8_t> SignedData(std::span<const uint8_t> auth_data,
                                const crypto::Sha256Digest& client_data_hash) {
  std::vector<uint8_t> m(auth_data.begin(), auth_data.end());
  m.insert(m.end(), client_data_hash.begin(), client_data_hash.end());
  return m;
}

struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

Result<X509Ptr> ParseCertificate(const std::vector<uint8_t>& der, size_t index) {
  const unsigned char* p = der.data();
  X509* x = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
  if (x == nullptr || p != der.data() + der.size()) {
    X509_free(x);
    internal::ClearOpensslErrors();
    return MakeError(Error::kInvalidAttestation,
                     "x5c[" + std::to_string(index) + "] is not a DER certificate");
  }
  return X509Ptr(x);
}

std::string SubjectEntry(X509_NAME* name, int nid) {
  int i = X509_NAME_get_index_by_NID(name, nid, -1);
  if (i < 0) return {};
  ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) {
    internal::ClearOpensslErrors();
    return {};
  }
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

// §8.2.1: the attestation certificate requirements a relying party can check without a trust store.
Status CheckPackedCertificate(X509* cert, const std::array<uint8_t, 16>& aaguid, int64_t now) {
  auto bad = [](const std::string& m) {
    return MakeError(Error::kInvalidAttestation, "packed certificate: " + m);
  };
  if (X509_get_version(cert) != X509_VERSION_3) return bad("not version 3");
  X509_NAME* subject = X509_get_subject_name(cert);
  std::string c = SubjectEntry(subject, NID_countryName);
  if (c.size() != 2) return bad("subject C is not a two-letter country code");
  if (SubjectEntry(subject, NID_organizationName).empty()) return bad("subject has no O");
  if (SubjectEntry(subject, NID_organizationalUnitName) != "Authenticator Attestation") {
    return bad("subject OU is not \"Authenticator Attestation\"");
  }
  if (SubjectEntry(subject, NID_commonName).empty()) return bad("subject has no CN");
  // Basic Constraints CA must be false (absent means false).
  int crit = 0;
  auto* bc = static_cast<BASIC_CONSTRAINTS*>(X509_get_ext_d2i(cert, NID_basic_constraints, &crit, nullptr));
  if (bc != nullptr) {
    bool ca = bc->ca != 0;
    BASIC_CONSTRAINTS_free(bc);
    if (ca) return bad("basic constraints say CA");
  } else if (crit == -2) {
    return bad("more than one basic constraints extension");
  }
  // id-fido-gen-ce-aaguid (1.3.6.1.4.1.45724.1.1.4): if present, not critical and equal to the AAGUID.
  ASN1_OBJECT* oid = OBJ_txt2obj("1.3.6.1.4.1.45724.1.1.4", 1);
  int at = oid == nullptr ? -1 : X509_get_ext_by_OBJ(cert, oid, -1);
  ASN1_OBJECT_free(oid);
  if (at >= 0) {
    X509_EXTENSION* ext = X509_get_ext(cert, at);
    if (X509_EXTENSION_get_critical(ext)) return bad("the AAGUID extension is critical");
    ASN1_OCTET_STRING* outer = X509_EXTENSION_get_data(ext);
    // The extension value is itself a DER OCTET STRING holding the 16 bytes.
    const unsigned char* p = ASN1_STRING_get0_data(outer);
    int len = ASN1_STRING_length(outer);
    ASN1_OCTET_STRING* inner = d2i_ASN1_OCTET_STRING(nullptr, &p, len);
    bool match = inner != nullptr && ASN1_STRING_length(inner) == 16 &&
                 std::equal(aaguid.begin(), aaguid.end(), ASN1_STRING_get0_data(inner));
    ASN1_OCTET_STRING_free(inner);
    internal::ClearOpensslErrors();
    if (!match) return bad("the AAGUID extension differs from the authenticator data's AAGUID");
  }
  if (now != 0) {
    time_t t = static_cast<time_t>(now);
    if (X509_cmp_time(X509_get0_notBefore(cert), &t) > 0) return bad("not yet valid");
    if (X509_cmp_time(X509_get0_notAfter(cert), &t) < 0) return bad("expired");
  }
  return OkStatus();
}

Result<Algorithm> StatementAlgorithm(const cbor::Value& stmt) {
  const cbor::Value* alg = stmt.Find("alg");
  if (alg == nullptr || !alg->AsInt())
    return MakeError(Error::kMalformed, "packed attStmt has no integer alg");
  int64_t a = *alg->AsInt();
  if (a != -7 && a != -8 && a != -257) {
    return MakeError(Error::kUnsupportedAttestation, "packed attStmt alg " + std::to_string(a));
  }
  return static_cast<Algorithm>(a);
}

// §8.2 verification procedure. Fills the attestation fields of `cred`.
Status VerifyPacked(const RegistrationOptions& options, const AttestationObject& ao,
                    const crypto::Sha256Digest& client_data_hash, const PublicKey& credential_key,
                    Credential& cred) {
  const cbor::Value& stmt = ao.att_stmt;
  if (stmt.Find("ecdaaKeyId") != nullptr) return MakeError(Error::kUnsupportedAttestation, "packed ECDAA");
  GOVERN_ASSIGN_OR_RETURN(Algorithm alg, StatementAlgorithm(stmt));
  const cbor::Value* sig = stmt.Find("sig");
  if (sig == nullptr || sig->type() != cbor::Value::Type::kBytes) {
    return MakeError(Error::kMalformed, "packed attStmt has no sig bytes");
  }
  std::vector<uint8_t> signed_data = SignedData(ao.auth_data_raw, client_data_hash);
  const cbor::Value* x5c = stmt.Find("x5c");
  if (x5c == nullptr) {
    // Self attestation: signed by the credential key itself, with its algorithm.
    if (!options.allow_self_attestation) return MakeError(Error::kAttestationNotAllowed, "self attestation");
    if (alg != credential_key.algorithm()) {
      return MakeError(Error::kInvalidAttestation, "self attestation alg differs from the credential key's");
    }
    if (Status s = credential_key.Verify(signed_data, sig->bytes()); !s.ok()) {
      return MakeError(Error::kBadSignature, "packed self attestation: " + s.message());
    }
    cred.attestation_type = AttestationType::kSelf;
    return OkStatus();
  }
  if (x5c->type() != cbor::Value::Type::kArray || x5c->array().empty()) {
    return MakeError(Error::kMalformed, "packed x5c is not a non-empty array");
  }
  std::vector<X509Ptr> chain;
  for (size_t i = 0; i < x5c->array().size(); ++i) {
    const cbor::Value& c = x5c->array()[i];
    if (c.type() != cbor::Value::Type::kBytes) {
      return MakeError(Error::kMalformed, "packed x5c[" + std::to_string(i) + "] is not bytes");
    }
    GOVERN_ASSIGN_OR_RETURN(X509Ptr x, ParseCertificate(c.bytes(), i));
    chain.push_back(std::move(x));
    cred.attestation_certificates.push_back(c.bytes());
  }
  EVP_PKEY* leaf_key = X509_get0_pubkey(chain[0].get());
  if (leaf_key == nullptr) {
    internal::ClearOpensslErrors();
    return MakeError(Error::kInvalidAttestation, "packed leaf certificate key is unreadable");
  }
  if (Status s = internal::VerifyEvp(leaf_key, alg, signed_data, sig->bytes(), "packed attestation");
      !s.ok()) {
    return MakeError(Error::kBadSignature, s.message());
  }
  GOVERN_RETURN_IF_ERROR(CheckPackedCertificate(chain[0].get(), cred.aaguid, options.now_unix_seconds));
  cred.attestation_type = AttestationType::kBasic;
  return OkStatus();
}

}  // namespace

Result<Credential> VerifyRegistration(const RegistrationOptions& options,
                                      const RegistrationResponse& response) {
  // §7.1 steps 5-10: client data.
  GOVERN_ASSIGN_OR_RETURN(ClientData cd, CheckClientData(options.rp, response.client_data_json,
                                                         "webauthn.create", options.challenge));
  (void)cd;
  // Step 11: hash of the client data, as signed.
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest client_data_hash, crypto::Sha256(response.client_data_json));
  // Step 12: the attestation object.
  GOVERN_ASSIGN_OR_RETURN(AttestationObject ao, ParseAttestationObject(response.attestation_object));
  const AuthenticatorData& ad = ao.auth_data;
  // Steps 13-16 (with Level 3's backup flag check).
  GOVERN_RETURN_IF_ERROR(CheckAuthenticatorData(options.rp, ad, options.require_user_verification));
  if (!ad.attested) return MakeError(Error::kNoCredentialData, "the AT flag is clear");
  const AttestedCredentialData& acd = *ad.attested;
  if (acd.credential_id.size() > kMaxCredentialId) {
    return MakeError(Error::kCredentialIdTooLong, std::to_string(acd.credential_id.size()) + " bytes");
  }
  if (acd.credential_id != response.raw_id) {
    return MakeError(Error::kCredentialIdMismatch, "rawId is not the attested credential id");
  }
  // Step 17: the key's algorithm must be one offered.
  auto key = PublicKey::FromCose(acd.public_key_cose);
  if (!key.ok()) return MakeError(Error::kUnsupportedKey, key.status().message());
  if (std::find(options.algorithms.begin(), options.algorithms.end(), key->algorithm()) ==
      options.algorithms.end()) {
    return MakeError(Error::kAlgorithmNotAllowed,
                     "credential key algorithm " + std::to_string(static_cast<int64_t>(key->algorithm())));
  }
  // Step 18: extensions are not requested by this relying party; their outputs are ignored.
  Credential cred;
  cred.id = acd.credential_id;
  cred.public_key_cose = acd.public_key_cose;
  cred.algorithm = key->algorithm();
  cred.sign_count = ad.sign_count;
  cred.aaguid = acd.aaguid;
  cred.user_verified = ad.user_verified();
  cred.backup_eligible = ad.backup_eligible();
  cred.backup_state = ad.backup_state();
  cred.transports = response.transports;
  cred.attestation_format = ao.fmt;
  // Steps 19-21: the attestation statement by format.
  if (ao.fmt == "none") {
    if (!ao.att_stmt.map().empty()) return MakeError(Error::kMalformed, "fmt none with a non-empty attStmt");
    if (!options.allow_none_attestation) return MakeError(Error::kAttestationNotAllowed, "fmt none");
    cred.attestation_type = AttestationType::kNone;
  } else if (ao.fmt == "packed") {
    GOVERN_RETURN_IF_ERROR(VerifyPacked(options, ao, client_data_hash, *key, cred));
  } else {
    return MakeError(Error::kUnsupportedAttestation, "fmt \"" + ao.fmt + "\"");
  }
  return cred;
}

Result<AssertionResult> VerifyAssertion(const AssertionOptions& options, const StoredCredential& credential,
                                        const AssertionResponse& response) {
  // §7.2 step 5: the credential must be one offered, when credentials were offered.
  if (!options.allow_credentials.empty() &&
      std::find(options.allow_credentials.begin(), options.allow_credentials.end(), response.raw_id) ==
          options.allow_credentials.end()) {
    return MakeError(Error::kCredentialNotAllowed, "the credential is not in allowCredentials");
  }
  // Step 6: the credential belongs to the user. The service looked the credential up by rawId; a record
  // for another id is a caller mistake or a substitution, refused all the same.
  if (response.raw_id != credential.id) {
    return MakeError(Error::kUnknownCredential, "the response names another credential than the stored one");
  }
  if (options.allow_credentials.empty() && !response.user_handle) {
    return MakeError(Error::kUserHandleMissing, "a discoverable sign-in must carry userHandle");
  }
  if (response.user_handle && *response.user_handle != credential.user_handle) {
    return MakeError(Error::kUserHandleMismatch, "userHandle is not the credential owner's");
  }
  // Step 7: the stored key.
  auto key = PublicKey::FromCose(credential.public_key_cose);
  if (!key.ok()) return MakeError(Error::kUnsupportedKey, "stored key: " + key.status().message());
  // Steps 8-14: client data.
  GOVERN_ASSIGN_OR_RETURN(ClientData cd, CheckClientData(options.rp, response.client_data_json,
                                                         "webauthn.get", options.challenge));
  (void)cd;
  // Steps 15-18: authenticator data.
  GOVERN_ASSIGN_OR_RETURN(AuthenticatorData ad, ParseAuthenticatorData(response.authenticator_data));
  GOVERN_RETURN_IF_ERROR(CheckAuthenticatorData(options.rp, ad, options.require_user_verification));
  if (ad.backup_eligible() != credential.backup_eligible) {
    return MakeError(Error::kBackupFlagsInvalid, "BE differs from the registered credential's");
  }
  // Steps 19-21: the signature over authenticatorData || SHA-256(clientDataJSON).
  GOVERN_ASSIGN_OR_RETURN(crypto::Sha256Digest client_data_hash, crypto::Sha256(response.client_data_json));
  if (Status s = key->Verify(SignedData(response.authenticator_data, client_data_hash), response.signature);
      !s.ok()) {
    return MakeError(Error::kBadSignature, s.message());
  }
  // Step 22: the signature counter moves forward unless the authenticator keeps none (both zero).
  AssertionResult result;
  result.sign_count = ad.sign_count;
  result.user_verified = ad.user_verified();
  result.backup_state = ad.backup_state();
  if ((ad.sign_count != 0 || credential.sign_count != 0) && ad.sign_count <= credential.sign_count) {
    if (!options.tolerate_sign_count_regression) {
      return MakeError(Error::kSignCountNotIncreased, "sign count " + std::to_string(ad.sign_count) +
                                                          " after " + std::to_string(credential.sign_count));
    }
    result.possible_clone = true;
    result.sign_count = credential.sign_count;  // never move the stored counter backwards
  }
  return result;
}

}  // namespace govern::webauthn
