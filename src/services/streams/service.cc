// `govern serve streams` (see service.h).
#include "services/streams/service.h"

#include "base/log.h"
#include "services/http_config.h"
#include "streams/broker.h"
#include "streams/group_api.h"

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
      return started;
    }
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!broker_) return {};
    return {{"streams", "kafka", services::FormatListen(host_, broker_->port())}};
  }

  void Stop() override {
    // Waiting joins are answered and commits made durable while their connections are still open.
    if (groups_) groups_->Shutdown();
    if (broker_) broker_->Stop();
    groups_.reset();
    broker_.reset();
  }

 private:
  std::unique_ptr<streams::Broker> broker_;
  std::unique_ptr<streams::GroupApi> groups_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewStreamsService() { return std::make_unique<StreamsService>(); }

}  // namespace govern::streams_service
