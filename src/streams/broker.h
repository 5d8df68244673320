// Broker: a single Kafka-compatible broker. It keeps topics of partitions (PartitionLog each, in
// <data_dir>/<topic>-<partition>/, one Syncer for the data directory), listens on TCP and serves the Kafka
// wire protocol: size-prefixed frames, request header v1/v2, responses in request order per connection
// (requests are pipelined), one handler per API key in a table.
//
// Implemented: ApiVersions 0..3, Metadata 0..6, Produce 0..7 (3..7 served), Fetch 0..11 (4..11 served,
// long polling woken by the high watermark), ListOffsets 0..3 (1..3 served), CreateTopics 0..4,
// DeleteTopics 0..1, InitProducerId 0..1. Every API advertises minimum version 0 (librdkafka turns
// features off otherwise); versions below the served range get UNSUPPORTED_VERSION in their own format.
// An ApiVersions request of a newer version than 3 is answered in the v0 format with UNSUPPORTED_VERSION
// so the client steps down. Produce with acks 1 or -1 is answered only after its batches are fsync'd.
//
// Frames larger than max_request_bytes, unparsable headers or bodies, unknown API keys and versions
// above the advertised range close that connection; other connections are unaffected.
//
// More APIs plug in with RegisterApi before Start (the consumer-group APIs: group_api.h). Thread-safe after
// Start; Start and Stop from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "streams/messages.h"
#include "streams/partition_log.h"

namespace govern::streams {

class Security;  // streams/security.h
class Session;

struct BrokerOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 9092;  // 0 picks a free port (see Broker::port)
  std::string data_dir;
  std::string advertised_host;  // empty: listen_host
  int32_t node_id = 0;
  std::string cluster_id = "govern-streams";
  int32_t default_partitions = 1;
  bool auto_create_topics = true;
  LogOptions log;
  size_t max_request_bytes = 100 << 20;
  size_t max_message_bytes = 1048588;  // one batch, as Kafka's message.max.bytes
  int threads = 2;
  int64_t retention_check_ms = 5 * 60 * 1000;
  size_t max_inflight_per_connection = 128;
  // Group-commit rounds of the data directory that may sync at once (streams/syncer.h); 1 (the default)
  // starts a round only after the previous one ended.
  int sync_depth = Syncer::kDefaultDepth;
  // SASL, ACLs and screening (streams/security.h); null: open listener, everything allowed, no screening.
  std::shared_ptr<const Security> security;
};

// One request as the handler sees it: the parsed header, whose views point into `frame`; a handler that
// answers later keeps `frame` alive.
struct Request {
  RequestHeader header;
  std::shared_ptr<const std::string> frame;
  std::string client_host;  // the peer's IP address
  // The connection's authentication state (principal for Security::Allowed); never null.
  std::shared_ptr<Session> session;
};

// What a handler answers: a response body (the broker adds the size, correlation id and header tags), no
// response at all (Produce with acks 0), or closing the connection (an unparsable request).
struct Reply {
  enum class Kind { kSend, kNone, kClose };
  Kind kind = Kind::kSend;
  std::string body;
  static Reply Send(std::string body) { return {Kind::kSend, std::move(body)}; }
  static Reply None() { return {Kind::kNone, {}}; }
  static Reply Close() { return {Kind::kClose, {}}; }
};

// Called exactly once per request, from any thread.
using Respond = std::function<void(Reply)>;

struct ApiSpec {
  int16_t min_version = 0;                  // advertised minimum
  int16_t max_version = 0;                  // advertised maximum; higher versions close the connection
  int16_t first_flexible_version = 0x7fff;  // request header v2 / response header v1 from here
  std::function<void(const Request&, Respond)> handler;
  // Read no further request from the connection until this one is answered (Kafka does so for every
  // request; here only for those that may wait long, such as JoinGroup).
  bool pause_reading = false;
};

class Connection;

class Broker {
 public:
  explicit Broker(BrokerOptions options);
  ~Broker();  // Stop()
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Adds or replaces the handler of one API key. Only before Start.
  void RegisterApi(int16_t api_key, ApiSpec spec);
  // Called by DeleteTopics with the names it deleted, after they stopped being served and before their
  // files are removed; the answer waits for `done` (the group coordinator drops their committed offsets
  // durably). Until the files are gone the names are marked for deletion: CreateTopics answers
  // TOPIC_ALREADY_EXISTS and Metadata's auto-create LEADER_NOT_AVAILABLE for them, so a new topic never
  // opens the directories being removed. When `done` gets an error the topics are served again and
  // answered KAFKA_STORAGE_ERROR. A crash in between leaves the topics with their data and without
  // offsets, and the client, never answered, retries. Only before Start.
  using TopicsDeletedHook =
      std::function<void(std::vector<std::string> topics, std::function<void(Status)> done)>;
  void OnTopicsDeleted(TopicsDeletedHook hook);

  // Locks data_dir (FailedPrecondition when another broker holds it), opens every partition under it
  // (recovering each), binds and starts serving.
  Status Start();
  // Stops accepting, closes connections, waits for pending syncs, closes the logs.
  void Stop();

  uint16_t port() const;  // the bound port, after Start
  // As given, with advertised_host filled in (FindCoordinator answers with node_id, host and port()).
  const BrokerOptions& options() const;
  Status CreateTopic(const std::string& name, int32_t partitions);
  // The partition's log, or null. For tools and tests.
  std::shared_ptr<PartitionLog> Partition(const std::string& topic, int32_t partition) const;
  std::vector<std::string> Topics() const;
  uint64_t syncs() const;            // fdatasync calls so far
  uint64_t sync_rounds() const;      // group-commit rounds so far (each covers every waiting produce)
  Syncer::Stats sync_stats() const;  // with the produce's wait for durability and one sync's duration

 private:
  class Impl;
  friend class Connection;
  std::unique_ptr<Impl> impl_;
};

// Whether a topic name is legal: 1..249 characters of [a-zA-Z0-9._-], not "." or "..".
bool ValidTopicName(std::string_view name);

}  // namespace govern::streams
