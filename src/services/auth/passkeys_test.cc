// Passkey registration and sign-in over PostgreSQL, with the software authenticator of govern_webauthn's
// tests making real keys and signatures.
#include "services/auth/passkeys.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crypto/random.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "db/testing.h"
#include "services/auth/schema.h"
#include "webauthn/testing_authenticator.h"

namespace govern::auth_service {
namespace {

namespace wt = webauthn::testing;
constexpr char kOrigin[] = "http://localhost:7740";
constexpr int64_t kNow = 1'800'000'000;

std::vector<uint8_t> ChallengeOf(const std::string& options_json) {
  auto j = nlohmann::json::parse(options_json);
  return *crypto::Base64UrlDecode(j["challenge"].get<std::string>());
}

class PasskeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_.emplace(std::move(*db));
    c_ = std::move(*db::Connection::Connect(db_->conninfo()));
    ASSERT_TRUE(db::Migrator("auth", Migrations()).Apply(*c_).ok());
    ASSERT_TRUE(CreateOrg(*c_, "acme", "").ok());
    user_ = *CreateUser(*c_, "acme", "ann@example.com", "Ann", "");
    rp_ = {"localhost", {kOrigin}, false};
    cred_id_.resize(16);
    ASSERT_TRUE(crypto::RandomBytes(cred_id_).ok());
  }
  void TearDown() override {
    c_.reset();
    db_.reset();
  }

  webauthn::RegistrationResponse Registration(const std::vector<uint8_t>& challenge) {
    webauthn::AttestedCredentialData acd{{}, cred_id_, key_.Cose()};
    auto auth_data = wt::AuthData("localhost", 0x45, 0, &acd);  // UP, UV, AT
    auto att = wt::AttestationObjectBytes("none", webauthn::cbor::Value::Map({}), auth_data);
    return {cred_id_, wt::ClientDataJson("webauthn.create", challenge, kOrigin), att, {"internal"}};
  }
  webauthn::AssertionResponse Assertion(const std::vector<uint8_t>& challenge, uint32_t count) {
    std::string client_data = wt::ClientDataJson("webauthn.get", challenge, kOrigin);
    auto auth_data = wt::AuthData("localhost", 0x05, count);
    auto hash = *crypto::Sha256(client_data);
    auto sig = key_.Sign(wt::Concat(auth_data, hash));
    return {cred_id_, client_data, auth_data, sig, wt::Bytes(user_.user_id)};
  }

  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> c_;
  User user_;
  webauthn::RelyingParty rp_;
  wt::TestKey key_{webauthn::Algorithm::kEs256};
  std::vector<uint8_t> cred_id_;
};

TEST_F(PasskeysTest, RegisterThenSignInTwice) {
  auto options = BeginPasskeyRegistration(*c_, rp_, "Govern", user_, kNow);
  ASSERT_TRUE(options.ok()) << options.status().message();
  auto reg = Registration(ChallengeOf(*options));
  ASSERT_TRUE(FinishPasskeyRegistration(*c_, rp_, user_, reg, kNow).ok());
  // The challenge was single use; the same credential cannot be registered twice.
  EXPECT_EQ(FinishPasskeyRegistration(*c_, rp_, user_, reg, kNow).code(), Code::kUnauthenticated);
  auto again = BeginPasskeyRegistration(*c_, rp_, "Govern", user_, kNow);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->find("excludeCredentials"), std::string::npos);
  EXPECT_EQ(FinishPasskeyRegistration(*c_, rp_, user_, Registration(ChallengeOf(*again)), kNow).code(),
            Code::kAlreadyExists);

  for (uint32_t count : {1u, 2u}) {
    auto ch = BeginPasskeySignIn(*c_, rp_, kNow);
    ASSERT_TRUE(ch.ok());
    auto user =
        FinishPasskeySignIn(*c_, rp_, ch->handle, Assertion(ChallengeOf(ch->options_json), count), kNow);
    ASSERT_TRUE(user.ok()) << user.status().message();
    EXPECT_EQ(user->user_id, user_.user_id);
  }
}

TEST_F(PasskeysTest, RefusesReplayWrongChallengeAndStaleCounter) {
  auto options = BeginPasskeyRegistration(*c_, rp_, "Govern", user_, kNow);
  ASSERT_TRUE(FinishPasskeyRegistration(*c_, rp_, user_, Registration(ChallengeOf(*options)), kNow).ok());
  auto ch = BeginPasskeySignIn(*c_, rp_, kNow);
  auto good = Assertion(ChallengeOf(ch->options_json), 5);
  ASSERT_TRUE(FinishPasskeySignIn(*c_, rp_, ch->handle, good, kNow).ok());
  EXPECT_EQ(FinishPasskeySignIn(*c_, rp_, ch->handle, good, kNow).status().code(),
            Code::kUnauthenticated);  // replay
  auto ch2 = BeginPasskeySignIn(*c_, rp_, kNow);
  EXPECT_EQ(FinishPasskeySignIn(*c_, rp_, ch2->handle, Assertion(ChallengeOf(ch->options_json), 6), kNow)
                .status()
                .code(),
            Code::kUnauthenticated);  // another ceremony's challenge
  auto ch3 = BeginPasskeySignIn(*c_, rp_, kNow);
  EXPECT_EQ(FinishPasskeySignIn(*c_, rp_, ch3->handle, Assertion(ChallengeOf(ch3->options_json), 5), kNow)
                .status()
                .code(),
            Code::kUnauthenticated);  // counter did not move
  auto ch4 = BeginPasskeySignIn(*c_, rp_, kNow);
  EXPECT_EQ(
      FinishPasskeySignIn(*c_, rp_, ch4->handle, Assertion(ChallengeOf(ch4->options_json), 7), kNow + 301)
          .status()
          .code(),
      Code::kUnauthenticated);  // expired
  ASSERT_TRUE(SetUserDisabled(*c_, user_.user_id, true).ok());
  auto ch5 = BeginPasskeySignIn(*c_, rp_, kNow);
  EXPECT_EQ(FinishPasskeySignIn(*c_, rp_, ch5->handle, Assertion(ChallengeOf(ch5->options_json), 8), kNow)
                .status()
                .code(),
            Code::kUnauthenticated);  // disabled
}

}  // namespace
}  // namespace govern::auth_service
