// Parsers of client data, authenticator data, attestation objects and response JSON.
#include "webauthn/parse.h"

#include <gtest/gtest.h>

#include "webauthn/errors.h"
#include "webauthn/testing_authenticator.h"

namespace govern::webauthn {
namespace {

using testing::Bytes;

TEST(ClientDataTest, ParsesAndIgnoresTokenBinding) {
  auto cd = ParseClientData(
      R"({"type":"webauthn.get","challenge":"AQID","origin":"https://a.example","crossOrigin":true,)"
      R"("topOrigin":"https://b.example","tokenBinding":{"status":"present","id":"x"},"other":1})");
  ASSERT_TRUE(cd.ok()) << cd.status().ToString();
  EXPECT_EQ(cd->type, "webauthn.get");
  EXPECT_EQ(cd->challenge, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(cd->origin, "https://a.example");
  EXPECT_TRUE(cd->cross_origin);
  EXPECT_EQ(cd->top_origin, "https://b.example");
  auto plain = ParseClientData(R"({"type":"webauthn.create","challenge":"","origin":"o"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->cross_origin);
}

TEST(ClientDataTest, RefusesMalformed) {
  for (const char* bad :
       {"", "[]", "{", R"({"challenge":"AQID","origin":"o"})",
        R"({"type":1,"challenge":"AQID","origin":"o"})",
        R"({"type":"webauthn.get","challenge":"AQID=","origin":"o"})",
        R"({"type":"webauthn.get","challenge":"AQ+D","origin":"o"})",
        R"({"type":"webauthn.get","origin":"o"})", R"({"type":"webauthn.get","challenge":"AQID"})",
        R"({"type":"webauthn.get","challenge":"AQID","origin":"o","crossOrigin":"yes"})",
        "{\"type\":\"webauthn.get\",\"challenge\":\"AQID\",\"origin\":\"\xff\"}"}) {
    auto cd = ParseClientData(bad);
    ASSERT_FALSE(cd.ok()) << bad;
    EXPECT_EQ(ErrorOf(cd.status()), Error::kMalformed) << cd.status().ToString();
  }
  EXPECT_EQ(ErrorOf(ParseClientData(std::string(kMaxClientDataJson + 1, ' ')).status()), Error::kMalformed);
}

TEST(AuthenticatorDataTest, ParsesAttestedDataAndExtensions) {
  testing::TestKey k(Algorithm::kEs256);
  AttestedCredentialData acd;
  acd.aaguid.fill(0xAA);
  acd.credential_id = {1, 2, 3, 4, 5};
  acd.public_key_cose = k.Cose();
  auto ext = cbor::Encode(cbor::Value::Map({{cbor::Value::Text("credProtect"), cbor::Value::Int(2)}}));
  auto data =
      testing::AuthData("example.com", 0x01 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80, 0x01020304, &acd, &ext);
  auto ad = ParseAuthenticatorData(data);
  ASSERT_TRUE(ad.ok()) << ad.status().ToString();
  EXPECT_EQ(ad->rp_id_hash, *crypto::Sha256("example.com"));
  EXPECT_TRUE(ad->user_present() && ad->user_verified() && ad->backup_eligible() && ad->backup_state());
  EXPECT_EQ(ad->sign_count, 0x01020304u);
  ASSERT_TRUE(ad->attested);
  EXPECT_EQ(ad->attested->aaguid, acd.aaguid);
  EXPECT_EQ(ad->attested->credential_id, acd.credential_id);
  EXPECT_EQ(ad->attested->public_key_cose, acd.public_key_cose);
  ASSERT_TRUE(ad->extensions);
  EXPECT_EQ(ad->extensions->Find("credProtect")->AsInt(), 2);
}

TEST(AuthenticatorDataTest, RefusesMalformed) {
  testing::TestKey k(Algorithm::kEdDsa);
  AttestedCredentialData acd;
  acd.credential_id = {9};
  acd.public_key_cose = k.Cose();
  auto ok = testing::AuthData("x", 0x41, 0, &acd);
  ASSERT_TRUE(ParseAuthenticatorData(ok).ok());
  auto ext = cbor::Encode(cbor::Value::Map({}));
  std::vector<uint8_t> one = {0x01};
  struct Case {
    std::vector<uint8_t> data;
    const char* why;
  };
  std::vector<Case> cases = {
      {std::vector<uint8_t>(36, 0), "shorter than 37"},
      {testing::AuthData("x", 0x41, 0), "attested credential data truncated"},
      {testing::AuthData("x", 0x01, 0, &acd), "bytes after the authenticator data"},
      {testing::AuthData("x", 0x81, 0), "no extension data"},
      {testing::AuthData("x", 0x01, 0, nullptr, &ext), "bytes after"},
      {testing::AuthData("x", 0x81, 0, nullptr, &one), "not a CBOR map"},
      {[&] {
         auto d = ok;
         d[54] = 200;  // credential id length past the end
         return d;
       }(),
       "credential id runs past"},
      {[&] {
         auto d = ok;
         d.pop_back();
         return d;
       }(),
       "credential public key"},
  };
  for (const auto& c : cases) {
    auto ad = ParseAuthenticatorData(c.data);
    ASSERT_FALSE(ad.ok()) << c.why;
    EXPECT_EQ(ErrorOf(ad.status()), Error::kMalformed);
    EXPECT_NE(ad.status().message().find(c.why), std::string::npos) << ad.status().message();
  }
}

TEST(AttestationObjectTest, RefusesMalformed) {
  using cbor::Value;
  auto auth = testing::AuthData("x", 0x01, 0);
  ASSERT_TRUE(ParseAttestationObject(testing::AttestationObjectBytes("none", Value::Map({}), auth)).ok());
  std::vector<std::vector<uint8_t>> bad = {
      {},
      cbor::Encode(Value::Array({})),
      cbor::Encode(
          Value::Map({{Value::Text("fmt"), Value::Text("none")}, {Value::Text("attStmt"), Value::Map({})}})),
      cbor::Encode(Value::Map({{Value::Text("fmt"), Value::Int(1)},
                               {Value::Text("attStmt"), Value::Map({})},
                               {Value::Text("authData"), Value::Bytes(auth)}})),
      cbor::Encode(Value::Map({{Value::Text("fmt"), Value::Text("none")},
                               {Value::Text("attStmt"), Value::Array({})},
                               {Value::Text("authData"), Value::Bytes(auth)}})),
      cbor::Encode(Value::Map({{Value::Text("fmt"), Value::Text("none")},
                               {Value::Text("attStmt"), Value::Map({})},
                               {Value::Text("authData"), Value::Bytes(auth)},
                               {Value::Text("extra"), Value::Null()}})),
      testing::AttestationObjectBytes("none", Value::Map({}), std::vector<uint8_t>(10, 0)),
  };
  for (const auto& b : bad) {
    auto ao = ParseAttestationObject(b);
    ASSERT_FALSE(ao.ok());
    EXPECT_EQ(ErrorOf(ao.status()), Error::kMalformed) << ao.status().ToString();
  }
}

TEST(ResponseJsonTest, ParsesBrowserJson) {
  auto r = ParseAssertionResponseJson(
      R"({"id":"AQI","rawId":"AQI","type":"public-key","authenticatorAttachment":"platform",)"
      R"("response":{"clientDataJSON":"e30","authenticatorData":"AAE","signature":"Cg","userHandle":"dQ"},)"
      R"("clientExtensionResults":{}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->raw_id, (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(r->client_data_json, "{}");
  EXPECT_EQ(r->signature, (std::vector<uint8_t>{10}));
  EXPECT_EQ(r->user_handle, (std::vector<uint8_t>{'u'}));
  auto nohandle = ParseAssertionResponseJson(
      R"({"id":"AQI","rawId":"AQI","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"AAE","signature":"Cg","userHandle":null}})");
  ASSERT_TRUE(nohandle.ok());
  EXPECT_FALSE(nohandle->user_handle);
  auto reg = ParseRegistrationResponseJson(
      R"({"id":"AQI","rawId":"AQI","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA","transports":["internal","hybrid"]}})");
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->transports, (std::vector<std::string>{"internal", "hybrid"}));
}

TEST(ResponseJsonTest, RefusesMalformed) {
  for (
      const char* bad : {
          "null",
          R"({"id":"AQI","rawId":"AQM","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA"}})",
          R"({"id":"AQI","rawId":"AQI","type":"password","response":{"clientDataJSON":"e30","attestationObject":"oA"}})",
          R"({"id":"AQI","rawId":"AQI","type":"public-key"})",
          R"({"id":"AQI","rawId":"AQI","type":"public-key","response":{"clientDataJSON":"e30"}})",
          R"({"id":"AQI","rawId":"AQI","type":"public-key","response":{"clientDataJSON":"e3=","attestationObject":"oA"}})",
          R"({"id":"AQI","rawId":"AQI","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA","transports":[1]}})",
      }) {
    auto r = ParseRegistrationResponseJson(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ErrorOf(r.status()), Error::kMalformed);
  }
}

}  // namespace
}  // namespace govern::webauthn
