// `govern serve streams` (see service.h).
#include "services/streams/service.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "dlp/rule_set.h"
#include "net/http_client.h"
#include "services/http_config.h"
#include "streams/broker.h"
#include "streams/group_api.h"
#include "streams/reloader.h"
#include "streams/security.h"
#include "tokens/checker.h"
#include "tokens/trust_refresher.h"

namespace govern::streams_service {

namespace {

using config::Type;

class StreamsService final : public services::Service {
 public:
  std::string_view name() const override { return "streams"; }
  std::string_view summary() const override {
    return "Kafka-compatible broker: topics of partitions in segment logs, every produce on disk before it "
           "is "
           "acknowledged";
  }
  bool needs_database() const override { return false; }

  void DeclareConfig(config::Schema& s) const override {
    s.Add({.key = "streams.listen",
           .type = Type::kString,
           .default_value = "127.0.0.1:9092",
           .help = "TCP address of the Kafka protocol listener. Port 0 picks a free port.",
           .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add({.key = "streams.data_dir",
           .type = Type::kString,
           .default_value = "",
           .help = "Directory of the partition logs; empty: <data_dir>/streams."});
    s.Add({.key = "streams.advertised_host",
           .type = Type::kString,
           .default_value = "",
           .help = "Host name clients are told to connect to (Metadata); empty: the listen host."});
    s.Add({.key = "streams.default_partitions",
           .type = Type::kInt,
           .default_value = "1",
           .help = "Partitions of a topic created automatically or without a count.",
           .min = 1,
           .max = 10000});
    s.Add({.key = "streams.auto_create_topics",
           .type = Type::kBool,
           .default_value = "true",
           .help = "Create a topic when a client asks for its metadata and allows it."});
    s.Add({.key = "streams.segment_bytes",
           .type = Type::kBytes,
           .default_value = "1GiB",
           .help = "Size at which a partition starts a new segment file.",
           .min = 4096,
           .max = int64_t{4} << 30});
    s.Add({.key = "streams.retention_time",
           .type = Type::kDuration,
           .default_value = "0ms",
           .help = "Segments whose newest record is older than this are deleted (0: keep forever).",
           .min = 0});
    s.Add({.key = "streams.retention_bytes",
           .type = Type::kBytes,
           .default_value = "0",
           .help = "Per partition, oldest segments are deleted beyond this size (0: no limit).",
           .min = 0});
    s.Add({.key = "streams.max_request_bytes",
           .type = Type::kBytes,
           .default_value = "100MiB",
           .help = "Largest request frame; a larger one closes the connection.",
           .min = 1024,
           .max = int64_t{1} << 30});
    s.Add({.key = "streams.max_message_bytes",
           .type = Type::kBytes,
           .default_value = "1048588",
           .help = "Largest record batch accepted (MESSAGE_TOO_LARGE above).",
           .min = 1024,
           .max = int64_t{1} << 30});
    s.Add({.key = "streams.threads",
           .type = Type::kInt,
           .default_value = "2",
           .help = "Network threads.",
           .min = 1,
           .max = 256});
    s.Add({.key = "streams.sync_depth",
           .type = Type::kInt,
           .default_value = "1",
           .help = "Group-commit rounds that may fdatasync at once (docs/streams.md). 1 starts a round only "
                   "after the previous one ended; more can pay on a device whose flushes run in parallel "
                   "(NVMe), not on a journalled filesystem that serialises them (measured: 14 % fewer "
                   "records/s at 2 on ext4 here).",
           .min = 1,
           .max = 8});
    // The consumer-group coordinator (Kafka's group.* and offsets.* broker settings).
    s.Add({.key = "streams.groups.min_session_timeout",
           .type = Type::kDuration,
           .default_value = "6s",
           .help = "Shortest session timeout a member may ask for (group.min.session.timeout.ms).",
           .min = 1});
    s.Add({.key = "streams.groups.max_session_timeout",
           .type = Type::kDuration,
           .default_value = "30m",
           .help = "Longest session timeout a member may ask for (group.max.session.timeout.ms).",
           .min = 1,
           .max = INT32_MAX});
    s.Add({.key = "streams.groups.initial_rebalance_delay",
           .type = Type::kDuration,
           .default_value = "3s",
           .help = "The first rebalance of an empty group waits this long for more members.",
           .min = 0,
           .max = INT32_MAX});
    s.Add({.key = "streams.groups.max_size",
           .type = Type::kInt,
           .default_value = "1000",
           .help = "Most members in one group (GROUP_MAX_SIZE_REACHED beyond).",
           .min = 1,
           .max = 1000000});
    s.Add({.key = "streams.groups.offsets_retention",
           .type = Type::kDuration,
           .default_value = "168h",
           .help = "Committed offsets of a group without members expire this long after it emptied.",
           .min = 1});
    s.Add({.key = "streams.groups.offsets_retention_check_interval",
           .type = Type::kDuration,
           .default_value = "10m",
           .help = "How often expired offsets and empty groups are looked for.",
           .min = 1});
    s.Add({.key = "streams.groups.max_metadata_bytes",
           .type = Type::kBytes,
           .default_value = "4096",
           .help = "Longest metadata string of a committed offset (OFFSET_METADATA_TOO_LARGE beyond).",
           .min = 0,
           .max = 1 << 20});
    s.Add({.key = "streams.groups.allow_static_membership",
           .type = Type::kBool,
           .default_value = "true",
           .help = "Accept group.instance.id (static members, KIP-345)."});
    DeclareSecurityConfig(s);
  }

  // docs/streams-security.md.
  static void DeclareSecurityConfig(config::Schema& s) {
    s.Add({.key = "streams.auth.mode",
           .type = Type::kString,
           .default_value = "open",
           .help = "open: unauthenticated clients act as User:ANONYMOUS (development); sasl: clients must "
                   "authenticate (SASL PLAIN or OAUTHBEARER) before anything but ApiVersions.",
           .validate = [](std::string_view v) {
             return v == "open" || v == "sasl" ? OkStatus() : InvalidArgument("want open or sasl");
           }});
    s.Add({.key = "streams.auth.users_file",
           .type = Type::kString,
           .default_value = "",
           .help = "SASL PLAIN users, one \"<name> <argon2id PHC | sha256:<salt hex>:<hash hex>>\" per line; "
                   "empty: PLAIN is not offered."});
    s.Add({.key = "streams.auth.issuer",
           .type = Type::kString,
           .default_value = "",
           .help =
               "Issuer of the Govern access tokens accepted with SASL OAUTHBEARER; when set, the keys and "
               "revocations are pulled from the auth service (streams.auth.trust_url)."});
    s.Add({.key = "streams.auth.trust_url",
           .type = Type::kString,
           .default_value = "",
           .help = "Base URL of the auth service for /.well-known/jwks.json and /oauth/revocations; empty: "
                   "the issuer."});
    s.Add({.key = "streams.auth.internal_ring_file",
           .type = Type::kString,
           .default_value = "",
           .help = "The auth service's internal key ring file (its auth.internal_ring_file), re-read every "
                   "period, so OAUTHBEARER accepts the default HS256 access tokens; empty: "
                   "<data_dir>/auth/internal-ring.json when that file exists at start (an auth service "
                   "on this machine), otherwise the pulled JWKS only."});
    s.Add({.key = "streams.auth.jwks_file",
           .type = Type::kString,
           .default_value = "",
           .help = "A JWKS file of trusted token keys (tests, air-gapped setups), beside or instead of the "
                   "pulled keys."});
    s.Add({.key = "streams.auth.audience",
           .type = Type::kString,
           .default_value = "govern:streams",
           .help = "The aud an OAUTHBEARER token must carry."});
    s.Add({.key = "streams.auth.max_session",
           .type = Type::kDuration,
           .default_value = "0ms",
           .help = "Longest SASL session before the client must re-authenticate (KIP-368); 0: PLAIN sessions "
                   "never end, token sessions end at the token's exp.",
           .min = 0});
    s.Add({.key = "streams.auth.acl_file",
           .type = Type::kString,
           .default_value = "",
           .help =
               "ACL rules (allow|deny User:<name> <operation> topic|group|cluster:<name>[*]); empty: every "
               "principal may do everything."});
    s.Add({.key = "streams.auth.reload_interval",
           .type = Type::kDuration,
           .default_value = "5s",
           .help = "How often the ACL and users files are checked for changes and reloaded (a file that does "
                   "not parse keeps the rules in place); 0: read only at start.",
           .min = 0});
    s.Add({.key = "streams.auth.super_users",
           .type = Type::kString,
           .default_value = "",
           .help = "Comma-separated principals (User:<name>) allowed everything regardless of ACLs."});
    s.Add({.key = "streams.screening.default",
           .type = Type::kString,
           .default_value = "off",
           .help =
               "DLP screening of record keys and values for topics not named in streams.screening.topics: "
               "off, flag (header govern-dlp) or block (POLICY_VIOLATION).",
           .validate = [](std::string_view v) { return streams::ParseScreenMode(v).status(); }});
    s.Add({.key = "streams.screening.topics",
           .type = Type::kString,
           .default_value = "",
           .help = "Per-topic screening: \"orders=block,pii-*=flag\" (exact names or prefixes ending in *).",
           .validate = [](std::string_view v) { return streams::ParseTopicModes(v).status(); }});
  }

  Status BuildSecurity(const config::Config& c, const std::string& data_dir, streams::BrokerOptions& o) {
    using namespace streams;
    SecurityOptions so;
    so.require_sasl = c.GetString("streams.auth.mode") == "sasl";
    std::shared_ptr<const UserStore> users;
    if (!c.GetString("streams.auth.users_file").empty()) {
      GOVERN_ASSIGN_OR_RETURN(users, UserStore::LoadFile(c.GetString("streams.auth.users_file")));
    }
    std::shared_ptr<const tokens::KeySet> file_keys;
    if (!c.GetString("streams.auth.jwks_file").empty()) {
      std::ifstream in(c.GetString("streams.auth.jwks_file"));
      if (!in) return NotFound("streams.auth.jwks_file cannot be read");
      std::stringstream ss;
      ss << in.rdbuf();
      GOVERN_ASSIGN_OR_RETURN(tokens::KeySet ks, tokens::KeySet::FromJwks(ss.str()));
      file_keys = std::make_shared<const tokens::KeySet>(std::move(ks));
    }
    std::string issuer = c.GetString("streams.auth.issuer");
    if (!issuer.empty() || file_keys) {
      checker_ = std::make_shared<tokens::Checker>(
          tokens::CheckerOptions{issuer}, file_keys ? file_keys : std::make_shared<const tokens::KeySet>());
      if (!issuer.empty()) {
        std::string base = c.GetString("streams.auth.trust_url");
        if (base.empty()) base = issuer;
        while (base.ends_with('/')) base.pop_back();
        std::string ring_file = c.GetString("streams.auth.internal_ring_file");
        if (ring_file.empty()) {
          std::string beside = data_dir + "/auth/internal-ring.json";
          if (std::error_code ec; std::filesystem::exists(beside, ec)) ring_file = beside;
        }
        http_ = std::make_unique<net::HttpClient>();
        refresher_ = std::make_unique<tokens::TrustRefresher>(
            tokens::TrustSources{.jwks_url = base + "/.well-known/jwks.json",
                                 .revocations_url = base + "/oauth/revocations",
                                 .local_keys = file_keys,
                                 .ring_file = ring_file},
            *checker_, *http_);
        // Not fatal: the broker serves PLAIN and retries the pull every period.
        if (Status rs = refresher_->RefreshOnce(); !rs.ok())
          log::Warn("streams", "token keys not pulled yet", {{"error", rs.ToString()}});
        refresher_->Start();
      }
    }
    std::shared_ptr<Authenticator> authenticator;
    if (users || checker_) {
      AuthenticatorOptions ao;
      ao.audience = c.GetString("streams.auth.audience");
      ao.max_session_ms = c.GetDuration("streams.auth.max_session").count();
      authenticator = std::make_shared<Authenticator>(ao, users, checker_);
      so.authenticator = authenticator;
    }
    if (so.require_sasl && !so.authenticator)
      return InvalidArgument(
          "streams.auth.mode=sasl needs streams.auth.users_file or a token issuer/jwks_file");
    std::vector<std::string> supers;
    for (std::string_view rest = c.GetString("streams.auth.super_users"); !rest.empty();) {
      size_t comma = rest.find(',');
      if (comma != 0) supers.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (!c.GetString("streams.auth.acl_file").empty()) {
      GOVERN_ASSIGN_OR_RETURN(so.authorizer,
                              Authorizer::LoadFile(c.GetString("streams.auth.acl_file"), supers));
    }
    ScreeningOptions sc;
    GOVERN_ASSIGN_OR_RETURN(sc.default_mode, ParseScreenMode(c.GetString("streams.screening.default")));
    GOVERN_ASSIGN_OR_RETURN(sc.topics, ParseTopicModes(c.GetString("streams.screening.topics")));
    if (sc.default_mode != ScreenMode::kOff || !sc.topics.empty()) {
      // Compiled once; the built-in detectors (docs/dlp.md).
      GOVERN_ASSIGN_OR_RETURN(auto rules, dlp::RuleSet::Compile({}));
      so.screener = std::make_shared<Screener>(std::move(sc), std::move(rules));
    }
    if (so.require_sasl || so.authenticator || so.authorizer || so.screener) {
      auto security = std::make_shared<Security>(std::move(so));
      o.security = security;
      auto interval = c.GetDuration("streams.auth.reload_interval");
      std::string acl_file = c.GetString("streams.auth.acl_file");
      std::string users_file = c.GetString("streams.auth.users_file");
      if (interval.count() > 0 && (!acl_file.empty() || !users_file.empty())) {
        reloader_ = std::make_unique<SecurityReloader>(
            ReloadOptions{.acl_file = acl_file,
                          .super_users = supers,
                          .users_file = users_file,
                          .period = std::chrono::duration_cast<std::chrono::milliseconds>(interval)},
            security, authenticator);
      }
    }
    return OkStatus();
  }

  Status Start(const services::Context& ctx) override {
    const config::Config& c = *ctx.config;
    GOVERN_ASSIGN_OR_RETURN(services::ListenAddress addr,
                            services::ParseListen(c.GetString("streams.listen")));
    streams::BrokerOptions o;
    o.listen_host = addr.host.empty() ? "0.0.0.0" : addr.host;
    o.listen_port = addr.port;
    o.data_dir = c.GetString("streams.data_dir");
    if (o.data_dir.empty()) o.data_dir = ctx.data_dir + "/streams";
    o.advertised_host = c.GetString("streams.advertised_host");
    o.default_partitions = static_cast<int32_t>(c.GetInt("streams.default_partitions"));
    o.auto_create_topics = c.GetBool("streams.auto_create_topics");
    o.log.segment_bytes = c.GetBytes("streams.segment_bytes");
    int64_t retention_ms = c.GetDuration("streams.retention_time").count();
    o.log.retention_ms = retention_ms > 0 ? retention_ms : -1;
    int64_t retention_bytes = c.GetBytes("streams.retention_bytes");
    o.log.retention_bytes = retention_bytes > 0 ? retention_bytes : -1;
    o.max_request_bytes = static_cast<size_t>(c.GetBytes("streams.max_request_bytes"));
    o.max_message_bytes = static_cast<size_t>(c.GetBytes("streams.max_message_bytes"));
    o.threads = static_cast<int>(c.GetInt("streams.threads"));
    o.sync_depth = static_cast<int>(c.GetInt("streams.sync_depth"));
    GOVERN_RETURN_IF_ERROR(BuildSecurity(c, ctx.data_dir, o));
    host_ = o.listen_host;
    broker_ = std::make_unique<streams::Broker>(o);
    streams::groups::CoordinatorOptions g;
    g.min_session_timeout_ms =
        static_cast<int32_t>(c.GetDuration("streams.groups.min_session_timeout").count());
    g.max_session_timeout_ms =
        static_cast<int32_t>(c.GetDuration("streams.groups.max_session_timeout").count());
    g.initial_rebalance_delay_ms =
        static_cast<int32_t>(c.GetDuration("streams.groups.initial_rebalance_delay").count());
    g.max_group_size = static_cast<int32_t>(c.GetInt("streams.groups.max_size"));
    g.offsets_retention_ms = c.GetDuration("streams.groups.offsets_retention").count();
    g.offsets_retention_check_interval_ms =
        c.GetDuration("streams.groups.offsets_retention_check_interval").count();
    g.max_metadata_bytes = static_cast<int32_t>(c.GetBytes("streams.groups.max_metadata_bytes"));
    g.allow_static_membership = c.GetBool("streams.groups.allow_static_membership");
    if (g.min_session_timeout_ms > g.max_session_timeout_ms)
      return InvalidArgument("streams.groups.min_session_timeout exceeds streams.groups.max_session_timeout");
    GOVERN_ASSIGN_OR_RETURN(groups_, streams::GroupApi::Attach(*broker_, g));
    Status started = broker_->Start();
    if (!started.ok()) {
      groups_.reset();
      broker_.reset();
      reloader_.reset();
      return started;
    }
    if (reloader_) reloader_->Start();
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!broker_) return {};
    return {{"streams", "kafka", services::FormatListen(host_, broker_->port())}};
  }

  void Stop() override {
    // Waiting joins are answered and commits made durable while their connections are still open.
    if (reloader_) reloader_->Stop();
    reloader_.reset();
    if (groups_) groups_->Shutdown();
    if (broker_) broker_->Stop();
    groups_.reset();
    broker_.reset();
    if (refresher_) refresher_->Stop();
    refresher_.reset();
    http_.reset();
    checker_.reset();
  }

 private:
  std::unique_ptr<streams::Broker> broker_;
  std::unique_ptr<streams::GroupApi> groups_;
  std::string host_;
  // OAUTHBEARER: the token checker and, with an issuer, what keeps its keys current.
  std::shared_ptr<tokens::Checker> checker_;
  std::unique_ptr<net::HttpClient> http_;
  std::unique_ptr<tokens::TrustRefresher> refresher_;
  // Re-reads the ACL and users files when they change (streams.auth.reload_interval).
  std::unique_ptr<streams::SecurityReloader> reloader_;
};

}  // namespace

std::unique_ptr<services::Service> NewStreamsService() { return std::make_unique<StreamsService>(); }

}  // namespace govern::streams_service
