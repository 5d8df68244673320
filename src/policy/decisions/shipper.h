// DecisionShipper: forwards the decision log to telemetry intake (POST {endpoint}/v1/events, NDJSON),
// exactly once, on a background thread.
//
// Promises:
//  - Order and completeness: records are sent in WAL order, in batches of at most batch_events events
//    and batch_bytes bytes; the shipper's durable WAL cursor moves past a batch only after intake
//    answered 200 (intake answers 200 only once the batch is fdatasync'd on its side).
//  - Exactly once: each event's `id` is the decision id and its `time` the decision's time, both read
//    from the record, so a batch sent again (after a crash between the 200 and the cursor update, or a
//    lost reply) carries the same ids and telemetry stores each decision once.
//  - Retries, never drops: network errors, timeouts, 408, 429 and 5xx are retried with exponential
//    backoff (initial_backoff doubling to max_backoff), honouring Retry-After.
//  - A batch intake refuses for its content (400, 413, 422) is split in halves until the refused
//    events are alone; each such event (and any WAL record that does not decode) is appended to the
//    quarantine file (NDJSON, fdatasync'd before the cursor moves past it), counted and logged, and
//    shipping goes on. Every other 4xx (401, 403, 404, ...) is a configuration fault that no record
//    can fix: the shipper logs it and keeps retrying with max_backoff, holding the cursor (records
//    accumulate in the WAL, none is dropped).
//  - The cursor holds WAL retention: a record is deleted only once it is shipped (or quarantined).
//
// Thread-safety: Start and Stop from one thread; GetStats from any. The DecisionLog must outlive the
// shipper. One shipper per cursor name.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "policy/decisions/decision_log.h"
#include "policy/decisions/decision_record.h"

namespace govern::net {
class HttpClient;
}

namespace govern::policy {

struct ShipperOptions {
  std::string endpoint;  // telemetry intake base URL: "http://127.0.0.1:4318"
  std::string key;       // ingest key, "gvk_..."
  std::string cursor = "telemetry";
  std::string event_type = "policy.decision";
  size_t batch_events = 500;         // intake takes at most 10000 (telemetry.max_batch_events)
  size_t batch_bytes = 1u << 20;     // intake takes at most 4 MiB (telemetry.max_batch_bytes)
  size_t max_line_bytes = 1u << 20;  // intake's NDJSON line limit; a longer line's context becomes its hash
  std::chrono::milliseconds idle_wait{200};  // how long one wait for new records lasts
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{10000};
  std::string quarantine_path;  // empty: <decision log dir>/quarantine.ndjson
  // Failure probe (tests and the crash tool): runs after intake's 200 for a batch and before the cursor
  // moves past it, with the sequence the cursor is about to take. Empty in production.
  std::function<void(uint64_t next_seq)> after_send_probe;
};

class DecisionShipper {
 public:
  // Registers the cursor (at the WAL's first record when new) and checks the options.
  static Result<std::unique_ptr<DecisionShipper>> Create(DecisionLog* log, ShipperOptions options);
  // Removes a shipper's cursor when shipping is switched off; a cursor left behind would hold WAL
  // retention forever. Does nothing when the cursor does not exist.
  static Status Forget(DecisionLog* log, std::string_view cursor = "telemetry");
  ~DecisionShipper();  // Stop()s
  DecisionShipper(const DecisionShipper&) = delete;
  DecisionShipper& operator=(const DecisionShipper&) = delete;

  void Start();
  // Ends the thread (an exchange in flight may take up to request_timeout); what was not acknowledged
  // is sent again by the next start. Idempotent.
  void Stop();

  struct Stats {
    uint64_t events_shipped = 0;  // acknowledged by intake
    uint64_t batches_shipped = 0;
    uint64_t requests = 0;
    uint64_t retries = 0;      // requests that failed and were sent again
    uint64_t quarantined = 0;  // events refused for their content, and undecodable records
    uint64_t next_seq = 0;     // the cursor: every record before it is shipped
    std::string last_error;    // the latest failure, "" when none yet
  };
  Stats GetStats() const;

 private:
  struct Item;
  DecisionShipper(DecisionLog* log, ShipperOptions options);
  void Run();
  Status ShipRange(std::vector<Item>& items, size_t lo, size_t hi);
  Status Quarantine(const Item& item, int status, std::string_view reason);
  Status Advance(uint64_t next_seq);
  bool SleepUnlessStopped(std::chrono::milliseconds d);  // false when stopping
  void NoteError(std::string error);

  DecisionLog* log_;
  ShipperOptions options_;
  std::unique_ptr<net::HttpClient> client_;
  std::string url_;
  std::string auth_;
  std::mt19937 rng_;  // retry jitter; the shipper thread's only

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;

  std::atomic<uint64_t> events_shipped_{0};
  std::atomic<uint64_t> batches_shipped_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> quarantined_{0};
  std::atomic<uint64_t> next_seq_{0};
  mutable std::mutex error_mu_;
  std::string last_error_;
};

// One decision as a telemetry NDJSON event line, without the newline:
//   {"id":"<decision id>","time":<ns>,"type":"<type>","attributes":{"organisation":...,"principal":...,
//    "action":...,"resource":...,"decision":"allow","determining_policies":[...],
//    "erroring_policies":[...],"bundle_version":N, "context":{...} | "context_sha256":"<hex>"}}
// A full context that is not a JSON value, nests deeper than intake allows, or makes the line longer
// than max_line_bytes is sent as its SHA-256 with "context_omitted" saying why. Strings that are not
// valid UTF-8 have each bad byte replaced by U+FFFD. Pure: thread-safe.
void AppendDecisionEvent(const DecisionRecord& r, std::string_view type, size_t max_line_bytes,
                         std::string* out);

}  // namespace govern::policy
