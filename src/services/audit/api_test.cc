// The audit HTTP API through a real net::Server on a real socket and a real PostgreSQL: appends,
// idempotent retries, reads after ack, searches, proofs, checkpoints, export, and every refusal.
#include "services/audit/api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

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
                   .on_checkpoint = [this](const std::string&, uint64_t size, const std::string&) {
                     last_file_size_ = size;
                   }});
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
};

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
