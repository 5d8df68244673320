// Administrator removal of sign-in factors on a real PostgreSQL: the last-way rule, force, sessions
// and refresh families revoked, the event record, and two removals racing.
#include "services/auth/factors.h"

#include <gtest/gtest.h>

#include <thread>

#include "crypto/encoding.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "db/testing.h"
#include "services/auth/schema.h"
#include "services/auth/store.h"

namespace govern::auth_service {
namespace {

constexpr int64_t kFactorsNow = 1'800'000'000;

class FactorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_.emplace(std::move(*db));
    c_ = std::move(*db::Connection::Connect(db_->conninfo()));
    ASSERT_TRUE(db::Migrator("auth", Migrations()).Apply(*c_).ok());
    ASSERT_TRUE(CreateOrg(*c_, "acme", "").ok());
  }
  void TearDown() override {
    c_.reset();
    db_.reset();
  }
  User MakeUser(const std::string& email, bool password) {
    auto u =
        CreateUser(*c_, "acme", email, "", password ? "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA" : "");
    EXPECT_TRUE(u.ok()) << u.status().message();
    return *u;
  }
  // A stored passkey row (the key bytes do not matter to removal); returns its base64url id.
  std::string AddPasskey(const User& u, char tag) {
    std::string id(16, tag);
    EXPECT_TRUE(
        c_->Exec("INSERT INTO auth_passkeys (credential_id, user_id, public_key, algorithm) VALUES ($1, "
                 "$2, '\\x00', -7)",
                 db::Params(db::Bytea{id}, u.user_id))
            .ok());
    return crypto::Base64UrlEncode(id);
  }
  void AddSessionAndFamily(const User& u, const std::string& family) {
    ASSERT_TRUE(
        c_->Exec("INSERT INTO auth_sessions (session_hash, user_id, auth_time, expires_at) VALUES ($1, "
                 "$2, $3, $4)",
                 db::Params("s-" + family, u.user_id, kFactorsNow, kFactorsNow + 3600))
            .ok());
    ASSERT_TRUE(c_->Exec("INSERT INTO auth_refresh_families (family, client_id, org, subject, expires_at) "
                         "VALUES ($1, 'cli', 'acme', $2, $3)",
                         db::Params(family, u.subject, kFactorsNow + 3600))
                    .ok());
  }
  int64_t Count(const std::string& sql, const std::string& arg) {
    auto rows = c_->Exec(sql, db::Params(arg));
    EXPECT_TRUE(rows.ok()) << rows.status().message();
    return *rows->Int64(0, 0);
  }

  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> c_;
};

TEST_F(FactorsTest, ListsEveryKind) {
  User u = MakeUser("ann@example.com", true);
  std::string pk = AddPasskey(u, 'a');
  ASSERT_TRUE(c_->Exec("INSERT INTO auth_totp (user_id, sealed, confirmed) VALUES ($1, '\\x00', true)",
                       db::Params(u.user_id))
                  .ok());
  ASSERT_TRUE(c_->Exec("INSERT INTO auth_sso_links (identity, user_id) VALUES ('https://idp|ann', $1)",
                       db::Params(u.user_id))
                  .ok());
  auto factors = ListFactors(*c_, u.user_id);
  ASSERT_TRUE(factors.ok()) << factors.status().message();
  ASSERT_EQ(factors->size(), 4u);
  EXPECT_EQ((*factors)[0].kind, FactorKind::kPassword);
  EXPECT_EQ((*factors)[1].kind, FactorKind::kTotp);
  EXPECT_TRUE((*factors)[1].confirmed);
  EXPECT_EQ((*factors)[2].kind, FactorKind::kPasskey);
  EXPECT_EQ((*factors)[2].id, pk);
  EXPECT_EQ((*factors)[2].algorithm, -7);
  EXPECT_FALSE((*factors)[2].last_used_at.has_value());
  EXPECT_EQ((*factors)[3].kind, FactorKind::kSso);
  EXPECT_EQ((*factors)[3].id, "https://idp|ann");
  EXPECT_EQ(ListFactors(*c_, "usr_nope").status().code(), Code::kNotFound);
}

TEST_F(FactorsTest, RemovingAPasskeyEndsSessionsAndRevokesFamilies) {
  User u = MakeUser("ann@example.com", false);
  std::string lost = AddPasskey(u, 'a');
  std::string kept = AddPasskey(u, 'b');
  AddSessionAndFamily(u, "fam-1");
  AddSessionAndFamily(u, "fam-2");
  User other = MakeUser("bob@example.com", true);
  AddSessionAndFamily(other, "fam-bob");

  auto r = RemoveFactor(*c_, {u.user_id, FactorKind::kPasskey, lost, false, "admin-token:ops", "phone lost"},
                        kFactorsNow, kFactorsNow + 660);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->sessions_ended, 2);
  EXPECT_EQ(r->refresh_families_revoked, 2);
  EXPECT_FALSE(r->was_last);
  auto factors = ListFactors(*c_, u.user_id);
  ASSERT_EQ(factors->size(), 1u);
  EXPECT_EQ((*factors)[0].id, kept);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_revocations WHERE kind = 'sid' AND id LIKE $1", "fam-%"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_refresh_families WHERE revoked AND family = $1", "fam-bob"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_sessions WHERE user_id = $1", other.user_id), 1);

  auto events = ListFactorEvents(*c_, u.user_id, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  const FactorEvent& e = (*events)[0];
  EXPECT_EQ(e.seq, r->event);
  EXPECT_EQ(e.factor, "passkey");
  EXPECT_EQ(e.factor_id, lost);
  EXPECT_EQ(e.actor, "admin-token:ops");
  EXPECT_EQ(e.reason, "phone lost");
  EXPECT_EQ(e.at, kFactorsNow);
  EXPECT_EQ(e.sessions_ended, 2);
  EXPECT_EQ(e.refresh_families_revoked, 2);

  // Gone is gone; another user's passkey is not this user's; a malformed id is refused.
  EXPECT_EQ(
      RemoveFactor(*c_, {u.user_id, FactorKind::kPasskey, lost}, kFactorsNow, kFactorsNow).status().code(),
      Code::kNotFound);
  std::string bobs = AddPasskey(other, 'c');
  EXPECT_EQ(
      RemoveFactor(*c_, {u.user_id, FactorKind::kPasskey, bobs}, kFactorsNow, kFactorsNow).status().code(),
      Code::kNotFound);
  EXPECT_EQ(RemoveFactor(*c_, {u.user_id, FactorKind::kPasskey, "not base64url!"}, kFactorsNow, kFactorsNow)
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(RemoveFactor(*c_, {"usr_nope", FactorKind::kTotp}, kFactorsNow, kFactorsNow).status().code(),
            Code::kNotFound);
}

TEST_F(FactorsTest, TheLastWayToSignInNeedsForce) {
  User u = MakeUser("ann@example.com", false);
  std::string only = AddPasskey(u, 'a');
  AddSessionAndFamily(u, "fam-1");
  auto refused = RemoveFactor(*c_, {u.user_id, FactorKind::kPasskey, only}, kFactorsNow, kFactorsNow + 660);
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  // Nothing changed: the passkey, the session and the family are there, no event.
  EXPECT_EQ(ListFactors(*c_, u.user_id)->size(), 1u);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_sessions WHERE user_id = $1", u.user_id), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_revocations WHERE id = $1", "fam-1"), 0);
  EXPECT_TRUE(ListFactorEvents(*c_, u.user_id, 10)->empty());

  auto forced = RemoveFactor(*c_, {u.user_id, FactorKind::kPasskey, only, true, "admin", "offboarding"},
                             kFactorsNow, kFactorsNow + 660);
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_TRUE(forced->was_last);
  EXPECT_TRUE(ListFactors(*c_, u.user_id)->empty());
  EXPECT_TRUE((*ListFactorEvents(*c_, u.user_id, 10))[0].forced);
}

TEST_F(FactorsTest, TotpGoesAnyTimeThePasswordOnlyWithAnotherWay) {
  User u = MakeUser("ann@example.com", true);
  ASSERT_TRUE(c_->Exec("INSERT INTO auth_totp (user_id, sealed, confirmed) VALUES ($1, '\\x00', true)",
                       db::Params(u.user_id))
                  .ok());
  // The password is the only way in (TOTP only follows it).
  EXPECT_EQ(RemoveFactor(*c_, {u.user_id, FactorKind::kPassword}, kFactorsNow, kFactorsNow).status().code(),
            Code::kFailedPrecondition);
  ASSERT_TRUE(RemoveFactor(*c_, {u.user_id, FactorKind::kTotp}, kFactorsNow, kFactorsNow).ok());
  EXPECT_EQ(RemoveFactor(*c_, {u.user_id, FactorKind::kTotp}, kFactorsNow, kFactorsNow).status().code(),
            Code::kNotFound);
  // With a passkey beside it the password can go; the user has no password afterwards.
  AddPasskey(u, 'a');
  ASSERT_TRUE(RemoveFactor(*c_, {u.user_id, FactorKind::kPassword}, kFactorsNow, kFactorsNow).ok());
  EXPECT_TRUE(GetUser(*c_, u.user_id)->password_hash.empty());
  EXPECT_EQ(RemoveFactor(*c_, {u.user_id, FactorKind::kPassword}, kFactorsNow, kFactorsNow).status().code(),
            Code::kNotFound);
  EXPECT_EQ(ListFactorEvents(*c_, u.user_id, 10)->size(), 2u);
  EXPECT_EQ(ParseRemovableFactorKind("sso").status().code(), Code::kInvalidArgument);
}

// Password and the only passkey removed at once from two connections: the row lock makes the second
// decision see the first, so exactly one succeeds and the user keeps a way in.
TEST_F(FactorsTest, RacingRemovalsLeaveAWayIn) {
  for (int round = 0; round < 5; ++round) {
    User u = MakeUser("user" + std::to_string(round) + "@example.com", true);
    std::string pk = AddPasskey(u, static_cast<char>('a' + round));
    Status results[2];
    std::thread a([&] {
      auto c = db::Connection::Connect(db_->conninfo());
      results[0] =
          c.ok() ? RemoveFactor(**c, {u.user_id, FactorKind::kPassword}, kFactorsNow, kFactorsNow).status()
                 : c.status();
    });
    std::thread b([&] {
      auto c = db::Connection::Connect(db_->conninfo());
      results[1] =
          c.ok() ? RemoveFactor(**c, {u.user_id, FactorKind::kPasskey, pk}, kFactorsNow, kFactorsNow).status()
                 : c.status();
    });
    a.join();
    b.join();
    int ok = results[0].ok() + results[1].ok();
    EXPECT_EQ(ok, 1) << results[0].message() << " / " << results[1].message();
    for (const Status& s : results) {
      if (!s.ok()) {
        EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.message();
      }
    }
    EXPECT_EQ(ListFactors(*c_, u.user_id)->size(), 1u);
  }
}

}  // namespace
}  // namespace govern::auth_service
