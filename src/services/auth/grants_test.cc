// The OAuth grants end to end on a real PostgreSQL: client authentication, code + PKCE, client
// credentials, refresh rotation with reuse detection, token exchange, introspection, revocation.
#include "services/auth/grants.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "db/testing.h"
#include "services/auth/schema.h"
#include "services/auth/sso.h"

namespace govern::auth_service {
namespace {

using json = nlohmann::json;
constexpr char kVerifier[] = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
constexpr char kRedirect[] = "http://127.0.0.1:9999/cb";

class GrantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_.emplace(std::move(*db));
    auto conn = db::Connection::Connect(db_->conninfo());
    ASSERT_TRUE(conn.ok());
    c_ = std::move(*conn);
    ASSERT_TRUE(db::Migrator("auth", Migrations()).Apply(*c_).ok());
    ASSERT_TRUE(CreateOrg(*c_, "acme", "").ok());
    ASSERT_TRUE(CreateOrg(*c_, "other", "").ok());
    user_ = *CreateUser(*c_, "acme", "ann@example.com", "Ann", "");
    app_ = *CreateClient(*c_, "acme", "web", ClientKind::kApp, false, {"openid", "events:read"}, {kRedirect});
    agent_ = *CreateClient(*c_, "acme", "bot", ClientKind::kAgent, true, {"events:read", "events:write"}, {});
    stranger_ = *CreateClient(*c_, "other", "bot", ClientKind::kAgent, true, {"events:read"}, {});

    int64_t now = clock_.UnixMicros() / 1'000'000;
    tokens::RotationPolicy policy;
    access_ =
        std::make_shared<const tokens::KeyRing>(*tokens::KeyRing::Create(tokens::Alg::kHS256, policy, now));
    id_ = std::make_shared<const tokens::KeyRing>(*tokens::KeyRing::Create(tokens::Alg::kES256, policy, now));
    issuer_ =
        std::make_unique<tokens::Issuer>(tokens::IssuerOptions{"https://auth.test"}, access_, id_, clock_);
    tokens::KeySet access_keys = access_->VerifyKeysAt(now), id_keys = id_->VerifyKeysAt(now);
    std::vector<tokens::VerifyKey> keys = access_keys.keys();
    for (const auto& k : id_keys.keys()) keys.push_back(k);
    checker_ = std::make_unique<tokens::Checker>(tokens::CheckerOptions{.issuer = "https://auth.test"},
                                                 std::make_shared<const tokens::KeySet>(keys), clock_);
    ProviderOptions o;
    o.issuer = "https://auth.test";
    external_ =
        std::make_unique<tokens::Issuer>(tokens::IssuerOptions{"https://auth.test"}, id_, id_, clock_);
    provider_ = std::make_unique<Provider>(o, *issuer_, *checker_, clock_, external_.get());
  }
  void TearDown() override {
    c_.reset();
    db_.reset();
  }

  static std::string Basic(const NewClient& cl) {
    return "Basic " + crypto::Base64Encode(cl.client.client_id + ":" + cl.secret);
  }
  json Ok(const Reply& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  static std::string Error(const Reply& r) {
    auto j = json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "(" + r.body + ")";
  }
  std::string Code(std::string scope = "openid events:read") {
    CodeGrant g{app_.client.client_id, user_.user_id, kRedirect, scope, "n-0S6", S256(kVerifier), 1};
    return *provider_->NewCode(*c_, g);
  }
  Reply RedeemCode(const std::string& code, std::string verifier = kVerifier,
                   std::string redirect = kRedirect) {
    return provider_->Token(*c_,
                            "grant_type=authorization_code&code=" + code +
                                "&redirect_uri=" + FormEncode(redirect) + "&code_verifier=" + verifier +
                                "&client_id=" + app_.client.client_id,
                            std::nullopt);
  }

  ManualClock clock_;
  std::optional<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Connection> c_;
  User user_;
  NewClient app_, agent_, stranger_;
  std::shared_ptr<const tokens::KeyRing> access_, id_;
  std::unique_ptr<tokens::Issuer> issuer_, external_;
  std::unique_ptr<tokens::Checker> checker_;
  std::unique_ptr<Provider> provider_;
};

TEST_F(GrantsTest, ErrorsAreRfc6749Json) {
  Reply r = provider_->Token(*c_, "grant_type=password&username=a&password=b", std::nullopt);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Error(r), "unsupported_grant_type");
  r = provider_->Token(*c_, "grant_type=client_credentials", std::nullopt);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Error(r), "invalid_client");
  EXPECT_TRUE(r.basic_challenge);
  r = provider_->Token(*c_, "grant_type=client_credentials",
                       "Basic " + crypto::Base64Encode(agent_.client.client_id + ":wrong"));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Error(r), "invalid_client");
  r = provider_->Token(*c_, "grant_type=client_credentials&client_secret=x", Basic(agent_));
  EXPECT_EQ(Error(r), "invalid_request");
  r = provider_->Token(*c_, "grant_type=a&grant_type=b", std::nullopt);
  EXPECT_EQ(Error(r), "invalid_request");
  r = provider_->Token(*c_, "", std::nullopt);
  EXPECT_EQ(Error(r), "invalid_request");
}

TEST_F(GrantsTest, ClientCredentialsForAgents) {
  json t = Ok(provider_->Token(*c_, "grant_type=client_credentials&scope=events%3Awrite", Basic(agent_)));
  EXPECT_EQ(t["token_type"], "Bearer");
  EXPECT_EQ(t["scope"], "events:write");
  auto claims = checker_->Check(t["access_token"].get<std::string>(), "govern");
  ASSERT_TRUE(claims.ok()) << claims.status().message();
  EXPECT_EQ((*claims)->sub, agent_.client.client_id);
  EXPECT_EQ((*claims)->org, "acme");
  // client_secret_post works too.
  Ok(provider_->Token(*c_,
                      "grant_type=client_credentials&client_id=" + agent_.client.client_id +
                          "&client_secret=" + agent_.secret,
                      std::nullopt));
  Reply bad = provider_->Token(*c_, "grant_type=client_credentials&scope=admin", Basic(agent_));
  EXPECT_EQ(Error(bad), "invalid_scope");
  // A public app cannot use it.
  Reply app =
      provider_->Token(*c_, "grant_type=client_credentials&client_id=" + app_.client.client_id, std::nullopt);
  EXPECT_EQ(Error(app), "unauthorized_client");
  // A disabled agent is refused.
  ASSERT_TRUE(SetClientDisabled(*c_, agent_.client.client_id, true).ok());
  EXPECT_EQ(Error(provider_->Token(*c_, "grant_type=client_credentials", Basic(agent_))), "invalid_client");
}

TEST_F(GrantsTest, OutsideAudiencesGetPublicKeyTokens) {
  json own = Ok(provider_->Token(*c_, "grant_type=client_credentials", Basic(agent_)));
  json outside = Ok(provider_->Token(*c_, "grant_type=client_credentials&audience=https%3A%2F%2Fapi.example",
                                     Basic(agent_)));
  auto header = [](const std::string& t) {
    return json::parse(crypto::AsString(*crypto::Base64UrlDecode(t.substr(0, t.find('.')))))["alg"]
        .get<std::string>();
  };
  EXPECT_EQ(header(own["access_token"]), "HS256");
  EXPECT_EQ(header(outside["access_token"]), "ES256");
  EXPECT_TRUE(checker_->Check(outside["access_token"].get<std::string>(), "https://api.example").ok());
  EXPECT_EQ(tokens::RejectOf(checker_->Check(outside["access_token"].get<std::string>(), "govern").status()),
            tokens::Reject::kWrongAudience);
}

// The auth service's admin and account APIs take only published-ring tokens (the internal ring file is
// handed to other services): tokens with scope auth:admin and person sessions are signed with it.
TEST_F(GrantsTest, AdminScopeAndPersonSessionsGetPublishedRingTokens) {
  auto ops = *CreateClient(*c_, "acme", "ops", ClientKind::kAgent, true, {"auth:admin", "events:read"}, {});
  auto header = [](const std::string& t) {
    return json::parse(crypto::AsString(*crypto::Base64UrlDecode(t.substr(0, t.find('.')))))["alg"]
        .get<std::string>();
  };
  json admin = Ok(provider_->Token(*c_, "grant_type=client_credentials&scope=auth%3Aadmin", Basic(ops)));
  EXPECT_EQ(header(admin["access_token"]), "ES256");
  EXPECT_TRUE(checker_->Check(admin["access_token"].get<std::string>(), "govern").ok());
  json plain = Ok(provider_->Token(*c_, "grant_type=client_credentials&scope=events%3Aread", Basic(ops)));
  EXPECT_EQ(header(plain["access_token"]), "HS256");
  json session = Ok(RedeemCode(Code()));
  EXPECT_EQ(header(session["access_token"]), "ES256");
  EXPECT_TRUE(checker_->Check(session["access_token"].get<std::string>(), "govern").ok());
}

TEST_F(GrantsTest, AuthorizationCodeWithPkce) {
  json t = Ok(RedeemCode(Code()));
  EXPECT_TRUE(t.contains("id_token"));
  EXPECT_TRUE(t["refresh_token"].get<std::string>().starts_with("gvr_"));
  auto claims = checker_->Check(t["access_token"].get<std::string>(), "govern");
  ASSERT_TRUE(claims.ok());
  EXPECT_EQ((*claims)->sub, user_.subject);
  EXPECT_FALSE((*claims)->sid.empty());
}

TEST_F(GrantsTest, CodeRefusals) {
  EXPECT_EQ(Error(RedeemCode(Code(), std::string(43, 'x'))), "invalid_grant");  // wrong verifier
  EXPECT_EQ(Error(RedeemCode(Code(), "short")), "invalid_request");             // malformed verifier
  EXPECT_EQ(Error(RedeemCode(Code(), kVerifier, "http://127.0.0.1:9999/cb/")), "invalid_grant");  // redirect
  std::string code = Code();
  Ok(RedeemCode(code));
  EXPECT_EQ(Error(RedeemCode(code)), "invalid_grant");  // used twice
  std::string late = Code();
  clock_.Advance(std::chrono::seconds(61));
  EXPECT_EQ(Error(RedeemCode(late)), "invalid_grant");  // expired
  Reply missing = provider_->Token(*c_,
                                   "grant_type=authorization_code&code=" + Code() + "&redirect_uri=" +
                                       FormEncode(kRedirect) + "&client_id=" + app_.client.client_id,
                                   std::nullopt);
  EXPECT_EQ(Error(missing), "invalid_request");
}

TEST_F(GrantsTest, RefreshRotatesAndReuseRevokesTheFamily) {
  json first = Ok(RedeemCode(Code()));
  std::string r1 = first["refresh_token"];
  auto refresh = [&](const std::string& token) {
    return provider_->Token(
        *c_, "grant_type=refresh_token&refresh_token=" + token + "&client_id=" + app_.client.client_id,
        std::nullopt);
  };
  json second = Ok(refresh(r1));
  std::string r2 = second["refresh_token"];
  EXPECT_NE(r1, r2);
  auto a2 = checker_->Check(second["access_token"].get<std::string>(), "govern");
  ASSERT_TRUE(a2.ok());
  // r1 again: reuse. The family is revoked: r2 stops working and the list names the family.
  EXPECT_EQ(Error(refresh(r1)), "invalid_grant");
  EXPECT_EQ(Error(refresh(r2)), "invalid_grant");
  auto list = provider_->RevocationListJson(*c_);
  ASSERT_TRUE(list.ok());
  auto parsed = tokens::RevocationList::FromJson(*list);
  ASSERT_TRUE(parsed.ok()) << *list;
  EXPECT_TRUE(parsed->sids().contains((*a2)->sid));
  EXPECT_GT(parsed->version(), 0u);
  // Another client cannot use this client's refresh token.
  json third = Ok(RedeemCode(Code()));
  Reply other = provider_->Token(
      *c_, "grant_type=refresh_token&refresh_token=" + third["refresh_token"].get<std::string>(),
      Basic(agent_));
  EXPECT_EQ(Error(other), "invalid_grant");
}

TEST_F(GrantsTest, TokenExchangeNamesBothParties) {
  json user_tokens = Ok(RedeemCode(Code()));
  json agent_token = Ok(provider_->Token(*c_, "grant_type=client_credentials", Basic(agent_)));
  std::string body = "grant_type=" + FormEncode("urn:ietf:params:oauth:grant-type:token-exchange") +
                     "&subject_token=" + user_tokens["access_token"].get<std::string>() +
                     "&subject_token_type=" + FormEncode("urn:ietf:params:oauth:token-type:access_token") +
                     "&actor_token=" + agent_token["access_token"].get<std::string>() +
                     "&actor_token_type=" + FormEncode("urn:ietf:params:oauth:token-type:access_token") +
                     "&scope=events%3Aread";
  json t = Ok(provider_->Token(*c_, body, Basic(agent_)));
  auto claims = checker_->Check(t["access_token"].get<std::string>(), "govern");
  ASSERT_TRUE(claims.ok());
  EXPECT_EQ((*claims)->sub, user_.subject);
  ASSERT_EQ((*claims)->actors.size(), 1u);
  EXPECT_EQ((*claims)->actors[0].sub, agent_.client.client_id);
  EXPECT_EQ((*claims)->scope, std::vector<std::string>{"events:read"});
  // A scope the user's token lacks is refused.
  std::string wider = body.substr(0, body.rfind("&scope=")) + "&scope=events%3Awrite";
  EXPECT_EQ(Error(provider_->Token(*c_, wider, Basic(agent_))), "invalid_scope");
  // Another organisation's agent cannot act for this user.
  json st = Ok(provider_->Token(*c_, "grant_type=client_credentials", Basic(stranger_)));
  std::string theirs = "grant_type=" + FormEncode("urn:ietf:params:oauth:grant-type:token-exchange") +
                       "&subject_token=" + user_tokens["access_token"].get<std::string>() +
                       "&subject_token_type=" + FormEncode("urn:ietf:params:oauth:token-type:access_token");
  EXPECT_EQ(Error(provider_->Token(*c_, theirs, Basic(stranger_))), "invalid_grant");
  // Presenting the agent's token as actor from another client is refused.
  std::string stolen = theirs + "&actor_token=" + agent_token["access_token"].get<std::string>() +
                       "&actor_token_type=" + FormEncode("urn:ietf:params:oauth:token-type:access_token");
  EXPECT_EQ(Error(provider_->Token(*c_, stolen, Basic(stranger_))), "invalid_grant");
  // A tampered subject token is refused.
  std::string tampered = user_tokens["access_token"];
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  std::string bad = "grant_type=" + FormEncode("urn:ietf:params:oauth:grant-type:token-exchange") +
                    "&subject_token=" + tampered +
                    "&subject_token_type=" + FormEncode("urn:ietf:params:oauth:token-type:access_token");
  EXPECT_EQ(Error(provider_->Token(*c_, bad, Basic(agent_))), "invalid_grant");
}

// Two revocations committing in the other order than they were inserted: a list read between the two
// commits must not carry a version that a later list, holding the first revocation too, repeats
// (services pull only newer versions, so they would never see it). With the version max(seq) the
// list read after B committed and before A did was version seq(B) without A, and stayed seq(B).
TEST_F(GrantsTest, RevocationListVersionFollowsCommitOrder) {
  auto list_now = [&]() {
    auto text = provider_->RevocationListJson(*c_);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    auto list = tokens::RevocationList::FromJson(text.ok() ? *text : std::string("{}"));
    EXPECT_TRUE(list.ok());
    return list.ok() ? *list : tokens::RevocationList();
  };
  const int64_t exp = clock_.UnixMicros() / 1'000'000 + 3600;
  auto a = db::Connection::Connect(db_->conninfo());
  auto b = db::Connection::Connect(db_->conninfo());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Exec("BEGIN").ok());
  ASSERT_TRUE((*a)->Exec("INSERT INTO auth_revocations (kind, id, expires_at) VALUES ('sid', 'fam-a', $1)",
                         db::Params(exp))
                  .ok());
  const int a_pid = (*a)->BackendPid();
  std::atomic<bool> b_done{false};
  std::thread other([&] {
    EXPECT_TRUE((*b)->Exec("INSERT INTO auth_revocations (kind, id, expires_at) VALUES ('sid', 'fam-b', $1)",
                           db::Params(exp))
                    .ok());
    b_done = true;
  });
  // Until B has committed, or waits for A.
  for (int i = 0; i < 400 && !b_done; ++i) {
    auto r = c_->Exec("SELECT count(*) FROM pg_locks WHERE NOT granted AND $1 = ANY (pg_blocking_pids(pid))",
                      db::Params(a_pid));
    ASSERT_TRUE(r.ok());
    if (*r->Int64(0, 0) > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  tokens::RevocationList between = list_now();
  ASSERT_TRUE((*a)->Exec("COMMIT").ok());
  other.join();
  tokens::RevocationList after = list_now();
  EXPECT_TRUE(after.sids().count("fam-a") && after.sids().count("fam-b"));
  EXPECT_FALSE(between.sids().count("fam-a"));
  EXPECT_GT(after.version(), between.version()) << "the same version named two different lists";
}

TEST_F(GrantsTest, IntrospectionAndRevocation) {
  json t = Ok(provider_->Token(*c_, "grant_type=client_credentials", Basic(agent_)));
  std::string at = t["access_token"];
  json info = Ok(provider_->Introspect(*c_, "token=" + at, Basic(agent_)));
  EXPECT_EQ(info["active"], true);
  EXPECT_EQ(info["client_id"], agent_.client.client_id);
  // Other organisations learn nothing; public clients may not introspect.
  EXPECT_EQ(Ok(provider_->Introspect(*c_, "token=" + at, Basic(stranger_)))["active"], false);
  EXPECT_EQ(
      provider_->Introspect(*c_, "token=" + at + "&client_id=" + app_.client.client_id, std::nullopt).status,
      401);
  EXPECT_EQ(Ok(provider_->Introspect(*c_, "token=garbage", Basic(agent_)))["active"], false);

  Ok(provider_->Revoke(*c_, "token=" + at, Basic(agent_)));
  auto list = tokens::RevocationList::FromJson(*provider_->RevocationListJson(*c_));
  ASSERT_TRUE(list.ok());
  checker_->SetRevocations(std::make_shared<const tokens::RevocationList>(*list));
  EXPECT_EQ(tokens::RejectOf(checker_->Check(at, "govern").status()), tokens::Reject::kRevoked);
  EXPECT_EQ(Ok(provider_->Introspect(*c_, "token=" + at, Basic(agent_)))["active"], false);

  // Refresh tokens: revoking one ends its family.
  json u = Ok(RedeemCode(Code()));
  std::string rt = u["refresh_token"];
  EXPECT_EQ(Ok(provider_->Introspect(*c_, "token=" + rt, Basic(agent_)))["active"], true);
  Ok(provider_->Revoke(*c_, "token=" + rt + "&client_id=" + app_.client.client_id, std::nullopt));
  EXPECT_EQ(Ok(provider_->Introspect(*c_, "token=" + rt, Basic(agent_)))["active"], false);
  Reply again = provider_->Token(
      *c_, "grant_type=refresh_token&refresh_token=" + rt + "&client_id=" + app_.client.client_id,
      std::nullopt);
  EXPECT_EQ(Error(again), "invalid_grant");
}

TEST_F(GrantsTest, UserInfoNeedsOpenidScope) {
  json t = Ok(RedeemCode(Code("openid email events:read")));
  Reply r = provider_->UserInfo(*c_, t["access_token"].get<std::string>());
  json info = Ok(r);
  EXPECT_EQ(info["sub"], user_.subject);
  EXPECT_EQ(info["email"], "ann@example.com");
  json cc = Ok(provider_->Token(*c_, "grant_type=client_credentials", Basic(agent_)));
  EXPECT_EQ(provider_->UserInfo(*c_, cc["access_token"].get<std::string>()).status, 401);
}

TEST_F(GrantsTest, OutsideIdTokensAreCheckedFully) {
  int64_t now = clock_.UnixMicros() / 1'000'000;
  std::string jwks = *id_->JwksAt(now);
  auto id_token = [&](std::string nonce, std::string aud) {
    tokens::Claims c;
    c.sub = "outside-7";
    c.aud = {aud};
    c.nonce = nonce;
    return *issuer_->IssueId(c, std::chrono::minutes(5), "");
  };
  std::string good = id_token("n-1", "cli_x");
  auto ok = VerifyOutsideIdToken(good, jwks, "https://auth.test", "cli_x", "n-1", now);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->sub, "outside-7");
  EXPECT_FALSE(VerifyOutsideIdToken(good, jwks, "https://other.test", "cli_x", "n-1", now).ok());
  EXPECT_FALSE(VerifyOutsideIdToken(good, jwks, "https://auth.test", "cli_y", "n-1", now).ok());
  EXPECT_FALSE(VerifyOutsideIdToken(good, jwks, "https://auth.test", "cli_x", "n-2", now).ok());
  EXPECT_FALSE(VerifyOutsideIdToken(id_token("", "cli_x"), jwks, "https://auth.test", "cli_x", "", now).ok());
  EXPECT_FALSE(VerifyOutsideIdToken(good, jwks, "https://auth.test", "cli_x", "n-1", now + 3600).ok());
  std::string tampered = good;
  tampered[tampered.find('.') + 3] ^= 1;
  EXPECT_FALSE(VerifyOutsideIdToken(tampered, jwks, "https://auth.test", "cli_x", "n-1", now).ok());
  std::string none = crypto::Base64UrlEncode(std::string(R"({"alg":"none"})")) + good.substr(good.find('.'));
  none = none.substr(0, none.rfind('.') + 1);
  EXPECT_FALSE(VerifyOutsideIdToken(none, jwks, "https://auth.test", "cli_x", "n-1", now).ok());
  // A token from the HS256 ring (a key the provider never published) is refused.
  tokens::Claims c;
  c.sub = "x";
  c.aud = {"cli_x"};
  c.nonce = "n-1";
  std::string mac = *issuer_->IssueAccess(c, std::chrono::minutes(5));
  EXPECT_FALSE(VerifyOutsideIdToken(mac, jwks, "https://auth.test", "cli_x", "n-1", now).ok());
}

TEST_F(GrantsTest, SsoUsersAreLinkedOrCreated) {
  const OutsideEmail verified_new{"new@example.com", true};
  auto created = MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-1", verified_new);
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_EQ(created->email, "new@example.com");
  // Linked: the email (even a changed, unverified one) no longer matters.
  EXPECT_EQ(MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-1", {"changed@example.com", false})->user_id,
            created->user_id);
  auto matched = MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-2", {"ANN@example.com", true});
  ASSERT_TRUE(matched.ok());
  EXPECT_EQ(matched->user_id, user_.user_id);
  EXPECT_EQ(matched->subject, user_.subject);  // the user's own subject never changes
  EXPECT_EQ(MatchOrCreateSsoUser(*c_, "other", "https://idp", "s-1", {"x@example.com", true}).status().code(),
            Code::kPermissionDenied);
  EXPECT_EQ(MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-3", {"", true}).status().code(),
            Code::kUnauthenticated);
}

// An outside identity whose email the provider does not vouch for must not pick an existing account (a
// takeover: register ann@ unverified at the provider, sign on as Ann) nor create one, unless the
// organisation turned the requirement off; the provider's setting round-trips with the default on.
TEST_F(GrantsTest, SsoNeedsAVerifiedEmailToMatchOrCreate) {
  auto refused = MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-9", {"ann@example.com", false});
  EXPECT_EQ(refused.status().code(), Code::kUnauthenticated);
  EXPECT_NE(refused.status().message().find("verified"), std::string::npos);
  auto none = MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-10", {"fresh@example.com", false});
  EXPECT_EQ(none.status().code(), Code::kUnauthenticated);
  EXPECT_FALSE(FindUserByEmail(*c_, "acme", "fresh@example.com")->has_value());  // nothing created
  auto linked = c_->Exec(
      "SELECT count(*) FROM auth_sso_links WHERE identity IN ('https://idp|s-9', "
      "'https://idp|s-10')");
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(linked->Text(0, 0), "0");  // nor linked
  // The organisation's choice: off, the provider is trusted with addresses.
  auto allowed = MatchOrCreateSsoUser(*c_, "acme", "https://idp", "s-9", {"ann@example.com", false},
                                      /*require_verified=*/false);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->user_id, user_.user_id);

  auto key = crypto::Aes256GcmKey::Generate();
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(SetSsoProvider(*c_, *key, {"acme", "https://idp.example", "cid", "secret"}).ok());
  auto p = GetSsoProvider(*c_, *key, "acme");
  ASSERT_TRUE(p.ok() && p->has_value());
  EXPECT_TRUE((*p)->require_email_verified);  // the default
  ASSERT_TRUE(SetSsoProvider(*c_, *key, {"acme", "https://idp.example", "cid", "secret", false}).ok());
  EXPECT_FALSE((*GetSsoProvider(*c_, *key, "acme"))->require_email_verified);
}

}  // namespace
}  // namespace govern::auth_service
