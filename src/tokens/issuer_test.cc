// Key rings (the rotation schedule as pure functions of time), serialisation, refresh and ID tokens.
#include "tokens/issuer.h"

#include <gtest/gtest.h>

#include <set>

#include "crypto/encoding.h"

namespace govern::tokens {
namespace {

using std::chrono::seconds;

const RotationPolicy kPolicy{seconds(1000), seconds(100), seconds(400)};
constexpr int64_t kT0 = 1'800'000'000;

TEST(KeyRing, ScheduleIsAPureFunctionOfTime) {
  auto ring = KeyRing::Create(Alg::kEdDSA, kPolicy, kT0);
  ASSERT_TRUE(ring.ok());
  ASSERT_EQ(ring->keys().size(), 1u);
  const RingKey& first = ring->keys()[0];
  EXPECT_EQ(first.activate_at, kT0);
  EXPECT_EQ(first.retire_at, kT0 + 1000);
  EXPECT_EQ(first.drop_at, kT0 + 1400);
  EXPECT_EQ(StateAt(first, kT0 - 1), KeyState::kPending);
  EXPECT_EQ(StateAt(first, kT0), KeyState::kActive);
  EXPECT_EQ(StateAt(first, kT0 + 1000), KeyState::kRetired);
  EXPECT_EQ(StateAt(first, kT0 + 1400), KeyState::kDropped);

  EXPECT_FALSE(ring->PlanAt(kPolicy, kT0 + 899).changed());
  RotationPlan plan = ring->PlanAt(kPolicy, kT0 + 900);  // publish_ahead before retirement
  EXPECT_TRUE(plan.introduce);
  EXPECT_EQ(plan.new_activate_at, kT0 + 1000);
  EXPECT_TRUE(plan.drop.empty());

  auto two = ring->Rotate(kPolicy, kT0 + 900);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->keys().size(), 2u);
  const std::string k1 = two->keys()[0].key.kid(), k2 = two->keys()[1].key.kid();
  EXPECT_NE(k1, k2);
  EXPECT_FALSE(two->PlanAt(kPolicy, kT0 + 950).changed());  // the successor exists: nothing to do
  // The next key is published (verifiable) before it signs, and the old one after it stops signing.
  EXPECT_EQ(two->VerifyKeysAt(kT0 + 900).keys().size(), 2u);
  EXPECT_EQ((*two->SignerAt(kT0 + 999))->key.kid(), k1);
  EXPECT_EQ((*two->SignerAt(kT0 + 1000))->key.kid(), k2);
  EXPECT_EQ(two->VerifyKeysAt(kT0 + 1399).keys().size(), 2u);
  EXPECT_EQ(two->VerifyKeysAt(kT0 + 1400).keys().size(), 1u);

  // Carrying the schedule forward: at 1900 key 1 is dropped and key 3 introduced for 2000.
  RotationPlan later = two->PlanAt(kPolicy, kT0 + 1900);
  EXPECT_EQ(later.drop, std::vector<std::string>{k1});
  EXPECT_TRUE(later.introduce);
  EXPECT_EQ(later.new_activate_at, kT0 + 2000);
  auto three = two->Rotate(kPolicy, kT0 + 1900);
  ASSERT_EQ(three->keys().size(), 2u);
  EXPECT_EQ(three->keys()[0].key.kid(), k2);
  EXPECT_EQ(three->keys()[1].activate_at, kT0 + 2000);
}

TEST(KeyRing, LapsedRingStartsAKeyAtOnce) {
  auto ring = KeyRing::Create(Alg::kHS256, kPolicy, kT0);
  const int64_t much_later = kT0 + 100'000;  // the service was down for a day
  EXPECT_EQ(ring->SignerAt(much_later).status().code(), Code::kFailedPrecondition);
  RotationPlan plan = ring->PlanAt(kPolicy, much_later);
  EXPECT_TRUE(plan.introduce);
  EXPECT_EQ(plan.new_activate_at, much_later);
  EXPECT_EQ(plan.drop.size(), 1u);
  auto fresh = ring->Rotate(kPolicy, much_later);
  ASSERT_EQ(fresh->keys().size(), 1u);
  EXPECT_TRUE(fresh->SignerAt(much_later).ok());
}

TEST(KeyRing, RefusesBadPolicy) {
  EXPECT_FALSE(KeyRing::Create(Alg::kHS256, RotationPolicy{seconds(0), seconds(0), seconds(0)}, kT0).ok());
  EXPECT_FALSE(KeyRing::Create(Alg::kHS256, RotationPolicy{seconds(10), seconds(10), seconds(0)}, kT0).ok());
}

TEST(KeyRing, SerializeRoundTrip) {
  for (Alg alg : {Alg::kHS256, Alg::kEdDSA, Alg::kES256}) {
    auto ring = KeyRing::Create(alg, kPolicy, kT0)->Rotate(kPolicy, kT0 + 950);
    ASSERT_TRUE(ring.ok());
    auto bytes = ring->Serialize();
    ASSERT_TRUE(bytes.ok());
    auto back = KeyRing::Deserialize(bytes->span());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->keys().size(), 2u);
    EXPECT_EQ(back->alg(), alg);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(back->keys()[i].key.kid(), ring->keys()[i].key.kid());
      EXPECT_EQ(back->keys()[i].activate_at, ring->keys()[i].activate_at);
      EXPECT_EQ(back->keys()[i].drop_at, ring->keys()[i].drop_at);
      auto sig = back->keys()[i].key.Sign("m");
      EXPECT_TRUE(ring->keys()[i].key.verify_key().Verify("m", *sig).ok());
    }
    // Services load the verify keys from the same bytes.
    auto set = KeySetFromRing(bytes->span(), kT0 + 950);
    ASSERT_TRUE(set.ok());
    EXPECT_EQ(set->keys().size(), 2u);
  }
  for (std::string_view bad :
       {"", "{}", R"({"alg":"EdDSA","keys":[{}]})", R"({"alg":"none","keys":[]})",
        R"({"alg":"EdDSA","keys":[{"activate_at":1,"retire_at":2,"drop_at":3,"key":{}}]})"}) {
    EXPECT_FALSE(KeyRing::Deserialize(crypto::AsBytes(bad)).ok()) << bad;
  }
  // A key of another algorithm inside a ring is refused.
  auto hs = KeyRing::Create(Alg::kHS256, kPolicy, kT0);
  auto ed = KeyRing::Create(Alg::kEdDSA, kPolicy, kT0);
  std::string mixed(crypto::AsString(ed->Serialize()->span()));
  mixed.replace(mixed.find("\"alg\":\"EdDSA\""), 13, "\"alg\":\"HS256\"");
  EXPECT_FALSE(KeyRing::Deserialize(crypto::AsBytes(mixed)).ok());
  EXPECT_EQ(hs->JwksAt(kT0).status().code(), Code::kFailedPrecondition);
}

TEST(RefreshToken, FormFamilyAndHash) {
  std::set<std::string> seen;
  auto first = NewRefreshToken();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->token.substr(0, 4), "gvr_");
  EXPECT_EQ(first->token.size(), 4u + 43u);
  EXPECT_EQ(first->hash.size(), 64u);
  EXPECT_EQ(*HashRefreshToken(first->token), first->hash);
  EXPECT_FALSE(first->family.empty());
  for (int i = 0; i < 100; ++i) {
    auto next = NewRefreshToken(first->family);  // rotation keeps the family
    EXPECT_EQ(next->family, first->family);
    EXPECT_TRUE(seen.insert(next->token).second);
  }
  EXPECT_NE(NewRefreshToken()->family, first->family);
  for (std::string_view bad : {"", "gvr_", "gvk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                               "gvr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+", "gvr_short"}) {
    EXPECT_FALSE(HashRefreshToken(bad).ok()) << bad;
  }
}

TEST(HalfHash, OidcCoreExample) {
  // OpenID Connect Core 1.0 appendix A.3/A.4: at_hash of this access token under RS256.
  EXPECT_EQ(*HalfHash(Alg::kRS256, "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"), "77QmUPtjPfzWtF2AnpK9RQ");
  EXPECT_EQ(HalfHash(Alg::kEdDSA, "x")->size(), 43u);  // half of SHA-512: 32 bytes
}

TEST(Issuer, PairAndIdToken) {
  ManualClock clock;
  const int64_t now = clock.UnixMicros() / 1'000'000;
  auto access = std::make_shared<KeyRing>(*KeyRing::Create(Alg::kHS256, kPolicy, now));
  auto id = std::make_shared<KeyRing>(*KeyRing::Create(Alg::kES256, kPolicy, now));
  Issuer issuer(IssuerOptions{"https://auth.govern.test"}, access, id, clock);
  Claims c;
  c.sub = "user-1";
  c.org = "org-1";
  c.aud = {"govern:api"};
  auto pair = issuer.IssuePair(c, seconds(300));
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_EQ(pair->access_expires_at, now + 300);
  auto p = ParseCompact(pair->access);
  auto claims = ClaimsFromJson(p->payload);
  EXPECT_EQ(claims->sid, pair->refresh.family);
  EXPECT_EQ(claims->iss, "https://auth.govern.test");
  EXPECT_EQ(claims->iat, now);
  EXPECT_EQ(p->header.typ, "at+jwt");

  // Refresh keeps the family.
  Claims again = c;
  again.sid = pair->refresh.family;
  auto next = issuer.IssuePair(again, seconds(300));
  EXPECT_EQ(next->refresh.family, pair->refresh.family);
  EXPECT_NE(next->refresh.token, pair->refresh.token);

  Claims idc;
  idc.sub = "user-1";
  idc.aud = {"client-a"};
  idc.nonce = "n-0S6_WzA2Mj";
  idc.auth_time = now - 5;
  auto id_token = issuer.IssueId(idc, seconds(600), pair->access);
  ASSERT_TRUE(id_token.ok());
  auto ip = ParseCompact(*id_token);
  EXPECT_EQ(ip->header.alg, Alg::kES256);
  EXPECT_EQ(ip->header.typ, "JWT");
  auto keys = KeySet::FromJwks(*id->JwksAt(now));
  EXPECT_TRUE((*keys->Find(ip->header))->Verify(ip->signing_input, ip->signature).ok());
  auto ic = ClaimsFromJson(ip->payload);
  EXPECT_EQ(ic->nonce, "n-0S6_WzA2Mj");
  EXPECT_EQ(ic->auth_time, now - 5);
  EXPECT_EQ(ic->at_hash, *HalfHash(Alg::kES256, pair->access));

  EXPECT_FALSE(issuer.IssueAccess(Claims{}, seconds(300)).ok());  // no audience
  EXPECT_FALSE(issuer.IssueAccess(c, seconds(0)).ok());
  Issuer no_id(IssuerOptions{"x"}, access, nullptr, clock);
  EXPECT_EQ(no_id.IssueId(idc, seconds(60), "").status().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace govern::tokens
