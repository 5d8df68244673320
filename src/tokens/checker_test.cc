// Checker: every attack that applies at the token layer is refused with its own reason; the cache
// never lets a token skip the time, audience or revocation checks; rotation keeps the overlap window.
#include "tokens/checker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "crypto/encoding.h"
#include "tokens/issuer.h"

namespace govern::tokens {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr std::string_view kIss = "https://auth.govern.test";
constexpr std::string_view kAud = "govern:telemetry";

int64_t NowS(const Clock& c) { return c.UnixMicros() / 1'000'000; }

Claims UserClaims() {
  Claims c;
  c.sub = "user-1";
  c.org = "org-1";
  c.aud = {std::string(kAud)};
  c.scope = {"events:write", "events:read"};
  c.client_id = "cli";
  return c;
}

struct Fixture {
  explicit Fixture(Alg alg = Alg::kHS256)
      : ring(std::make_shared<KeyRing>(*KeyRing::Create(alg, RotationPolicy{}, NowS(clock)))),
        issuer(IssuerOptions{std::string(kIss)}, ring, nullptr, clock),
        checker(CheckerOptions{std::string(kIss)}, std::make_shared<KeySet>(ring->VerifyKeysAt(NowS(clock))),
                clock) {}

  std::string Issue(Claims c = UserClaims(), seconds lifetime = seconds(300)) {
    auto t = issuer.IssueAccess(std::move(c), lifetime);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : "";
  }
  // Signs arbitrary claims with the ring's current key (for claims Issuer would never produce).
  std::string SignRaw(const Claims& c, std::string_view typ = "at+jwt") {
    auto k = ring->SignerAt(NowS(clock));
    return *SignCompact((*k)->key, ClaimsToJson(c), typ);
  }

  ManualClock clock;
  std::shared_ptr<KeyRing> ring;
  Issuer issuer;
  Checker checker;
};

Reject ReasonOf(const Result<ClaimsPtr>& r) {
  EXPECT_FALSE(r.ok());
  return RejectOf(r.status());
}

TEST(Checker, AcceptsAndReadsClaims) {
  for (Alg alg : {Alg::kHS256, Alg::kEdDSA, Alg::kES256}) {
    Fixture f(alg);
    Claims in = UserClaims();
    in.actors = {{"agent-9", "agent-client"}};
    std::string token = f.Issue(in);
    auto c = f.checker.Check(token, kAud);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ((*c)->sub, "user-1");
    EXPECT_EQ((*c)->org, "org-1");
    EXPECT_TRUE((*c)->HasScope("events:write"));
    ASSERT_EQ((*c)->actors.size(), 1u);
    EXPECT_EQ((*c)->actors[0].sub, "agent-9");
    EXPECT_EQ((*c)->iss, kIss);
    EXPECT_EQ((*c)->exp, NowS(f.clock) + 300);
    EXPECT_FALSE((*c)->jti.empty());
    // The second check is answered from the cache, with the same claims.
    EXPECT_EQ(f.checker.CachedForTesting(), 1u);
    auto again = f.checker.Check(token, kAud);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->get(), c->get());
  }
}

TEST(Checker, ExpiredAndNotYetValid) {
  Fixture f;
  std::string token = f.Issue(UserClaims(), seconds(60));
  ASSERT_TRUE(f.checker.Check(token, kAud).ok());  // cached now
  f.clock.Advance(seconds(60 + 29));               // within the 30 s skew
  EXPECT_TRUE(f.checker.Check(token, kAud).ok());
  f.clock.Advance(seconds(1));
  EXPECT_EQ(ReasonOf(f.checker.Check(token, kAud)), Reject::kExpired);
  EXPECT_EQ(f.checker.CachedForTesting(), 0u);                          // dropped from the cache
  EXPECT_EQ(ReasonOf(f.checker.Check(token, kAud)), Reject::kExpired);  // cold path says the same

  Claims c = UserClaims();
  c.iss = kIss;
  c.exp = NowS(f.clock) + 600;
  c.nbf = NowS(f.clock) + 100;
  std::string early = f.SignRaw(c);
  EXPECT_EQ(ReasonOf(f.checker.Check(early, kAud)), Reject::kNotYetValid);
  f.clock.Advance(seconds(71));  // 100 - 30 s skew
  EXPECT_TRUE(f.checker.Check(early, kAud).ok());
}

TEST(Checker, WrongAudienceEvenWhenCached) {
  Fixture f;
  std::string token = f.Issue();
  ASSERT_TRUE(f.checker.Check(token, kAud).ok());
  auto r = f.checker.Check(token, "govern:audit");
  EXPECT_EQ(ReasonOf(r), Reject::kWrongAudience);
  EXPECT_EQ(r.status().code(), Code::kUnauthenticated);
  Claims multi = UserClaims();
  multi.aud = {"govern:audit", std::string(kAud)};
  EXPECT_TRUE(f.checker.Check(f.Issue(multi), "govern:audit").ok());
}

TEST(Checker, TamperedSignatureAndPayload) {
  for (Alg alg : {Alg::kHS256, Alg::kEdDSA, Alg::kES256}) {
    Fixture f(alg);
    std::string token = f.Issue();
    size_t dot = token.rfind('.');
    std::string bad_sig = token;
    bad_sig[dot + 5] = bad_sig[dot + 5] == 'A' ? 'B' : 'A';
    EXPECT_EQ(ReasonOf(f.checker.Check(bad_sig, kAud)), Reject::kBadSignature) << AlgName(alg);
    // Another subject spliced into the payload, signature kept.
    Claims evil = UserClaims();
    evil.sub = "admin";
    evil.iss = kIss;
    evil.exp = NowS(f.clock) + 300;
    std::string first_dot = token.substr(0, token.find('.') + 1);
    std::string spliced = first_dot + crypto::Base64UrlEncode(ClaimsToJson(evil)) + token.substr(dot);
    EXPECT_EQ(ReasonOf(f.checker.Check(spliced, kAud)), Reject::kBadSignature) << AlgName(alg);
    // Signature stripped.
    EXPECT_EQ(ReasonOf(f.checker.Check(token.substr(0, dot + 1), kAud)), Reject::kMalformed);
    EXPECT_EQ(f.checker.CachedForTesting(), 0u);  // failures are never cached
  }
}

TEST(Checker, AlgNoneIsMalformed) {
  Fixture f;
  Claims c = UserClaims();
  c.iss = kIss;
  c.exp = NowS(f.clock) + 300;
  std::string payload = crypto::Base64UrlEncode(ClaimsToJson(c));
  for (std::string h :
       {std::string(R"({"alg":"none"})"), R"({"alg":"none","kid":")" + f.ring->keys()[0].key.kid() + "\"}"}) {
    std::string head = crypto::Base64UrlEncode(h);
    EXPECT_EQ(ReasonOf(f.checker.Check(head + "." + payload + ".", kAud)), Reject::kMalformed);
    EXPECT_EQ(ReasonOf(f.checker.Check(head + "." + payload + ".AAAA", kAud)), Reject::kMalformed);
  }
}

TEST(Checker, AlgorithmConfusion) {
  // 1. The classic: the verifier trusts an Ed25519 public key; the attacker MACs a token with the public
  //    key bytes as the HS256 secret and names the Ed25519 key's kid. The key decides: refused.
  Fixture f(Alg::kEdDSA);
  const SigningKey& real = f.ring->keys()[0].key;
  auto jwk = ToJwk(real.verify_key());
  auto pub = crypto::Base64UrlDecode(jwk->x);
  std::vector<uint8_t> secret = *pub;
  secret.resize(32);
  auto forged_key = SigningKey::Hs256(real.kid(), secret);
  ASSERT_TRUE(forged_key.ok());
  Claims c = UserClaims();
  c.iss = kIss;
  c.exp = NowS(f.clock) + 300;
  std::string forged = *SignCompact(*forged_key, ClaimsToJson(c), "at+jwt");
  EXPECT_EQ(ReasonOf(f.checker.Check(forged, kAud)), Reject::kUnknownKey);
  // Same with the JWK text itself as the secret.
  std::string jwk_text = jwk->ToJson();
  auto forged2 = SigningKey::Hs256(real.kid(), crypto::AsBytes(jwk_text));
  EXPECT_EQ(ReasonOf(f.checker.Check(*SignCompact(*forged2, ClaimsToJson(c), "at+jwt"), kAud)),
            Reject::kUnknownKey);

  // 2. The other way: a verifier trusting an HS256 key gets an EdDSA token naming the HS key's kid.
  Fixture h(Alg::kHS256);
  auto ed = SigningKey::Generate(Alg::kEdDSA, h.ring->keys()[0].key.kid());
  Claims hc = UserClaims();
  hc.iss = kIss;
  hc.exp = NowS(h.clock) + 300;
  EXPECT_EQ(ReasonOf(h.checker.Check(*SignCompact(*ed, ClaimsToJson(hc), "at+jwt"), kAud)),
            Reject::kUnknownKey);
}

TEST(Checker, UnknownKidWrongIssuerNoExpIdToken) {
  Fixture f;
  Fixture other;  // another ring: its kid is unknown here
  EXPECT_EQ(ReasonOf(f.checker.Check(other.Issue(), kAud)), Reject::kUnknownKey);

  Claims c = UserClaims();
  c.iss = "https://evil.example";
  c.exp = NowS(f.clock) + 300;
  EXPECT_EQ(ReasonOf(f.checker.Check(f.SignRaw(c), kAud)), Reject::kWrongIssuer);

  c.iss = kIss;
  c.exp = 0;
  EXPECT_EQ(ReasonOf(f.checker.Check(f.SignRaw(c), kAud)), Reject::kMalformed);

  c.exp = NowS(f.clock) + 300;
  EXPECT_EQ(ReasonOf(f.checker.Check(f.SignRaw(c, "JWT"), kAud)), Reject::kMalformed);  // an ID token
  EXPECT_TRUE(f.checker.Check(f.SignRaw(c, "at+jwt"), kAud).ok());

  EXPECT_EQ(ReasonOf(f.checker.Check(std::string(kMaxTokenBytes + 1, 'a'), kAud)), Reject::kMalformed);
  EXPECT_EQ(ReasonOf(f.checker.Check("garbage", kAud)), Reject::kMalformed);
}

TEST(Checker, RevocationByJtiAndFamily) {
  Fixture f;
  auto pair = f.issuer.IssuePair(UserClaims(), seconds(300));
  ASSERT_TRUE(pair.ok());
  std::string other = f.Issue();
  auto c = f.checker.Check(pair->access, kAud);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->sid, pair->refresh.family);

  // Revoke the family: every access token of it is refused, even from the cache.
  RevocationList::Entries sids{{pair->refresh.family, NowS(f.clock) + 300}};
  f.checker.SetRevocations(std::make_shared<RevocationList>(2, RevocationList::Entries{}, sids));
  EXPECT_EQ(f.checker.revocation_version(), 2u);
  auto r = f.checker.Check(pair->access, kAud);
  EXPECT_EQ(ReasonOf(r), Reject::kRevoked);
  EXPECT_EQ(Describe(RejectOf(r.status())), "The access token was revoked");
  EXPECT_TRUE(f.checker.Check(other, kAud).ok());

  // By jti, through the JSON form services pull.
  auto other_claims = f.checker.Check(other, kAud);
  RevocationList::Entries jtis{{(*other_claims)->jti, NowS(f.clock) + 300}};
  RevocationList list(3, jtis, sids);
  auto parsed = RevocationList::FromJson(list.ToJson());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->version(), 3u);
  f.checker.SetRevocations(std::make_shared<RevocationList>(std::move(*parsed)));
  EXPECT_EQ(ReasonOf(f.checker.Check(other, kAud)), Reject::kRevoked);

  // Pruning drops entries whose tokens have expired anyway.
  EXPECT_EQ(list.Pruned(NowS(f.clock) + 1000, 30, 4).size(), 0u);
  EXPECT_EQ(list.Pruned(NowS(f.clock), 30, 4).size(), 2u);
  for (std::string_view bad :
       {"[]", R"({"jti":{}})", R"({"version":-1})", R"({"version":1,"jti":{"a":"x"}})"}) {
    EXPECT_FALSE(RevocationList::FromJson(bad).ok()) << bad;
  }
}

TEST(Checker, RotationOverlapAndDrop) {
  const RotationPolicy policy{seconds(1000), seconds(100), seconds(400)};
  ManualClock clock;
  auto now = [&] { return NowS(clock); };
  auto ring = std::make_shared<KeyRing>(*KeyRing::Create(Alg::kHS256, policy, now()));
  Issuer issuer(IssuerOptions{std::string(kIss)}, ring, nullptr, clock);
  Checker checker(CheckerOptions{std::string(kIss)}, std::make_shared<KeySet>(ring->VerifyKeysAt(now())),
                  clock);
  auto refresh = [&] {  // what the auth service and every Govern service do on their timers
    ring = std::make_shared<KeyRing>(*ring->Rotate(policy, now()));
    issuer.SetRings(ring, nullptr);
    checker.SetKeys(std::make_shared<KeySet>(ring->VerifyKeysAt(now())));
  };

  std::string old_token = *issuer.IssueAccess(UserClaims(), seconds(600));
  ASSERT_TRUE(checker.Check(old_token, kAud).ok());
  clock.Advance(seconds(950));  // within publish_ahead of the retirement: the next key is published
  refresh();
  EXPECT_EQ(ring->keys().size(), 2u);
  clock.Advance(seconds(60));  // the next key signs now
  refresh();
  std::string new_token = *issuer.IssueAccess(UserClaims(), seconds(600));
  EXPECT_NE(ParseCompact(new_token)->header.kid, ParseCompact(old_token)->header.kid);
  EXPECT_TRUE(checker.Check(new_token, kAud).ok());

  // A token signed by the retired key shortly before the switch still verifies during keep_after.
  ManualClock c2;
  auto now2 = [&] { return NowS(c2); };
  auto r2 = std::make_shared<KeyRing>(*KeyRing::Create(Alg::kEdDSA, policy, now2()));
  Issuer i2(IssuerOptions{std::string(kIss)}, r2, nullptr, c2);
  Checker k2(CheckerOptions{std::string(kIss)}, nullptr, c2);
  c2.Advance(seconds(950));
  r2 = std::make_shared<KeyRing>(*r2->Rotate(policy, now2()));
  i2.SetRings(r2, nullptr);
  k2.SetKeys(std::make_shared<KeySet>(*KeySet::FromJwks(*r2->JwksAt(now2()))));  // outside parties: the JWKS
  // Signed by key 1 at t=950, valid until 1950: longer than keep_after, to show the drop wins.
  std::string before = *i2.IssueAccess(UserClaims(), seconds(1000));
  c2.Advance(seconds(100));  // t=1050: key 2 signs
  r2 = std::make_shared<KeyRing>(*r2->Rotate(policy, now2()));
  k2.SetKeys(std::make_shared<KeySet>(*KeySet::FromJwks(*r2->JwksAt(now2()))));
  i2.SetRings(r2, nullptr);
  std::string after = *i2.IssueAccess(UserClaims(), seconds(600));
  EXPECT_TRUE(k2.Check(before, kAud).ok());
  EXPECT_TRUE(k2.Check(after, kAud).ok());
  EXPECT_NE(ParseCompact(before)->header.kid, ParseCompact(after)->header.kid);
  // t=1400: key 1 is dropped (retired at 1000, kept 400) and leaves the published set.
  c2.Advance(seconds(350));
  r2 = std::make_shared<KeyRing>(*r2->Rotate(policy, now2()));
  EXPECT_EQ(r2->keys().size(), 1u);
  k2.SetKeys(std::make_shared<KeySet>(*KeySet::FromJwks(*r2->JwksAt(now2()))));
  EXPECT_EQ(ReasonOf(k2.Check(before, kAud)), Reject::kUnknownKey);
  EXPECT_TRUE(k2.Check(after, kAud).ok());
}

TEST(Checker, KeySwapInvalidatesCachedTokens) {
  Fixture f;
  std::string token = f.Issue(UserClaims(), seconds(3600));
  ASSERT_TRUE(f.checker.Check(token, kAud).ok());
  ASSERT_EQ(f.checker.CachedForTesting(), 1u);
  f.checker.SetKeys(std::make_shared<KeySet>());  // the key was withdrawn (compromise)
  EXPECT_EQ(ReasonOf(f.checker.Check(token, kAud)), Reject::kUnknownKey);
  f.checker.SetKeys(std::make_shared<KeySet>(f.ring->VerifyKeysAt(NowS(f.clock))));
  EXPECT_TRUE(f.checker.Check(token, kAud).ok());
}

TEST(Checker, CacheStaysBounded) {
  ManualClock clock;
  auto ring = std::make_shared<KeyRing>(*KeyRing::Create(Alg::kHS256, RotationPolicy{}, NowS(clock)));
  Issuer issuer(IssuerOptions{std::string(kIss)}, ring, nullptr, clock);
  CheckerOptions o{std::string(kIss)};
  o.cache_entries = 64;
  Checker checker(o, std::make_shared<KeySet>(ring->VerifyKeysAt(NowS(clock))), clock);
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(checker.Check(*issuer.IssueAccess(UserClaims(), seconds(60)), kAud).ok());
  }
  EXPECT_LE(checker.CachedForTesting(), 64u);
}

TEST(Checker, ConcurrentChecksWhileSwapping) {
  Fixture f;
  std::vector<std::string> tokens;
  for (int i = 0; i < 32; ++i) tokens.push_back(f.Issue());
  auto keys = std::make_shared<KeySet>(f.ring->VerifyKeysAt(NowS(f.clock)));
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (!f.checker.Check(tokens[(i + t) % tokens.size()], kAud).ok()) failures++;
      }
    });
  }
  std::thread swapper([&] {
    uint64_t v = 1;
    while (!stop) {
      f.checker.SetKeys(keys);
      f.checker.SetRevocations(
          std::make_shared<RevocationList>(v++, RevocationList::Entries{}, RevocationList::Entries{}));
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  swapper.join();
  EXPECT_EQ(failures.load(), 0);
}

// A reload that read the list before a revocation committed must not replace the list holding it.
TEST(Checker, OlderRevocationListDoesNotReplaceNewer) {
  Fixture f;
  auto pair = f.issuer.IssuePair(UserClaims(), seconds(300));
  ASSERT_TRUE(pair.ok());
  RevocationList::Entries sids{{pair->refresh.family, NowS(f.clock) + 300}};
  EXPECT_TRUE(f.checker.SetRevocationsIfNotOlder(
      std::make_shared<RevocationList>(7, RevocationList::Entries{}, sids)));
  EXPECT_FALSE(f.checker.SetRevocationsIfNotOlder(
      std::make_shared<RevocationList>(6, RevocationList::Entries{}, RevocationList::Entries{})));
  EXPECT_EQ(f.checker.revocation_version(), 7u);
  EXPECT_EQ(ReasonOf(f.checker.Check(pair->access, kAud)), Reject::kRevoked);
  // The same version again (a reload with nothing new) is taken; so is a newer one.
  EXPECT_TRUE(f.checker.SetRevocationsIfNotOlder(
      std::make_shared<RevocationList>(7, RevocationList::Entries{}, sids)));
  EXPECT_TRUE(f.checker.SetRevocationsIfNotOlder(
      std::make_shared<RevocationList>(8, RevocationList::Entries{}, RevocationList::Entries{})));
  EXPECT_TRUE(f.checker.Check(pair->access, kAud).ok());
  // Racing writers: whatever the interleaving, the newest version ends up in place.
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t v = 9 + t; v < 2000; v += 4)
        f.checker.SetRevocationsIfNotOlder(
            std::make_shared<RevocationList>(v, RevocationList::Entries{}, RevocationList::Entries{}));
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(f.checker.revocation_version(), 1999u);
}

TEST(Reject, NamesRoundTrip) {
  for (Reject r : {Reject::kMalformed, Reject::kUnknownKey, Reject::kBadSignature, Reject::kWrongIssuer,
                   Reject::kWrongAudience, Reject::kExpired, Reject::kNotYetValid, Reject::kRevoked}) {
    EXPECT_EQ(RejectOf(Status(Code::kUnauthenticated, std::string(RejectName(r)) + ": x")), r);
    EXPECT_FALSE(Describe(r).empty());
  }
  EXPECT_EQ(RejectOf(Status(Code::kUnauthenticated, "expiredx")), Reject::kMalformed);
}

}  // namespace
}  // namespace govern::tokens
