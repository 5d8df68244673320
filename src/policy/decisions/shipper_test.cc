// DecisionShipper against a real HTTP server standing in for telemetry intake (net::Server on a real
// socket): order, retries, the cursor, a crash between the 200 and the cursor update (a real child
// process killed with SIGKILL), poison events and configuration faults.
#include "policy/decisions/shipper.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "net/http_server.h"
#include "net/router.h"
#include "policy/decisions/test_util.h"

namespace govern::policy {
namespace {

using testing::TempDir;

constexpr char kKey[] = "gvk_abcdefabcdef_0123456789abcdef0123456789abcdef0123456789abcdef";

DecisionRecord DecidedForShip(int i, std::string resource = "") {
  DecisionRecord r;
  r.organisation = "acme";
  r.principal = "Agent::\"a1\"";
  r.action = "Action::\"call_tool\"";
  r.resource = resource.empty() ? "Tool::\"t" + std::to_string(i) + "\"" : resource;
  r.decision = RecordedDecision::kAllow;
  r.determining_policies = {"p"};
  r.bundle_version = 1;
  return r;
}

// Telemetry intake as the shipper meets it: POST /v1/events, NDJSON, a bearer key; answers from a
// script (then 200), refuses with 400 any batch holding a "poison" event, and stores by id once.
class FakeIntake {
 public:
  struct Answer {
    int status = 200;
    std::string retry_after;
  };
  struct Request {
    std::vector<std::string> ids;
    int status = 0;
    uint64_t cursor_at_arrival = 0;
    std::chrono::steady_clock::time_point at;
  };

  explicit FakeIntake(uint16_t port = 0, std::function<uint64_t()> cursor = {}) : cursor_(std::move(cursor)) {
    net::Router r;
    r.AddSync(net::Method::kPost, "/v1/events", [this](net::Request& req) { return Handle(req); });
    net::ServerConfig cfg;
    cfg.port = port;
    cfg.workers = 1;
    server_ = std::make_unique<net::Server>(cfg, std::move(r));
    Status st = server_->Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  ~FakeIntake() { server_->Stop(); }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void Script(std::vector<Answer> answers) {
    std::lock_guard lk(mu_);
    script_.assign(answers.begin(), answers.end());
  }
  std::vector<Request> requests() {
    std::lock_guard lk(mu_);
    return requests_;
  }
  // Ids in the order they were first stored.
  std::vector<std::string> stored() {
    std::lock_guard lk(mu_);
    return stored_;
  }
  size_t delivered() {  // events in 200 answers, duplicates included
    std::lock_guard lk(mu_);
    return delivered_;
  }

 private:
  net::Response Handle(net::Request& req) {
    std::lock_guard lk(mu_);
    Request got;
    got.at = std::chrono::steady_clock::now();
    if (cursor_) got.cursor_at_arrival = cursor_();
    net::Response resp(200, "", "application/json");
    const auto auth = req.headers.Get("Authorization");
    const auto type = req.headers.Get("Content-Type");
    bool poison = false;
    std::vector<nlohmann::json> events;
    size_t pos = 0;
    while (pos < req.body.size()) {
      size_t end = req.body.find('\n', pos);
      if (end == std::string::npos) end = req.body.size();
      auto j = nlohmann::json::parse(req.body.substr(pos, end - pos), nullptr, false);
      pos = end + 1;
      if (j.is_discarded()) {
        poison = true;
        continue;
      }
      got.ids.push_back(j.value("id", ""));
      if (j["attributes"].value("resource", "").find("poison") != std::string::npos) poison = true;
      events.push_back(std::move(j));
    }
    if (!auth || *auth != std::string("Bearer ") + kKey) {
      resp = net::Response(401, "{\"title\":\"bad key\"}", "application/problem+json");
    } else if (!type || *type != "application/x-ndjson") {
      resp = net::Response(415, "", "application/problem+json");
    } else if (!script_.empty()) {
      Answer a = script_.front();
      script_.pop_front();
      resp = net::Response(a.status, "{\"title\":\"scripted\"}", "application/problem+json");
      if (!a.retry_after.empty()) resp.headers.Set("Retry-After", a.retry_after);
    } else if (poison) {
      resp = net::Response(400, "{\"detail\":\"line 1: poison\"}", "application/problem+json");
    }
    got.status = resp.status;
    if (resp.status == 200) {
      delivered_ += got.ids.size();
      for (const auto& id : got.ids) {
        if (seen_.insert(id).second) stored_.push_back(id);
      }
      resp.body = "{\"accepted\":" + std::to_string(got.ids.size()) + "}";
    }
    requests_.push_back(std::move(got));
    return resp;
  }

  std::function<uint64_t()> cursor_;
  std::mutex mu_;
  std::deque<Answer> script_;
  std::vector<Request> requests_;
  std::vector<std::string> stored_;
  std::set<std::string> seen_;
  size_t delivered_ = 0;
  std::unique_ptr<net::Server> server_;
};

bool WaitForShip(const std::function<bool()>& done) {
  for (int i = 0; i < 60000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::unique_ptr<DecisionLog> OpenLog(const std::string& dir) {
  auto log = DecisionLog::Open({.dir = dir, .sync_interval = std::chrono::milliseconds(1)});
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(*log) : nullptr;
}

std::vector<std::string> RecordN(DecisionLog& log, int n, int from = 0) {
  std::vector<std::string> ids;
  for (int i = from; i < from + n; ++i) {
    auto id = log.Record(DecidedForShip(i));
    EXPECT_TRUE(id.ok());
    if (id.ok()) ids.push_back(id->ToString());
  }
  EXPECT_TRUE(log.Flush().ok());
  return ids;
}

ShipperOptions Options(const std::string& endpoint, size_t batch = 100) {
  ShipperOptions o;
  o.endpoint = endpoint;
  o.key = kKey;
  o.batch_events = batch;
  o.idle_wait = std::chrono::milliseconds(20);
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(50);
  o.request_timeout = std::chrono::milliseconds(10000);
  return o;
}

std::unique_ptr<DecisionShipper> StartShipper(DecisionLog& log, ShipperOptions o) {
  auto s = DecisionShipper::Create(&log, std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return nullptr;
  (*s)->Start();
  return std::move(*s);
}

uint64_t Cursor(DecisionLog& log, const std::string& name = "telemetry") {
  auto c = log.wal().CursorPosition(name);
  return c.ok() ? *c : 0;
}

TEST(ShipperTest, DeliversEverythingInOrderInBoundedBatches) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  FakeIntake intake;
  auto ids = RecordN(*log, 1000);
  auto shipper = StartShipper(*log, Options(intake.endpoint(), 100));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 1001; }))
      << shipper->GetStats().last_error;
  // Recorded while the shipper runs: followed too.
  auto more = RecordN(*log, 50, 1000);
  ids.insert(ids.end(), more.begin(), more.end());
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 1051; }));
  shipper->Stop();
  EXPECT_EQ(intake.stored(), ids);
  EXPECT_EQ(intake.delivered(), ids.size());
  for (const auto& r : intake.requests()) {
    EXPECT_LE(r.ids.size(), 100u);
    EXPECT_EQ(r.status, 200);
  }
  EXPECT_EQ(Cursor(*log), 1051u);
  auto s = shipper->GetStats();
  EXPECT_EQ(s.events_shipped, 1050u);
  EXPECT_EQ(s.quarantined, 0u);
  EXPECT_EQ(s.retries, 0u);
}

TEST(ShipperTest, RetriesTheSameBatchAndMovesTheCursorOnlyAfter200) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  FakeIntake intake(0, [&] { return Cursor(*log); });
  intake.Script({{503, "0"}, {429, "0"}, {500, ""}, {502, ""}});
  auto ids = RecordN(*log, 30);
  auto shipper = StartShipper(*log, Options(intake.endpoint(), 30));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 31; }));
  shipper->Stop();
  auto reqs = intake.requests();
  ASSERT_EQ(reqs.size(), 5u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].ids, ids) << "request " << i << " is not the same batch";
    EXPECT_EQ(reqs[i].cursor_at_arrival, 1u) << "the cursor moved before a 200";
  }
  EXPECT_EQ(reqs.back().status, 200);
  EXPECT_EQ(intake.stored(), ids);
  EXPECT_EQ(shipper->GetStats().retries, 4u);
  EXPECT_EQ(Cursor(*log), 31u);
}

TEST(ShipperTest, HonoursRetryAfter) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  FakeIntake intake;
  intake.Script({{503, "1"}});
  RecordN(*log, 3);
  auto shipper = StartShipper(*log, Options(intake.endpoint()));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 4; }));
  auto reqs = intake.requests();
  ASSERT_EQ(reqs.size(), 2u);
  // Not sooner than the server asked (max_backoff is 50 ms, so this is Retry-After's doing).
  EXPECT_GE(reqs[1].at - reqs[0].at, std::chrono::seconds(1));
}

uint16_t UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(ShipperTest, RetriesWhileIntakeIsDown) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  auto ids = RecordN(*log, 20);
  const uint16_t port = UnusedPort();
  auto shipper = StartShipper(*log, Options("http://127.0.0.1:" + std::to_string(port)));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().retries >= 3; }));
  EXPECT_EQ(Cursor(*log), 1u);
  EXPECT_NE(shipper->GetStats().last_error, "");
  FakeIntake intake(port);
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 21; }));
  EXPECT_EQ(intake.stored(), ids);
}

// Intake takes the request and drops the connection without an answer (a crash or a proxy timeout on
// its side): the shipper cannot know whether the batch was stored, sends it again, and moves its cursor
// only after a real 200.
TEST(ShipperTest, RetriesWhenIntakeDropsTheConnectionMidRequest) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  auto ids = RecordN(*log, 20);
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(lfd, 16), 0);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t port = ntohs(a.sin_port);
  std::atomic<int> dropped{0};
  std::vector<std::string> dropped_bodies;
  std::thread dropper([&] {
    for (int i = 0; i < 3; ++i) {
      const int c = accept(lfd, nullptr, nullptr);
      if (c < 0) return;
      std::string got;
      char buf[4096];
      // Read the whole request (its body ends with the last event's newline), then hang up.
      while (got.find("\r\n\r\n") == std::string::npos || got.back() != '\n') {
        const ssize_t n = read(c, buf, sizeof(buf));
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
      dropped_bodies.push_back(got.substr(got.find("\r\n\r\n") + 4));
      close(c);
      ++dropped;
    }
  });
  auto shipper = StartShipper(*log, Options("http://127.0.0.1:" + std::to_string(port)));
  dropper.join();
  close(lfd);
  EXPECT_EQ(dropped.load(), 3);
  EXPECT_EQ(Cursor(*log), 1u);
  FakeIntake intake(port);
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 21; }))
      << shipper->GetStats().last_error;
  shipper->Stop();
  EXPECT_EQ(intake.stored(), ids);
  EXPECT_GE(shipper->GetStats().retries, 3u);
  // Every dropped attempt carried the very batch that was finally stored.
  ASSERT_EQ(dropped_bodies.size(), 3u);
  for (const auto& body : dropped_bodies) {
    std::vector<std::string> sent;
    for (size_t pos = 0; pos < body.size();) {
      size_t end = body.find('\n', pos);
      sent.push_back(nlohmann::json::parse(body.substr(pos, end - pos))["id"]);
      pos = end + 1;
    }
    EXPECT_EQ(sent, ids);
  }
}

// The crash the exactly-once design exists for: a real child process ships, intake answers 200, and
// the child is SIGKILLed before its cursor moves. The next shipper sends the same batch again with the
// same ids, so intake (which stores by id) keeps each decision once, and then ships the rest.
TEST(ShipperTest, ACrashBetween200AndTheCursorResendsTheSameIds) {
  TempDir dir;
  std::vector<std::string> ids;
  {
    auto log = OpenLog(dir.path());
    ids = RecordN(*log, 50);
  }
  const uint16_t port = UnusedPort();
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(port);
  const pid_t pid = fork();  // before any thread of this test starts
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto log = DecisionLog::Open({.dir = dir.path()});
    if (!log.ok()) _exit(2);
    ShipperOptions o = Options(endpoint, 20);
    o.after_send_probe = [](uint64_t) { kill(getpid(), SIGKILL); };
    auto shipper = DecisionShipper::Create(log->get(), o);
    if (!shipper.ok()) _exit(3);
    (*shipper)->Start();
    pause();
    _exit(4);
  }
  FakeIntake intake(port);  // the child retries until this is up
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  auto first = intake.requests();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].status, 200);
  const std::vector<std::string> first_batch(ids.begin(), ids.begin() + 20);
  EXPECT_EQ(first[0].ids, first_batch);

  auto log = OpenLog(dir.path());
  EXPECT_EQ(Cursor(*log), 1u) << "the cursor moved although the child died before committing it";
  auto shipper = StartShipper(*log, Options(endpoint, 20));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 51; }));
  shipper->Stop();
  auto reqs = intake.requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].ids, first_batch) << "the re-sent batch must carry the same ids";
  EXPECT_EQ(intake.stored(), ids);          // each decision stored once, in order
  EXPECT_EQ(intake.delivered(), 50u + 20);  // the first batch went twice
}

TEST(ShipperTest, RefusedEventsAndUndecodableRecordsAreQuarantinedAndShippingGoesOn) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  FakeIntake intake;
  std::vector<std::string> good;
  std::string poison_id;
  for (int i = 0; i < 10; ++i) {
    auto id = log->Record(DecidedForShip(i, i == 4 ? "Tool::\"poison\"" : ""));
    ASSERT_TRUE(id.ok());
    if (i == 4) {
      poison_id = id->ToString();
    } else {
      good.push_back(id->ToString());
    }
    if (i == 6) {
      ASSERT_TRUE(log->wal().Append("not a decision record").ok());  // seq 8
    }
  }
  ASSERT_TRUE(log->Flush().ok());
  auto shipper = StartShipper(*log, Options(intake.endpoint(), 100));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 12; }))
      << shipper->GetStats().last_error;
  shipper->Stop();
  EXPECT_EQ(intake.stored(), good);
  EXPECT_EQ(shipper->GetStats().quarantined, 2u);

  std::ifstream q(dir.path() + "/quarantine.ndjson");
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(q, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["seq"], 5);
  EXPECT_EQ(lines[0]["status"], 400);
  EXPECT_EQ(lines[0]["event"]["id"], poison_id);
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("poison"), std::string::npos);
  EXPECT_EQ(lines[1]["seq"], 8);
  EXPECT_NE(lines[1]["reason"].get<std::string>().find("does not decode"), std::string::npos);
  EXPECT_EQ(lines[1]["record_hex"], "6e6f742061206465636973696f6e207265636f7264");
}

// A wrong key is a configuration fault: nothing is quarantined or skipped; shipping resumes (same
// records, same ids) once the key works, which the next shipper models here.
TEST(ShipperTest, AWrongKeyHoldsTheCursorAndLosesNothing) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  FakeIntake intake;
  auto ids = RecordN(*log, 10);
  ShipperOptions bad = Options(intake.endpoint());
  bad.key = "gvk_wrong";
  auto shipper = StartShipper(*log, bad);
  ASSERT_TRUE(WaitForShip([&] { return intake.requests().size() >= 3; }));
  shipper->Stop();
  EXPECT_EQ(Cursor(*log), 1u);
  EXPECT_EQ(shipper->GetStats().quarantined, 0u);
  EXPECT_NE(shipper->GetStats().last_error.find("401"), std::string::npos);
  EXPECT_TRUE(intake.stored().empty());
  shipper = StartShipper(*log, Options(intake.endpoint()));
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 11; }));
  EXPECT_EQ(intake.stored(), ids);
}

TEST(ShipperTest, CursorHoldsRetentionUntilShipped) {
  TempDir dir;
  auto opened = DecisionLog::Open({.dir = dir.path(),
                                   .segment_size = 64 * 1024,
                                   .max_retained_bytes = 64 * 1024,
                                   .retention_check = std::chrono::milliseconds(3'600'000)});
  ASSERT_TRUE(opened.ok());
  auto& log = *opened;
  FakeIntake intake;
  auto created = DecisionShipper::Create(log.get(), Options(intake.endpoint(), 500));  // cursor at 1
  ASSERT_TRUE(created.ok());
  auto& shipper = *created;
  RecordN(*log, 3000);
  const auto segments = log->wal().GetStats().segments;
  ASSERT_GE(segments, 3u);
  // The size bound wants all but the active segment gone, but nothing is shipped yet.
  ASSERT_TRUE(log->EnforceRetention(64 * 1024).ok());
  EXPECT_EQ(log->wal().GetStats().segments, segments);
  EXPECT_EQ(log->wal().FirstSequence(), 1u);
  shipper->Start();
  ASSERT_TRUE(WaitForShip([&] { return shipper->GetStats().next_seq == 3001; }));
  // Shipped: the bound applies.
  EXPECT_EQ(log->wal().GetStats().segments, 1u);
  EXPECT_GT(log->wal().FirstSequence(), 1u);
}

TEST(ShipperTest, ForgetReleasesTheLogWhenShippingIsSwitchedOff) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  ASSERT_TRUE(DecisionShipper::Create(log.get(), Options("http://127.0.0.1:1")).ok());
  EXPECT_EQ(log->wal().Cursors().count("telemetry"), 1u);
  ASSERT_TRUE(DecisionShipper::Forget(log.get()).ok());
  EXPECT_EQ(log->wal().Cursors().count("telemetry"), 0u);
  EXPECT_TRUE(DecisionShipper::Forget(log.get()).ok()) << "forgetting twice is fine";
}

TEST(ShipperTest, RefusesBadOptions) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  EXPECT_FALSE(DecisionShipper::Create(log.get(), Options("ftp://x")).ok());
  ShipperOptions o = Options("http://127.0.0.1:1");
  o.key = "secret";
  EXPECT_FALSE(DecisionShipper::Create(log.get(), o).ok());
  o = Options("http://127.0.0.1:1", 20000);
  EXPECT_FALSE(DecisionShipper::Create(log.get(), o).ok());
}

}  // namespace
}  // namespace govern::policy
