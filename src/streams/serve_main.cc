// govern-streams-serve: one broker from flags, for the e2e tests and benchmarks until `govern serve
// streams` is wired (it runs the same Broker). Flags: --listen host:port --data-dir DIR
// [--partitions N] [--segment-bytes N] [--threads N] [--advertised-host H] [--sync-depth N] (group-commit
// rounds syncing at once; 1: one at a time)
// [--group-initial-delay-ms N] [--group-min-session-ms N]. Serves the consumer-group APIs (GroupApi, offsets
// under <data-dir>/groups).
// Security (docs/streams-security.md): [--require-sasl true] [--users-file F] [--jwks-file F --issuer ISS
// [--audience AUD]] [--acl-file F] [--super-users User:a,User:b] [--screening topic=mode,prefix*=mode]
// [--screening-default off|flag|block] [--reload-ms N] (poll the ACL and users files every N ms; 0: never).
// Stops on SIGINT/SIGTERM.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "base/log.h"
#include "dlp/rule_set.h"
#include "streams/broker.h"
#include "streams/group_api.h"
#include "streams/reloader.h"
#include "streams/security.h"
#include "tokens/checker.h"

namespace {

// Builds BrokerOptions::security from the security flags (null when none was given) and, with
// --reload-ms, the reloader of its files.
govern::Result<std::shared_ptr<govern::streams::Security>> BuildSecurity(
    const std::map<std::string, std::string>& f,
    std::unique_ptr<govern::streams::SecurityReloader>* reloader) {
  using namespace govern;
  using namespace govern::streams;
  if (f.empty()) return std::shared_ptr<Security>();
  auto get = [&](const char* k) {
    auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  };
  SecurityOptions so;
  so.require_sasl = get("--require-sasl") == "true";
  std::shared_ptr<const UserStore> users;
  if (!get("--users-file").empty()) {
    GOVERN_ASSIGN_OR_RETURN(users, UserStore::LoadFile(get("--users-file")));
  }
  std::shared_ptr<const tokens::Checker> checker;
  if (!get("--jwks-file").empty()) {
    std::ifstream in(get("--jwks-file"));
    std::stringstream ss;
    ss << in.rdbuf();
    GOVERN_ASSIGN_OR_RETURN(tokens::KeySet keys, tokens::KeySet::FromJwks(ss.str()));
    checker = std::make_shared<tokens::Checker>(tokens::CheckerOptions{get("--issuer")},
                                                std::make_shared<const tokens::KeySet>(std::move(keys)));
  }
  std::shared_ptr<Authenticator> authenticator;
  if (users || checker) {
    AuthenticatorOptions ao;
    if (!get("--audience").empty()) ao.audience = get("--audience");
    authenticator = std::make_shared<Authenticator>(ao, users, checker);
    so.authenticator = authenticator;
  }
  std::vector<std::string> supers;
  for (std::string_view rest = get("--super-users"); !rest.empty();) {
    size_t c = rest.find(',');
    supers.emplace_back(rest.substr(0, c));
    rest = c == std::string_view::npos ? std::string_view() : rest.substr(c + 1);
  }
  if (!get("--acl-file").empty()) {
    GOVERN_ASSIGN_OR_RETURN(so.authorizer, Authorizer::LoadFile(get("--acl-file"), supers));
  }
  if (!get("--screening").empty() || !get("--screening-default").empty()) {
    ScreeningOptions sc;
    GOVERN_ASSIGN_OR_RETURN(sc.topics, ParseTopicModes(get("--screening")));
    if (!get("--screening-default").empty()) {
      GOVERN_ASSIGN_OR_RETURN(sc.default_mode, ParseScreenMode(get("--screening-default")));
    }
    GOVERN_ASSIGN_OR_RETURN(auto rules, dlp::RuleSet::Compile({}));
    so.screener = std::make_shared<Screener>(std::move(sc), std::move(rules));
  }
  auto security = std::make_shared<Security>(std::move(so));
  if (int ms = std::atoi(get("--reload-ms").c_str()); ms > 0) {
    *reloader = std::make_unique<SecurityReloader>(ReloadOptions{.acl_file = get("--acl-file"),
                                                                 .super_users = supers,
                                                                 .users_file = get("--users-file"),
                                                                 .period = std::chrono::milliseconds(ms)},
                                                   security, authenticator);
  }
  return security;
}

}  // namespace

int main(int argc, char** argv) {
  govern::streams::BrokerOptions o;
  govern::streams::groups::CoordinatorOptions g;
  std::map<std::string, std::string> security_flags;
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
    } else if (k == "--sync-depth") {
      o.sync_depth = std::atoi(v.c_str());
    } else if (k == "--threads") {
      o.threads = std::atoi(v.c_str());
    } else if (k == "--group-initial-delay-ms") {
      g.initial_rebalance_delay_ms = std::atoi(v.c_str());
    } else if (k == "--group-min-session-ms") {
      g.min_session_timeout_ms = std::atoi(v.c_str());
    } else if (k == "--advertised-host") {
      o.advertised_host = v;
    } else if (k == "--require-sasl" || k == "--users-file" || k == "--jwks-file" || k == "--issuer" ||
               k == "--audience" || k == "--acl-file" || k == "--super-users" || k == "--screening" ||
               k == "--screening-default" || k == "--reload-ms") {
      security_flags[k] = v;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  std::unique_ptr<govern::streams::SecurityReloader> reloader;
  auto security = BuildSecurity(security_flags, &reloader);
  if (!security.ok()) {
    std::fprintf(stderr, "%s\n", security.status().ToString().c_str());
    return 2;
  }
  o.security = *security;
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
  if (reloader) reloader->Start();
  std::printf("listening %u\n", broker.port());
  std::fflush(stdout);
  int sig;
  sigwait(&set, &sig);
  govern::streams::Syncer::Stats st = broker.sync_stats();
  if (reloader) reloader->Stop();
  (*groups)->Shutdown();  // waiting joins answered, commits durable, while connections are open
  broker.Stop();
  // For bench/streams/run: what group commit cost, and how long a produce waited for durability.
  std::fprintf(stderr,
               "syncs %llu rounds %llu overlapped %llu; wait for durability p50 %.1f p99 %.1f max %.1f ms over "
               "%llu requests; one round p50 %.1f p99 %.1f max %.1f ms; one fdatasync p50 %.1f p99 %.1f max "
               "%.1f ms\n",
               static_cast<unsigned long long>(st.syncs), static_cast<unsigned long long>(st.rounds),
               static_cast<unsigned long long>(st.overlapped_rounds), st.wait_p50_ms, st.wait_p99_ms,
               st.wait_max_ms, static_cast<unsigned long long>(st.requests), st.round_p50_ms, st.round_p99_ms,
               st.round_max_ms, st.sync_p50_ms, st.sync_p99_ms, st.sync_max_ms);
  return 0;
}
