// `govern serve streams` (see service.h).
#include "services/streams/service.h"

#include "base/log.h"
#include "services/http_config.h"
#include "streams/broker.h"

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
    GOVERN_RETURN_IF_ERROR(broker_->Start());
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!broker_) return {};
    return {{"streams", "kafka", services::FormatListen(host_, broker_->port())}};
  }

  void Stop() override {
    if (broker_) broker_->Stop();
    broker_.reset();
  }

 private:
  std::unique_ptr<streams::Broker> broker_;
  std::string host_;
};

}  // namespace

std::unique_ptr<services::Service> NewStreamsService() { return std::make_unique<StreamsService>(); }

}  // namespace govern::streams_service
