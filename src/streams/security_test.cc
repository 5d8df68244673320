// Security units: PLAIN (Argon2id and salted SHA-256 users), OAUTHBEARER with real Govern tokens (good,
// expired, wrong audience, bad signature, unknown key), the SASL handlers and the session gate, ACL
// matching, and DLP screening (block; flag re-encodes uncompressed and compressed batches so that they
// parse and carry the header).
#include "streams/security.h"

#include <gtest/gtest.h>

#include "crypto/password.h"
#include "dlp/rule_set.h"
#include "storage/crc32c.h"
#include "streams/batch.h"
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
