// Service: what every Govern service implements so that `govern up` and `govern serve` can run it.
//
// The life of a service: DeclareConfig (at start, into the one schema), Migrations (applied under an
// advisory lock before Start), Start (bind listeners, start threads; returns once serving), Endpoints
// (printed by `govern up`), Stop (graceful: finish in-flight work, then return). Start and Stop are
// called from the main thread only; a service is otherwise free to use its own threads.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "config/config.h"
#include "db/migrator.h"

namespace govern::db {
class Pool;
}  // namespace govern::db
namespace govern::net {
class Admission;
}  // namespace govern::net

namespace govern::services {

// Where a service listens, as printed by `govern up`.
struct Endpoint {
  std::string service;   // "admin"
  std::string protocol;  // "http", "dns/udp", "kafka"
  std::string address;   // "127.0.0.1:7700"
};

// Every endpoint of this process. Written by the runner as services start, read by the admin service's
// HTTP threads meanwhile: thread-safe.
class EndpointList {
 public:
  void Add(Endpoint e) {
    std::lock_guard<std::mutex> lock(mu_);
    endpoints_.push_back(std::move(e));
  }
  std::vector<Endpoint> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return endpoints_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Endpoint> endpoints_;
};

// What a service is given at Start. Everything outlives the service.
struct Context {
  const config::Config* config = nullptr;
  const Clock* clock = nullptr;
  db::Pool* db = nullptr;               // shared pool on the configured or private PostgreSQL; null
                                        // when no running service needs_database()
  net::Admission* admission = nullptr;  // load shedding for every HTTP route
  std::string data_dir;                 // the service may use <data_dir>/<name>/
  std::string version;
  // Names and endpoints of every service running in this process (for the admin service).
  const EndpointList* running = nullptr;
};

class Service {
 public:
  virtual ~Service() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // Declares this service's configuration keys, each under "<name>.".
  virtual void DeclareConfig(config::Schema& schema) const = 0;
  // Versioned SQL this service needs, applied before Start. Empty when it keeps no tables.
  virtual std::vector<db::Migration> Migrations() const { return {}; }
  // Whether Start needs Context::db. When no selected service does, the runner neither opens the
  // configured database nor starts the private cluster, and Context::db is null.
  virtual bool needs_database() const { return true; }
  // The same question with the configuration at hand, for a service that needs PostgreSQL only for
  // some settings (the gateway: only with budgets). The runner asks this one.
  virtual bool needs_database_for(const config::Config& config) const {
    (void)config;
    return needs_database();
  }
  virtual Status Start(const Context& ctx) = 0;
  virtual std::vector<Endpoint> Endpoints() const = 0;
  // SIGHUP: re-read what the service can change without a restart (the gateway's routes file). Called
  // from the main thread between Start and Stop; the default does nothing.
  virtual void Reload() {}
  // Also called after a Start that failed part way: must be safe then, and release what Start took.
  virtual void Stop() = 0;
};

struct Registration {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Service> (*make)();
  // Whether `govern up` starts it when up.services is empty; tools for tests (the model stub) say false
  // and run only when named.
  bool in_up = true;
};

// Every service this binary holds, in start order.
const std::vector<Registration>& Registry();

}  // namespace govern::services
