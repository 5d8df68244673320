// `govern streams` (see streams_cmd.h).
#include "cli/streams_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "streams/admin_client.h"

namespace govern::cli {

namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "govern streams: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

StreamsCommand::StreamsCommand(CLI::App& app) {
  streams_ = app.add_subcommand("streams", "The Kafka-compatible broker: topics, consumer groups, segments");
  streams_->require_subcommand(1);
  auto broker_opt = [this](CLI::App* sub) {
    sub->add_option("--broker", broker_, "HOST:PORT of the broker (default: from streams.listen)");
  };
  topics_ = streams_->add_subcommand("topics", "List topics with each partition's start and end offsets");
  broker_opt(topics_);
  groups_ = streams_->add_subcommand("groups", "List consumer groups; `groups describe GROUP` for details");
  broker_opt(groups_);
  describe_ = groups_->add_subcommand("describe", "A group's state, members, committed offsets and lag");
  describe_->add_option("group", group_, "The group id")->required();
  broker_opt(describe_);
  dump_ = streams_->add_subcommand("dump-segment",
                                   "Print the record batches of a segment file (offsets, epochs, producer "
                                   "ids, CRC status)");
  dump_
      ->add_option("file", file_, "A segment file, e.g. <data_dir>/streams/orders-0/00000000000000000000.log")
      ->required();
}

bool StreamsCommand::parsed() const { return streams_->parsed(); }

int StreamsCommand::Run(const config::Config& cfg) {
  if (dump_->parsed()) return DumpSegment();
  if (topics_->parsed()) return Topics(cfg);
  if (describe_->parsed()) return Describe(cfg);
  if (groups_->parsed()) return Groups(cfg);
  return 2;
}

std::string StreamsCommand::BrokerAddress(const config::Config& cfg) const {
  if (!broker_.empty()) return broker_;
  std::string listen = cfg.GetString("streams.listen");
  auto colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  std::string port = colon == std::string::npos ? listen : listen.substr(colon + 1);
  const std::string& advertised = cfg.GetString("streams.advertised_host");
  if (!advertised.empty()) host = advertised;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::" || host == "[::]") host = "[::1]";
  return host + ":" + port;
}

int StreamsCommand::Topics(const config::Config& cfg) {
  auto client = streams::AdminClient::Connect(BrokerAddress(cfg));
  if (!client.ok()) return Fail(client.status());
  auto topics = (*client)->Topics();
  if (!topics.ok()) return Fail(topics.status());
  std::printf("%-40s %9s %15s %15s %15s\n", "TOPIC", "PARTITION", "START", "END", "RECORDS");
  for (const auto& t : *topics) {
    for (const auto& p : t.partitions) {
      std::printf("%-40s %9d %15lld %15lld %15lld\n", t.name.c_str(), p.partition,
                  static_cast<long long>(p.log_start), static_cast<long long>(p.high_watermark),
                  static_cast<long long>(p.high_watermark - p.log_start));
    }
  }
  return 0;
}

int StreamsCommand::Groups(const config::Config& cfg) {
  auto client = streams::AdminClient::Connect(BrokerAddress(cfg));
  if (!client.ok()) return Fail(client.status());
  auto groups = (*client)->ListGroups();
  if (!groups.ok()) return Fail(groups.status());
  std::printf("%-40s %-12s %-20s %8s %12s\n", "GROUP", "TYPE", "STATE", "MEMBERS", "LAG");
  for (const auto& g : *groups) {
    auto d = (*client)->DescribeGroup(g.group_id);
    if (!d.ok()) return Fail(d.status());
    long long lag = 0;
    for (const auto& o : d->offsets)
      if (o.lag > 0) lag += o.lag;
    std::printf("%-40s %-12s %-20s %8zu %12lld\n", g.group_id.c_str(), g.protocol_type.c_str(),
                d->state.c_str(), d->members.size(), lag);
  }
  return 0;
}

int StreamsCommand::Describe(const config::Config& cfg) {
  auto client = streams::AdminClient::Connect(BrokerAddress(cfg));
  if (!client.ok()) return Fail(client.status());
  auto g = (*client)->DescribeGroup(group_);
  if (!g.ok()) return Fail(g.status());
  if (g->error != 0)
    return Fail(Unavailable("group " + group_ + ": Kafka error " + std::to_string(g->error)));
  if (g->state == "Dead" && g->offsets.empty()) return Fail(NotFound("no group " + group_));
  std::printf("group %s  state %s  protocol %s/%s  members %zu\n", g->group_id.c_str(), g->state.c_str(),
              g->protocol_type.c_str(), g->protocol.c_str(), g->members.size());
  for (const auto& m : g->members) {
    std::string assigned;
    for (const auto& [topic, p] : m.assigned)
      assigned += (assigned.empty() ? "" : " ") + topic + "-" + std::to_string(p);
    std::printf("  member %s  client %s  host %s  partitions %s\n", m.member_id.c_str(), m.client_id.c_str(),
                m.client_host.c_str(), assigned.empty() ? "-" : assigned.c_str());
  }
  std::printf("%-40s %9s %15s %15s %12s\n", "TOPIC", "PARTITION", "COMMITTED", "END", "LAG");
  for (const auto& o : g->offsets) {
    std::printf("%-40s %9d %15lld %15lld %12lld\n", o.topic.c_str(), o.partition,
                static_cast<long long>(o.committed), static_cast<long long>(o.end),
                static_cast<long long>(o.lag));
  }
  return 0;
}

int StreamsCommand::DumpSegment() {
  auto s = streams::DumpSegment(file_, std::cout);
  if (!s.ok()) return Fail(s.status());
  std::cout.flush();
  return s->bad_crc > 0 ? 1 : 0;
}

}  // namespace govern::cli
