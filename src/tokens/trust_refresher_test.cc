// TrustRefresher against a real HTTP server on loopback standing in for the auth service.
#include "tokens/trust_refresher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "net/http_server.h"
#include "tokens/issuer.h"

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

}  // namespace
}  // namespace govern::tokens
