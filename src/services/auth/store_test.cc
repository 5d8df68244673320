// The directory, password sign-in (answers, rate limits, hash upgrade) and key rings on a real
// PostgreSQL (one fresh database per test).
#include "services/auth/store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/testing.h"
#include "services/auth/keys.h"
#include "services/auth/passwords.h"
#include "services/auth/schema.h"
#include "services/auth/totp.h"
#include "webauthn/totp.h"

namespace govern::auth_service {
namespace {

class AuthStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_.emplace(std::move(*db));
    auto conn = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(conn.ok()) << conn.status().message();
    conn_ = std::move(*conn);
    auto applied = db::Migrator("auth", Migrations()).Apply(*conn_);
    ASSERT_TRUE(applied.ok()) << applied.status().message();
    ASSERT_TRUE(CreateOrg(*conn_, "acme", "Acme").ok());
  }
  void TearDown() override {
    conn_.reset();
    db_.reset();
  }
  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> conn_;
};

crypto::Argon2Params Cheap() { return {.memory_kib = 1024, .passes = 1, .lanes = 1}; }

TEST_F(AuthStoreTest, OrganisationsUsersGroups) {
  EXPECT_EQ(CreateOrg(*conn_, "acme", "").code(), Code::kAlreadyExists);
  EXPECT_EQ(CreateOrg(*conn_, "Bad Org", "").code(), Code::kInvalidArgument);
  auto u = CreateUser(*conn_, "acme", "Ann@Example.com", "Ann", "");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_TRUE(u->user_id.starts_with("usr_"));
  EXPECT_EQ(u->subject, u->user_id);
  EXPECT_EQ(CreateUser(*conn_, "acme", "ann@example.com", "", "").status().code(), Code::kAlreadyExists);
  EXPECT_EQ(CreateUser(*conn_, "nope", "b@example.com", "", "").status().code(), Code::kNotFound);
  EXPECT_EQ(CreateUser(*conn_, "acme", "not-an-email", "", "").status().code(), Code::kInvalidArgument);
  auto found = FindUserByEmail(*conn_, "acme", "ANN@example.COM");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->user_id, u->user_id);

  ASSERT_TRUE(CreateGroup(*conn_, "acme", "ops").ok());
  EXPECT_EQ(CreateGroup(*conn_, "acme", "ops").code(), Code::kAlreadyExists);
  EXPECT_EQ(CreateGroup(*conn_, "ghost", "ops").code(), Code::kNotFound);
  ASSERT_TRUE(AddMember(*conn_, "acme", "ops", u->user_id).ok());
  ASSERT_TRUE(AddMember(*conn_, "acme", "ops", u->user_id).ok());  // idempotent
  EXPECT_EQ(AddMember(*conn_, "acme", "ops", "usr_missing").code(), Code::kNotFound);
  auto groups = GroupsOf(*conn_, u->user_id);
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(*groups, std::vector<std::string>{"ops"});
  ASSERT_TRUE(RemoveMember(*conn_, "acme", "ops", u->user_id).ok());
  EXPECT_TRUE(GroupsOf(*conn_, u->user_id)->empty());
}

TEST_F(AuthStoreTest, ClientsHashSecretsAndValidateRedirects) {
  auto agent = CreateClient(*conn_, "acme", "builder", ClientKind::kAgent, true, {"events:write"}, {});
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  EXPECT_TRUE(agent->secret.starts_with("gvs_"));
  auto back = FindClient(*conn_, agent->client.client_id);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_NE((*back)->secret_hash, agent->secret);
  EXPECT_TRUE(ClientSecretMatches(**back, agent->secret));
  EXPECT_FALSE(ClientSecretMatches(**back, agent->secret + "x"));
  EXPECT_EQ((*back)->scopes, std::vector<std::string>{"events:write"});

  EXPECT_EQ(CreateClient(*conn_, "acme", "a", ClientKind::kAgent, false, {}, {}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(CreateClient(*conn_, "acme", "a", ClientKind::kApp, false, {}, {}).status().code(),
            Code::kInvalidArgument);
  for (std::string bad : {"http://example.com/cb", "https://a.example/cb#x", "javascript:alert(1)",
                          "http://localhost.evil/cb"}) {
    EXPECT_EQ(CreateClient(*conn_, "acme", "a", ClientKind::kApp, false, {}, {bad}).status().code(),
              Code::kInvalidArgument)
        << bad;
  }
  auto app = CreateClient(*conn_, "acme", "web", ClientKind::kApp, false, {"openid"},
                          {"http://127.0.0.1:9999/cb", "https://app.example/cb"});
  ASSERT_TRUE(app.ok()) << app.status().message();
  EXPECT_TRUE(app->secret.empty());
  EXPECT_TRUE(app->client.HasRedirect("https://app.example/cb"));
  EXPECT_FALSE(app->client.HasRedirect("https://app.example/cb/"));
}

TEST_F(AuthStoreTest, PasswordSignInGivesOneAnswerAndLimitsGuessing) {
  PasswordPolicy p;
  p.argon2 = Cheap();
  p.limits.max_failures_account = 3;
  p.limits.max_failures_address = 100;
  p.dummy_hash = *MakeDummyHash(p.argon2);
  auto hash = crypto::HashPassword("correct horse", p.argon2);
  ASSERT_TRUE(hash.ok());
  ASSERT_TRUE(CreateUser(*conn_, "acme", "ann@example.com", "", *hash).ok());
  int64_t now = 1'800'000'000;

  auto wrong = SignInWithPassword(*conn_, p, "acme", "ann@example.com", "nope", "10.0.0.1", now);
  auto unknown = SignInWithPassword(*conn_, p, "acme", "zed@example.com", "nope", "10.0.0.1", now);
  EXPECT_EQ(wrong.status.code(), Code::kUnauthenticated);
  EXPECT_EQ(unknown.status.code(), Code::kUnauthenticated);
  EXPECT_EQ(wrong.status.message(), unknown.status.message());

  auto ok = SignInWithPassword(*conn_, p, "acme", "ann@example.com", "correct horse", "10.0.0.1", now);
  ASSERT_TRUE(ok.status.ok()) << ok.status.message();
  EXPECT_FALSE(ok.rehashed);

  // Three failures lock the account, even for the right password, until the lockout ends.
  for (int i = 0; i < 3; ++i)
    SignInWithPassword(*conn_, p, "acme", "ann@example.com", "guess", "10.0.0.2", now);
  auto locked =
      SignInWithPassword(*conn_, p, "acme", "ann@example.com", "correct horse", "10.0.0.3", now + 1);
  EXPECT_EQ(locked.status.code(), Code::kResourceExhausted);
  EXPECT_GT(locked.retry_after, 0);
  auto later = SignInWithPassword(*conn_, p, "acme", "ann@example.com", "correct horse", "10.0.0.3",
                                  now + p.limits.lockout_s + 1);
  EXPECT_TRUE(later.status.ok()) << later.status.message();
}

TEST_F(AuthStoreTest, AddressLimitStopsSprayingManyAccounts) {
  PasswordPolicy p;
  p.argon2 = Cheap();
  p.limits.max_failures_address = 4;
  p.dummy_hash = *MakeDummyHash(p.argon2);
  int64_t now = 1'800'000'000;
  for (int i = 0; i < 4; ++i)
    SignInWithPassword(*conn_, p, "acme", "u" + std::to_string(i) + "@example.com", "x", "10.9.9.9", now);
  auto r = SignInWithPassword(*conn_, p, "acme", "other@example.com", "x", "10.9.9.9", now);
  EXPECT_EQ(r.status.code(), Code::kResourceExhausted);
  auto elsewhere = SignInWithPassword(*conn_, p, "acme", "other@example.com", "x", "10.1.1.1", now);
  EXPECT_EQ(elsewhere.status.code(), Code::kUnauthenticated);
}

TEST_F(AuthStoreTest, HashUpgradedWhenParametersRise) {
  PasswordPolicy p;
  p.argon2 = Cheap();
  p.dummy_hash = *MakeDummyHash(p.argon2);
  auto u = CreateUser(*conn_, "acme", "ann@example.com", "", *crypto::HashPassword("pw-1234567", p.argon2));
  ASSERT_TRUE(u.ok());
  p.argon2.memory_kib = 2048;
  auto r = SignInWithPassword(*conn_, p, "acme", "ann@example.com", "pw-1234567", "", 1'800'000'000);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.rehashed);
  auto stored = GetUser(*conn_, u->user_id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(crypto::ParsePasswordHashParams(stored->password_hash)->memory_kib, 2048u);
  EXPECT_TRUE(crypto::VerifyPassword("pw-1234567", stored->password_hash).ok());
}

TEST_F(AuthStoreTest, DisabledUserGetsTheSameRefusal) {
  PasswordPolicy p;
  p.argon2 = Cheap();
  p.dummy_hash = *MakeDummyHash(p.argon2);
  auto u = CreateUser(*conn_, "acme", "ann@example.com", "", *crypto::HashPassword("pw-1234567", p.argon2));
  ASSERT_TRUE(SetUserDisabled(*conn_, u->user_id, true).ok());
  auto r = SignInWithPassword(*conn_, p, "acme", "ann@example.com", "pw-1234567", "", 1'800'000'000);
  EXPECT_EQ(r.status.code(), Code::kUnauthenticated);
}

TEST_F(AuthStoreTest, KeyRingsAreSealedAndRotate) {
  std::string dir = std::filesystem::temp_directory_path() / ("auth-keys-" + db_->name());
  std::filesystem::remove_all(dir);
  auto key = LoadStorageKey("", dir);
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(std::filesystem::status(dir + "/storage.key").permissions() & std::filesystem::perms::group_all,
            std::filesystem::perms::none);
  auto again = LoadStorageKey("", dir);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(
      crypto::ConstantTimeEquals(crypto::AsString(key->key().span()), crypto::AsString(again->key().span())));

  tokens::RotationPolicy policy{std::chrono::hours(24), std::chrono::hours(1), std::chrono::hours(2)};
  int64_t t0 = 1'800'000'000;
  auto first = LoadAndRotate(*conn_, *key, tokens::Alg::kES256, policy, t0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->changed);
  EXPECT_EQ(first->access->alg(), tokens::Alg::kHS256);
  EXPECT_EQ(first->id->alg(), tokens::Alg::kES256);
  auto same = LoadAndRotate(*conn_, *key, tokens::Alg::kES256, policy, t0 + 60);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->changed);
  EXPECT_EQ(same->id->keys().size(), 1u);
  // Within publish_ahead of retirement a successor appears (published, not yet signing).
  auto later = LoadAndRotate(*conn_, *key, tokens::Alg::kES256, policy, t0 + 23 * 3600 + 60);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->changed);
  EXPECT_EQ(later->id->keys().size(), 2u);
  // The stored bytes are sealed: a different storage key cannot open them.
  auto other = crypto::Aes256GcmKey::Generate();
  auto refused = LoadAndRotate(*conn_, *other, tokens::Alg::kES256, policy, t0);
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

TEST_F(AuthStoreTest, TotpEnrolConfirmAndSingleUseCodes) {
  auto u = CreateUser(*conn_, "acme", "ann@example.com", "", "");
  ASSERT_TRUE(u.ok());
  auto key = crypto::Aes256GcmKey::Generate();
  ASSERT_TRUE(key.ok());
  EXPECT_FALSE(*HasTotp(*conn_, u->user_id));
  auto e = BeginTotp(*conn_, *key, u->user_id, "Govern", "ann@example.com");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->otpauth_uri.starts_with("otpauth://totp/"));
  auto secret = webauthn::Base32Decode(e->secret_base32);
  ASSERT_TRUE(secret.ok());
  int64_t now = 1'800'000'000;
  EXPECT_FALSE(*HasTotp(*conn_, u->user_id));  // not before a first good code
  EXPECT_EQ(ConfirmTotp(*conn_, *key, u->user_id, "000000", now).code(), Code::kUnauthenticated);
  ASSERT_TRUE(ConfirmTotp(*conn_, *key, u->user_id, *webauthn::Totp(*secret, now), now).ok());
  EXPECT_TRUE(*HasTotp(*conn_, u->user_id));
  EXPECT_EQ(BeginTotp(*conn_, *key, u->user_id, "Govern", "a").status().code(), Code::kAlreadyExists);

  RateLimitPolicy limits;
  limits.max_failures_account = 3;
  int64_t wait = 0;
  // The confirming code cannot be used again; the next step's code can, once.
  EXPECT_EQ(CheckTotp(*conn_, *key, limits, u->user_id, *webauthn::Totp(*secret, now), now, &wait).code(),
            Code::kUnauthenticated);
  std::string next = *webauthn::Totp(*secret, now + 30);
  EXPECT_TRUE(CheckTotp(*conn_, *key, limits, u->user_id, next, now + 30, &wait).ok());
  EXPECT_EQ(CheckTotp(*conn_, *key, limits, u->user_id, next, now + 30, &wait).code(),
            Code::kUnauthenticated);
  // Guessing is locked out; the right code is refused while locked.
  for (int i = 0; i < 3; ++i) (void)CheckTotp(*conn_, *key, limits, u->user_id, "123456", now + 60, &wait);
  EXPECT_EQ(
      CheckTotp(*conn_, *key, limits, u->user_id, *webauthn::Totp(*secret, now + 90), now + 90, &wait).code(),
      Code::kResourceExhausted);
  EXPECT_GT(wait, 0);
  // Another storage key cannot open the secret.
  auto other = crypto::Aes256GcmKey::Generate();
  EXPECT_NE(CheckTotp(*conn_, *other, limits, u->user_id, next, now + 5000, &wait).code(), Code::kOk);
}

TEST_F(AuthStoreTest, AdminTokens) {
  auto t = CreateAdminToken(*conn_, "ops");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(CheckAdminToken(*conn_, *t).ok());
  EXPECT_EQ(CheckAdminToken(*conn_, *t + "x").code(), Code::kUnauthenticated);
  EXPECT_EQ(CheckAdminToken(*conn_, "Bearer").code(), Code::kUnauthenticated);
}

}  // namespace
}  // namespace govern::auth_service
