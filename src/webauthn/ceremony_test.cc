// Registration and authentication ceremonies: captured responses of real authenticators verify, and a
// software authenticator's valid responses verify until exactly one thing is broken, each refusal with
// its own Error.
#include "webauthn/ceremony.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "webauthn/testing_authenticator.h"

namespace govern::webauthn {
namespace {

using cbor::Value;
using testing::Bytes;
using testing::TestKey;

constexpr uint8_t kUp = 0x01, kUv = 0x04, kBe = 0x08, kBs = 0x10, kAt = 0x40;

nlohmann::json Captured() {
  std::ifstream in(std::string(GOVERN_WEBAUTHN_TESTDATA) + "/captured.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::vector<uint8_t> B64(const std::string& s) { return *crypto::Base64UrlDecode(s); }

RelyingParty Rp(const nlohmann::json& c) {
  return {c["rp_id"], {"https://other.example", c["origin"]}, false};
}

TEST(CapturedTest, RegistrationsOfRealAuthenticatorsVerify) {
  const nlohmann::json captured = Captured();  // outlives the loop (a temporary's member would not)
  for (const auto& c : captured["registrations"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    auto resp = ParseRegistrationResponseJson(c["response"].dump());
    ASSERT_TRUE(resp.ok()) << resp.status().ToString();
    RegistrationOptions o;
    o.rp = Rp(c);
    o.challenge = B64(c["challenge"]);
    o.now_unix_seconds = 1795000000;  // 2026: inside the YubiKey certificates' 2014-2050
    auto cred = VerifyRegistration(o, *resp);
    ASSERT_TRUE(cred.ok()) << cred.status().ToString();
    EXPECT_EQ(cred->attestation_format, c["expect"]["fmt"]);
    const bool basic = c["expect"]["attestation"] == "basic";
    EXPECT_EQ(cred->attestation_type, basic ? AttestationType::kBasic : AttestationType::kNone);
    EXPECT_EQ(static_cast<int64_t>(cred->algorithm), c["expect"]["alg"]);
    EXPECT_EQ(cred->sign_count, c["expect"]["sign_count"]);
    EXPECT_EQ(cred->id, B64(c["response"]["rawId"]));
    EXPECT_EQ(cred->attestation_certificates.size(), basic ? 1u : 0u);
    EXPECT_TRUE(PublicKey::FromCose(cred->public_key_cose).ok());

    // The same response against the wrong challenge, origin, RP ID or time.
    RegistrationOptions wrong = o;
    wrong.challenge[0] ^= 1;
    EXPECT_EQ(ErrorOf(VerifyRegistration(wrong, *resp).status()), Error::kChallengeMismatch);
    wrong = o;
    wrong.rp.origins = {"http://localhost:5001"};
    EXPECT_EQ(ErrorOf(VerifyRegistration(wrong, *resp).status()), Error::kOriginNotAllowed);
    wrong = o;
    wrong.rp.id = "example.com";
    EXPECT_EQ(ErrorOf(VerifyRegistration(wrong, *resp).status()), Error::kRpIdHashMismatch);
    wrong = o;
    wrong.now_unix_seconds = 2600000000;  // 2052: the certificates have expired
    EXPECT_EQ(ErrorOf(VerifyRegistration(wrong, *resp).status()),
              basic ? Error::kInvalidAttestation : Error::kNone);
    wrong = o;
    wrong.allow_none_attestation = false;
    EXPECT_EQ(ErrorOf(VerifyRegistration(wrong, *resp).status()),
              basic ? Error::kNone : Error::kAttestationNotAllowed);
    wrong = o;
    wrong.algorithms = {Algorithm::kRs256};
    EXPECT_EQ(ErrorOf(VerifyRegistration(wrong, *resp).status()), Error::kAlgorithmNotAllowed);
  }
}

TEST(CapturedTest, AssertionsOfRealAuthenticatorsVerify) {
  const nlohmann::json captured = Captured();
  for (const auto& c : captured["assertions"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    auto resp = ParseAssertionResponseJson(c["response"].dump());
    ASSERT_TRUE(resp.ok()) << resp.status().ToString();
    AssertionOptions o;
    o.rp = Rp(c);
    o.challenge = B64(c["challenge"]);
    o.require_user_verification = c["require_uv"];
    o.allow_credentials = {resp->raw_id};
    StoredCredential stored;
    stored.id = resp->raw_id;
    stored.public_key_cose = B64(c["public_key"]);
    stored.sign_count = c["stored_sign_count"];
    if (!c["user_handle"].get<std::string>().empty()) stored.user_handle = B64(c["user_handle"]);
    auto r = VerifyAssertion(o, stored, *resp);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->sign_count, c["expect"]["sign_count"]);
    EXPECT_FALSE(r->possible_clone);

    // Replayed: the stored counter has already moved to the response's.
    StoredCredential after = stored;
    after.sign_count = r->sign_count;
    EXPECT_EQ(ErrorOf(VerifyAssertion(o, after, *resp).status()), Error::kSignCountNotIncreased);
    // A flipped signature bit.
    AssertionResponse tampered = *resp;
    tampered.signature[tampered.signature.size() / 2] ^= 0x01;
    EXPECT_EQ(ErrorOf(VerifyAssertion(o, stored, tampered).status()), Error::kBadSignature);
    // Another challenge, another RP.
    AssertionOptions wrong = o;
    wrong.challenge.back() ^= 1;
    EXPECT_EQ(ErrorOf(VerifyAssertion(wrong, stored, *resp).status()), Error::kChallengeMismatch);
    wrong = o;
    wrong.rp.origins = {"https://localhost:5000"};
    EXPECT_EQ(ErrorOf(VerifyAssertion(wrong, stored, *resp).status()), Error::kOriginNotAllowed);
  }
}

// A software authenticator holding one credential.
struct Authenticator {
  explicit Authenticator(Algorithm alg) : key(alg) {
    cred_id = {0xC0, 0xFF, 0xEE, static_cast<uint8_t>(alg), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    aaguid.fill(0x42);
  }
  TestKey key;
  std::vector<uint8_t> cred_id;
  std::array<uint8_t, 16> aaguid{};
  uint32_t counter = 0;
};

const std::string kRpId = "example.com";
const std::string kOrigin = "https://login.example.com";

struct Registration {
  std::string type = "webauthn.create";
  std::string origin = kOrigin;
  std::string rp_id = kRpId;
  bool cross_origin = false;
  uint8_t flags = kUp | kUv | kAt;
  std::string fmt = "none";
  std::optional<std::vector<uint8_t>> cose;  // overrides the key's
  std::optional<std::vector<uint8_t>> raw_id;
};

std::vector<uint8_t> Challenge() { return std::vector<uint8_t>(32, 0x5A); }

// A registration response; `stmt` builds the attestation statement from the signed data.
RegistrationResponse Register(const Authenticator& a, const Registration& r,
                              const std::function<Value(std::span<const uint8_t>)>& stmt = nullptr) {
  RegistrationResponse resp;
  resp.client_data_json = testing::ClientDataJson(r.type, Challenge(), r.origin, r.cross_origin);
  AttestedCredentialData acd;
  acd.aaguid = a.aaguid;
  acd.credential_id = a.cred_id;
  acd.public_key_cose = r.cose ? *r.cose : a.key.Cose();
  auto auth = testing::AuthData(r.rp_id, r.flags, a.counter, (r.flags & kAt) ? &acd : nullptr);
  auto signed_data = testing::Concat(auth, *crypto::Sha256(resp.client_data_json));
  Value att = stmt ? stmt(signed_data) : Value::Map({});
  resp.attestation_object = testing::AttestationObjectBytes(r.fmt, std::move(att), auth);
  resp.raw_id = r.raw_id ? *r.raw_id : a.cred_id;
  resp.transports = {"internal"};
  return resp;
}

RegistrationOptions RegOptions() {
  RegistrationOptions o;
  o.rp = {kRpId, {kOrigin}, false};
  o.challenge = Challenge();
  return o;
}

Error RegError(const RegistrationResponse& resp, const RegistrationOptions& o = RegOptions()) {
  auto c = VerifyRegistration(o, resp);
  return c.ok() ? Error::kNone : ErrorOf(c.status());
}

TEST(RegistrationTest, NoneAttestationForEachAlgorithm) {
  for (Algorithm alg : {Algorithm::kEs256, Algorithm::kEdDsa, Algorithm::kRs256}) {
    Authenticator a(alg);
    a.counter = 0;
    Registration r;
    r.flags = kUp | kUv | kBe | kBs | kAt;
    auto c = VerifyRegistration(RegOptions(), Register(a, r));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->id, a.cred_id);
    EXPECT_EQ(c->public_key_cose, a.key.Cose());
    EXPECT_EQ(c->algorithm, alg);
    EXPECT_EQ(c->aaguid, a.aaguid);
    EXPECT_TRUE(c->user_verified && c->backup_eligible && c->backup_state);
    EXPECT_EQ(c->transports, std::vector<std::string>{"internal"});
    EXPECT_EQ(c->attestation_format, "none");
    EXPECT_EQ(c->attestation_type, AttestationType::kNone);
  }
}

Value PackedSelf(const TestKey& k, std::span<const uint8_t> signed_data, int64_t alg) {
  return Value::Map(
      {{Value::Text("alg"), Value::Int(alg)}, {Value::Text("sig"), Value::Bytes(k.Sign(signed_data))}});
}

TEST(RegistrationTest, PackedSelfAttestation) {
  for (Algorithm alg : {Algorithm::kEs256, Algorithm::kEdDsa, Algorithm::kRs256}) {
    Authenticator a(alg);
    Registration r;
    r.fmt = "packed";
    auto resp = Register(a, r, [&](auto d) { return PackedSelf(a.key, d, static_cast<int64_t>(alg)); });
    auto c = VerifyRegistration(RegOptions(), resp);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->attestation_type, AttestationType::kSelf);
    auto no_self = RegOptions();
    no_self.allow_self_attestation = false;
    EXPECT_EQ(RegError(resp, no_self), Error::kAttestationNotAllowed);
  }
  Authenticator a(Algorithm::kEs256);
  Registration r;
  r.fmt = "packed";
  // Signed by another key.
  TestKey other(Algorithm::kEs256);
  EXPECT_EQ(RegError(Register(a, r, [&](auto d) { return PackedSelf(other, d, -7); })), Error::kBadSignature);
  // alg says EdDSA, the credential is ES256.
  EXPECT_EQ(RegError(Register(a, r, [&](auto d) { return PackedSelf(a.key, d, -8); })),
            Error::kInvalidAttestation);
  // ECDAA and unknown algorithms.
  EXPECT_EQ(RegError(Register(a, r,
                              [&](auto d) {
                                return Value::Map({{Value::Text("alg"), Value::Int(-7)},
                                                   {Value::Text("sig"), Value::Bytes(a.key.Sign(d))},
                                                   {Value::Text("ecdaaKeyId"), Value::Bytes({1})}});
                              })),
            Error::kUnsupportedAttestation);
  EXPECT_EQ(RegError(Register(a, r, [&](auto d) { return PackedSelf(a.key, d, -35); })),
            Error::kUnsupportedAttestation);
  EXPECT_EQ(RegError(Register(a, r,
                              [&](auto) {
                                return Value::Map({{Value::Text("alg"), Value::Int(-7)}});
                              })),
            Error::kMalformed);
}

struct FullAttestation {
  TestKey ca{Algorithm::kEs256};
  TestKey attestation{Algorithm::kEs256};
  Value Statement(std::span<const uint8_t> signed_data, const testing::CertOptions& co) const {
    auto leaf = testing::MakeCertificate(attestation, ca, co);
    testing::CertOptions ca_opts;
    ca_opts.ca = true;
    auto root = testing::MakeCertificate(ca, ca, ca_opts);
    return Value::Map({{Value::Text("alg"), Value::Int(-7)},
                       {Value::Text("sig"), Value::Bytes(attestation.Sign(signed_data))},
                       {Value::Text("x5c"), Value::Array({Value::Bytes(leaf), Value::Bytes(root)})}});
  }
};

TEST(RegistrationTest, PackedFullAttestation) {
  FullAttestation fa;
  Authenticator a(Algorithm::kEdDsa);
  Registration r;
  r.fmt = "packed";
  testing::CertOptions good;
  good.aaguid_ext = a.aaguid;
  auto resp = Register(a, r, [&](auto d) { return fa.Statement(d, good); });
  auto o = RegOptions();
  o.now_unix_seconds = time(nullptr);
  auto c = VerifyRegistration(o, resp);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->attestation_type, AttestationType::kBasic);
  EXPECT_EQ(c->attestation_certificates.size(), 2u);
  EXPECT_EQ(c->algorithm, Algorithm::kEdDsa);

  // Each §8.2.1 requirement broken alone.
  auto broken = [&](const std::function<void(testing::CertOptions&)>& change) {
    testing::CertOptions co = good;
    change(co);
    return RegError(Register(a, r, [&](auto d) { return fa.Statement(d, co); }), o);
  };
  EXPECT_EQ(broken([](auto& co) { co.ou = "Sales"; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.country = "Sweden"; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.org = ""; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.cn = ""; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.ca = true; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.aaguid_ext->at(0) ^= 1; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.aaguid_critical = true; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.not_after_offset = -60; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.not_before_offset = 3600; }), Error::kInvalidAttestation);
  EXPECT_EQ(broken([](auto& co) { co.aaguid_ext.reset(); }), Error::kNone);  // the extension is optional

  // The signature by another key than the certificate's.
  TestKey other(Algorithm::kEs256);
  EXPECT_EQ(RegError(Register(a, r,
                              [&](auto d) {
                                Value v = fa.Statement(d, good);
                                auto m = v.map();
                                m[1].second = Value::Bytes(other.Sign(d));
                                return Value::Map(m);
                              }),
                     o),
            Error::kBadSignature);
  // ES256 with an attestation key on P-384 (SHA-256 over it verifies in OpenSSL, but it is not ES256).
  FullAttestation p384;
  p384.attestation = TestKey(Algorithm::kEs256, "P-384");
  EXPECT_EQ(RegError(Register(a, r, [&](auto d) { return p384.Statement(d, good); }), o),
            Error::kBadSignature);
  // Garbage where a certificate should be.
  EXPECT_EQ(RegError(Register(a, r,
                              [&](auto d) {
                                return Value::Map(
                                    {{Value::Text("alg"), Value::Int(-7)},
                                     {Value::Text("sig"), Value::Bytes(fa.attestation.Sign(d))},
                                     {Value::Text("x5c"), Value::Array({Value::Bytes({0x30, 0x00})})}});
                              }),
                     o),
            Error::kInvalidAttestation);
  EXPECT_EQ(RegError(Register(a, r,
                              [&](auto d) {
                                return Value::Map({{Value::Text("alg"), Value::Int(-7)},
                                                   {Value::Text("sig"), Value::Bytes(fa.attestation.Sign(d))},
                                                   {Value::Text("x5c"), Value::Array({})}});
                              }),
                     o),
            Error::kMalformed);
}

TEST(RegistrationTest, EachRefusal) {
  Authenticator a(Algorithm::kEs256);
  auto with = [&](const std::function<void(Registration&)>& change) {
    Registration r;
    change(r);
    return RegError(Register(a, r));
  };
  EXPECT_EQ(with([](auto&) {}), Error::kNone);
  EXPECT_EQ(with([](auto& r) { r.type = "webauthn.get"; }), Error::kWrongType);
  EXPECT_EQ(with([](auto& r) { r.origin = "https://login.example.com.evil.example"; }),
            Error::kOriginNotAllowed);
  EXPECT_EQ(with([](auto& r) { r.origin = "http://login.example.com"; }), Error::kOriginNotAllowed);
  EXPECT_EQ(with([](auto& r) { r.cross_origin = true; }), Error::kCrossOriginNotAllowed);
  EXPECT_EQ(with([](auto& r) { r.rp_id = "evil.example"; }), Error::kRpIdHashMismatch);
  EXPECT_EQ(with([](auto& r) { r.flags = kUv | kAt; }), Error::kUserNotPresent);
  EXPECT_EQ(with([](auto& r) { r.flags = kUp | kAt; }), Error::kNone);  // UV not required by default
  EXPECT_EQ(with([](auto& r) { r.flags = kUp | kBs | kAt; }), Error::kBackupFlagsInvalid);
  EXPECT_EQ(with([](auto& r) { r.flags = kUp | kUv; }), Error::kNoCredentialData);
  EXPECT_EQ(with([](auto& r) { r.raw_id = std::vector<uint8_t>{1}; }), Error::kCredentialIdMismatch);
  EXPECT_EQ(with([](auto& r) { r.fmt = "tpm"; }), Error::kUnsupportedAttestation);
  EXPECT_EQ(
      with([](auto& r) {
        r.cose = cbor::Encode(Value::Map({{Value::Int(1), Value::Int(2)}, {Value::Int(3), Value::Int(-35)}}));
      }),
      Error::kUnsupportedKey);

  Registration cross;
  cross.cross_origin = true;
  auto allow_cross = RegOptions();
  allow_cross.rp.allow_cross_origin = true;
  EXPECT_TRUE(VerifyRegistration(allow_cross, Register(a, cross)).ok());

  Registration no_uv;
  no_uv.flags = kUp | kAt;
  auto uv = RegOptions();
  uv.require_user_verification = true;
  EXPECT_EQ(RegError(Register(a, no_uv), uv), Error::kUserNotVerified);

  auto no_none = RegOptions();
  no_none.allow_none_attestation = false;
  EXPECT_EQ(RegError(Register(a, Registration{}), no_none), Error::kAttestationNotAllowed);

  auto only_eddsa = RegOptions();
  only_eddsa.algorithms = {Algorithm::kEdDsa};
  EXPECT_EQ(RegError(Register(a, Registration{}), only_eddsa), Error::kAlgorithmNotAllowed);

  auto other_challenge = RegOptions();
  other_challenge.challenge[31] ^= 1;
  EXPECT_EQ(RegError(Register(a, Registration{}), other_challenge), Error::kChallengeMismatch);
  auto no_challenge = RegOptions();
  no_challenge.challenge.clear();
  EXPECT_EQ(RegError(Register(a, Registration{}), no_challenge), Error::kChallengeMismatch);

  Authenticator long_id(Algorithm::kEs256);
  long_id.cred_id.assign(1024, 7);
  EXPECT_EQ(RegError(Register(long_id, Registration{})), Error::kCredentialIdTooLong);
  long_id.cred_id.resize(1023);
  EXPECT_EQ(RegError(Register(long_id, Registration{})), Error::kNone);

  // fmt none must carry an empty statement.
  EXPECT_EQ(RegError(Register(a, Registration{},
                              [](auto) {
                                return Value::Map({{Value::Text("x"), Value::Int(1)}});
                              })),
            Error::kMalformed);
  // Garbage attestation object.
  auto garbage = Register(a, Registration{});
  garbage.attestation_object.resize(garbage.attestation_object.size() - 1);
  EXPECT_EQ(RegError(garbage), Error::kMalformed);
  garbage = Register(a, Registration{});
  garbage.client_data_json = "{";
  EXPECT_EQ(RegError(garbage), Error::kMalformed);
}

// Assertions from the software authenticator.
struct Assertion {
  std::string type = "webauthn.get";
  std::string origin = kOrigin;
  std::string rp_id = kRpId;
  bool cross_origin = false;
  uint8_t flags = kUp | kUv;
  std::optional<std::vector<uint8_t>> user_handle = std::vector<uint8_t>{'u', '1'};
  std::optional<std::vector<uint8_t>> raw_id;
};

AssertionResponse Sign(Authenticator& a, const Assertion& s, bool count = true) {
  if (count) ++a.counter;
  AssertionResponse resp;
  resp.client_data_json = testing::ClientDataJson(s.type, Challenge(), s.origin, s.cross_origin);
  resp.authenticator_data = testing::AuthData(s.rp_id, s.flags, a.counter);
  resp.signature =
      a.key.Sign(testing::Concat(resp.authenticator_data, *crypto::Sha256(resp.client_data_json)));
  resp.raw_id = s.raw_id ? *s.raw_id : a.cred_id;
  resp.user_handle = s.user_handle;
  return resp;
}

StoredCredential Stored(const Authenticator& a, uint32_t count) {
  StoredCredential c;
  c.id = a.cred_id;
  c.public_key_cose = a.key.Cose();
  c.user_handle = {'u', '1'};
  c.sign_count = count;
  return c;
}

AssertionOptions AsOptions(const Authenticator& a) {
  AssertionOptions o;
  o.rp = {kRpId, {kOrigin}, false};
  o.challenge = Challenge();
  o.allow_credentials = {{1, 2, 3}, a.cred_id};
  return o;
}

TEST(AssertionTest, SignInTwiceAndTheCounterMoves) {
  for (Algorithm alg : {Algorithm::kEs256, Algorithm::kEdDsa, Algorithm::kRs256}) {
    Authenticator a(alg);
    a.counter = 5;
    StoredCredential stored = Stored(a, 5);
    for (int i = 0; i < 2; ++i) {
      auto resp = Sign(a, Assertion{});
      auto r = VerifyAssertion(AsOptions(a), stored, resp);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->sign_count, stored.sign_count + 1);
      EXPECT_TRUE(r->user_verified);
      EXPECT_FALSE(r->possible_clone);
      stored.sign_count = r->sign_count;
      // The same response again is a replay.
      EXPECT_EQ(ErrorOf(VerifyAssertion(AsOptions(a), stored, resp).status()), Error::kSignCountNotIncreased);
    }
  }
}

TEST(AssertionTest, CounterRules) {
  Authenticator a(Algorithm::kEs256);
  // An authenticator without a counter: zero stays zero.
  a.counter = 0;
  auto zero = Sign(a, Assertion{}, false);
  auto r = VerifyAssertion(AsOptions(a), Stored(a, 0), zero);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sign_count, 0u);
  // A counter going back: refused, or reported when the policy tolerates it.
  a.counter = 9;
  auto back = Sign(a, Assertion{});
  EXPECT_EQ(ErrorOf(VerifyAssertion(AsOptions(a), Stored(a, 20), back).status()),
            Error::kSignCountNotIncreased);
  auto tolerant = AsOptions(a);
  tolerant.tolerate_sign_count_regression = true;
  r = VerifyAssertion(tolerant, Stored(a, 20), back);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->possible_clone);
  EXPECT_EQ(r->sign_count, 20u);
  // A counter that drops to zero after being non-zero.
  a.counter = 0;
  EXPECT_EQ(ErrorOf(VerifyAssertion(AsOptions(a), Stored(a, 3), Sign(a, Assertion{}, false)).status()),
            Error::kSignCountNotIncreased);
}

TEST(AssertionTest, EachRefusal) {
  Authenticator a(Algorithm::kEs256);
  auto with = [&](const std::function<void(Assertion&)>& change,
                  const std::function<void(AssertionOptions&, StoredCredential&, AssertionResponse&)>& after =
                      nullptr) {
    Assertion s;
    change(s);
    auto resp = Sign(a, s);
    auto o = AsOptions(a);
    auto stored = Stored(a, a.counter - 1);
    if (after) after(o, stored, resp);
    auto r = VerifyAssertion(o, stored, resp);
    return r.ok() ? Error::kNone : ErrorOf(r.status());
  };
  auto none = [](auto&) {};
  EXPECT_EQ(with(none), Error::kNone);
  EXPECT_EQ(with([](auto& s) { s.type = "webauthn.create"; }), Error::kWrongType);
  EXPECT_EQ(with([](auto& s) { s.origin = "https://evil.example"; }), Error::kOriginNotAllowed);
  EXPECT_EQ(with([](auto& s) { s.cross_origin = true; }), Error::kCrossOriginNotAllowed);
  EXPECT_EQ(with([](auto& s) { s.rp_id = "evil.example"; }), Error::kRpIdHashMismatch);
  EXPECT_EQ(with([](auto& s) { s.flags = kUv; }), Error::kUserNotPresent);
  EXPECT_EQ(with([](auto& s) { s.flags = kUp; }), Error::kNone);
  EXPECT_EQ(
      with([](auto& s) { s.flags = kUp; }, [](auto& o, auto&, auto&) { o.require_user_verification = true; }),
      Error::kUserNotVerified);
  EXPECT_EQ(with([](auto& s) { s.flags = kUp | kBs; }), Error::kBackupFlagsInvalid);
  EXPECT_EQ(with([](auto& s) { s.flags = kUp | kBe; }),
            Error::kBackupFlagsInvalid);  // BE was false at registration
  EXPECT_EQ(
      with([](auto& s) { s.flags = kUp | kBe; }, [](auto&, auto& c, auto&) { c.backup_eligible = true; }),
      Error::kNone);
  EXPECT_EQ(with(none, [](auto& o, auto&, auto&) { o.challenge[0] ^= 1; }), Error::kChallengeMismatch);
  EXPECT_EQ(with(none, [](auto&, auto&, auto& r) { r.signature[10] ^= 1; }), Error::kBadSignature);
  EXPECT_EQ(with(none, [](auto&, auto&, auto& r) { r.signature.clear(); }), Error::kBadSignature);
  EXPECT_EQ(with(none, [](auto&, auto&, auto& r) { r.authenticator_data[36] ^= 1; }), Error::kBadSignature);
  EXPECT_EQ(with(none, [](auto&, auto&, auto& r) { r.client_data_json += " "; }), Error::kBadSignature);
  EXPECT_EQ(with(none,
                 [](auto&, auto& c, auto&) {
                   TestKey other(Algorithm::kEs256);
                   c.public_key_cose = other.Cose();
                 }),
            Error::kBadSignature);
  // The response names a credential the caller did not look up.
  EXPECT_EQ(with([](auto& s) { s.raw_id = std::vector<uint8_t>{1, 2, 3}; }), Error::kUnknownCredential);
  EXPECT_EQ(with(none,
                 [](auto& o, auto&, auto&) {
                   o.allow_credentials = {{1, 2, 3}};
                 }),
            Error::kCredentialNotAllowed);
  EXPECT_EQ(with([](auto& s) {
              s.user_handle = std::vector<uint8_t>{'u', '2'};
            }),
            Error::kUserHandleMismatch);
  EXPECT_EQ(with([](auto& s) { s.user_handle.reset(); }), Error::kNone);  // user already identified
  EXPECT_EQ(with([](auto& s) { s.user_handle.reset(); },
                 [](auto& o, auto&, auto&) { o.allow_credentials.clear(); }),
            Error::kUserHandleMissing);
  EXPECT_EQ(with(none, [](auto& o, auto&, auto&) { o.allow_credentials.clear(); }), Error::kNone);
  EXPECT_EQ(with(none, [](auto&, auto&, auto& r) { r.authenticator_data.resize(30); }), Error::kMalformed);
  EXPECT_EQ(with(none, [](auto&, auto& c, auto&) { c.public_key_cose = {0xa0}; }), Error::kUnsupportedKey);
}

TEST(AssertionTest, ResponseJsonRoundTrip) {
  Authenticator a(Algorithm::kEdDsa);
  auto resp = Sign(a, Assertion{});
  nlohmann::json j = {{"id", crypto::Base64UrlEncode(resp.raw_id)},
                      {"rawId", crypto::Base64UrlEncode(resp.raw_id)},
                      {"type", "public-key"},
                      {"response",
                       {{"clientDataJSON", crypto::Base64UrlEncode(resp.client_data_json)},
                        {"authenticatorData", crypto::Base64UrlEncode(resp.authenticator_data)},
                        {"signature", crypto::Base64UrlEncode(resp.signature)},
                        {"userHandle", crypto::Base64UrlEncode(*resp.user_handle)}}},
                      {"clientExtensionResults", nlohmann::json::object()}};
  auto parsed = ParseAssertionResponseJson(j.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(VerifyAssertion(AsOptions(a), Stored(a, 0), *parsed).ok());
}

TEST(ErrorsTest, NamesAreDistinctAndRoundTrip) {
  std::set<std::string_view> names;
  for (int i = 1; i <= static_cast<int>(Error::kCodeReused); ++i) {
    auto e = static_cast<Error>(i);
    EXPECT_TRUE(names.insert(ErrorName(e)).second) << ErrorName(e);
    EXPECT_EQ(ErrorOf(MakeError(e, "detail: with colon")), e);
  }
  EXPECT_EQ(ErrorOf(OkStatus()), Error::kNone);
  EXPECT_EQ(ErrorOf(InvalidArgument("webauthn.nonsense: x")), Error::kNone);
  EXPECT_EQ(MakeError(Error::kMalformed, "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(MakeError(Error::kBadSignature, "x").code(), Code::kUnauthenticated);
  EXPECT_EQ(MakeError(Error::kOriginNotAllowed, "https://evil").message(),
            "webauthn.origin_not_allowed: https://evil");
}

}  // namespace
}  // namespace govern::webauthn
