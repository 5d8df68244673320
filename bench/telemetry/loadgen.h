// telemetry_loadgen's engine: sends generator.h events to a telemetry intake over HTTP/1.1 keep-alive
// connections and records exactly which events were acknowledged.
//
// Each of `connections` threads owns one TCP connection and one Generator (stream = its index), and
// sends batches of `batch` events, paced to `rate` events/s in total (0: as fast as replies come). For
// every batch it first computes the ids the intake will give its events (it decodes its own request
// body with the intake's decoder and runs AssignMissingIds, the same code the intake runs) and their
// content hashes (benchgen::ContentHash). Then:
//  - 2xx: the batch is acknowledged. Its lines "id<TAB>content-hash\n" are written to the acked file
//    (for NDJSON, with the ids the reply lists when it lists them; a difference is counted)
//    and handed to the kernel (fflush) as soon as the reply is read, so a killed server (or a killed
//    loadgen) leaves a file holding every acknowledged event and nothing that was not acknowledged.
//  - 429 or 503: refused; waits Retry-After seconds (1 when absent or not a number of seconds) and
//    sends the same bytes again. A refused batch is not acknowledged.
//  - connection closed, reset or refused (a killed server): reconnects with a short backoff and sends
//    the same bytes again (the ids make a batch retried after a lost reply stored once).
//  - other 5xx: retried like a refusal after 1 s. Other statuses (4xx): counted as failed, not retried,
//    the first reply body is kept for the summary.
// Sending stops at the duration (or the event limit); a batch still unacknowledged then is abandoned
// (never written to the acked file). A batch whose reply was lost and that was not retried before the
// stop may be stored although it is not in the acked file: checkers must treat the acked file as the
// events that must be there, not as all that may be.
//
// Thread-safety: Run() is a blocking call; run one at a time per Options.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace govern::telemetry::loadgen {

enum class Format { kNdjson, kOtlpProto };

struct Options {
  std::string host = "127.0.0.1";
  int port = 4318;
  std::string key;  // sent as "Authorization: Bearer <key>" when not empty
  std::string org;  // the ingest key's organisation (events are generated for it; ids depend on it)
  Format format = Format::kNdjson;
  std::string content_type;  // empty: application/x-ndjson or application/x-protobuf
  int connections = 4;
  int batch = 1000;
  double rate = 0;  // events/s over all connections; 0 = as fast as acknowledged
  double duration_s = 10;
  int64_t max_events = 0;  // stop after this many events were acknowledged (0: no limit)
  uint64_t seed = 1;
  std::string acked_path;        // empty: no acked file
  int64_t start_unix_nanos = 0;  // time of the first generated event; 0: now
};

struct Summary {
  int64_t sent_batches = 0;  // requests sent, retries included
  int64_t acked_batches = 0;
  int64_t acked_events = 0;
  int64_t refused = 0;            // 429/503 replies
  int64_t server_errors = 0;      // other 5xx replies
  int64_t failed_batches = 0;     // 4xx other than 429: given up
  int64_t connection_errors = 0;  // connect/send/receive failures
  int64_t abandoned_batches = 0;  // unacknowledged when sending stopped
  int64_t id_mismatches = 0;      // NDJSON: ids in the reply that differ from the ones computed here
  double elapsed_s = 0;           // first send to last acknowledgement
  double latency_p50_ms = 0, latency_p90_ms = 0, latency_p99_ms = 0, latency_max_ms = 0;  // acked requests
  double cpu_seconds = 0;  // this process's CPU time (user + system): what the load itself costs
  int64_t first_send_unix_nanos = 0;
  int64_t last_ack_unix_nanos = 0;
  std::string first_failure;  // status line and body of the first failed reply
  double acked_rate() const { return elapsed_s > 0 ? static_cast<double>(acked_events) / elapsed_s : 0; }
  std::string Json() const;
};

Result<Summary> Run(const Options& options);

// Parses "http://host:port" (no path, no TLS) into options. InvalidArgument for anything else.
Status ParseUrl(const std::string& url, Options* options);

}  // namespace govern::telemetry::loadgen
