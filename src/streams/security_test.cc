// Security units: PLAIN (Argon2id and salted SHA-256 users), OAUTHBEARER with real Govern tokens (good,
// expired, wrong audience, bad signature, unknown key), the SASL handlers and the session gate, ACL
// matching, and DLP screening (block; flag re-encodes uncompressed and compressed batches so that they
// parse and carry the header).
#include "streams/security.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "crypto/password.h"
#include "dlp/rule_set.h"
#include "storage/crc32c.h"
#include "streams/batch.h"
#include "streams/reloader.h"
#include "streams/wire.h"
#include "tokens/checker.h"
#include "tokens/issuer.h"

namespace govern::streams {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kIss = "https://auth.govern.test";

std::string Plain(std::string_view user, std::string_view pass, std::string_view authz = "") {
  std::string m(authz);
  m.push_back('\0');
  m.append(user);
  m.push_back('\0');
  m.append(pass);
  return m;
}

std::string Bearer(std::string_view token) {
  return "n,,\x01"
         "auth=Bearer " +
         std::string(token) + "\x01\x01";
}

TEST(SaslParse, Plain) {
  std::string msg = Plain("alice", "pw");  // the parsed views point into it
  auto m = ParsePlain(msg);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->authcid, "alice");
  EXPECT_EQ(m->password, "pw");
  EXPECT_FALSE(ParsePlain("alice").ok());
  EXPECT_FALSE(ParsePlain(std::string("\0\0pw", 4)).ok());  // empty user
  EXPECT_FALSE(ParsePlain(std::string("a\0b\0c\0d", 7)).ok());
}

TEST(SaslParse, OAuthBearer) {
  auto m = ParseOAuthBearer(
      "n,a=alice,\x01host=x\x01"
      "auth=Bearer tok.en.sig\x01\x01");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->authzid, "alice");
  EXPECT_EQ(m->token, "tok.en.sig");
  EXPECT_TRUE(ParseOAuthBearer(Bearer("t")).ok());
  EXPECT_FALSE(ParseOAuthBearer("y,,\x01"
                                "auth=Bearer t\x01\x01")
                   .ok());  // channel binding
  EXPECT_FALSE(ParseOAuthBearer("n,,\x01"
                                "auth=Basic t\x01\x01")
                   .ok());
  EXPECT_FALSE(ParseOAuthBearer("n,,\x01"
                                "auth=Bearer t\x01")
                   .ok());  // unterminated
  EXPECT_FALSE(ParseOAuthBearer("n,,\x01"
                                "host=x\x01\x01")
                   .ok());  // no auth
  EXPECT_FALSE(ParseOAuthBearer("n,,\x01"
                                "auth=Bearer \x01\x01")
                   .ok());
  EXPECT_FALSE(ParseOAuthBearer("").ok());
}

TEST(UserStore, ArgonAndSha256) {
  auto argon = crypto::HashPassword("s3cret", {.memory_kib = 64, .passes = 1, .lanes = 1});
  ASSERT_TRUE(argon.ok());
  auto sha = HashPasswordSha256("hunter2");
  ASSERT_TRUE(sha.ok());
  auto users = UserStore::Parse("# users\nalice " + *argon + "\nbob " + *sha + "\n");
  ASSERT_TRUE(users.ok()) << users.status().ToString();
  EXPECT_TRUE((*users)->Verify("alice", "s3cret").ok());
  EXPECT_EQ((*users)->Verify("alice", "wrong").code(), Code::kUnauthenticated);
  EXPECT_TRUE((*users)->Verify("bob", "hunter2").ok());
  EXPECT_EQ((*users)->Verify("bob", "hunter3").code(), Code::kUnauthenticated);
  EXPECT_EQ((*users)->Verify("carol", "hunter2").code(), Code::kUnauthenticated);
  EXPECT_FALSE(UserStore::Parse("alice plaintext\n").ok());
  EXPECT_FALSE(UserStore::Parse("alice sha256:zz:00\n").ok());
  EXPECT_FALSE(UserStore::Parse("a " + *sha + "\na " + *sha + "\n").ok());
}

// A PLAIN session stays valid for a user whose name holds a space (the credential is "<name> <hash>",
// split at the last space), and ends when that user's password changes.
TEST(Authenticator, PlainStillValidForANameWithASpace) {
  auto sha = HashPasswordSha256("pw");
  ASSERT_TRUE(sha.ok());
  std::map<std::string, std::string, std::less<>> users{{"bob smith", *sha}};
  Authenticator auth({}, std::make_shared<const UserStore>(users), nullptr);
  using namespace std::string_literals;
  auto r = auth.Authenticate("PLAIN", "\0bob smith\0pw"s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->principal, "User:bob smith");
  EXPECT_TRUE(auth.StillValid("PLAIN", r->credential).ok());
  users["bob smith"] = *HashPasswordSha256("pw2");
  auth.SetUsers(std::make_shared<const UserStore>(users));
  EXPECT_EQ(auth.StillValid("PLAIN", r->credential).code(), Code::kUnauthenticated);
}

struct TokenFixture {
  TokenFixture()
      : ring(std::make_shared<tokens::KeyRing>(*tokens::KeyRing::Create(tokens::Alg::kES256, {}, NowS()))),
        issuer(tokens::IssuerOptions{std::string(kIss)}, ring, nullptr, clock),
        checker(std::make_shared<tokens::Checker>(
            tokens::CheckerOptions{std::string(kIss)},
            std::make_shared<tokens::KeySet>(ring->VerifyKeysAt(NowS())), clock)) {}
  int64_t NowS() const { return clock.UnixMicros() / 1'000'000; }
  std::string Issue(std::string sub, std::string aud = "govern:streams", std::chrono::seconds life = 300s) {
    tokens::Claims c;
    c.sub = std::move(sub);
    c.aud = {std::move(aud)};
    c.org = "org-1";
    return *issuer.IssueAccess(std::move(c), life);
  }
  ManualClock clock;
  std::shared_ptr<tokens::KeyRing> ring;
  tokens::Issuer issuer;
  std::shared_ptr<tokens::Checker> checker;
};

TEST(Authenticator, OAuthBearer) {
  TokenFixture f;
  Authenticator auth({}, nullptr, f.checker, f.clock);
  EXPECT_EQ(auth.mechanisms(), std::vector<std::string>{"OAUTHBEARER"});
  auto good = auth.Authenticate("OAUTHBEARER", Bearer(f.Issue("alice")));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->principal, "User:alice");
  EXPECT_EQ(good->session_end_ms, (f.NowS() + 300) * 1000);

  auto aud = auth.Authenticate("OAUTHBEARER", Bearer(f.Issue("alice", "govern:telemetry")));
  EXPECT_EQ(aud.status().code(), Code::kUnauthenticated);

  std::string t = f.Issue("alice");
  std::string bad = t;
  bad[bad.size() - 10] = bad[bad.size() - 10] == 'A' ? 'B' : 'A';
  auto sig = auth.Authenticate("OAUTHBEARER", Bearer(bad));
  EXPECT_EQ(sig.status().code(), Code::kUnauthenticated);

  // A token from a key the broker does not trust.
  TokenFixture other;
  EXPECT_FALSE(auth.Authenticate("OAUTHBEARER", Bearer(other.Issue("alice"))).ok());

  std::string short_lived = f.Issue("alice", "govern:streams", 60s);
  f.clock.Advance(120s);
  auto expired = auth.Authenticate("OAUTHBEARER", Bearer(short_lived));
  EXPECT_EQ(expired.status().code(), Code::kUnauthenticated);
  EXPECT_NE(expired.status().message().find("expired"), std::string::npos) << expired.status().message();

  EXPECT_EQ(auth.Authenticate("PLAIN", Plain("a", "b")).status().code(), Code::kUnimplemented);
  // authzid must be the subject.
  EXPECT_FALSE(auth.Authenticate("OAUTHBEARER",
                                 "n,a=bob,\x01"
                                 "auth=Bearer " +
                                     f.Issue("alice") + "\x01\x01")
                   .ok());
}

// The SASL handlers on a session: handshake, authenticate, the gate before and after, expiry, and a
// re-authentication that tries to change the principal.
struct Handlers {
  std::string Handshake(Session& s, std::string_view mech, int16_t v = 1) {
    Writer w;
    w.String(mech);
    auto body = security->SaslHandshake(s, v, w.str());
    EXPECT_TRUE(body.has_value());
    return body.value_or("");
  }
  // Returns (error, session lifetime) of a SaslAuthenticate v1.
  std::pair<int16_t, int64_t> Auth(Session& s, std::string_view bytes) {
    Writer w;
    w.NullableBytes(bytes);
    auto body = security->SaslAuthenticate(s, 1, w.str());
    if (!body) return {-100, 0};
    Reader r(*body);
    int16_t e = r.Int16();
    r.NullableString();
    r.NullableBytes();
    int64_t life = r.Int64();
    EXPECT_TRUE(r.ok() && r.remaining() == 0);
    return {e, life};
  }
  std::shared_ptr<Security> security;
};

TEST(Security, HandshakeAuthenticateGateAndExpiry) {
  TokenFixture f;
  auto users = UserStore::Parse("bob " + *HashPasswordSha256("pw") + "\n");
  Handlers h;
  h.security =
      std::make_shared<Security>(SecurityOptions{.require_sasl = true,
                                                 .authenticator = std::make_shared<Authenticator>(
                                                     AuthenticatorOptions{}, *users, f.checker, f.clock)},
                                 f.clock);
  Session s;
  EXPECT_TRUE(h.security->Admit(s, 18));  // ApiVersions
  EXPECT_FALSE(h.security->Admit(s, 0));  // Produce before authentication
  // Unknown mechanism: error 33 and the list.
  {
    std::string body = h.Handshake(s, "SCRAM-SHA-256");
    Reader r(body);
    EXPECT_EQ(r.Int16(), kErrUnsupportedSaslMechanism);
    EXPECT_EQ(r.ArrayCount(), 2);
    EXPECT_EQ(r.String(), "PLAIN");
    EXPECT_EQ(r.String(), "OAUTHBEARER");
  }
  // Authenticate without handshake: illegal state.
  EXPECT_EQ(h.Auth(s, Plain("bob", "pw")).first, kErrIllegalSaslState);
  h.Handshake(s, "PLAIN");
  EXPECT_EQ(h.Auth(s, Plain("bob", "nope")).first, kErrSaslAuthenticationFailed);
  EXPECT_FALSE(h.security->Admit(s, 0));
  h.Handshake(s, "PLAIN");
  EXPECT_EQ(h.Auth(s, Plain("bob", "pw")), (std::pair<int16_t, int64_t>{0, 0}));
  EXPECT_TRUE(h.security->Admit(s, 0));
  EXPECT_EQ(s.principal(), "User:bob");

  // OAUTHBEARER: lifetime reported, expiry closes, re-authentication restores.
  Session t;
  h.Handshake(t, "OAUTHBEARER");
  auto [e, life] = h.Auth(t, Bearer(f.Issue("carol", "govern:streams", 60s)));
  EXPECT_EQ(e, 0);
  EXPECT_EQ(life, 60'000);
  EXPECT_TRUE(h.security->Admit(t, 1));
  f.clock.Advance(61s);
  EXPECT_FALSE(h.security->Admit(t, 1));
  EXPECT_TRUE(h.security->Admit(t, kApiSaslHandshake));
  h.Handshake(t, "OAUTHBEARER");
  EXPECT_EQ(h.Auth(t, Bearer(f.Issue("carol"))).first, 0);
  EXPECT_TRUE(h.security->Admit(t, 1));
  // Re-authenticating as someone else closes the connection.
  h.Handshake(t, "OAUTHBEARER");
  EXPECT_EQ(h.Auth(t, Bearer(f.Issue("mallory"))).first, -100);
  EXPECT_EQ(t.principal(), "User:carol");

  // Handshake v0 (raw SASL frames) is refused with ILLEGAL_SASL_STATE.
  Session u;
  EXPECT_EQ(Reader(h.Handshake(u, "PLAIN", 0)).Int16(), kErrIllegalSaslState);
  // SaslAuthenticate v2 (flexible) answers in the compact format.
  h.Handshake(u, "PLAIN");
  Writer w;
  std::string p = Plain("bob", "pw");
  w.UVarint(static_cast<uint32_t>(p.size() + 1));
  w.Raw(p);
  w.EmptyTaggedFields();
  auto body = h.security->SaslAuthenticate(u, 2, w.str());
  ASSERT_TRUE(body);
  Reader r(*body);
  EXPECT_EQ(r.Int16(), 0);
  EXPECT_FALSE(r.CompactNullableString().has_value());
  EXPECT_EQ(r.CompactNullableString(), std::optional<std::string_view>(""));
  EXPECT_EQ(r.Int64(), 0);
  r.SkipTaggedFields();
  EXPECT_TRUE(r.ok() && r.remaining() == 0);
}

// Sessions already open end when the trust state changes under them: a revoked token (new revocation
// list), a PLAIN user whose password changed or who was removed (SetUsers). Others keep going.
TEST(Security, RevocationEndsOpenSessions) {
  TokenFixture f;
  auto users =
      UserStore::Parse("bob " + *HashPasswordSha256("pw") + "\ndave " + *HashPasswordSha256("pw") + "\n");
  ASSERT_TRUE(users.ok());
  auto auth = std::make_shared<Authenticator>(AuthenticatorOptions{}, *users, f.checker, f.clock);
  Handlers h;
  h.security =
      std::make_shared<Security>(SecurityOptions{.require_sasl = true, .authenticator = auth}, f.clock);
  std::string ta = f.Issue("alice"), tc = f.Issue("carol");
  Session a, c, bob, dave;
  h.Handshake(a, "OAUTHBEARER");
  ASSERT_EQ(h.Auth(a, Bearer(ta)).first, 0);
  h.Handshake(c, "OAUTHBEARER");
  ASSERT_EQ(h.Auth(c, Bearer(tc)).first, 0);
  h.Handshake(bob, "PLAIN");
  ASSERT_EQ(h.Auth(bob, Plain("bob", "pw")).first, 0);
  h.Handshake(dave, "PLAIN");
  ASSERT_EQ(h.Auth(dave, Plain("dave", "pw")).first, 0);
  for (Session* s : {&a, &c, &bob, &dave}) EXPECT_TRUE(h.security->Admit(*s, 0));

  auto claims = f.checker->Check(ta, "govern:streams");
  ASSERT_TRUE(claims.ok());
  ASSERT_FALSE((*claims)->jti.empty());
  f.checker->SetRevocations(std::make_shared<tokens::RevocationList>(
      1, tokens::RevocationList::Entries{{(*claims)->jti, (*claims)->exp}},
      tokens::RevocationList::Entries{}));
  EXPECT_FALSE(h.security->Admit(a, 0));  // the next request closes the connection
  EXPECT_FALSE(h.security->Admit(a, 1));
  EXPECT_TRUE(h.security->Admit(c, 0));
  EXPECT_TRUE(h.security->Admit(bob, 0));
  EXPECT_TRUE(h.security->Admit(a, kApiSaslHandshake));
  // Re-authenticating with the revoked token: SASL_AUTHENTICATION_FAILED, and the session stays ended.
  h.Handshake(a, "OAUTHBEARER");
  EXPECT_EQ(h.Auth(a, Bearer(ta)).first, kErrSaslAuthenticationFailed);
  EXPECT_FALSE(h.security->Admit(a, 0));
  // A fresh connection with it: refused at authentication.
  Session a2;
  h.Handshake(a2, "OAUTHBEARER");
  EXPECT_EQ(h.Auth(a2, Bearer(ta)).first, kErrSaslAuthenticationFailed);
  // A new token for the same subject re-authenticates the connection (KIP-368) and it serves again.
  h.Handshake(a, "OAUTHBEARER");
  EXPECT_EQ(h.Auth(a, Bearer(f.Issue("alice"))).first, 0);
  EXPECT_TRUE(h.security->Admit(a, 0));

  // PLAIN: bob's password changes, dave is unchanged.
  std::string dave_line = "dave " + std::string((*users)->HashOf("dave")) + "\n";
  auto changed = UserStore::Parse("bob " + *HashPasswordSha256("pw2") + "\n" + dave_line);
  ASSERT_TRUE(changed.ok());
  auth->SetUsers(*changed);
  EXPECT_FALSE(h.security->Admit(bob, 0));
  EXPECT_TRUE(h.security->Admit(dave, 0));
  EXPECT_TRUE(h.security->Admit(c, 0));
  Session bob2;
  h.Handshake(bob2, "PLAIN");
  EXPECT_EQ(h.Auth(bob2, Plain("bob", "pw")).first, kErrSaslAuthenticationFailed);
  h.Handshake(bob2, "PLAIN");
  EXPECT_EQ(h.Auth(bob2, Plain("bob", "pw2")).first, 0);
  // dave removed.
  auth->SetUsers(*UserStore::Parse("bob " + std::string((*changed)->HashOf("bob")) + "\n"));
  EXPECT_FALSE(h.security->Admit(dave, 0));
  EXPECT_TRUE(h.security->Admit(bob2, 0));
}

// The ACL and users files are re-read when they change: whole-file swaps (rename over), an in-place
// edit, a broken edit keeping the old rules, and a changed users file ending a PLAIN session.
TEST(SecurityReloader, AclAndUsersFiles) {
  char tmpl[] = "/tmp/streams-reload-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto write = [&](const std::string& name, const std::string& text) {
    // Beside, then renamed over: a poll sees the old file or the new one.
    std::string tmp = dir + "/." + name + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, dir + "/" + name);
  };
  std::string acl = dir + "/acl", users_file = dir + "/users";
  write("acl", "allow User:alice read topic:orders\n");
  write("users", "bob " + *HashPasswordSha256("pw") + "\n");
  auto users = UserStore::LoadFile(users_file);
  ASSERT_TRUE(users.ok());
  auto auth = std::make_shared<Authenticator>(AuthenticatorOptions{}, *users, nullptr);
  auto security = std::make_shared<Security>(
      SecurityOptions{.authenticator = auth, .authorizer = *Authorizer::LoadFile(acl, {"User:root"})});
  SecurityReloader reloader({.acl_file = acl, .super_users = {"User:root"}, .users_file = users_file},
                            security, auth);
  ASSERT_TRUE(reloader.CheckOnce().ok());
  EXPECT_EQ(reloader.reloads(), 2u);  // the first check loads both
  ASSERT_TRUE(reloader.CheckOnce().ok());
  EXPECT_EQ(reloader.reloads(), 2u);  // unchanged: nothing read

  Session alice;
  Handlers h;
  h.security = security;
  h.Handshake(alice, "PLAIN");
  Session bob;
  h.Handshake(bob, "PLAIN");
  ASSERT_EQ(h.Auth(bob, Plain("bob", "pw")).first, 0);
  EXPECT_FALSE(security->Allowed(bob, AclOp::kRead, ResourceType::kTopic, "anything"));
  // Without authentication the session is User:ANONYMOUS: the ACL file names alice only.
  EXPECT_FALSE(security->Allowed(alice, AclOp::kRead, ResourceType::kTopic, "orders"));

  write("acl", "allow User:bob read topic:orders\nallow User:bob write topic:orders\n");
  ASSERT_TRUE(reloader.CheckOnce().ok());
  EXPECT_TRUE(security->Allowed(bob, AclOp::kWrite, ResourceType::kTopic, "orders"));
  EXPECT_FALSE(security->Allowed(bob, AclOp::kWrite, ResourceType::kTopic, "payments"));

  // A broken edit: refused, the rules in place stay; fixing it applies the fix.
  write("acl", "allow User:bob read topic:orders\nallow bob everything\n");
  EXPECT_FALSE(reloader.CheckOnce().ok());
  EXPECT_TRUE(security->Allowed(bob, AclOp::kWrite, ResourceType::kTopic, "orders"));
  EXPECT_TRUE(reloader.CheckOnce().ok());  // unchanged since: not re-read, no new error
  { std::ofstream(acl, std::ios::trunc) << "deny User:bob write topic:orders\nallow User:bob all topic:*\n"; }
  ASSERT_TRUE(reloader.CheckOnce().ok());  // an edit in place (same inode, other size)
  EXPECT_FALSE(security->Allowed(bob, AclOp::kWrite, ResourceType::kTopic, "orders"));
  EXPECT_TRUE(security->Allowed(bob, AclOp::kWrite, ResourceType::kTopic, "payments"));
  // Super users survive reloads.
  EXPECT_TRUE(security->authorizer()->Allowed("User:root", AclOp::kAll, ResourceType::kCluster, ""));

  // Users: bob's password changes; his open session ends on its next request; the new one works.
  EXPECT_TRUE(security->Admit(bob, 0));
  write("users", "bob " + *HashPasswordSha256("pw2") + "\n");
  ASSERT_TRUE(reloader.CheckOnce().ok());
  EXPECT_FALSE(security->Admit(bob, 0));
  Session bob2;
  h.Handshake(bob2, "PLAIN");
  EXPECT_EQ(h.Auth(bob2, Plain("bob", "pw")).first, kErrSaslAuthenticationFailed);
  h.Handshake(bob2, "PLAIN");
  EXPECT_EQ(h.Auth(bob2, Plain("bob", "pw2")).first, 0);
  // A removed file keeps what is in place.
  std::filesystem::remove(users_file);
  EXPECT_FALSE(reloader.CheckOnce().ok());
  EXPECT_TRUE(security->Admit(bob2, 0));

  // The polling thread picks up a change by itself.
  SecurityReloader polling({.acl_file = acl, .period = std::chrono::milliseconds(10)}, security, nullptr);
  polling.Start();
  write("acl", "allow User:bob read topic:polled\n");
  for (int i = 0; i < 500 && !security->Allowed(bob2, AclOp::kRead, ResourceType::kTopic, "polled"); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(security->Allowed(bob2, AclOp::kRead, ResourceType::kTopic, "polled"));
  polling.Stop();
  std::filesystem::remove_all(dir);
}

TEST(Authorizer, Matching) {
  auto a = Authorizer::Parse(R"(
    allow User:alice write topic:orders
    allow User:alice read topic:logs-*     # prefix
    allow User:* describe topic:public
    deny  User:bob read topic:*
    allow User:bob all topic:*
    allow User:alice read group:app-*
    allow User:ops create cluster:*
  )",
                             {"User:root"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const Authorizer& z = **a;
  using enum AclOp;
  using T = ResourceType;
  EXPECT_TRUE(z.Allowed("User:alice", kWrite, T::kTopic, "orders"));
  EXPECT_TRUE(z.Allowed("User:alice", kDescribe, T::kTopic, "orders"));  // implied by write
  EXPECT_FALSE(z.Allowed("User:alice", kRead, T::kTopic, "orders"));
  EXPECT_FALSE(z.Allowed("User:alice", kWrite, T::kTopic, "orders2"));
  EXPECT_TRUE(z.Allowed("User:alice", kRead, T::kTopic, "logs-app"));
  EXPECT_FALSE(z.Allowed("User:alice", kRead, T::kTopic, "logs"));
  EXPECT_TRUE(z.Allowed("User:carol", kDescribe, T::kTopic, "public"));
  EXPECT_FALSE(z.Allowed("User:carol", kRead, T::kTopic, "public"));
  EXPECT_FALSE(z.Allowed("User:bob", kRead, T::kTopic, "orders"));  // deny wins over all
  EXPECT_TRUE(z.Allowed("User:bob", kWrite, T::kTopic, "orders"));
  EXPECT_TRUE(z.Allowed("User:bob", kDescribe, T::kTopic, "orders"));  // deny read does not deny describe
  EXPECT_TRUE(z.Allowed("User:alice", kRead, T::kGroup, "app-1"));
  EXPECT_FALSE(z.Allowed("User:alice", kRead, T::kTopic, "app-1"));  // types do not mix
  EXPECT_FALSE(z.Allowed("User:alice", kRead, T::kGroup, "other"));
  EXPECT_TRUE(z.Allowed("User:ops", kCreate, T::kCluster, ""));
  EXPECT_FALSE(z.Allowed("User:alice", kCreate, T::kCluster, ""));
  EXPECT_TRUE(z.Allowed("User:alice", kIdempotentWrite, T::kCluster, ""));  // from write on a topic
  EXPECT_FALSE(z.Allowed("User:carol", kIdempotentWrite, T::kCluster, ""));
  EXPECT_TRUE(z.Allowed("User:root", kDelete, T::kTopic, "orders"));  // super user
  EXPECT_FALSE(z.Allowed("User:ANONYMOUS", kWrite, T::kTopic, "orders"));

  EXPECT_FALSE(Authorizer::Parse("allow alice write topic:x").ok());
  EXPECT_FALSE(Authorizer::Parse("allow User:a fly topic:x").ok());
  EXPECT_FALSE(Authorizer::Parse("allow User:a read queue:x").ok());
  EXPECT_FALSE(Authorizer::Parse("allow User:a read topic:a*b").ok());
  EXPECT_FALSE(Authorizer::Parse("permit User:a read topic:x").ok());
}

// Reads the records of a batch (decompressing) as (value, headers).
std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> Records(
    std::string_view b) {
  BatchHeader h = PeekHeader(b);
  std::string plain;
  EXPECT_TRUE(DecompressRecords(h.codec(), b.substr(kBatchHeaderSize), 1 << 20, &plain).ok());
  Reader r(plain);
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> out;
  for (int i = 0; i < h.records_count; i++) {
    r.Varint();
    r.Int8();
    r.Varlong();
    EXPECT_EQ(r.Varint(), i);
    int32_t kl = r.Varint();
    if (kl > 0) r.Bytes(static_cast<size_t>(kl));
    int32_t vl = r.Varint();
    std::string value(r.Bytes(static_cast<size_t>(std::max(vl, 0))));
    int32_t n = r.Varint();
    std::vector<std::pair<std::string, std::string>> headers;
    for (int j = 0; j < n; j++) {
      std::string k(r.Bytes(static_cast<size_t>(r.Varint())));
      std::string v(r.Bytes(static_cast<size_t>(r.Varint())));
      headers.emplace_back(k, v);
    }
    out.emplace_back(value, headers);
  }
  EXPECT_TRUE(r.ok() && r.remaining() == 0);
  return out;
}

// The batch with its records section compressed by `codec`, length and CRC fixed.
std::string Compress(const std::string& batch, int codec) {
  std::string out;
  EXPECT_TRUE(CompressRecords(codec, std::string_view(batch).substr(kBatchHeaderSize), &out).ok());
  std::string b = batch.substr(0, kBatchHeaderSize) + out;
  b[22] = static_cast<char>((b[22] & ~7) | codec);
  StoreBe32(b.data() + kBatchLengthOffset, static_cast<uint32_t>(b.size() - kBatchLogOverhead));
  StoreBe32(b.data() + 17, storage::Crc32c(b.data() + kBatchCrcStart, b.size() - kBatchCrcStart));
  EXPECT_TRUE(ParseBatch(b).ok());
  return b;
}

// A batch of records each with one header (key "trace", value `header_values[i]`) and value "v<i>".
std::string BatchWithHeaders(const std::vector<std::string>& header_values) {
  auto varlong = [](std::string& out, int64_t v) {
    uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
    while (z >= 0x80) {
      out.push_back(static_cast<char>((z & 0x7f) | 0x80));
      z >>= 7;
    }
    out.push_back(static_cast<char>(z));
  };
  std::string records;
  for (size_t i = 0; i < header_values.size(); i++) {
    std::string rec(1, '\0');
    varlong(rec, 0);
    varlong(rec, static_cast<int64_t>(i));
    varlong(rec, -1);
    std::string value = "v" + std::to_string(i);
    varlong(rec, static_cast<int64_t>(value.size()));
    rec += value;
    varlong(rec, 1);
    varlong(rec, 5);
    rec += "trace";
    varlong(rec, static_cast<int64_t>(header_values[i].size()));
    rec += header_values[i];
    varlong(records, static_cast<int64_t>(rec.size()));
    records += rec;
  }
  // The header of a batch of as many records (BuildBatch), then our records section.
  std::vector<std::string> placeholders(header_values.size(), "x");
  std::string b = BuildBatch(placeholders, 1000).substr(0, kBatchHeaderSize) + records;
  StoreBe32(b.data() + kBatchLengthOffset, static_cast<uint32_t>(b.size() - kBatchLogOverhead));
  StoreBe32(b.data() + 17, storage::Crc32c(b.data() + kBatchCrcStart, b.size() - kBatchCrcStart));
  EXPECT_TRUE(ParseBatch(b).ok());
  return b;
}

TEST(Screener, HeaderValues) {
  auto rules = dlp::RuleSet::Compile({});
  ASSERT_TRUE(rules.ok());
  Screener s({.default_mode = ScreenMode::kBlock}, *rules);
  std::string clean = BatchWithHeaders({"span-1", "span-2"});
  std::string dirty = BatchWithHeaders({"span-1", "user=alice@example.com"});
  auto v = s.Screen(clean, ScreenMode::kBlock);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->blocked);
  for (int codec : {0, 4}) {
    SCOPED_TRACE(codec);
    std::string in = codec == 0 ? dirty : Compress(dirty, codec);
    v = s.Screen(in, ScreenMode::kBlock);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_TRUE(v->blocked);
    EXPECT_EQ(v->detectors, "email");
    // Flag: the record with the finding in a header keeps its header and gets ours after it.
    v = s.Screen(in, ScreenMode::kFlag);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(v->rewritten.has_value());
    ASSERT_TRUE(ParseBatch(*v->rewritten).ok());
    auto recs = Records(*v->rewritten);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[0].second.size(), 1u);
    ASSERT_EQ(recs[1].second.size(), 2u);
    EXPECT_EQ(recs[1].first, "v1");
    EXPECT_EQ(recs[1].second[0], (std::pair<std::string, std::string>{"trace", "user=alice@example.com"}));
    EXPECT_EQ(recs[1].second[1], (std::pair<std::string, std::string>{"govern-dlp", "email"}));
  }
  v = s.Screen(clean, ScreenMode::kFlag);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->rewritten.has_value());
}

TEST(Screener, BlockAndFlag) {
  auto rules = dlp::RuleSet::Compile({});
  ASSERT_TRUE(rules.ok());
  auto modes = ParseTopicModes("pii=block, flagged-*=flag, flagged-off=off");
  ASSERT_TRUE(modes.ok());
  Screener s({.default_mode = ScreenMode::kOff, .topics = *modes}, *rules);
  EXPECT_EQ(s.ModeFor("pii"), ScreenMode::kBlock);
  EXPECT_EQ(s.ModeFor("pii2"), ScreenMode::kOff);
  EXPECT_EQ(s.ModeFor("flagged-x"), ScreenMode::kFlag);
  EXPECT_EQ(s.ModeFor("flagged-off"), ScreenMode::kOff);
  EXPECT_FALSE(ParseTopicModes("x=maybe").ok());

  std::string clean = BuildBatch({"hello", "world"}, 1000);
  std::string dirty = BuildBatch({"hello", "mail alice@example.com now", "plain"}, 1000);
  auto v = s.Screen(clean, ScreenMode::kBlock);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->blocked);
  v = s.Screen(dirty, ScreenMode::kBlock);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->blocked);
  EXPECT_EQ(v->detectors, "email");

  v = s.Screen(clean, ScreenMode::kFlag);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->rewritten.has_value());
  for (int codec : {0, 1, 2, 3, 4}) {
    SCOPED_TRACE(codec);
    std::string in = codec == 0 ? dirty : Compress(dirty, codec);
    v = s.Screen(in, ScreenMode::kFlag);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(v->rewritten.has_value());
    auto h = ParseBatch(*v->rewritten);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->codec(), codec);
    EXPECT_EQ(h->records_count, 3);
    auto recs = Records(*v->rewritten);
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(recs[0].first, "hello");
    EXPECT_TRUE(recs[0].second.empty());
    EXPECT_EQ(recs[1].first, "mail alice@example.com now");
    ASSERT_EQ(recs[1].second.size(), 1u);
    EXPECT_EQ(recs[1].second[0], (std::pair<std::string, std::string>{"govern-dlp", "email"}));
    EXPECT_TRUE(recs[2].second.empty());
    // Block mode sees through compression too.
    auto b = s.Screen(in, ScreenMode::kBlock);
    ASSERT_TRUE(b.ok());
    EXPECT_TRUE(b->blocked);
  }
  // A compressed batch whose records do not decompress is refused (fails closed).
  std::string broken = Compress(dirty, 4);
  broken[kBatchHeaderSize + 5] ^= 0x55;
  StoreBe32(broken.data() + 17,
            storage::Crc32c(broken.data() + kBatchCrcStart, broken.size() - kBatchCrcStart));
  EXPECT_EQ(s.Screen(broken, ScreenMode::kBlock).status().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace govern::streams
