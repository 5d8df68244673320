// telemetry_loadgen against a real HTTP server on a loopback socket that refuses some batches (503 with
// Retry-After), drops the connection after storing others (a lost reply) and accepts the rest. The
// acked file must hold exactly the events of the batches the server answered 2xx, once each, with
// the content hash of what the server decoded.
#include "loadgen.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "generator.h"
#include "services/telemetry/ndjson.h"
#include "services/telemetry/otlp_proto.h"

namespace govern::telemetry::loadgen {
namespace {

enum class Script { kMixed, kAlways400, kIdsInReply };

class FakeIntake {
 public:
  FakeIntake(std::string org, Script script) : org_(std::move(org)), script_(script) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 64), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~FakeIntake() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    for (auto& t : conns_) t.join();
  }
  int port() const { return port_; }

  std::mutex mu;
  std::map<std::string, std::string> answered_ok;  // id -> content hash, of batches answered 200
  std::map<std::string, int> stored;               // id -> times a batch holding it was stored
  int refused = 0, dropped = 0, bad_requests = 0;

 private:
  void Accept() {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      conns_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  static bool ReadMore(int fd, std::string* in) {
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in->append(buf, static_cast<size_t>(n));
    return true;
  }
  static void Send(int fd, const std::string& s) { ::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

  void Serve(int fd) {
    std::string in;
    while (!stop_) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos)
        if (!ReadMore(fd, &in)) return (void)::close(fd);
      const std::string head = in.substr(0, end);
      const size_t cl = head.find("Content-Length: ");
      const size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
      while (in.size() < end + 4 + length)
        if (!ReadMore(fd, &in)) return (void)::close(fd);
      const std::string body = in.substr(end + 4, length);
      in.erase(0, end + 4 + length);
      const bool otlp = head.rfind("POST /v1/logs ", 0) == 0;
      const bool authorized = head.find("Authorization: Bearer gvk_test\r\n") != std::string::npos;
      std::lock_guard lock(mu);
      const int n = ++requests_;
      if (!authorized || script_ == Script::kAlways400) {
        ++bad_requests;
        Send(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 7\r\n\r\nno way\n");
        continue;
      }
      if (n % 5 == 1) {
        ++refused;
        Send(fd, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n");
        continue;
      }
      auto decoded = otlp ? DecodeOtlpLogsProto(body, org_) : DecodeNdjson(body, org_);
      if (!decoded.ok()) {
        ++bad_requests;
        Send(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        continue;
      }
      AssignMissingIds(decoded->events);
      for (const Event& e : decoded->events) ++stored[e.id];
      if (n % 7 == 3) {  // stored, but the reply is lost
        ++dropped;
        ::close(fd);
        return;
      }
      if (script_ == Script::kIdsInReply) {  // the /v1/events reply, with the first id the server's own
        std::string ids;
        for (size_t k = 0; k < decoded->events.size(); ++k) {
          Event& e = decoded->events[k];
          if (k == 0) e.id = "server-chose-" + std::to_string(n);
          answered_ok[e.id] = benchgen::ContentHash(e);
          ids += (k ? ",\"" : "\"") + e.id + "\"";
        }
        const std::string reply =
            "{\"accepted\":" + std::to_string(decoded->events.size()) + ",\"ids\":[" + ids + "]}";
        Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(reply.size()) + "\r\n\r\n" + reply);
        continue;
      }
      for (const Event& e : decoded->events) answered_ok[e.id] = benchgen::ContentHash(e);
      // Chunked on odd requests, Content-Length on even ones: the client must read both.
      if (n % 2)
        Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
      else
        Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    }
    ::close(fd);
  }

  std::string org_;
  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  int requests_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> conns_;
};

std::vector<std::pair<std::string, std::string>> ReadAcked(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return out;
}

class LoadgenTest : public ::testing::TestWithParam<Format> {};

TEST_P(LoadgenTest, AckedFileHoldsExactlyTheAnsweredEventsOnce) {
  FakeIntake server("org_t", Script::kMixed);
  const std::string acked = ::testing::TempDir() + "/acked-" + std::to_string(::getpid());
  Options o;
  o.port = server.port();
  o.key = "gvk_test";
  o.org = "org_t";
  o.format = GetParam();
  o.connections = 3;
  o.batch = 40;
  o.duration_s = 30;
  o.max_events = 3000;
  o.acked_path = acked;
  auto summary = loadgen::Run(o);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  auto lines = ReadAcked(acked);
  std::filesystem::remove(acked);

  std::lock_guard lock(server.mu);
  EXPECT_GT(server.refused, 0);
  EXPECT_GT(server.dropped, 0);
  EXPECT_EQ(server.bad_requests, 0);
  EXPECT_EQ(summary->refused, server.refused);
  EXPECT_EQ(summary->connection_errors, server.dropped);
  EXPECT_GE(summary->acked_events, o.max_events);
  std::map<std::string, std::string> from_file;
  for (const auto& [id, hash] : lines) EXPECT_TRUE(from_file.emplace(id, hash).second) << "twice: " << id;
  EXPECT_EQ(from_file, server.answered_ok);
  EXPECT_EQ(static_cast<int64_t>(lines.size()), summary->acked_events);
  // A batch whose reply was lost was sent again and then acknowledged: stored twice, listed once.
  int twice = 0;
  for (const auto& [id, count] : server.stored) twice += count > 1;
  EXPECT_GT(twice, 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, LoadgenTest, ::testing::Values(Format::kNdjson, Format::kOtlpProto));

TEST(Loadgen, RejectedBatchesAreCountedNotAcknowledged) {
  FakeIntake server("org_t", Script::kAlways400);
  const std::string acked = ::testing::TempDir() + "/acked400-" + std::to_string(::getpid());
  Options o;
  o.port = server.port();
  o.key = "gvk_test";
  o.org = "org_t";
  o.connections = 1;
  o.batch = 10;
  o.rate = 2000;  // 200 batches/s: a few dozen requests in the time below
  o.duration_s = 0.2;
  o.acked_path = acked;
  auto summary = loadgen::Run(o);
  ASSERT_TRUE(summary.ok());
  EXPECT_TRUE(ReadAcked(acked).empty());
  std::filesystem::remove(acked);
  EXPECT_EQ(summary->acked_events, 0);
  EXPECT_GT(summary->failed_batches, 0);
  EXPECT_NE(summary->first_failure.find("400"), std::string::npos) << summary->first_failure;
}

TEST(Loadgen, NdjsonRepliesIdsAreTheOnesWritten) {
  FakeIntake server("org_t", Script::kIdsInReply);
  const std::string acked = ::testing::TempDir() + "/ackedids-" + std::to_string(::getpid());
  Options o;
  o.port = server.port();
  o.key = "gvk_test";
  o.org = "org_t";
  o.connections = 2;
  o.batch = 25;
  o.duration_s = 30;
  o.max_events = 500;
  o.acked_path = acked;
  auto summary = loadgen::Run(o);
  ASSERT_TRUE(summary.ok());
  auto lines = ReadAcked(acked);
  std::filesystem::remove(acked);
  std::lock_guard lock(server.mu);
  std::map<std::string, std::string> from_file(lines.begin(), lines.end());
  EXPECT_EQ(from_file, server.answered_ok);
  EXPECT_EQ(summary->id_mismatches, summary->acked_batches);  // one per batch
  EXPECT_GT(summary->acked_batches, 0);
}

TEST(Loadgen, WithoutAnAckedFileCountsTheSame) {
  FakeIntake server("org_t", Script::kMixed);
  Options o;
  o.port = server.port();
  o.key = "gvk_test";
  o.org = "org_t";
  o.connections = 2;
  o.batch = 30;
  o.duration_s = 30;
  o.max_events = 900;
  auto summary = loadgen::Run(o);
  ASSERT_TRUE(summary.ok());
  std::lock_guard lock(server.mu);
  EXPECT_EQ(summary->acked_events, static_cast<int64_t>(server.answered_ok.size()));
  EXPECT_EQ(summary->refused, server.refused);
  EXPECT_GE(summary->acked_events, o.max_events);
}

TEST(Loadgen, ParseUrl) {
  Options o;
  EXPECT_TRUE(ParseUrl("http://127.0.0.1:4318", &o).ok());
  EXPECT_EQ(o.port, 4318);
  EXPECT_FALSE(ParseUrl("https://127.0.0.1:4318", &o).ok());
  EXPECT_FALSE(ParseUrl("http://127.0.0.1", &o).ok());
  EXPECT_FALSE(ParseUrl("http://127.0.0.1:0", &o).ok());
}

}  // namespace
}  // namespace govern::telemetry::loadgen
