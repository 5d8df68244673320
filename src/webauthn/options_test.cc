// Options JSON in the shape PublicKeyCredential.parseCreationOptionsFromJSON / parseRequestOptionsFromJSON
// take.
#include "webauthn/options.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crypto/encoding.h"

namespace govern::webauthn {
namespace {

TEST(OptionsTest, ChallengesAreFreshAnd32Bytes) {
  auto a = NewChallenge();
  auto b = NewChallenge();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(OptionsTest, CreationOptionsJson) {
  CreationOptions o;
  o.rp_id = "example.com";
  o.rp_name = "Example \"Corp\"";
  o.user_id = {0xFF, 0xFE, 0x00};
  o.user_name = "ada@example.com";
  o.user_display_name = "Ada Lovelace";
  o.challenge = {1, 2, 3};
  o.exclude_credentials = {{{9, 9}, {"usb", "nfc"}}, {{8}, {}}};
  o.resident_key = "required";
  auto j = nlohmann::json::parse(CreationOptionsJson(o));
  EXPECT_EQ(j["rp"]["id"], "example.com");
  EXPECT_EQ(j["rp"]["name"], "Example \"Corp\"");
  EXPECT_EQ(j["user"]["id"], "__4A");
  EXPECT_EQ(j["user"]["name"], "ada@example.com");
  EXPECT_EQ(j["user"]["displayName"], "Ada Lovelace");
  EXPECT_EQ(j["challenge"], "AQID");
  ASSERT_EQ(j["pubKeyCredParams"].size(), 3u);
  EXPECT_EQ(j["pubKeyCredParams"][0], (nlohmann::json{{"type", "public-key"}, {"alg", -7}}));
  EXPECT_EQ(j["pubKeyCredParams"][1]["alg"], -8);
  EXPECT_EQ(j["pubKeyCredParams"][2]["alg"], -257);
  EXPECT_EQ(j["timeout"], 300000);
  EXPECT_EQ(j["excludeCredentials"][0],
            (nlohmann::json{{"type", "public-key"}, {"id", "CQk"}, {"transports", {"usb", "nfc"}}}));
  EXPECT_FALSE(j["excludeCredentials"][1].contains("transports"));
  EXPECT_EQ(j["authenticatorSelection"]["residentKey"], "required");
  EXPECT_EQ(j["authenticatorSelection"]["requireResidentKey"], true);
  EXPECT_EQ(j["authenticatorSelection"]["userVerification"], "preferred");
  EXPECT_EQ(j["attestation"], "none");
}

TEST(OptionsTest, RequestOptionsJson) {
  RequestOptions o;
  o.rp_id = "example.com";
  o.challenge = std::vector<uint8_t>(32, 0xAB);
  o.user_verification = "required";
  auto j = nlohmann::json::parse(RequestOptionsJson(o));
  EXPECT_EQ(j["rpId"], "example.com");
  EXPECT_EQ(*crypto::Base64UrlDecode(j["challenge"].get<std::string>()), o.challenge);
  EXPECT_EQ(j["allowCredentials"], nlohmann::json::array());
  EXPECT_EQ(j["userVerification"], "required");
  // Invalid UTF-8 in a name is replaced, never thrown.
  CreationOptions bad;
  bad.user_name = "\xff";
  EXPECT_NE(CreationOptionsJson(bad).find("\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace govern::webauthn
