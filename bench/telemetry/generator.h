// A deterministic generator of realistic agent and gateway telemetry events (about 550 bytes each as an
// NDJSON line), and their renderings in the two intake wire formats the benchmark and the load
// generator send: Govern NDJSON (POST /v1/events) and OTLP/HTTP protobuf (POST /v1/logs).
//
// The model (README.md in this folder has the full table): five event kinds in fixed proportions
// (gateway model calls, agent tool calls, policy decisions, agent run summaries, upstream errors), each
// with its own message template and attribute keys, drawn from small fixed sets of organisations,
// services, hosts, agents, models and tools with a skew (a few are common, most are rare). What varies
// per event: request ids (unique per generator stream), trace and span ids (a trace spans a few
// consecutive events), latencies, token counts and costs. Event time advances by an exponential
// inter-arrival step at a configured rate, so timestamps look like a real stream.
//
// The same seed and options give the same events, byte for byte, on every run and machine (the random
// source is a fixed splitmix64, no std distributions). Two generators with different `stream` values
// never produce the same request id, so every generated event is distinct content.
//
// Not thread-safe: one Generator per thread. The Render* functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "services/telemetry/event.h"

namespace govern::telemetry::benchgen {

struct GeneratorOptions {
  uint64_t seed = 1;
  uint32_t stream = 0;  // distinguishes parallel generators (one per connection or thread)
  // Organisation of every event; empty: drawn from a fixed set of five (skewed).
  std::string org;
  // Time of the first event (unix nanoseconds) and the average event rate that advances it.
  int64_t start_unix_nanos = 1'796'083'200'000'000'000LL;  // 2026-12-01T00:00:00Z
  double events_per_second = 1000;
};

class Generator {
 public:
  explicit Generator(GeneratorOptions options);

  // Fills `e` with the next event (org, times, type, severity, body, attributes, resource attributes,
  // service name, scope, trace and span ids). The id stays empty: intake assigns EventId().
  void Next(Event* e);
  Event Next() {
    Event e;
    Next(&e);
    return e;
  }
  uint64_t generated() const { return count_; }

 private:
  uint64_t Rand();
  uint64_t Below(uint64_t n) { return Rand() % n; }
  size_t Skewed(size_t n);  // index in [0, n), low indexes much more likely
  std::string Hex(int digits);

  GeneratorOptions options_;
  uint64_t state_;
  uint64_t count_ = 0;
  int64_t time_ns_;
  std::string trace_, span_;
  int trace_left_ = 0;
};

// One NDJSON line (with its trailing newline) for /v1/events. NDJSON has no resource, scope or trace
// fields: service.name, host.name, trace_id and span_id become ordinary attributes; "org" is written
// only when `with_org`.
void AppendNdjson(const Event& e, bool with_org, std::string* out);
// A whole /v1/events body.
std::string RenderNdjson(std::span<const Event> events, bool with_org = false);

// An OTLP ExportLogsServiceRequest (protobuf bytes) holding `events`: one ResourceLogs per distinct
// resource (service.name and host) in first-appearance order, one ScopeLogs per scope inside it, and
// records in their original order within each. Trace and span ids are sent as raw bytes.
std::string RenderOtlpProto(std::span<const Event> events);

// The content hash the load generator writes beside each acknowledged id: lower-case hex SHA-256 of the
// canonical encoding of event.h (what EventId() hashes, ordinal 0, the id excluded) of the event with
// its attributes and resource attributes sorted by key (stable) and each value re-serialised from its
// parsed JSON (so 7.8e-05 and 0.000078, the same number as jsonb stores it, hash alike). Sorted because PostgreSQL's jsonb
// keeps keys in its own order: a checker turns a stored row back into an Event (each attribute value as
// compact JSON text, the text jsonb returns with the spaces after ':' and ',' removed; numbers keep
// their digits in jsonb) and gets the same hash whatever order the columns return keys in.
std::string ContentHash(const Event& e);

}  // namespace govern::telemetry::benchgen
