// The audit HTTP API through a real net::Server on a real socket and a real PostgreSQL: appends,
// idempotent retries, reads after ack, searches, proofs, checkpoints, export, and every refusal.
#include "services/audit/api.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "audit/export.h"
#include "audit/merkle.h"
#include "base/file.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/audit/audit_testing.h"

namespace govern::audit_service {
namespace {

using json = nlohmann::json;

class ApiTest : public testing::AuditDbTest {
 protected:
  void SetUp() override {
    AuditDbTest::SetUp();
    if (HasFatalFailure()) return;
    append_ = *service_keys::CreateKey(Conn(), AuditKeyTable(), "acme", "append", "");
    read_ = *service_keys::CreateKey(Conn(), AuditKeyTable(), "acme", "read", "");
    other_ = *service_keys::CreateKey(Conn(), AuditKeyTable(), "globex", "append", "");
    signer_ =
        std::make_unique<CheckpointSigner>(std::move(*CheckpointSigner::FromSeed(std::string(32, 'k'))));
    keys_ = std::make_unique<service_keys::KeyCache>(pool_.get(), AuditKeyTable());
    batcher_ = std::make_unique<Batcher>(pool_.get(), BatcherOptions{});
    api_ = std::make_unique<Api>(
        pool_.get(), batcher_.get(), keys_.get(), signer_.get(),
        ApiOptions{.max_details_bytes = 1024,
                   .max_body_bytes = 64 * 1024,
                   .export_buffer_bytes = kExportBuffer,
                   .export_page_entries = kExportPage,
                   .on_export =
                       [this](const ApiOptions::ExportStats& st) {
                         std::lock_guard lock(export_mu_);
                         last_export_ = st;
                         export_count_.fetch_add(1);
                       },
                   .on_checkpoint = [this](const std::string&, uint64_t size,
                                           const std::string&) { last_file_size_ = size; }});
    net::Router router;
    api_->AddRoutes(router);
    server_ = std::make_unique<net::Server>(net::ServerConfig{.workers = 1}, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_.reset();
    api_.reset();
    batcher_.reset();
    keys_.reset();
    AuditDbTest::TearDown();
  }

  net::ClientResponse Send(net::Method method, const std::string& path, const std::string& key,
                           std::string body = {}, std::string idem = {}) {
    net::ClientRequest req;
    req.method = method;
    req.url = "http://127.0.0.1:" + std::to_string(server_->port()) + path;
    if (!key.empty()) req.headers.Set("Authorization", "Bearer " + key);
    if (!idem.empty()) req.headers.Set("Idempotency-Key", idem);
    req.body = std::move(body);
    auto r = client_.Send(std::move(req));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(*r) : net::ClientResponse{};
  }
  net::ClientResponse Append(const std::string& body, std::string idem = {}) {
    return Send(net::Method::kPost, "/v1/audit/acme/entries", append_, body, idem);
  }
  net::ClientResponse Get(const std::string& path, std::string key = {}) {
    return Send(net::Method::kGet, path, key.empty() ? read_ : key);
  }

  std::string append_, read_, other_;
  std::unique_ptr<CheckpointSigner> signer_;
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<net::Server> server_;
  net::HttpClient client_;
  uint64_t last_file_size_ = 0;
  static constexpr size_t kExportBuffer = 64 * 1024;
  static constexpr int kExportPage = 1000;
  std::mutex export_mu_;
  ApiOptions::ExportStats last_export_;
  std::atomic<int> export_count_{0};
};

// Waits (bounded) for a condition another thread makes true; not a timing assertion.
template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 2000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f();
}

TEST_F(ApiTest, AppendRetryReadAfterAck) {
  auto r = Append(R"({"actor":"alice","action":"user.login","details":{"ip":"10.0.0.1"}})", "req-1");
  ASSERT_EQ(r.status, 201) << r.body;
  json e = json::parse(r.body);
  EXPECT_EQ(e["seq"], 1);
  EXPECT_EQ(e["created"], true);
  auto again = Append(R"({"actor":"alice","action":"user.login","details":{"ip":"10.0.0.1"}})", "req-1");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(json::parse(again.body)["entry_hash"], e["entry_hash"]);
  EXPECT_EQ(json::parse(again.body)["created"], false);

  auto read = Get("/v1/audit/acme/entries/1");
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(json::parse(read.body)["details"]["ip"], "10.0.0.1");
  EXPECT_EQ(json::parse(read.body)["entry_hash"], e["entry_hash"]);

  auto batch = Append(R"({"entries":[{"idempotency_key":"b1","actor":"bob","action":"doc.read"},
                                     {"idempotency_key":"b2","actor":"bob","action":"doc.delete"}]})");
  ASSERT_EQ(batch.status, 201) << batch.body;
  EXPECT_EQ(json::parse(batch.body)["entries"][1]["seq"], 3);

  auto search = Get("/v1/audit/acme/entries?actor=bob&limit=1");
  ASSERT_EQ(search.status, 200) << search.body;
  json page = json::parse(search.body);
  EXPECT_EQ(page["entries"][0]["seq"], 3);
  EXPECT_EQ(page["next_before_seq"], 3);
  auto page2 = json::parse(Get("/v1/audit/acme/entries?actor=bob&limit=1&before_seq=3").body);
  EXPECT_EQ(page2["entries"][0]["seq"], 2);
  EXPECT_FALSE(page2.contains("next_before_seq"));
  EXPECT_EQ(json::parse(Get("/v1/audit/acme/entries?action=doc.delete").body)["entries"].size(), 1u);
}

TEST_F(ApiTest, ProofsCheckpointsAndExport) {
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(Append(R"({"actor":"a","action":"b"})", "k" + std::to_string(i)).status, 201);
  }
  EXPECT_EQ(Get("/v1/audit/acme/checkpoints/latest").status, 404);
  auto made = Send(net::Method::kPost, "/v1/audit/acme/checkpoints", append_);
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(last_file_size_, 40u);
  json cp = json::parse(made.body);
  EXPECT_EQ(cp["size"], 40);
  auto latest = Get("/v1/audit/acme/checkpoints/latest");
  ASSERT_EQ(latest.status, 200);
  EXPECT_EQ(json::parse(latest.body)["note"], cp["note"]);
  auto key = json::parse(Send(net::Method::kGet, "/v1/audit/checkpoint-key", "").body);
  EXPECT_EQ(key["verifier_key"], signer_->verifier_key());
  const auto keys = signer_->verifier_keys();
  auto opened = audit::OpenCheckpoint(cp["note"].get<std::string>(), keys);
  ASSERT_TRUE(opened.ok()) << opened.status().message();

  auto inc = Get("/v1/audit/acme/proof/inclusion?seq=7&size=40");
  ASSERT_EQ(inc.status, 200) << inc.body;
  json ij = json::parse(inc.body);
  std::vector<audit::Hash> proof;
  for (auto& h : ij["proof"]) proof.push_back(*audit::HashFromHex(h.get<std::string>()));
  EXPECT_TRUE(audit::VerifyInclusion(*audit::HashFromHex(ij["leaf_hash"].get<std::string>()), 6, 40, proof,
                                     opened->root)
                  .ok());
  auto con = Get("/v1/audit/acme/proof/consistency?old=13&new=40");
  ASSERT_EQ(con.status, 200) << con.body;
  json cj = json::parse(con.body);
  std::vector<audit::Hash> cproof;
  for (auto& h : cj["proof"]) cproof.push_back(*audit::HashFromHex(h.get<std::string>()));
  EXPECT_TRUE(audit::VerifyConsistency(13, 40, *audit::HashFromHex(cj["old_root"].get<std::string>()),
                                       opened->root, cproof)
                  .ok());
  EXPECT_EQ(Get("/v1/audit/acme/proof/inclusion?seq=41&size=40").status, 400);
  EXPECT_EQ(Get("/v1/audit/acme/proof/inclusion?seq=x").status, 400);

  auto exp = Get("/v1/audit/acme/export");
  ASSERT_EQ(exp.status, 200);
  std::string path = ::testing::TempDir() + "/audit_api_export_" + std::to_string(::getpid());
  ASSERT_TRUE(ReplaceFileDurably(path, exp.body).ok());
  auto report = audit::VerifyExportFile(path, keys);
  std::remove(path.c_str());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->ok()) << report->reason;
  EXPECT_EQ(report->entries_verified, 40u);
  EXPECT_EQ(report->checkpoints_matched, 1u);
}

// A large export through a slow reader: streamed from PostgreSQL in pages, never more than the
// stream's bound waiting for the client, and the result verifies.
TEST_F(ApiTest, LargeExportIsStreamedInPagesWithinTheBound) {
  const int kEntries = 12000;
  constexpr int kPerRequest = 150;  // ~45 KB bodies, under the test's 64 KiB limit
  for (int b = 0; b < kEntries / kPerRequest; ++b) {
    std::string body = "{\"entries\":[";
    for (int i = 0; i < kPerRequest; ++i) {
      int n = b * kPerRequest + i;
      if (i > 0) body += ',';
      body += R"({"actor":"user-)" + std::to_string(n % 37) + R"(","action":"doc.read","target":"doc-)" +
              std::to_string(n) + R"(","details":{"n":)" + std::to_string(n) + ",\"pad\":\"" +
              std::string(200, 'p') + R"("},"idempotency_key":"e)" + std::to_string(n) + "\"}";
    }
    body += "]}";
    ASSERT_EQ(Append(body).status, 201);
  }
  ASSERT_EQ(Send(net::Method::kPost, "/v1/audit/acme/checkpoints", append_).status, 201);

  // The raw socket: a small receive window and pauses, so the server must hold back.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int rcv = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server_->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string req = "GET /v1/audit/acme/export HTTP/1.1\r\nHost: x\r\nAuthorization: bearer " + read_ +
                    "\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string raw;
  char buf[4096];
  for (int i = 0;; ++i) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
    if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  close(fd);
  size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  std::string head = raw.substr(0, head_end);
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
  EXPECT_NE(head.find("application/x-ndjson"), std::string::npos) << head;
  // De-chunk.
  std::string body;
  size_t pos = head_end + 4;
  bool complete = false;
  while (pos < raw.size()) {
    size_t eol = raw.find("\r\n", pos);
    ASSERT_NE(eol, std::string::npos);
    size_t size = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) {
      complete = true;
      break;
    }
    body.append(raw, eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  EXPECT_TRUE(complete);
  std::string path = ::testing::TempDir() + "/audit_api_big_export_" + std::to_string(::getpid());
  ASSERT_TRUE(ReplaceFileDurably(path, body).ok());
  auto report = audit::VerifyExportFile(path, signer_->verifier_keys());
  std::remove(path.c_str());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->ok()) << report->reason;
  EXPECT_EQ(report->entries_verified, static_cast<uint64_t>(kEntries));
  EXPECT_EQ(report->checkpoints_matched, 1u);

  ASSERT_TRUE(Eventually([&] { return export_count_.load() == 1; }));
  std::lock_guard lock(export_mu_);
  EXPECT_TRUE(last_export_.completed);
  EXPECT_EQ(last_export_.bytes, body.size());
  EXPECT_GE(last_export_.pages, kEntries / kExportPage);  // read in pages, not at once
  // Never more than the bound (plus one line) waited for the client: ~3.5 MB went through 64 KiB.
  EXPECT_LE(last_export_.peak_buffered, kExportBuffer + 2048);
  EXPECT_GT(body.size(), 20 * kExportBuffer);
}

TEST_F(ApiTest, ExportOfAnUnknownOrganisationIs404AndAClientLeavingStopsIt) {
  auto r = Get("/v1/audit/acme/export");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(json::parse(r.body)["status"], 404);
  // Enough entries that the export cannot be sent before the client leaves.
  for (int b = 0; b < 100; ++b) {  // ~4.5 MB: more than the socket buffers hold
    std::string body = "{\"entries\":[";
    for (int i = 0; i < 150; ++i) {
      if (i > 0) body += ',';
      body += R"({"actor":"a","action":"b","details":{"pad":")" + std::string(200, 'p') +
              R"("},"idempotency_key":"x)" + std::to_string(b * 150 + i) + "\"}";
    }
    body += "]}";
    ASSERT_EQ(Append(body).status, 201);
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int rcv = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server_->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string req =
      "GET /v1/audit/acme/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_ + "\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  char buf[1024];
  ASSERT_GT(recv(fd, buf, sizeof buf, 0), 0);
  close(fd);  // gone after the first bytes
  ASSERT_TRUE(Eventually([&] { return export_count_.load() == 1; }));
  std::lock_guard lock(export_mu_);
  EXPECT_FALSE(last_export_.completed);
  EXPECT_LT(last_export_.lines, 15000u);
}

TEST_F(ApiTest, RefusalsAreProblemsWithTheRightStatus) {
  struct Case {
    net::Method method;
    std::string path, key, body, idem;
    int status;
  } cases[] = {
      {net::Method::kPost, "/v1/audit/acme/entries", "", R"({"actor":"a","action":"b"})", "k", 401},
      {net::Method::kPost, "/v1/audit/acme/entries", "gva_nonsense", R"({"actor":"a","action":"b"})", "k",
       401},
      {net::Method::kPost, "/v1/audit/acme/entries", "gva_aaaaaaaaaaaa_" + std::string(64, 'a'),
       R"({"actor":"a","action":"b"})", "k", 401},
      {net::Method::kPost, "/v1/audit/acme/entries", other_, R"({"actor":"a","action":"b"})", "k", 403},
      {net::Method::kPost, "/v1/audit/acme/entries", read_, R"({"actor":"a","action":"b"})", "k", 403},
      {net::Method::kGet, "/v1/audit/acme/entries/1", append_, "", "", 403},
      {net::Method::kPost, "/v1/audit/acme/entries", append_, "{not json", "k", 400},
      {net::Method::kPost, "/v1/audit/acme/entries", append_, R"({"actor":"a","action":"b"})", "", 400},
      {net::Method::kPost, "/v1/audit/acme/entries", append_,
       R"({"actor":"a","action":"b","details":{"x":")" + std::string(2000, 'x') + "\"}}", "k", 400},
      {net::Method::kPost, "/v1/audit/acme/entries", append_, std::string(70 * 1024, ' '), "k", 413},
      {net::Method::kPost, "/v1/audit/Bad Org/entries", append_, "{}", "k", 400},
      {net::Method::kGet, "/v1/audit/acme/entries/99", read_, "", "", 404},
      {net::Method::kGet, "/v1/audit/acme/entries/zero", read_, "", "", 400},
      {net::Method::kGet, "/v1/audit/acme/entries?limit=5", read_, "", "",
       404},  // no entries yet: unknown org
      {net::Method::kGet, "/v1/audit/acme/entries?limit=0", read_, "", "", 400},
      {net::Method::kGet, "/v1/audit/acme/entries?since=yesterday", read_, "", "", 400},
  };
  for (const Case& c : cases) {
    auto r = Send(c.method, c.path, c.key, c.body, c.idem);
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body.substr(0, 60) << " -> " << r.body;
    if (r.status >= 400 && r.status != 413) {
      EXPECT_EQ(r.headers.Get("Content-Type").value_or(""), "application/problem+json") << c.path;
    }
  }
}

TEST_F(ApiTest, DatabaseTroubleIs503WithRetryAfter) {
  ASSERT_EQ(Append(R"({"actor":"a","action":"b"})", "k1").status, 201);
  ASSERT_TRUE(Conn().Exec("ALTER TABLE audit_entries RENAME TO away").ok());
  auto r = Append(R"({"actor":"a","action":"b"})", "k2");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headers.Get("Retry-After").value_or(""), "1");
  auto g = Get("/v1/audit/acme/entries/1");
  EXPECT_EQ(g.status, 503);
  EXPECT_EQ(g.body.find("away"), std::string::npos) << "no database words in the answer";
  ASSERT_TRUE(Conn().Exec("ALTER TABLE away RENAME TO audit_entries").ok());
  EXPECT_EQ(Append(R"({"actor":"a","action":"b"})", "k2").status, 201);
}

}  // namespace
}  // namespace govern::audit_service
