// Fixtures the gateway's tests share: the proxy served over a real socket with the usage records it
// writes kept for the test (ProxyFixture), and a fresh PostgreSQL database with the gateway's tables
// (PgFixture, for tests declared with FIXTURES pg). Tests only.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/gateway/schema.h"

namespace govern::gateway::testing {

// A proxy served over HTTP on 127.0.0.1 (members in this order: the server stops first).
struct ServedProxy {
  std::unique_ptr<Proxy> proxy;
  std::unique_ptr<net::Server> server;
  std::string url;
};

// Creates the proxy of `config` and serves it with `workers` event loops.
inline Result<ServedProxy> ServeProxy(ProxyConfig config, int workers) {
  ServedProxy p;
  GOVERN_ASSIGN_OR_RETURN(p.proxy, Proxy::Create(std::move(config)));
  net::Router router;
  p.proxy->Register(router);
  net::ServerConfig sc;
  sc.workers = workers;
  p.server = std::make_unique<net::Server>(sc, std::move(router));
  GOVERN_RETURN_IF_ERROR(p.server->Start());
  p.url = "http://127.0.0.1:" + std::to_string(p.server->port());
  return p;
}

// The proxy behind a net::Server on 127.0.0.1 (url_), a client for it, and every usage record.
class ProxyFixture : public ::testing::Test {
 protected:
  void TearDown() override { StopProxy(); }

  // Starts the proxy of `config` (its on_record keeps the records here) with `workers` event loops.
  void StartProxy(ProxyConfig config, int workers) {
    config.on_record = [this](const UsageRecord& r) {
      std::lock_guard lock(mu_);
      records_.push_back(r);
      cv_.notify_all();
    };
    auto served = ServeProxy(std::move(config), workers);
    ASSERT_TRUE(served.ok()) << served.status().ToString();
    proxy_ = std::move(served->proxy);
    server_ = std::move(served->server);
    url_ = std::move(served->url);
  }

  // The same from a routes file (ParseProxyConfig).
  void StartProxy(const nlohmann::json& routes_file, int workers) {
    auto config = ParseProxyConfig(routes_file.dump());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    StartProxy(std::move(*config), workers);
  }

  // The client's keep-alive connections go first (net::Server::Stop leaves a connection whose stream
  // ends during its drain open until drain_timeout), then the server, then the proxy.
  void StopProxy() {
    client_.reset();
    if (server_) server_->Stop();
    proxy_.reset();
  }

  // Waits for the n-th usage record (records are written just after the answer).
  UsageRecord WaitRecord(size_t n) {
    std::unique_lock lock(mu_);
    bool got = cv_.wait_for(lock, std::chrono::seconds(20), [&] { return records_.size() >= n; });
    EXPECT_TRUE(got) << "no usage record " << n;
    return got ? records_[n - 1] : UsageRecord{};
  }

  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<net::Server> server_;
  std::optional<net::HttpClient> client_{std::in_place};
  std::string url_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<UsageRecord> records_;
};

// A fresh database on ctest's shared PostgreSQL with the gateway's migrations applied, and a pool on it.
class PgFixture : public ::testing::Test {
 protected:
  void OpenDatabase(int pool_size) {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = pool_size});
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    auto applied = db::Migrator(kSchemaService, Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
};

}  // namespace govern::gateway::testing
