// TrustRefresher against a real HTTP server on loopback standing in for the auth service.
#include "tokens/trust_refresher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "net/http_server.h"
#include "tokens/issuer.h"
#include "tokens/ring_file.h"

namespace govern::tokens {
namespace {

using std::chrono::seconds;
constexpr std::string_view kIss = "https://auth.govern.test";

// What the stub auth service serves; tests change it between pulls.
struct Served {
  std::mutex mu;
  std::string jwks, revocations;
  int status = 200;
};

class TrustRefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net::Router router;
    router.AddSync(net::Method::kGet, "/jwks", [this](net::Request&) {
      std::lock_guard lock(served_.mu);
      return net::Response(served_.status, served_.jwks, "application/json");
    });
    router.AddSync(net::Method::kGet, "/revocations", [this](net::Request&) {
      std::lock_guard lock(served_.mu);
      return net::Response(served_.status, served_.revocations, "application/json");
    });
    server_ = std::make_unique<net::Server>(net::ServerConfig{.workers = 1}, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void Serve(std::string jwks, std::string revocations, int status = 200) {
    std::lock_guard lock(served_.mu);
    served_.jwks = std::move(jwks);
    served_.revocations = std::move(revocations);
    served_.status = status;
  }

  Served served_;
  std::unique_ptr<net::Server> server_;
  std::string base_;
  ManualClock clock_;
};

Claims User() {
  Claims c;
  c.sub = "u";
  c.aud = {"svc"};
  return c;
}

TEST_F(TrustRefresherTest, PullsKeysAndRevocationsAndKeepsLastGood) {
  const int64_t now = clock_.UnixMicros() / 1'000'000;
  auto ring = std::make_shared<const KeyRing>(*KeyRing::Create(Alg::kEdDSA, RotationPolicy{}, now));
  auto internal = std::make_shared<const KeyRing>(*KeyRing::Create(Alg::kHS256, RotationPolicy{}, now));
  Issuer outside(IssuerOptions{std::string(kIss)}, ring, nullptr, clock_);
  Issuer inside(IssuerOptions{std::string(kIss)}, internal, nullptr, clock_);
  Checker checker(CheckerOptions{std::string(kIss)}, nullptr, clock_);
  net::HttpClient client;
  TrustSources sources{base_ + "/jwks", base_ + "/revocations"};
  sources.local_keys = std::make_shared<const KeySet>(internal->VerifyKeysAt(now));
  TrustRefresher refresher(sources, checker, client);

  std::string public_token = *outside.IssueAccess(User(), seconds(300));
  std::string internal_token = *inside.IssueAccess(User(), seconds(300));
  EXPECT_FALSE(checker.Check(public_token, "svc").ok());  // nothing trusted yet

  Serve(*ring->JwksAt(now), R"({"version":1})");
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  ASSERT_TRUE(checker.Check(public_token, "svc").ok());
  EXPECT_TRUE(checker.Check(internal_token, "svc").ok());  // local keys kept beside the pulled ones
  EXPECT_EQ(checker.revocation_version(), 1u);
  EXPECT_EQ(checker.CachedForTesting(), 2u);

  // An unchanged JWKS does not swap keys, so the cache survives the pull.
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_EQ(checker.CachedForTesting(), 2u);

  // A new revocation list revokes the token's jti; an older one served later is ignored.
  std::string jti = (*checker.Check(public_token, "svc"))->jti;
  Serve(*ring->JwksAt(now), R"({"version":3,"jti":{")" + jti + R"(":)" + std::to_string(now + 300) + "}}");
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_EQ(RejectOf(checker.Check(public_token, "svc").status()), Reject::kRevoked);
  Serve(*ring->JwksAt(now), R"({"version":2})");
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_EQ(checker.revocation_version(), 3u);
  EXPECT_EQ(RejectOf(checker.Check(public_token, "svc").status()), Reject::kRevoked);
  // The same version without the entry is installed: how the auth service serves the list once the
  // revoked token's expiry has passed (entries leave without a version bump).
  Serve(*ring->JwksAt(now), R"({"version":3})");
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_TRUE(checker.Check(public_token, "svc").ok());
  Serve(*ring->JwksAt(now), R"({"version":3,"jti":{")" + jti + R"(":)" + std::to_string(now + 300) + "}}");
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_EQ(RejectOf(checker.Check(public_token, "svc").status()), Reject::kRevoked);

  // Failures keep the last good state.
  Serve("oops", "oops", 500);
  EXPECT_FALSE(refresher.RefreshOnce().ok());
  Serve("{\"keys\":7}", "[]");
  EXPECT_FALSE(refresher.RefreshOnce().ok());
  EXPECT_TRUE(checker.Check(internal_token, "svc").ok());
  EXPECT_EQ(checker.revocation_version(), 3u);

  // The timer thread pulls by itself.
  auto rotated = std::make_shared<const KeyRing>(*ring->Rotate(RotationPolicy{}, now + 23 * 3600));
  Serve(*rotated->JwksAt(now), R"({"version":4})");
  sources.period = std::chrono::milliseconds(20);
  TrustRefresher timed(sources, checker, client);
  timed.Start();
  for (int i = 0; i < 500 && checker.revocation_version() != 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  timed.Stop();
  EXPECT_EQ(checker.revocation_version(), 4u);
  EXPECT_TRUE(checker.Check(public_token, "svc").ok());  // the rotated set still holds its key
}

// The internal ring reaches a checking service through the ring file: read at every refresh, a rotation
// written by the auth service is picked up (the successor before it signs), a retired key keeps
// verifying through its overlap and leaves at drop_at even when the file does not change.
TEST_F(TrustRefresherTest, RingFileFollowsRotationWithOverlap) {
  char tmpl[] = "/tmp/govern-ring-file-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/internal-ring.json";
  const RotationPolicy policy{};  // 24 h signing, published 1 h ahead, kept 2 h after
  using std::chrono::hours;
  using std::chrono::minutes;
  auto at = [&] { return clock_.UnixMicros() / 1'000'000; };

  Checker checker(CheckerOptions{std::string(kIss)}, nullptr, clock_);
  net::HttpClient client;
  TrustRefresher refresher(TrustSources{.ring_file = path, .clock = &clock_}, checker, client);
  EXPECT_EQ(refresher.RefreshOnce().code(), Code::kNotFound);  // no file yet: an error, nothing trusted

  auto ring = std::make_shared<const KeyRing>(*KeyRing::Create(Alg::kHS256, policy, at()));
  ASSERT_TRUE(WriteRingFile(path, *ring).ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // it can mint tokens: owner only
  Issuer first(IssuerOptions{std::string(kIss)}, ring, nullptr, clock_);
  std::string a = *first.IssueAccess(User(), seconds(300));
  EXPECT_EQ(RejectOf(checker.Check(a, "svc").status()), Reject::kUnknownKey);
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  ASSERT_TRUE(checker.Check(a, "svc").ok());
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_EQ(checker.CachedForTesting(), 1u);  // unchanged file: no swap, the cache survives

  // 23.5 h in: the auth service rotates (successor pending, published ahead) and rewrites the file.
  clock_.Advance(hours(23) + minutes(30));
  auto rotated = std::make_shared<const KeyRing>(*ring->Rotate(policy, at()));
  ASSERT_EQ(rotated->keys().size(), 2u);
  ASSERT_TRUE(WriteRingFile(path, *rotated).ok());
  Issuer old_signer(IssuerOptions{std::string(kIss)}, rotated, nullptr, clock_);
  std::string late_old = *old_signer.IssueAccess(User(), std::chrono::duration_cast<seconds>(hours(4)));
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  // 24.5 h: the successor signs; the service knew it before its first token.
  clock_.Advance(hours(1));
  Issuer new_signer(IssuerOptions{std::string(kIss)}, rotated, nullptr, clock_);
  std::string fresh = *new_signer.IssueAccess(User(), seconds(300));
  EXPECT_NE(ParseCompact(fresh)->header.kid, ParseCompact(late_old)->header.kid);
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_TRUE(checker.Check(fresh, "svc").ok());
  EXPECT_TRUE(checker.Check(late_old, "svc").ok());  // retired, still in its overlap

  // A torn or foreign file is refused and the last good ring kept.
  { std::ofstream(path, std::ios::trunc) << "{\"alg\":"; }
  EXPECT_FALSE(refresher.RefreshOnce().ok());
  EXPECT_TRUE(checker.Check(fresh, "svc").ok());
  ASSERT_TRUE(WriteRingFile(path, *rotated).ok());
  ASSERT_TRUE(refresher.RefreshOnce().ok());

  // 26.5 h: past the old key's drop_at. The file did not change, yet the old key is no longer trusted.
  clock_.Advance(hours(2));
  ASSERT_TRUE(refresher.RefreshOnce().ok());
  EXPECT_EQ(RejectOf(checker.Check(late_old, "svc").status()), Reject::kUnknownKey);
  std::string later = *new_signer.IssueAccess(User(), seconds(300));
  EXPECT_TRUE(checker.Check(later, "svc").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace govern::tokens
