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
#include <thread>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "dns/testing.h"
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
    config::LoadOptions lo;
    lo.flags = {{"dns.listen", "127.0.0.1:0"}};
    auto cfg = config::Config::Load(schema_, lo);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    config_ = std::make_unique<config::Config>(std::move(*cfg));
    auto key = crypto::Aes256GcmKey::Generate();
    store_ =
        std::make_unique<Store>(pool_.get(), std::make_shared<const crypto::Aes256GcmKey>(std::move(*key)));
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

}  // namespace
}  // namespace govern::dns_service
