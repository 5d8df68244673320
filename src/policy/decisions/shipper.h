// WalEventShipper (DecisionShipper): forwards a WAL of records to telemetry intake (POST
// {endpoint}/v1/events, NDJSON), exactly once, on a background thread. Made for the decision log, and
// used as is for any other WAL whose records encode to events with an id of their own (the gateway's
// usage records): Create(wal, encoder, options).
//
// Promises:
//  - Order and completeness: records are sent in WAL order, in batches of at most batch_events events
//    and batch_bytes bytes; the shipper's durable WAL cursor moves past a batch only after intake
//    answered 200 (intake answers 200 only once the batch is fdatasync'd on its side).
//  - Exactly once: each event's `id` is the decision id and its `time` the decision's time, both read
//    from the record, so a batch sent again (after a crash between the 200 and the cursor update, or a
//    lost reply) carries the same ids and telemetry stores each decision once. (With an EventEncoder,
//    the encoder owes the same: an id and a time read from the record, never made up when sending.)
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
// Thread-safety: Start and Stop from one thread; GetStats from any. The DecisionLog (or WAL) must
// outlive the shipper. One shipper per cursor name.
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
#include "storage/wal.h"

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
  std::string quarantine_path;  // empty: <decision log dir>/quarantine.ndjson (required with a bare WAL)
  // After a batch smaller than batch_events, wait this long before reading the next one, so that a
  // light, steady flow goes out in fewer, larger requests. 0: send whatever is there at once.
  std::chrono::milliseconds linger{0};
  std::string log_component = "policy.decisions.shipper";  // names the shipper in its log lines
  // Failure probe (tests and the crash tool): runs after intake's 200 for a batch and before the cursor
  // moves past it, with the sequence the cursor is about to take. Empty in production.
  std::function<void(uint64_t next_seq)> after_send_probe;
};

// Turns one WAL record into one NDJSON event line (no newline), appended to *line (empty on entry);
// lines longer than max_line_bytes are refused by intake (and quarantined). An error means the record
// does not decode: it is quarantined with the error's message. Called on the shipper's thread.
using EventEncoder = std::function<Status(std::string_view record, size_t max_line_bytes, std::string* line)>;

class WalEventShipper {
 public:
  // Ships the decision log's records as decision events. Registers the cursor (at the WAL's first
  // record when new) and checks the options.
  static Result<std::unique_ptr<WalEventShipper>> Create(DecisionLog* log, ShipperOptions options);
  // Ships any WAL's records, each turned into an event by `encode`; options.quarantine_path is required.
  static Result<std::unique_ptr<WalEventShipper>> Create(wal::Log* wal, EventEncoder encode,
                                                         ShipperOptions options);
  // Removes a shipper's cursor when shipping is switched off; a cursor left behind would hold WAL
  // retention forever. Does nothing when the cursor does not exist.
  static Status Forget(DecisionLog* log, std::string_view cursor = "telemetry");
  static Status Forget(wal::Log* wal, std::string_view cursor = "telemetry");
  ~WalEventShipper();  // Stop()s
  WalEventShipper(const WalEventShipper&) = delete;
  WalEventShipper& operator=(const WalEventShipper&) = delete;

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
  WalEventShipper(wal::Log* wal, EventEncoder encode, ShipperOptions options);
  void Run();
  Status ShipRange(std::vector<Item>& items, size_t lo, size_t hi);
  Status Quarantine(const Item& item, int status, std::string_view reason);
  Status Advance(uint64_t next_seq);
  bool SleepUnlessStopped(std::chrono::milliseconds d);  // false when stopping
  void NoteError(std::string error);

  wal::Log* wal_;
  EventEncoder encode_;
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

using DecisionShipper = WalEventShipper;

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
