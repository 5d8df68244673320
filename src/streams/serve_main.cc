// govern-streams-serve: one broker from flags, for the e2e tests and benchmarks until `govern serve
// streams` is wired (it runs the same Broker). Flags: --listen host:port --data-dir DIR
// [--partitions N] [--segment-bytes N] [--threads N] [--advertised-host H]
// [--group-initial-delay-ms N] [--group-min-session-ms N]. Serves the consumer-group APIs (GroupApi, offsets
// under <data-dir>/groups). Stops on SIGINT/SIGTERM.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/log.h"
#include "streams/broker.h"
#include "streams/group_api.h"

int main(int argc, char** argv) {
  govern::streams::BrokerOptions o;
  govern::streams::groups::CoordinatorOptions g;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--listen") {
      auto colon = v.rfind(':');
      o.listen_host = v.substr(0, colon);
      o.listen_port = static_cast<uint16_t>(std::atoi(v.c_str() + colon + 1));
    } else if (k == "--data-dir") {
      o.data_dir = v;
    } else if (k == "--partitions") {
      o.default_partitions = std::atoi(v.c_str());
    } else if (k == "--segment-bytes") {
      o.log.segment_bytes = std::atoll(v.c_str());
    } else if (k == "--threads") {
      o.threads = std::atoi(v.c_str());
    } else if (k == "--group-initial-delay-ms") {
      g.initial_rebalance_delay_ms = std::atoi(v.c_str());
    } else if (k == "--group-min-session-ms") {
      g.min_session_timeout_ms = std::atoi(v.c_str());
    } else if (k == "--advertised-host") {
      o.advertised_host = v;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  govern::streams::Broker broker(o);
  auto groups = govern::streams::GroupApi::Attach(broker, g);
  if (!groups.ok()) {
    std::fprintf(stderr, "%s\n", groups.status().ToString().c_str());
    return 1;
  }
  auto s = broker.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("listening %u\n", broker.port());
  std::fflush(stdout);
  int sig;
  sigwait(&set, &sig);
  uint64_t syncs = broker.syncs(), rounds = broker.sync_rounds();
  (*groups)->Shutdown();  // waiting joins answered, commits durable, while connections are open
  broker.Stop();
  std::fprintf(stderr, "syncs %llu rounds %llu\n", static_cast<unsigned long long>(syncs),
               static_cast<unsigned long long>(rounds));
  return 0;
}
