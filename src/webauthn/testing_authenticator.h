// Test-only: a software authenticator that makes real keys, real signatures and real certificates, so the
// ceremony tests can produce a valid response and then break exactly one thing in it. Not part of the
// library (header-only, included by *_test.cc and nothing else).
#pragma once

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "webauthn/cbor.h"
#include "webauthn/cose.h"
#include "webauthn/parse.h"

namespace govern::webauthn::testing {

inline void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

class TestKey {
 public:
  // `curve` is for ES256 keys only: another curve makes a key that ES256 must refuse.
  explicit TestKey(Algorithm alg, const char* curve = "P-256") : alg_(alg) {
    EVP_PKEY* k = nullptr;
    if (alg == Algorithm::kEs256) k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve);
    if (alg == Algorithm::kEdDsa) k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    if (alg == Algorithm::kRs256) k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
    Check(k != nullptr, "keygen");
    key_.reset(k);
  }
  Algorithm alg() const { return alg_; }
  EVP_PKEY* pkey() const { return key_.get(); }

  std::vector<uint8_t> Cose() const {
    using cbor::Value;
    std::vector<std::pair<Value, Value>> m;
    if (alg_ == Algorithm::kEs256) {
      uint8_t pt[65];
      size_t len = 0;
      Check(EVP_PKEY_get_octet_string_param(key_.get(), OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof pt, &len) == 1 &&
                len == 65,
            "ec point");
      m = {{Value::Int(1), Value::Int(2)},
           {Value::Int(3), Value::Int(-7)},
           {Value::Int(-1), Value::Int(1)},
           {Value::Int(-2), Value::Bytes({pt + 1, pt + 33})},
           {Value::Int(-3), Value::Bytes({pt + 33, pt + 65})}};
    } else if (alg_ == Algorithm::kEdDsa) {
      uint8_t raw[32];
      size_t len = sizeof raw;
      Check(EVP_PKEY_get_raw_public_key(key_.get(), raw, &len) == 1, "ed25519 raw");
      m = {{Value::Int(1), Value::Int(1)},
           {Value::Int(3), Value::Int(-8)},
           {Value::Int(-1), Value::Int(6)},
           {Value::Int(-2), Value::Bytes({raw, raw + 32})}};
    } else {
      m = {{Value::Int(1), Value::Int(3)},
           {Value::Int(3), Value::Int(-257)},
           {Value::Int(-1), Value::Bytes(Bn(OSSL_PKEY_PARAM_RSA_N))},
           {Value::Int(-2), Value::Bytes(Bn(OSSL_PKEY_PARAM_RSA_E))}};
    }
    return cbor::Encode(Value::Map(std::move(m)));
  }

  std::vector<uint8_t> Sign(std::span<const uint8_t> msg) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const char* md = alg_ == Algorithm::kEdDsa ? nullptr : "SHA256";
    size_t len = 0;
    Check(EVP_DigestSignInit_ex(ctx, nullptr, md, nullptr, nullptr, key_.get(), nullptr) == 1, "sign init");
    Check(EVP_DigestSign(ctx, nullptr, &len, msg.data(), msg.size()) == 1, "sign len");
    std::vector<uint8_t> sig(len);
    Check(EVP_DigestSign(ctx, sig.data(), &len, msg.data(), msg.size()) == 1, "sign");
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    return sig;
  }

 private:
  std::vector<uint8_t> Bn(const char* name) const {
    BIGNUM* bn = nullptr;
    Check(EVP_PKEY_get_bn_param(key_.get(), name, &bn) == 1, "rsa param");
    std::vector<uint8_t> out(static_cast<size_t>(BN_num_bytes(bn)));
    BN_bn2bin(bn, out.data());
    BN_free(bn);
    return out;
  }
  struct Free {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  };
  Algorithm alg_;
  std::unique_ptr<EVP_PKEY, Free> key_;
};

inline std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

inline std::string ClientDataJson(std::string_view type, std::span<const uint8_t> challenge,
                                  std::string_view origin, bool cross_origin = false) {
  nlohmann::json j = {{"type", type},
                      {"challenge", crypto::Base64UrlEncode(challenge)},
                      {"origin", origin},
                      {"crossOrigin", cross_origin}};
  return j.dump();
}

inline std::vector<uint8_t> AuthData(std::string_view rp_id, uint8_t flags, uint32_t count,
                                     const AttestedCredentialData* acd = nullptr,
                                     const std::vector<uint8_t>* extensions = nullptr) {
  auto h = *crypto::Sha256(rp_id);
  std::vector<uint8_t> d(h.begin(), h.end());
  d.push_back(flags);
  for (int i = 3; i >= 0; --i) d.push_back(static_cast<uint8_t>(count >> (8 * i)));
  if (acd != nullptr) {
    d.insert(d.end(), acd->aaguid.begin(), acd->aaguid.end());
    d.push_back(static_cast<uint8_t>(acd->credential_id.size() >> 8));
    d.push_back(static_cast<uint8_t>(acd->credential_id.size()));
    d.insert(d.end(), acd->credential_id.begin(), acd->credential_id.end());
    d.insert(d.end(), acd->public_key_cose.begin(), acd->public_key_cose.end());
  }
  if (extensions != nullptr) d.insert(d.end(), extensions->begin(), extensions->end());
  return d;
}

inline std::vector<uint8_t> Concat(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  std::vector<uint8_t> m(a.begin(), a.end());
  m.insert(m.end(), b.begin(), b.end());
  return m;
}

struct CertOptions {
  std::string country = "SE";
  std::string org = "Govern Test Authenticators";
  std::string ou = "Authenticator Attestation";
  std::string cn = "Govern Test EE";
  bool ca = false;
  std::optional<std::array<uint8_t, 16>> aaguid_ext;
  bool aaguid_critical = false;
  int64_t not_before_offset = -3600;  // seconds from now
  int64_t not_after_offset = 365 * 86400;
};

// A DER certificate for `subject`'s public key, signed by `issuer` (ECDSA P-256).
inline std::vector<uint8_t> MakeCertificate(const TestKey& subject, const TestKey& issuer,
                                            const CertOptions& o) {
  X509* x = X509_new();
  X509_set_version(x, X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
  X509_gmtime_adj(X509_getm_notBefore(x), static_cast<long>(o.not_before_offset));
  X509_gmtime_adj(X509_getm_notAfter(x), static_cast<long>(o.not_after_offset));
  X509_NAME* name = X509_get_subject_name(x);
  auto add = [&](const char* f, const std::string& v) {
    if (!v.empty()) {
      X509_NAME_add_entry_by_txt(name, f, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(v.data()),
                                 static_cast<int>(v.size()), -1, 0);
    }
  };
  add("C", o.country);
  add("O", o.org);
  add("OU", o.ou);
  add("CN", o.cn);
  X509_NAME* iname = X509_NAME_new();
  X509_NAME_add_entry_by_txt(iname, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("Govern Test CA"), -1, -1, 0);
  X509_set_issuer_name(x, iname);
  X509_NAME_free(iname);
  X509_set_pubkey(x, subject.pkey());
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* bc = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints,
                                           o.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  X509_add_ext(x, bc, -1);
  X509_EXTENSION_free(bc);
  if (o.aaguid_ext) {
    ASN1_OCTET_STRING* inner = ASN1_OCTET_STRING_new();
    ASN1_OCTET_STRING_set(inner, o.aaguid_ext->data(), 16);
    unsigned char* der = nullptr;
    int len = i2d_ASN1_OCTET_STRING(inner, &der);
    ASN1_OCTET_STRING* value = ASN1_OCTET_STRING_new();
    ASN1_OCTET_STRING_set(value, der, len);
    ASN1_OBJECT* oid = OBJ_txt2obj("1.3.6.1.4.1.45724.1.1.4", 1);
    X509_EXTENSION* ext = X509_EXTENSION_create_by_OBJ(nullptr, oid, o.aaguid_critical ? 1 : 0, value);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ASN1_OBJECT_free(oid);
    ASN1_OCTET_STRING_free(value);
    ASN1_OCTET_STRING_free(inner);
    OPENSSL_free(der);
  }
  Check(X509_sign(x, issuer.pkey(), EVP_sha256()) > 0, "x509 sign");
  unsigned char* der = nullptr;
  int len = i2d_X509(x, &der);
  std::vector<uint8_t> out(der, der + len);
  OPENSSL_free(der);
  X509_free(x);
  return out;
}

// The attestation object for fmt/attStmt around `auth_data`.
inline std::vector<uint8_t> AttestationObjectBytes(std::string_view fmt, cbor::Value att_stmt,
                                                   std::vector<uint8_t> auth_data) {
  using cbor::Value;
  return cbor::Encode(Value::Map({{Value::Text("fmt"), Value::Text(std::string(fmt))},
                                  {Value::Text("attStmt"), std::move(att_stmt)},
                                  {Value::Text("authData"), Value::Bytes(std::move(auth_data))}}));
}

}  // namespace govern::webauthn::testing
