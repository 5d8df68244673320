// gateway_proxy: the gateway's request path as a program of its own, for e2e tests and benchmarks
// that should not need the whole govern binary (`govern serve gateway` is the service). Prints
// "listening <host>:<port>" once serving; stops on SIGINT/SIGTERM. On SIGUSR1 it prints the gateway's
// own time per answered request since the last SIGUSR1 (Proxy::TakeWorkTimes) as one line:
// "work requests=N p50_us=.. p90_us=.. p99_us=.. max_us=.. mean_us=.." (bench/gateway/run reads it).
//   gateway_proxy --config FILE.json [--listen 127.0.0.1:0] [--workers N] [--upstream-threads N]
//                 [--reuse-port]
//                 [--set gateway.policy.bundle_file=... (governance keys)] [--budget-db CONNINFO]
//                 [--ship-kill-after-batches K]  (tests: SIGKILL itself after intake's 200 for the K-th
//                                                 usage batch, before the shipper's cursor moves)
// --reuse-port: every worker listens with SO_REUSEPORT (net::ServerConfig::reuse_port), so several
// gateway_proxy processes (each with its own wal_dir) can share one port and the kernel spreads the
// connections over them (bench/gateway/streams runs one process per core like nginx's workers).
// (the provider client's other settings are the config file's "upstream" object; governance keys are
// the service's gateway.auth.*, gateway.policy.*, gateway.budget.*; budgets need --budget-db; the config
// file's "ship" object sends the usage records to telemetry: usage_ship.h).
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "net/http_server.h"
#include "services/gateway/aws_credentials.h"
#include "services/gateway/governance_config.h"
#include "services/gateway/proxy.h"
#include "services/gateway/usage_ship.h"
#include "services/http_config.h"

int main(int argc, char** argv) {
  using namespace govern;
  std::string listen = "127.0.0.1:7770";
  std::string config_file;
  int workers = 1;
  int upstream_threads = 0;
  std::vector<std::pair<std::string, std::string>> sets;  // governance keys
  std::string budget_db;
  bool reuse_port = false;
  int ship_kill_after = 0;  // tests: SIGKILL itself after intake's 200 for this batch, before the cursor
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--listen") {
      listen = next();
    } else if (a == "--config") {
      config_file = next();
    } else if (a == "--workers") {
      workers = std::atoi(next().c_str());
    } else if (a == "--upstream-threads") {
      upstream_threads = std::atoi(next().c_str());
    } else if (a == "--reuse-port") {
      reuse_port = true;
    } else if (a == "--set") {
      std::string kv = next();
      size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--set needs key=value\n");
        return 2;
      }
      sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--budget-db") {
      budget_db = next();
    } else if (a == "--ship-kill-after-batches") {
      ship_kill_after = std::atoi(next().c_str());
    } else {
      std::fprintf(
          stderr,
          "usage: %s --config FILE [--listen HOST:PORT] [--workers N] [--upstream-threads N] [--reuse-port] "
          "[--set gateway.KEY=VALUE] [--budget-db CONNINFO] [--ship-kill-after-batches K]\n",
          argv[0]);
      return 2;
    }
  }
  std::ifstream in(config_file);
  if (!in) {
    std::fprintf(stderr, "cannot read --config %s\n", config_file.c_str());
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto config = gateway::ParseProxyConfig(text.str());
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 2;
  }
  if (upstream_threads > 0) config->upstream.threads = upstream_threads;
  auto ship = gateway::UsageShipOptionsFromJson(text.str());  // "ship": usage records to telemetry
  if (!ship.ok()) {
    std::fprintf(stderr, "%s\n", ship.status().ToString().c_str());
    return 2;
  }
  const std::string usage_dir = config->wal_dir;
  // A whole answer may take up to the provider header timeout, which answers 504 by itself.
  // Routes with retries and fallbacks can take several attempts.
  auto handler_timeout = std::max(config->upstream.header_timeout + config->upstream.connect_timeout * 2,
                                  gateway::LongestAnswerTime(*config)) +
                         std::chrono::seconds(5);
  auto addr = services::ParseListen(listen);
  if (!addr.ok()) {
    std::fprintf(stderr, "--listen: %s\n", addr.status().message().c_str());
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts, so they inherit it
  auto governance = gateway::StartGovernanceFromFlags(sets, text.str(), budget_db);
  if (!governance.ok()) {
    std::fprintf(stderr, "%s\n", governance.status().ToString().c_str());
    return 2;
  }
  config->governance = governance->governance;
  auto proxy = gateway::Proxy::Create(std::move(*config));
  if (!proxy.ok()) {
    std::fprintf(stderr, "%s\n", proxy.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<policy::WalEventShipper> shipper;
  if (*ship && ship_kill_after > 0) {
    (*ship)->after_send_probe = [ship_kill_after, batches = 0](uint64_t) mutable {
      if (++batches == ship_kill_after) ::kill(::getpid(), SIGKILL);
    };
  }
  if (*ship) {
    auto s = gateway::NewUsageShipper((*proxy)->usage_wal(), usage_dir, std::move(**ship));
    if (!s.ok() || usage_dir.empty()) {
      std::fprintf(stderr, "ship: %s\n", s.ok() ? "needs wal_dir" : s.status().ToString().c_str());
      return 1;
    }
    shipper = std::move(*s);
    shipper->Start();
  }
  net::Router router;
  (*proxy)->Register(router);
  net::ServerConfig sc;
  sc.address = addr->host.empty() ? "0.0.0.0" : addr->host;
  sc.port = addr->port;
  sc.workers = workers;
  sc.reuse_port = reuse_port;
  sc.max_body_bytes = 32 * 1024 * 1024;
  sc.handler_timeout = handler_timeout;
  net::Server server(sc, std::move(router));
  if (Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("listening %s\n", services::FormatListen(sc.address, server.port()).c_str());
  std::fflush(stdout);
  int sig = 0;
  while (sigwait(&set, &sig) == 0 && sig == SIGUSR1) {
    gateway::WorkTimes w = (*proxy)->TakeWorkTimes();
    std::printf("work requests=%llu p50_us=%.2f p90_us=%.2f p99_us=%.2f max_us=%.2f mean_us=%.2f\n",
                static_cast<unsigned long long>(w.requests), w.p50_us, w.p90_us, w.p99_us, w.max_us,
                w.mean_us);
    std::fflush(stdout);
  }
  server.Stop();
  shipper.reset();  // before the proxy closes the WAL it reads
  proxy->reset();
  // No AWS credentials fetch may still run during static destruction.
  (void)gateway::AwsCredentialSource::AwaitRefreshThreads(std::chrono::steady_clock::now() +
                                                          std::chrono::seconds(10));
  return 0;
}
