// Temporary AWS credentials refreshed in the background (aws_credentials.h): the parsers and schedules,
// then each source against real local sockets or files: a container endpoint and an IMDS stub that hand
// out short-lived keys and rotate them, a credentials file rewritten under the source, refresh failures
// (the old set kept until it expires, then a clear error naming the source), and end to end through the
// proxy to the Bedrock stub, which checks that each request is signed with the rotated key and carries
// its session token.
#include "services/gateway/aws_credentials.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/time_format.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/url.h"
#include "services/gateway/bedrock_provider.h"
#include "services/gateway/proxy.h"
#include "services/gateway/stub_proxy_fixture.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

int64_t NowMs() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Iso(int64_t ms) { return FormatRfc3339(ms / 1000); }

// Waits (up to a minute, polling) for `done`; false if it never came. Not a timing assertion: the
// events waited for are due within seconds.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

// ---- parsers and schedules ----

TEST(AwsCredentialsParseTest, CredentialsFileProfiles) {
  const std::string text =
      "# written by a helper\n"
      "[default]\n"
      "aws_access_key_id = AKIDDEFAULT\n"
      "aws_secret_access_key=secret-default\n"
      "\n"
      "[profile bedrock]\r\n"
      "; a comment\n"
      "  aws_access_key_id = ASIABEDROCK  \r\n"
      "aws_secret_access_key = s/ecr+et==\n"
      "aws_session_token = tok=en\n"
      "region = eu-west-1\n"
      "[other]\n"
      "aws_access_key_id = AKIDOTHER\n";
  auto d = ParseAwsCredentialsFile(text, "default");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->credentials.access_key_id, "AKIDDEFAULT");
  EXPECT_EQ(d->credentials.secret_access_key, "secret-default");
  EXPECT_EQ(d->credentials.session_token, "");
  EXPECT_EQ(d->expiration_ms, 0);
  auto b = ParseAwsCredentialsFile(text, "bedrock");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->credentials.access_key_id, "ASIABEDROCK");
  EXPECT_EQ(b->credentials.secret_access_key, "s/ecr+et==");
  EXPECT_EQ(b->credentials.session_token, "tok=en");
  auto missing = ParseAwsCredentialsFile(text, "nope");
  EXPECT_EQ(missing.status().message(), "credentials file: no profile [nope]");
  auto partial = ParseAwsCredentialsFile(text, "other");
  EXPECT_NE(partial.status().message().find("lacks aws_access_key_id or aws_secret_access_key"),
            std::string::npos);
  EXPECT_FALSE(ParseAwsCredentialsFile("[default\naws_access_key_id=x\n", "default").ok());
}

TEST(AwsCredentialsParseTest, EndpointAnswers) {
  // The container endpoint's shape (ECS, EKS Pod Identity).
  auto c = ParseAwsCredentialsJson(
      R"({"AccessKeyId":"ASIA1","SecretAccessKey":"sec","Token":"tok","Expiration":"2016-02-25T06:03:31Z",
          "RoleArn":"arn:aws:iam::1:role/r"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->credentials.access_key_id, "ASIA1");
  EXPECT_EQ(c->credentials.secret_access_key, "sec");
  EXPECT_EQ(c->credentials.session_token, "tok");
  EXPECT_EQ(c->expiration_ms, 1456380211000);
  // IMDS's, with Code.
  auto i = ParseAwsCredentialsJson(
      R"({"Code":"Success","LastUpdated":"2021-08-03T09:18:49Z","Type":"AWS-HMAC","AccessKeyId":"ASIA2",
          "SecretAccessKey":"s2","Token":"t2","Expiration":"2021-08-03T15:53:56Z"})");
  ASSERT_TRUE(i.ok()) << i.status().ToString();
  EXPECT_EQ(i->credentials.access_key_id, "ASIA2");
  auto failed = ParseAwsCredentialsJson(R"({"Code":"AssumeRoleUnauthorizedAccess","Message":"denied"})");
  EXPECT_EQ(failed.status().message(), "credentials answer: AssumeRoleUnauthorizedAccess denied");
  EXPECT_FALSE(ParseAwsCredentialsJson(R"({"AccessKeyId":"A"})").ok());
  EXPECT_FALSE(ParseAwsCredentialsJson("not json").ok());
  EXPECT_FALSE(ParseAwsCredentialsJson(R"({"AccessKeyId":"A","SecretAccessKey":"s\n"})").ok());
  auto bad_time = ParseAwsCredentialsJson(R"({"AccessKeyId":"A","SecretAccessKey":"s","Expiration":"soon"})");
  EXPECT_NE(bad_time.status().message().find("not an ISO 8601 time"), std::string::npos);
  // An Expiration at (or before) the epoch would read as "never expires": refused.
  for (const char* t : {"1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "0000-01-01T00:00:00Z"}) {
    auto epoch = ParseAwsCredentialsJson(
        std::string(R"({"AccessKeyId":"A","SecretAccessKey":"s","Expiration":")") + t + "\"}");
    EXPECT_NE(epoch.status().message().find("is not after 1970"), std::string::npos) << t;
  }
  // No secret in an error.
  auto no_id = ParseAwsCredentialsJson(R"({"SecretAccessKey":"very-secret"})");
  EXPECT_EQ(no_id.status().message().find("very-secret"), std::string::npos);
}

TEST(AwsCredentialsParseTest, Iso8601) {
  EXPECT_EQ(ParseIso8601Millis("1970-01-01T00:00:00Z").value(), 0);
  EXPECT_EQ(ParseIso8601Millis("2016-02-25T06:03:31Z").value(), 1456380211000);
  EXPECT_EQ(ParseIso8601Millis("2016-02-25T06:03:31.25Z").value(), 1456380211250);
  EXPECT_EQ(ParseIso8601Millis("2016-02-25T07:03:31+01:00").value(), 1456380211000);
  EXPECT_EQ(ParseIso8601Millis("2024-02-29T23:59:59Z").value(), 1709251199000);
  for (const char* bad :
       {"", "2016-02-25", "2016-02-25T06:03:31", "2016-13-25T06:03:31Z", "2016-02-25T06:03:31Zx",
        "2016-02-25T06:03:31.Z", "2016-02-25T06:03:31+0100", "2023-02-29T06:03:31Z"}) {
    EXPECT_FALSE(ParseIso8601Millis(bad).ok()) << bad;
  }
}

TEST(AwsCredentialsParseTest, ContainerEndpointFromTheEnvironment) {
  EXPECT_EQ(ContainerCredentialsUrl("", "/v2/credentials/abc").value(),
            "http://169.254.170.2/v2/credentials/abc");
  EXPECT_EQ(ContainerCredentialsUrl("http://169.254.170.23/v1/credentials", "").value(),
            "http://169.254.170.23/v1/credentials");
  EXPECT_TRUE(ContainerCredentialsUrl("http://127.0.0.1:8080/creds", "").ok());
  EXPECT_TRUE(ContainerCredentialsUrl("http://[fd00:ec2::23]/v1/credentials", "").ok());
  EXPECT_TRUE(ContainerCredentialsUrl("http://localhost/creds", "").ok());
  EXPECT_TRUE(ContainerCredentialsUrl("https://creds.example.com/x", "").ok());
  auto remote = ContainerCredentialsUrl("http://creds.example.com/x", "");
  EXPECT_NE(remote.status().message().find("must name a loopback address"), std::string::npos);
  EXPECT_FALSE(ContainerCredentialsUrl("http://127.0.0.1.evil.com/x", "").ok());
  EXPECT_FALSE(ContainerCredentialsUrl("http://user@127.0.0.1/x", "").ok());
  EXPECT_TRUE(ContainerCredentialsUrl("http://[::1]:8080/creds", "").ok());
  EXPECT_TRUE(ContainerCredentialsUrl("http://127.1.2.254:80", "").ok());
  // Authorities the check and the client once read differently: the client connects to the whole
  // authority up to the first '/', so none of these may pass (the token would go to another host).
  for (const char* odd :
       {"http://127.0.0.1?.attacker.example/creds", "http://localhost?@attacker.example/",
        "http://localhost#@attacker.example/", "http://127.0.0.1\\@attacker.example/",
        "http://127.0.0.1%2e.attacker.example/", "http://[::1]@attacker.example/", "https://u@host.example/x",
        "http://127.0.0.01/x", "http://127.0.0.1./x", "http://127.0.0.256/x", "http://127.0.0/x",
        "http://[::1]x/creds", "http://localhost:80:81/x", "http://:80/x"}) {
    auto r = ContainerCredentialsUrl(odd, "");
    EXPECT_FALSE(r.ok()) << odd;
  }
  auto query = ContainerCredentialsUrl("http://127.0.0.1?.attacker.example/creds", "");
  EXPECT_NE(query.status().message().find("only a host and port"), std::string::npos)
      << query.status().message();
  EXPECT_TRUE(AllowedContainerHost("127.0.0.1"));
  EXPECT_TRUE(AllowedContainerHost("fd00:ec2::23"));
  EXPECT_FALSE(AllowedContainerHost("[fd00:ec2::23]"));  // the client's host has no brackets
  EXPECT_FALSE(AllowedContainerHost("127.0.0.1?.attacker.example"));
  EXPECT_FALSE(ContainerCredentialsUrl("", "").ok());
  EXPECT_FALSE(ContainerCredentialsUrl("", "relative").ok());
}

TEST(AwsCredentialsParseTest, RefreshSchedule) {
  AwsSourceOptions o;  // refresh 5 minutes ahead, 1 s to 60 s backoff
  const int64_t now = 1'000'000'000;
  EXPECT_EQ(AwsRefreshDelay(now, now + 3600'000, o), milliseconds(3300'000));
  // Shorter-lived than twice the lead: half-way through their life (not in a loop).
  EXPECT_EQ(AwsRefreshDelay(now, now + 400'000, o), milliseconds(200'000));
  EXPECT_EQ(AwsRefreshDelay(now, now + 1000, o), milliseconds(1000));  // at least 1 s apart
  EXPECT_EQ(AwsRefreshDelay(now, now - 5000, o), milliseconds(1000));  // already expired
  EXPECT_EQ(AwsRefreshDelay(now, 0, o), o.check_interval);             // no expiration
  // A far-future Expiration: looked at again within a day (a time point that far would overflow
  // steady_clock, and the refresh thread would spin).
  const int64_t far = ParseIso8601Millis("9999-12-31T23:59:59Z").value();
  EXPECT_EQ(AwsRefreshDelay(NowMs(), far, o), std::chrono::hours(24));
  AwsSourceOptions slow = o;
  slow.check_interval = std::chrono::hours(48);
  EXPECT_EQ(AwsRefreshDelay(NowMs(), far, slow), std::chrono::hours(48));
  EXPECT_LT(std::chrono::steady_clock::now().time_since_epoch().count(),
            (std::chrono::steady_clock::now() + AwsRefreshDelay(NowMs(), far, o)).time_since_epoch().count());
  EXPECT_EQ(AwsRetryDelay(1, o), milliseconds(1000));
  EXPECT_EQ(AwsRetryDelay(3, o), milliseconds(4000));
  EXPECT_EQ(AwsRetryDelay(30, o), milliseconds(60000));
}

// ---- a credentials endpoint on a real socket: the container endpoint and IMDSv2 ----

// Hands out set n (ASIAKEY<n>, secret-<n>, token-<n>), n advancing on each fetch when `rotate`, with an
// Expiration `life_ms` ahead (0: none), or fails with 500 when `fail`.
class CredentialsEndpoint {
 public:
  CredentialsEndpoint() {
    net::Router router;
    router.AddSync(net::Method::kGet, "/creds", [this](net::Request& req) {
      std::unique_lock lock(mu_);
      ++waiting_;
      cv_.wait(lock, [&] { return !hold_; });
      --waiting_;
      last_auth_ = std::string(req.headers.Get("Authorization").value_or(""));
      if (!want_auth_.empty() && req.headers.Get("Authorization").value_or("") != want_auth_)
        return net::Response(401, R"({"code":"Unauthorized","message":"bad token"})", "application/json");
      return Answer(false);
    });
    router.AddSync(net::Method::kPut, "/latest/api/token", [this](net::Request& req) {
      std::lock_guard lock(mu_);
      if (req.headers.Get("X-aws-ec2-metadata-token-ttl-seconds").value_or("") != "21600")
        return net::Response(400, "missing ttl");
      ++imds_tokens_;
      return net::Response(200, "imds-session-token");
    });
    router.AddSync(net::Method::kGet, "/latest/meta-data/iam/security-credentials/{role...}",
                   [this](net::Request& req) {
                     std::lock_guard lock(mu_);
                     if (req.headers.Get("X-aws-ec2-metadata-token").value_or("") != "imds-session-token")
                       return net::Response(401, "");
                     if (req.Param("role").empty()) return net::Response(200, "gateway-role\n");
                     if (req.Param("role") != "gateway-role") return net::Response(404, "");
                     return Answer(true);
                   });
    net::ServerConfig sc;
    sc.workers = 1;
    server_ = std::make_unique<net::Server>(sc, std::move(router));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~CredentialsEndpoint() { server_->Stop(); }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void Set(int n, int64_t life_ms, bool rotate) {
    std::lock_guard lock(mu_);
    n_ = n;
    life_ms_ = life_ms;
    rotate_ = rotate;
  }
  void Fail(bool fail) {
    std::lock_guard lock(mu_);
    fail_ = fail;
  }
  void WantAuth(std::string a) {
    std::lock_guard lock(mu_);
    want_auth_ = std::move(a);
  }
  int fetches() const {
    std::lock_guard lock(mu_);
    return fetches_;
  }
  int imds_tokens() const {
    std::lock_guard lock(mu_);
    return imds_tokens_;
  }
  // While held, a credentials request waits (its handler blocked) until Release().
  void Hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      hold_ = false;
    }
    cv_.notify_all();
  }
  int waiting() const {
    std::lock_guard lock(mu_);
    return waiting_;
  }
  std::string last_auth() const {
    std::lock_guard lock(mu_);
    return last_auth_;
  }

 private:
  net::Response Answer(bool imds) {
    ++fetches_;
    if (fail_)
      return net::Response(500, R"({"code":"InternalError","message":"injected"})", "application/json");
    Json j = {{"AccessKeyId", "ASIAKEY" + std::to_string(n_)},
              {"SecretAccessKey", "secret-" + std::to_string(n_)},
              {"Token", "token-" + std::to_string(n_)}};
    if (imds) j["Code"] = "Success";
    if (life_ms_ != 0) j["Expiration"] = Iso(NowMs() + life_ms_);
    if (rotate_) ++n_;
    return net::Response(200, j.dump(), "application/json");
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  int waiting_ = 0;
  std::string last_auth_;
  int n_ = 1;
  int64_t life_ms_ = 0;
  bool rotate_ = false, fail_ = false;
  std::string want_auth_;
  int fetches_ = 0, imds_tokens_ = 0;
  std::unique_ptr<net::Server> server_;
};

std::string KeyOf(const AwsCredentialSource& s) {
  auto c = s.Current();
  return c.ok() ? (*c)->access_key_id + "/" + (*c)->secret_access_key + "/" + (*c)->session_token
                : "error: " + c.status().message();
}

TEST(AwsCredentialSourceTest, ContainerEndpointRotatesBeforeExpiry) {
  CredentialsEndpoint ep;
  ep.Set(1, 3000, /*rotate=*/true);  // sets live 3 s: refreshed half-way through
  const std::string token_file = ::testing::TempDir() + "aws_container_token";
  { std::ofstream(token_file) << "pod-identity-token\n"; }
  ep.WantAuth("pod-identity-token");
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kContainer;
  o.url = ep.Url() + "/creds";
  o.authorization = "ignored: the file wins";
  o.authorization_file = token_file;
  auto source = AwsCredentialSource::Start(o);
  // The first set is there when Start returns: no request waits for a fetch.
  EXPECT_EQ(KeyOf(*source), "ASIAKEY1/secret-1/token-1");
  auto first = source->Current().value();
  ASSERT_TRUE(WaitFor([&] { return source->stats().refreshes >= 3; })) << KeyOf(*source);
  EXPECT_EQ(source->stats().failures, 0u);
  EXPECT_NE(KeyOf(*source).find("ASIAKEY"), std::string::npos);
  EXPECT_NE(KeyOf(*source), "ASIAKEY1/secret-1/token-1");
  // A request that took the first set keeps it whole.
  EXPECT_EQ(first->access_key_id, "ASIAKEY1");
  EXPECT_EQ(first->session_token, "token-1");
  std::remove(token_file.c_str());
}

TEST(AwsCredentialSourceTest, ImdsV2TokenRoleAndRotation) {
  CredentialsEndpoint ep;
  ep.Set(7, 3000, /*rotate=*/true);
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kImds;
  o.url = ep.Url() + "/";
  auto source = AwsCredentialSource::Start(o);
  EXPECT_EQ(KeyOf(*source), "ASIAKEY7/secret-7/token-7");
  EXPECT_EQ(source->name(), "EC2 instance metadata (IMDSv2) at " + ep.Url() + "/");
  ASSERT_TRUE(WaitFor([&] { return source->stats().refreshes >= 2; })) << KeyOf(*source);
  EXPECT_NE(KeyOf(*source), "ASIAKEY7/secret-7/token-7");
  EXPECT_GE(ep.imds_tokens(), 2);  // a session token per refresh, as IMDSv2 wants
}

TEST(AwsCredentialSourceTest, FailedRefreshKeepsTheLastSetUntilItExpires) {
  CredentialsEndpoint ep;
  ep.Set(1, 0, false);  // no expiration: looked at again every check_interval
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kContainer;
  o.url = ep.Url() + "/creds";
  o.check_interval = milliseconds(100);
  o.min_backoff = milliseconds(50);
  o.max_backoff = milliseconds(200);
  auto source = AwsCredentialSource::Start(o);
  EXPECT_EQ(KeyOf(*source), "ASIAKEY1/secret-1/token-1");
  ep.Fail(true);
  ASSERT_TRUE(WaitFor([&] { return source->stats().failures >= 3; }));
  EXPECT_EQ(KeyOf(*source), "ASIAKEY1/secret-1/token-1");  // still usable: it has not expired
  ep.Fail(false);
  ep.Set(2, 0, false);
  ASSERT_TRUE(WaitFor([&] { return KeyOf(*source) == "ASIAKEY2/secret-2/token-2"; })) << KeyOf(*source);
}

TEST(AwsCredentialSourceTest, ExpiredSetFailsNamingTheSourceAndTheError) {
  CredentialsEndpoint ep;
  ep.Set(1, 4000, false);  // refreshed after 2 s, which fails
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kContainer;
  o.url = ep.Url() + "/creds";
  o.min_backoff = milliseconds(50);
  o.max_backoff = milliseconds(200);
  auto source = AwsCredentialSource::Start(o);
  EXPECT_EQ(KeyOf(*source), "ASIAKEY1/secret-1/token-1");
  ep.Fail(true);
  ASSERT_TRUE(WaitFor([&] {
    auto c = source->Current();
    return !c.ok() && c.status().message().find("refreshing failed") != std::string::npos;
  }));
  const std::string m = source->Current().status().message();
  EXPECT_EQ(source->Current().status().code(), Code::kUnavailable);
  EXPECT_NE(m.find("container credentials endpoint " + ep.Url() + "/creds: credentials expired at "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("refreshing failed: endpoint answered 500 InternalError injected"), std::string::npos)
      << m;
  EXPECT_EQ(m.find("secret-1"), std::string::npos);
  // Back: usable again at the next retry.
  ep.Fail(false);
  ASSERT_TRUE(WaitFor([&] { return source->Current().ok(); }));
}

TEST(AwsCredentialSourceTest, NoCredentialsYet) {
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kContainer;
  o.url = "http://127.0.0.1:1/creds";  // nothing listens on port 1
  o.min_backoff = milliseconds(60000);
  auto source = AwsCredentialSource::Start(o);
  auto c = source->Current();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      c.status().message().find("container credentials endpoint http://127.0.0.1:1/creds: no credentials "
                                "yet: endpoint unreachable"),
      std::string::npos)
      << c.status().message();
  EXPECT_EQ(source->stats().failures, 1u);
}

// A container source on `ep` (set 1) whose next refresh is in flight, held at the endpoint until
// ep.Release(). Its fetch timeout is 10 minutes: anything that waited for the fetch would wait that long.
void StartWithARefreshHeld(CredentialsEndpoint& ep, std::shared_ptr<AwsCredentialSource>* source) {
  ep.Set(1, 0, false);
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kContainer;
  o.url = ep.Url() + "/creds";
  o.check_interval = milliseconds(50);
  o.timeout = std::chrono::minutes(10);
  *source = AwsCredentialSource::Start(o);
  ASSERT_EQ(KeyOf(**source), "ASIAKEY1/secret-1/token-1");
  ep.Hold();
  ASSERT_TRUE(WaitFor([&] { return ep.waiting() == 1; }));
}

TEST(AwsCredentialSourceTest, DestroyingDoesNotWaitForAFetchInFlight) {
  CredentialsEndpoint ep;
  std::shared_ptr<AwsCredentialSource> source;
  ASSERT_NO_FATAL_FAILURE(StartWithARefreshHeld(ep, &source));
  std::atomic<bool> destroyed{false};
  std::thread last_owner([&] {  // as a gateway event loop dropping the last route table after a reload
    source.reset();
    destroyed = true;
  });
  const bool returned = WaitFor([&] { return destroyed.load(); });
  ep.Release();  // only now can the fetch end
  last_owner.join();
  EXPECT_TRUE(returned) << "the destructor waited for the fetch in flight";
  ASSERT_TRUE(WaitFor([&] { return ep.waiting() == 0; }));
}

TEST(AwsCredentialSourceTest, ShutdownAwaitsTheRefreshThreadOfADestroyedSource) {
  CredentialsEndpoint ep;
  std::shared_ptr<AwsCredentialSource> source;
  ASSERT_NO_FATAL_FAILURE(StartWithARefreshHeld(ep, &source));
  source.reset();  // returns at once (the test above); the thread still fetches
  // While the fetch is held the thread cannot end, so the wait runs out.
  const bool ended_while_held =
      AwsCredentialSource::AwaitRefreshThreads(std::chrono::steady_clock::now() + milliseconds(200));
  ep.Release();
  EXPECT_FALSE(ended_while_held) << "AwaitRefreshThreads did not wait for the thread in flight";
  EXPECT_TRUE(
      AwsCredentialSource::AwaitRefreshThreads(std::chrono::steady_clock::now() + std::chrono::minutes(2)));
}

TEST(AwsCredentialSourceTest, OneFirstFetchDoesNotHoldUpOtherStarts) {
  CredentialsEndpoint slow, other;
  slow.Set(1, 0, false);
  other.Set(2, 0, false);
  AwsSourceOptions a;
  a.kind = AwsSourceOptions::Kind::kContainer;
  a.url = slow.Url() + "/creds";
  a.timeout = std::chrono::minutes(10);
  AwsSourceOptions b = a;
  b.url = other.Url() + "/creds";
  slow.Hold();
  std::shared_ptr<AwsCredentialSource> first, same;
  std::thread starter([&] { first = AwsCredentialSource::Start(a); });
  ASSERT_TRUE(WaitFor([&] { return slow.waiting() == 1; }));  // a's first fetch, held at the stub
  // A Start() of the same options waits for that fetch instead of starting a second source.
  std::thread second([&] { same = AwsCredentialSource::Start(a); });
  // Another role's Start() does not wait for a's fetch.
  std::atomic<bool> other_done{false};
  std::shared_ptr<AwsCredentialSource> b_source;
  std::thread third([&] {
    b_source = AwsCredentialSource::Start(b);
    other_done = true;
  });
  const bool done_while_held = WaitFor([&] { return other_done.load(); });
  const int waiting_while_held = slow.waiting();
  slow.Release();
  starter.join();
  second.join();
  third.join();
  EXPECT_TRUE(done_while_held) << "Start() of other options waited for an unrelated first fetch";
  EXPECT_EQ(waiting_while_held, 1);
  EXPECT_EQ(KeyOf(*b_source), "ASIAKEY2/secret-2/token-2");
  EXPECT_EQ(first.get(), same.get());
  EXPECT_EQ(KeyOf(*first), "ASIAKEY1/secret-1/token-1");
  EXPECT_EQ(slow.fetches(), 1);
}

TEST(AwsCredentialSourceTest, TokenFileIsReReadAtEveryFetch) {
  CredentialsEndpoint ep;
  ep.Set(1, 0, false);
  const std::string token_file = ::testing::TempDir() + "aws_token_reread_" + std::to_string(::getpid());
  auto write = [&](const std::string& text) {
    { std::ofstream(token_file + ".tmp") << text; }
    std::filesystem::rename(token_file + ".tmp", token_file);
  };
  write("token-a\n");
  ep.WantAuth("token-a");
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kContainer;
  o.url = ep.Url() + "/creds";
  o.authorization_file = token_file;
  o.check_interval = milliseconds(50);
  o.min_backoff = milliseconds(50);
  o.max_backoff = milliseconds(100);
  auto source = AwsCredentialSource::Start(o);
  EXPECT_EQ(KeyOf(*source), "ASIAKEY1/secret-1/token-1");
  EXPECT_EQ(ep.last_auth(), "token-a");
  ep.WantAuth("token-b");  // the token rotates (as EKS does): only the new one is accepted
  ep.Set(2, 0, false);
  write("token-b\n");
  ASSERT_TRUE(WaitFor([&] { return KeyOf(*source) == "ASIAKEY2/secret-2/token-2"; })) << KeyOf(*source);
  EXPECT_EQ(ep.last_auth(), "token-b");
  std::filesystem::remove(token_file);
}

TEST(AwsCredentialSourceTest, FilesMustBeSmallRegularFilesAndTokensPlainText) {
  CredentialsEndpoint ep;
  ep.Set(1, 0, false);
  const std::string dir = ::testing::TempDir() + "aws_files_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto container = [&](const std::string& token_file) {
    AwsSourceOptions o;
    o.kind = AwsSourceOptions::Kind::kContainer;
    o.url = ep.Url() + "/creds";
    o.authorization_file = token_file;
    o.min_backoff = milliseconds(60000);
    return AwsCredentialSource::Start(o);
  };
  { std::ofstream(dir + "/control") << "tok\x01en\n"; }
  EXPECT_NE(KeyOf(*container(dir + "/control")).find("the authorization token holds a control character"),
            std::string::npos);
  // A FIFO (no writer: a blocking open would hang the refresh thread).
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_NE(KeyOf(*container(dir + "/fifo")).find("/fifo is not a regular file"), std::string::npos);
  { std::ofstream(dir + "/big") << std::string(64 * 1024 + 1, 'x'); }
  EXPECT_NE(KeyOf(*container(dir + "/big")).find("/big is larger than 64 KiB"), std::string::npos);
  {
    std::ofstream f(dir + "/credentials");
    f << "[default]\naws_access_key_id = AKID\naws_secret_access_key = s\n"
      << std::string(70000, '#') << "\n";
  }
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kFile;
  o.file = dir + "/credentials";
  o.min_backoff = milliseconds(60000);
  auto file = AwsCredentialSource::Start(o);
  EXPECT_NE(KeyOf(*file).find("/credentials is larger than 64 KiB"), std::string::npos) << KeyOf(*file);
  EXPECT_EQ(ep.fetches(), 0);  // nothing was sent with a bad token
  std::filesystem::remove_all(dir);
}

TEST(AwsCredentialSourceTest, EqualSettingsShareOneSourceAcrossReloads) {
  CredentialsEndpoint ep;
  ep.Set(1, 0, false);
  for (const char* v : {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"})
    ::unsetenv(v);
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", (ep.Url() + "/creds").c_str(), 1);
  auto parse = [](const std::string& model, std::optional<int> before) {
    Json a = {{"name", "a"},
              {"provider", "bedrock"},
              {"region", "eu-west-1"},
              {"model", "m1"},
              {"aws_credentials_source", "container"}};
    Json b = a;
    b["name"] = "b";
    b["region"] = "us-east-1";
    if (before) b["aws_credentials_refresh_before_ms"] = *before;
    auto c = ParseProxyConfig(Json{{"routes", {{{"model", model}, {"deployments", {a, b}}}}}}.dump());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::make_optional(std::move(*c)) : std::nullopt;
  };
  auto source = [](const std::optional<ProxyConfig>& c, size_t i) {
    return c ? c->models.at(0).deployments.at(i).bedrock->source.get() : nullptr;
  };
  auto first = parse("claude", std::nullopt);
  ASSERT_TRUE(first && source(first, 0));
  EXPECT_EQ(source(first, 0), source(first, 1));  // two deployments on one role: one source, one thread
  EXPECT_EQ(ep.fetches(), 1);
  // A reload that changes something else (the route's name) while the old table is in use.
  auto second = parse("claude-renamed", std::nullopt);
  EXPECT_EQ(source(second, 0), source(first, 0));
  EXPECT_EQ(ep.fetches(), 1);  // no new first fetch
  // Changed settings: a source of its own.
  auto third = parse("claude", 60000);
  EXPECT_EQ(source(third, 0), source(first, 0));
  EXPECT_NE(source(third, 1), source(first, 1));
  EXPECT_EQ(ep.fetches(), 2);
  // Once no table holds it, the next load starts afresh.
  first.reset();
  second.reset();
  third.reset();
  auto fourth = parse("claude", std::nullopt);
  EXPECT_EQ(ep.fetches(), 3);
  ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
}

TEST(AwsCredentialSourceTest, SharedCredentialsFileIsReReadWhenItChanges) {
  const std::string file = ::testing::TempDir() + "aws_credentials_" + std::to_string(::getpid());
  auto write = [&](const std::string& text) {  // as helpers do: a new file renamed over the old one
    { std::ofstream(file + ".tmp") << text; }
    std::filesystem::rename(file + ".tmp", file);
  };
  write(
      "[default]\naws_access_key_id = AKID0\naws_secret_access_key = s0\n"
      "[gateway]\naws_access_key_id = ASIAFILE1\naws_secret_access_key = file-secret-1\n"
      "aws_session_token = file-token-1\n");
  AwsSourceOptions o;
  o.kind = AwsSourceOptions::Kind::kFile;
  o.file = file;
  o.profile = "gateway";
  o.check_interval = milliseconds(100);
  o.min_backoff = milliseconds(50);
  o.max_backoff = milliseconds(100);
  auto source = AwsCredentialSource::Start(o);
  EXPECT_EQ(KeyOf(*source), "ASIAFILE1/file-secret-1/file-token-1");
  EXPECT_EQ(source->stats().refreshes, 1u);
  write(
      "[gateway]\naws_access_key_id = ASIAFILE2\naws_secret_access_key = file-secret-2\n"
      "aws_session_token = file-token-2\n");
  ASSERT_TRUE(WaitFor([&] { return KeyOf(*source) == "ASIAFILE2/file-secret-2/file-token-2"; }))
      << KeyOf(*source);
  // A broken file (a helper that wrote half of it) keeps the last good set.
  write("[gateway]\naws_access_key_id = ASIAFILE3\n");
  ASSERT_TRUE(WaitFor([&] { return source->stats().failures >= 1; }));
  EXPECT_EQ(KeyOf(*source), "ASIAFILE2/file-secret-2/file-token-2");
  std::filesystem::remove(file);
  ASSERT_TRUE(WaitFor([&] { return source->stats().failures >= 3; }));
  EXPECT_EQ(KeyOf(*source), "ASIAFILE2/file-secret-2/file-token-2");
  EXPECT_EQ(source->stats().refreshes, 2u);  // unchanged bytes are not a refresh
}

// ---- end to end: the proxy signs Bedrock requests with the rotated keys ----

constexpr const char* kAwsKey = "gvg_bedrock_rotation_01";
constexpr const char* kAwsModelId = "anthropic.claude-3-5-haiku-20241022-v1:0";

class BedrockRotationTest : public testing::StubProxyFixture {
 protected:
  BedrockRotationTest() : StubProxyFixture(kAwsKey) {}
  // The Bedrock stub accepts only set `n` of the endpoint (key, secret and session token).
  void StartStub(int n) {
    model_stub::ServerOptions o;
    o.stub.aws_access_key_id = "ASIAKEY" + std::to_string(n);
    o.stub.aws_secret_access_key = "secret-" + std::to_string(n);
    o.stub.aws_session_token = "token-" + std::to_string(n);
    o.stub.aws_region = "eu-west-1";
    StubProxyFixture::StartStub(std::move(o));
  }
  void TearDown() override {
    StubProxyFixture::TearDown();
    ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  }
  void Start(const std::string& creds_url) {
    ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", creds_url.c_str(), 1);
    Json d = {{"name", "bedrock-eu"},  {"provider", "bedrock"}, {"region", "eu-west-1"},
              {"base_url", StubUrl()}, {"model", kAwsModelId},  {"aws_credentials_source", "container"}};
    StartProxy(Json{{"routes", {{{"model", "claude-haiku"}, {"deployments", {d}}}}},
                    {"keys", {{{"key", kAwsKey}, {"org", "acme"}}}}},
               1);
  }
  net::ClientResponse Chat(bool stream) {
    Json b = {{"model", "claude-haiku"}, {"messages", {{{"role", "user"}, {"content", "one two three"}}}}};
    if (stream) b["stream"] = true;
    return Post("/v1/chat/completions", b);
  }
};

TEST_F(BedrockRotationTest, SignaturesUseTheRotatedKeyAndSessionToken) {
  StartStub(2);
  CredentialsEndpoint ep;
  ep.Set(1, 3000, false);  // set 1, which the stub refuses, living 3 s
  Start(ep.Url() + "/creds");
  auto refused = Chat(false);
  EXPECT_EQ(refused.status, 502) << refused.body;  // the stub: unknown access key id
  const int before = ep.fetches();
  ep.Set(2, 3000, false);  // the endpoint now hands out set 2: the next refresh takes it
  ASSERT_TRUE(WaitFor([&] { return ep.fetches() >= before + 1; }));
  ASSERT_TRUE(WaitFor([&] { return Chat(false).status == 200; }));
  auto whole = Chat(false);
  EXPECT_EQ(whole.status, 200) << whole.body;
  auto streamed = Chat(true);
  EXPECT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_NE(streamed.body.find("[DONE]"), std::string::npos) << streamed.body;
}

TEST_F(BedrockRotationTest, ExpiredCredentialsGive502NamingTheDeployment) {
  StartStub(1);
  CredentialsEndpoint ep;
  // Expiration is written in whole seconds, so the set lives 7-8 s: long enough for a first answer on
  // a loaded machine under ASan; refreshed after half of that, which fails.
  ep.Set(1, 8000, false);
  Start(ep.Url() + "/creds");
  auto ok = Chat(false);
  EXPECT_EQ(ok.status, 200) << ok.body;
  WaitRecord(1);
  ep.Fail(true);
  // Until the set expires requests still pass; then they get 502. The first 502 may come in the instant
  // between the endpoint's 500 and the gateway noting it, so wait for one whose record already names
  // the failed refresh (every later one does: the endpoint keeps failing).
  net::ClientResponse failed;
  UsageRecord rec;
  size_t chats = 1;
  ASSERT_TRUE(WaitFor([&] {
    std::this_thread::sleep_for(milliseconds(40));  // ~20 requests a second until the set expires
    failed = Chat(false);
    rec = WaitRecord(++chats);
    return failed.status == 502 && !rec.attempts.empty() &&
           rec.attempts.back().error.find("endpoint answered 500") != std::string::npos;
  }));
  EXPECT_EQ(failed.status, 502) << failed.body;
  // The client learns which deployment, not the files or endpoints behind it.
  const std::string message = Json::parse(failed.body)["error"]["message"].get<std::string>();
  EXPECT_EQ(message,
            "the gateway's AWS credentials for deployment bedrock-eu are unavailable (expired or not "
            "fetched yet); see the gateway log");
  EXPECT_EQ(failed.body.find(ep.Url()), std::string::npos) << failed.body;
  // The usage record keeps the details.
  EXPECT_EQ(rec.status, 502);
  ASSERT_FALSE(rec.attempts.empty());
  const std::string detail = rec.attempts.back().error;
  EXPECT_NE(detail.find("container credentials endpoint " + ep.Url() + "/creds: credentials expired at"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("endpoint answered 500"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("secret-1"), std::string::npos);
}

TEST(BedrockCredentialSourceConfigTest, FieldsAreCheckedAtLoad) {
  auto err = [](Json extra) {
    Json dep = {{"provider", "bedrock"}, {"region", "us-east-1"}};
    dep.update(extra);
    Json file = {{"routes", {{{"model", "m"}, {"deployments", {std::move(dep)}}}}}};
    auto c = ParseProxyConfig(file.dump());
    return c.ok() ? std::string("accepted") : c.status().message();
  };
  auto has = [](const std::string& message, std::string_view want) {
    return message.find(want) != std::string::npos;
  };
  EXPECT_PRED2(has, err({{"aws_credentials_source", "vault"}}),
               "aws_credentials_source must be file, container or imds (not `vault`)");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "file"}, {"aws_access_key_id", "A"}}),
               "give aws_credentials_source or aws_access_key_id/aws_secret_access_key, not both");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "imds"}, {"api_key", "k"}}),
               "give api_key (a Bedrock API key) or AWS credentials, not both");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "imds"}, {"aws_profile", "p"}}),
               "aws_profile needs aws_credentials_source file");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "file"}, {"aws_imds_endpoint", "http://x"}}),
               "aws_imds_endpoint needs aws_credentials_source imds");
  EXPECT_PRED2(
      has, err({{"aws_access_key_id", "A"}, {"aws_secret_access_key", "s"}, {"aws_credentials_file", "f"}}),
      "aws_credentials_file needs aws_credentials_source file");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "imds"}, {"aws_imds_endpoint", "169.254.169.254"}}),
               "aws_imds_endpoint must be an http:// or https:// URL");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "file"}, {"aws_credentials_file_check_ms", 5}}),
               "aws_credentials_file_check_ms must be 100..86400000");
  EXPECT_PRED2(has, err({{"aws_credentials_source", "imds"}, {"aws_credentials_refresh_before_ms", 0}}),
               "aws_credentials_refresh_before_ms must be 10000..86400000 (at least 10 s");
  ::unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://credentials.example.com/x", 1);
  EXPECT_PRED2(has, err({{"aws_credentials_source", "container"}}), "must name a loopback address");
  ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  EXPECT_PRED2(
      has, err({{"aws_credentials_source", "container"}}),
      "neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set");
  Json openai = {{"routes",
                  {{{"model", "m"},
                    {"deployments", {{{"base_url", "http://x"}, {"aws_credentials_source", "imds"}}}}}}}};
  EXPECT_PRED2(has, ParseProxyConfig(openai.dump()).status().message(),
               "aws_credentials_source is for provider bedrock only");
  // A file source that cannot be read yet still loads (a sidecar may write it later): requests fail
  // with 502 until it appears.
  EXPECT_PRED2(
      has,
      err({{"aws_credentials_source", "file"}, {"aws_credentials_file", "/nonexistent/govern/credentials"}}),
      "accepted");
}

}  // namespace
}  // namespace govern::gateway
