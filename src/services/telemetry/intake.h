// Intake: the HTTP routes that take telemetry in and acknowledge it only once it is on disk.
//
//   POST /v1/logs    OTLP/HTTP logs, application/x-protobuf or application/json; the reply mirrors the
//                    request's encoding: an empty ExportLogsServiceResponse (`{}` in JSON) on success,
//                    its partial_success {rejected_log_records, error_message} when records were
//                    unusable, a google.rpc.Status body on every error.
//   POST /v1/events  Govern NDJSON (application/x-ndjson): 200 {"accepted": n, "ids": [...]} with the
//                    ids in input order; errors are problem+json naming the line.
//
// Every request carries `Authorization: Bearer <ingest key>`; the key's organisation becomes the
// organisation of every event (KeyCache, so no database round trip per request). Then, in order:
// the ingest-lag bound (429 + Retry-After when the oldest accepted-but-unstored batch is older than
// max_ingest_lag), the content type (415), Content-Encoding gzip (inflated under max_batch_bytes, else
// 413), decoding (400), AssignMissingIds, receive time for events without one (after the ids, so a
// retried batch keeps its ids), a split into WAL records under the WAL's record limit, and one
// all-or-nothing AppendBatchAsync. The reply is sent only from the append's completion: 200 once the
// records are fdatasync'd; 503 + Retry-After when the disk is full or the WAL's queue is; nothing is
// ever acknowledged that is not durable, and nothing is dropped silently.
//
// Thread-safety: handlers run on the server's event loops and on the KeyCache's threads; Intake holds
// no mutable state besides atomic counters. It must outlive the Server it is routed from, the KeyCache
// and the Log's pending callbacks (the service stops them in that order).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "net/metrics.h"
#include "net/router.h"
#include "services/telemetry/event.h"
#include "storage/wal.h"

namespace govern::service_keys {
class KeyCache;
}  // namespace govern::service_keys

namespace govern::telemetry {

struct IntakeOptions {
  size_t max_batch_bytes = 4u << 20;  // request body, and again after gzip inflation
  size_t max_batch_events = 10000;
  std::chrono::milliseconds max_ingest_lag{30000};
  size_t max_record_bytes = 16u << 20;  // the WAL's Options::max_record_size
  wal::Durability durability = wal::Durability::kSync;
  // Retry-After seconds for each kind of refusal.
  int retry_after_lag_seconds = 2;
  int retry_after_busy_seconds = 1;  // WAL queue full, key store unavailable
  int retry_after_disk_full_seconds = 5;
};

struct IntakeDeps {
  wal::Log* log = nullptr;
  service_keys::KeyCache* keys = nullptr;  // on IngestKeys() (api_keys.h)
  const Clock* clock = nullptr;  // nullptr: Clock::Real()
  // The receive time (unix nanoseconds) of the oldest batch accepted but not yet stored by ingest;
  // 0 when ingest has caught up. Called once per request on an event loop: must be cheap and must not
  // block (an atomic read). Empty: always caught up.
  std::function<int64_t()> oldest_unstored_received_ns;
  net::MetricsRegistry* metrics = nullptr;  // nullptr: counters kept privately
};

class Intake {
 public:
  Intake(IntakeOptions options, IntakeDeps deps);
  ~Intake();
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  // Adds POST /v1/logs and POST /v1/events (body limit max_batch_bytes).
  void AddRoutes(net::Router& router);

  struct Stats {
    uint64_t events_accepted = 0;
    uint64_t batches_accepted = 0;
    uint64_t records_rejected = 0;  // OTLP partial success
    uint64_t requests_refused = 0;  // any 4xx/5xx
  };
  Stats GetStats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Inflates a gzip body (RFC 1952; concatenated members too). ResourceExhausted when the output would
// pass `limit` bytes (a zip bomb stops there, not at the end), InvalidArgument when it is not gzip.
Result<std::string> InflateGzip(std::string_view body, size_t limit);

// Encodes `events` as WAL records (record.h), each at most `max_record_bytes`, in order. InvalidArgument
// when one event alone does not fit.
Result<std::vector<std::string>> SplitIntoRecords(std::span<const Event> events, int64_t received_unix_nanos,
                                                  size_t max_record_bytes);

}  // namespace govern::telemetry
