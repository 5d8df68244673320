// The service against a real PostgreSQL: changes made through the Store reach the running server by
// NOTIFY, and a server whose LISTEN connection is cut reconnects and serves changes made meanwhile.
#include "services/dns/service.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "dns/testing.h"
#include "dns/tsig.h"
#include "net/http_client.h"
#include "services/dns/store.h"

namespace govern::dns_service {
namespace {

using namespace std::chrono_literals;

// One UDP query; the answer section's RDATA of `qtype` records as presentation text.
std::vector<std::string> Ask(uint16_t port, const std::string& name, uint16_t qtype) {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  auto q = dns::testing::MakeQuery(name, qtype);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  std::vector<uint8_t> buf(4096);
  ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
  ::close(fd);
  std::vector<std::string> out;
  if (n <= 0) return out;
  buf.resize(static_cast<size_t>(n));
  auto msg = dns::testing::ReadMessage(buf);
  for (const auto& r : msg.sections[0]) {
    if (r.type == qtype) out.push_back(dns::RdataToText(r.type, r.rdata));
  }
  return out;
}

// The RCODE of a TSIG-signed SOA query over UDP; -1 when no answer came or a NOERROR answer's TSIG
// does not verify with `key`.
int SignedSoaRcode(uint16_t port, const std::string& zone, const dns::TsigKey& key) {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  auto q = dns::testing::MakeQuery(zone, 6);
  dns::TsigSigner signer(key, "");
  uint64_t now = static_cast<uint64_t>(::time(nullptr));
  signer.Sign(q, now);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  std::vector<uint8_t> buf(4096);
  ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
  ::close(fd);
  if (n < 12) return -1;
  buf.resize(static_cast<size_t>(n));
  int rcode = buf[3] & 0x0f;
  if (rcode == 0 && !signer.Verify(buf, now).ok()) return -1;
  return rcode;
}

// Polls until SignedSoaRcode gives `want` (at most 10 s: a generous bound, not a timing assertion).
bool EventuallyRcode(uint16_t port, const std::string& zone, const dns::TsigKey& key, int want) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (SignedSoaRcode(port, zone, key) == want) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// kdig's answer lines for a transfer (`type` "AXFR" or "IXFR=<serial>") over TCP.
std::vector<std::string> Kdig(uint16_t port, const std::string& zone, const std::string& type) {
  std::string cmd = "kdig @127.0.0.1 -p " + std::to_string(port) + " -t " + type + " " + zone +
                    " +noall +answer +nottl +noclass 2>&1";
  std::vector<std::string> lines;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return lines;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), f) != nullptr) {
    std::string l(buf);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    if (!l.empty() && l[0] != ';') lines.push_back(l);
  }
  ::pclose(f);
  return lines;
}

size_t CountContaining(const std::vector<std::string>& lines, const std::string& what) {
  size_t n = 0;
  for (const auto& l : lines) n += l.find(what) != std::string::npos;
  return n;
}

// Polls until the server answers `want` (at most 10 s: a generous bound, not a timing assertion).
bool Eventually(uint16_t port, const std::string& name, uint16_t qtype,
                const std::vector<std::string>& want) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Ask(port, name, qtype) == want) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

class DnsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 4});
    ASSERT_TRUE(pool.ok());
    pool_ = std::move(*pool);
    service_ = NewDnsService();
    ASSERT_TRUE(db::Migrator("dns", service_->Migrations()).Apply(*pool_).ok());
    dir_ = std::filesystem::temp_directory_path() / ("dns-service-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    service_->DeclareConfig(schema_);
    // The http.* keys the govern binary declares (src/cli/keys.cc), which the zone API's server reads.
    using config::Type;
    schema_.Add({.key = "http.workers", .type = Type::kInt, .default_value = "1"});
    for (const char* k : {"http.max_header_bytes", "http.max_body_bytes"})
      schema_.Add({.key = k, .type = Type::kBytes, .default_value = "1MiB"});
    for (const char* k :
         {"http.header_timeout", "http.body_timeout", "http.idle_timeout", "http.drain_timeout"})
      schema_.Add({.key = k, .type = Type::kDuration, .default_value = "10s"});
    schema_.Add({.key = "http.max_connections", .type = Type::kInt, .default_value = "100"});
    schema_.Add({.key = "http.tls_cert", .type = Type::kString, .default_value = ""});
    schema_.Add({.key = "http.tls_key", .type = Type::kString, .default_value = ""});
    LoadConfig({});
    auto key = crypto::Aes256GcmKey::Generate();
    store_ =
        std::make_unique<Store>(pool_.get(), std::make_shared<const crypto::Aes256GcmKey>(std::move(*key)));
  }
  void LoadConfig(std::vector<std::pair<std::string, std::string>> extra) {
    config::LoadOptions lo;
    lo.flags = {{"dns.listen", "127.0.0.1:0"}};
    for (auto& e : extra) lo.flags.push_back(std::move(e));
    auto cfg = config::Config::Load(schema_, lo);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    config_ = std::make_unique<config::Config>(std::move(*cfg));
  }
  std::string ApiBase() const {
    for (const auto& e : service_->Endpoints())
      if (e.protocol == "http") return "http://" + e.address;
    return "";
  }
  void TearDown() override {
    if (service_) service_->Stop();
    std::filesystem::remove_all(dir_);
  }
  uint16_t StartService() {
    services::Context ctx;
    ctx.config = config_.get();
    ctx.clock = &Clock::Real();
    ctx.db = pool_.get();
    ctx.data_dir = dir_.string();
    Status s = service_->Start(ctx);
    EXPECT_TRUE(s.ok()) << s.message();
    for (const auto& e : service_->Endpoints()) {
      if (e.protocol == "dns/udp")
        return static_cast<uint16_t>(std::stoi(e.address.substr(e.address.rfind(':') + 1)));
    }
    ADD_FAILURE() << "no dns/udp endpoint";
    return 0;
  }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  config::Schema schema_;
  std::unique_ptr<config::Config> config_;
  std::filesystem::path dir_;
  std::unique_ptr<services::Service> service_;
  std::unique_ptr<Store> store_;
};

TEST_F(DnsServiceTest, LoadsAtStartAndFollowsChanges) {
  ASSERT_TRUE(store_->CreateZone({.name = "a.test"}).ok());
  ASSERT_TRUE(store_->ReplaceRRset("a.test", "www", "A", 300, {"192.0.2.1"}).ok());
  uint16_t port = StartService();
  ASSERT_NE(port, 0);
  EXPECT_EQ(Ask(port, "www.a.test.", 1), std::vector<std::string>{"192.0.2.1"});  // loaded at start
  EXPECT_TRUE(Ask(port, "www.b.test.", 1).empty());
  ASSERT_TRUE(store_->CreateZone({.name = "b.test"}).ok());
  ASSERT_TRUE(store_->ReplaceRRset("b.test", "www", "A", 300, {"192.0.2.2"}).ok());
  EXPECT_TRUE(Eventually(port, "www.b.test.", 1, {"192.0.2.2"}));
  for (int i = 1; i <= 20; ++i) {
    std::string ip = "198.51.100." + std::to_string(i);
    ASSERT_TRUE(store_->ReplaceRRset("a.test", "www", "A", 300, {ip}).ok());
    EXPECT_TRUE(Eventually(port, "www.a.test.", 1, {ip})) << ip;
  }
  EXPECT_EQ(Ask(port, "www.b.test.", 1), std::vector<std::string>{"192.0.2.2"});  // the other zone kept
  ASSERT_TRUE(store_->DeleteZone("b.test").ok());
  EXPECT_TRUE(Eventually(port, "www.b.test.", 1, {}));
}

TEST_F(DnsServiceTest, ReloadsEverythingAfterTheListenConnectionIsCut) {
  ASSERT_TRUE(store_->CreateZone({.name = "a.test"}).ok());
  uint16_t port = StartService();
  ASSERT_NE(port, 0);
  auto admin = db::Connection::Connect(db_->conninfo());
  ASSERT_TRUE(admin.ok());
  for (int round = 1; round <= 3; ++round) {
    auto killed = (*admin)->Exec(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()");
    ASSERT_TRUE(killed.ok()) << killed.status().message();
    EXPECT_EQ(*killed->Int64(0, 0), 1) << "round " << round;
    // Changed while the listener may be down: the reload after the reconnect must bring it in.
    std::string ip = "203.0.113." + std::to_string(round);
    ASSERT_TRUE(store_->ReplaceRRset("a.test", "r", "A", 300, {ip}).ok());
    EXPECT_TRUE(Eventually(port, "r.a.test.", 1, {ip})) << ip;
  }
}

// The zone API with gvd_ keys beside the admin token: write keys change zones, read keys only read,
// key management needs the admin token, a revoked key stops working at once in this process.
TEST_F(DnsServiceTest, ApiKeysByScope) {
  LoadConfig({{"dns.api_token", "admin-secret"}, {"dns.api_listen", "127.0.0.1:0"}});
  ASSERT_NE(StartService(), 0);
  std::string base = ApiBase();
  ASSERT_FALSE(base.empty());
  net::HttpClient http;
  auto call = [&](net::Method m, const std::string& path, const std::string& bearer, std::string body = "") {
    net::ClientRequest r;
    r.method = m;
    r.url = base + path;
    if (!bearer.empty()) r.headers.Set("Authorization", "Bearer " + bearer);
    r.body = std::move(body);
    auto resp = http.Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().message();
    return resp.ok() ? *resp : net::ClientResponse{};
  };
  auto make_key = [&](const std::string& scope) {
    auto r = call(net::Method::kPost, "/v1/dns/keys", "admin-secret",
                  R"({"org":"acme","scope":")" + scope + R"(","name":"t"})");
    EXPECT_EQ(r.status, 201) << r.body;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() ? j.value("key", std::string()) : std::string();
  };
  std::string writer = make_key("write"), reader = make_key("read");
  ASSERT_TRUE(writer.starts_with("gvd_")) << writer;
  ASSERT_TRUE(reader.starts_with("gvd_")) << reader;
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/keys", "admin-secret", R"({"scope":"owner"})").status, 400);
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/zones", writer, R"({"name":"k.test"})").status, 201);
  EXPECT_EQ(call(net::Method::kPut, "/v1/dns/zones/k.test/rrsets/www/A", writer, R"({"rdata":["192.0.2.7"]})")
                .status,
            204);
  EXPECT_EQ(call(net::Method::kPut, "/v1/dns/zones/k.test/rrsets/www/A", reader, R"({"rdata":["192.0.2.8"]})")
                .status,
            403);
  auto listed = call(net::Method::kGet, "/v1/dns/zones/k.test/records", reader);
  EXPECT_EQ(listed.status, 200);
  EXPECT_NE(listed.body.find("192.0.2.7"), std::string::npos) << listed.body;
  EXPECT_EQ(call(net::Method::kGet, "/v1/dns/zones", "").status, 401);
  EXPECT_EQ(call(net::Method::kGet, "/v1/dns/zones", "gvd_aaaaaaaaaaaa_" + std::string(64, '0')).status, 401);
  EXPECT_EQ(call(net::Method::kGet, "/v1/dns/keys", writer).status, 401);  // keys: admin token only
  auto keys = call(net::Method::kGet, "/v1/dns/keys", "admin-secret");
  EXPECT_EQ(keys.status, 200);
  auto kj = nlohmann::json::parse(keys.body, nullptr, false);
  ASSERT_TRUE(kj.is_object());
  ASSERT_EQ(kj["keys"].size(), 2u);
  EXPECT_EQ(keys.body.find(writer.substr(18)), std::string::npos);  // no secrets listed
  std::string reader_id = reader.substr(4, 12);
  EXPECT_EQ(call(net::Method::kDelete, "/v1/dns/keys/" + reader_id, "admin-secret").status, 204);
  EXPECT_EQ(call(net::Method::kGet, "/v1/dns/zones", reader).status, 401);
  EXPECT_EQ(call(net::Method::kGet, "/v1/dns/zones", writer).status, 200);
}

// Zones belong to an organisation: a gvd_ key sees and changes only its own org's zones (others' are
// 404, as if absent), makes zones for its own org; the admin token reaches every zone and names the org.
TEST_F(DnsServiceTest, KeysReachOnlyTheirOrganisationsZones) {
  LoadConfig({{"dns.api_token", "admin-secret"}, {"dns.api_listen", "127.0.0.1:0"}});
  uint16_t port = StartService();
  ASSERT_NE(port, 0);
  std::string base = ApiBase();
  net::HttpClient http;
  auto call = [&](net::Method m, const std::string& path, const std::string& bearer, std::string body = "") {
    net::ClientRequest r;
    r.method = m;
    r.url = base + path;
    r.headers.Set("Authorization", "Bearer " + bearer);
    r.body = std::move(body);
    auto resp = http.Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().message();
    return resp.ok() ? *resp : net::ClientResponse{};
  };
  auto make_key = [&](const std::string& org, const std::string& scope) {
    auto r = call(net::Method::kPost, "/v1/dns/keys", "admin-secret",
                  R"({"org":")" + org + R"(","scope":")" + scope + R"(","name":"t"})");
    EXPECT_EQ(r.status, 201) << r.body;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() ? j.value("key", std::string()) : std::string();
  };
  std::string acme = make_key("acme", "write"), acme_read = make_key("acme", "read"),
              globex = make_key("globex", "write");
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/zones", acme, R"({"name":"acme.test"})").status, 201);
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/zones", acme, R"({"name":"x.test","org":"globex"})").status,
            400);
  EXPECT_EQ(
      call(net::Method::kPost, "/v1/dns/zones", "admin-secret", R"({"name":"globex.test","org":"globex"})")
          .status,
      201);
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/zones", "admin-secret", R"({"name":"y.test","org":"Bad Org"})")
                .status,
            400);
  // globex's key cannot see or touch acme's zone: every zone route answers 404.
  const std::string a = "/v1/dns/zones/acme.test";
  EXPECT_EQ(call(net::Method::kGet, a + "/records", globex).status, 404);
  EXPECT_EQ(call(net::Method::kGet, a + "/file", globex).status, 404);
  EXPECT_EQ(call(net::Method::kGet, a + "/ds", globex).status, 404);
  EXPECT_EQ(call(net::Method::kPut, a + "/rrsets/www/A", globex, R"({"rdata":["192.0.2.66"]})").status, 404);
  EXPECT_EQ(call(net::Method::kDelete, a + "/rrsets/@/NS", globex).status, 404);
  EXPECT_EQ(call(net::Method::kPost, a + "/file", globex,
                 "@ 300 IN SOA ns1.acme.test. h.acme.test. 9 1 1 1 1\n@ 300 IN NS ns1.acme.test.\n")
                .status,
            404);
  EXPECT_EQ(call(net::Method::kDelete, a, globex).status, 404);
  EXPECT_EQ(call(net::Method::kPut, a + "/rrsets/www/A", acme, R"({"rdata":["192.0.2.1"]})").status, 204);
  EXPECT_TRUE(Eventually(port, "www.acme.test.", 1, {"192.0.2.1"}));  // globex's attempts changed nothing
  EXPECT_EQ(call(net::Method::kGet, a + "/records", acme_read).status, 200);
  auto names = [&](const std::string& bearer) {
    auto r = call(net::Method::kGet, "/v1/dns/zones", bearer);
    std::vector<std::string> out;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_object())
      for (const auto& z : j["zones"]) out.push_back(z.value("name", "") + "@" + z.value("org", ""));
    return out;
  };
  EXPECT_EQ(names(acme), std::vector<std::string>{"acme.test.@acme"});
  EXPECT_EQ(names(globex), std::vector<std::string>{"globex.test.@globex"});
  EXPECT_EQ(names("admin-secret"), (std::vector<std::string>{"acme.test.@acme", "globex.test.@globex"}));
  // The admin token manages every org's zones.
  EXPECT_EQ(call(net::Method::kPut, a + "/rrsets/www/A", "admin-secret", R"({"rdata":["192.0.2.2"]})").status,
            204);
  EXPECT_EQ(call(net::Method::kDelete, "/v1/dns/zones/globex.test", "admin-secret").status, 204);
  EXPECT_EQ(call(net::Method::kDelete, a, acme).status, 204);
}

// TSIG keys through the API: made with a secret shown once, listed without it, used by the running
// server without a restart (NOTIFY), refused again once deleted; configured keys keep working beside.
TEST_F(DnsServiceTest, TsigKeysThroughTheApiApplyWithoutRestart) {
  const std::string cfg_text = "cfg-key:hmac-sha256:" + std::string(43, 'A') + "=";
  LoadConfig({{"dns.api_token", "admin-secret"},
              {"dns.api_listen", "127.0.0.1:0"},
              {"dns.transfer.tsig_keys", cfg_text},
              {"dns.transfer.acl", "* 127.0.0.1 key=api-key."}});  // names a key made later
  ASSERT_TRUE(store_->CreateZone({.name = "t.test"}).ok());
  uint16_t port = StartService();
  ASSERT_NE(port, 0);
  std::string base = ApiBase();
  net::HttpClient http;
  auto call = [&](net::Method m, const std::string& path, std::string body = "") {
    net::ClientRequest r;
    r.method = m;
    r.url = base + path;
    r.headers.Set("Authorization", "Bearer admin-secret");
    r.body = std::move(body);
    auto resp = http.Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().message();
    return resp.ok() ? *resp : net::ClientResponse{};
  };
  auto cfg = dns::TsigKey::FromText(cfg_text);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(SignedSoaRcode(port, "t.test.", *cfg), 0);  // the configured key works
  // A key the server does not know yet: BADKEY (NOTAUTH).
  auto guess = dns::TsigKey::FromText("api-key:hmac-sha256:" + std::string(43, 'g') + "=");
  ASSERT_TRUE(guess.ok());
  EXPECT_EQ(SignedSoaRcode(port, "t.test.", *guess), 9);

  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/tsig-keys", R"({"name":"cfg-key"})").status, 409);
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/tsig-keys", R"({"name":"x","algorithm":"md5"})").status, 400);
  auto made =
      call(net::Method::kPost, "/v1/dns/tsig-keys", R"({"name":"API-Key","algorithm":"hmac-sha512"})");
  ASSERT_EQ(made.status, 201) << made.body;
  auto mj = nlohmann::json::parse(made.body, nullptr, false);
  ASSERT_TRUE(mj.is_object());
  std::string secret = mj.value("secret", "");
  EXPECT_EQ(mj.value("name", ""), "api-key.");
  EXPECT_EQ(call(net::Method::kPost, "/v1/dns/tsig-keys", R"({"name":"api-key"})").status, 409);
  auto key = dns::TsigKey::FromText(mj.value("key", ""));
  ASSERT_TRUE(key.ok()) << made.body;
  EXPECT_EQ(key->secret.size(), 64u);
  EXPECT_TRUE(EventuallyRcode(port, "t.test.", *key, 0));  // in use without a restart

  auto listed = call(net::Method::kGet, "/v1/dns/tsig-keys");
  EXPECT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body.find(secret), std::string::npos) << "a secret was listed";
  EXPECT_EQ(listed.body.find(std::string(43, 'A')), std::string::npos) << "a configured secret was listed";
  EXPECT_NE(listed.body.find("api-key."), std::string::npos) << listed.body;
  EXPECT_NE(listed.body.find("cfg-key."), std::string::npos) << listed.body;
  // The secret is sealed in the database, not stored as given.
  auto c = db::Connection::Connect(db_->conninfo());
  ASSERT_TRUE(c.ok());
  auto rows = (*c)->Exec("SELECT encode(secret_sealed, 'base64') FROM dns_tsig_keys");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1);
  EXPECT_EQ(std::string(rows->Text(0, 0)).find(secret.substr(0, 16)), std::string::npos);

  EXPECT_EQ(call(net::Method::kDelete, "/v1/dns/tsig-keys/api-key.").status, 204);
  EXPECT_EQ(call(net::Method::kDelete, "/v1/dns/tsig-keys/api-key.").status, 404);
  EXPECT_TRUE(EventuallyRcode(port, "t.test.", *key, 9));  // refused again, still no restart
  EXPECT_EQ(SignedSoaRcode(port, "t.test.", *cfg), 0);
}

// The transfer journal survives a restart: a version transferred before it is restored from
// PostgreSQL, so an IXFR from its serial after the restart and a further change is a difference (kdig
// as the judge), not a whole zone; the saved versions stay bounded by dns.transfer.journal_versions.
TEST_F(DnsServiceTest, IxfrStaysIncrementalAcrossARestart) {
  LoadConfig({{"dns.transfer.acl", "* 127.0.0.1"}, {"dns.transfer.journal_versions", "2"}});
  ASSERT_TRUE(store_->CreateZone({.name = "j.test"}).ok());
  ASSERT_TRUE(store_->ReplaceRRset("j.test", "www", "A", 300, {"192.0.2.1"}).ok());  // serial 2
  uint16_t port = StartService();
  ASSERT_NE(port, 0);
  auto axfr = Kdig(port, "j.test.", "AXFR");  // makes (and saves) the journal's version 2
  ASSERT_EQ(CountContaining(axfr, "192.0.2.1"), 1u) << ::testing::PrintToString(axfr);

  service_->Stop();
  service_ = NewDnsService();
  port = StartService();
  ASSERT_NE(port, 0);
  ASSERT_TRUE(store_->ReplaceRRset("j.test", "www", "A", 300, {"192.0.2.3"}).ok());  // serial 3
  ASSERT_TRUE(Eventually(port, "www.j.test.", 1, {"192.0.2.3"}));
  auto ixfr = Kdig(port, "j.test.", "IXFR=2");
  // Incremental (RFC 1995): SOA 3, SOA 2, the deleted A, SOA 3, the added A, SOA 3. A full answer
  // would be SOA, NS, A, SOA.
  EXPECT_EQ(CountContaining(ixfr, "\tSOA\t"), 4u) << ::testing::PrintToString(ixfr);
  EXPECT_EQ(CountContaining(ixfr, "\tNS\t"), 0u) << ::testing::PrintToString(ixfr);
  EXPECT_EQ(CountContaining(ixfr, "192.0.2.1"), 1u) << ::testing::PrintToString(ixfr);
  EXPECT_EQ(CountContaining(ixfr, "192.0.2.3"), 1u) << ::testing::PrintToString(ixfr);

  for (int i = 4; i <= 6; ++i) {  // more transferred versions: only the newest 2 stay saved
    ASSERT_TRUE(store_->ReplaceRRset("j.test", "www", "A", 300, {"192.0.2." + std::to_string(i)}).ok());
    ASSERT_TRUE(Eventually(port, "www.j.test.", 1, {"192.0.2." + std::to_string(i)}));
    ASSERT_FALSE(Kdig(port, "j.test.", "AXFR").empty());
  }
  auto c = db::Connection::Connect(db_->conninfo());
  ASSERT_TRUE(c.ok());
  auto rows = (*c)->Exec("SELECT serial FROM dns_journal ORDER BY serial");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2);
  EXPECT_EQ(*rows->Int64(0, 0), 5);
  EXPECT_EQ(*rows->Int64(1, 0), 6);
}

}  // namespace
}  // namespace govern::dns_service
