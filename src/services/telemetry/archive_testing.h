// Test helpers for the archive and compactor tests (and the e2e tool): a settable clock, realistic
// events whose attributes are already in jsonb's key order, and inserting them into telemetry_events.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "db/connection.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry::testing {

class SettableClock final : public Clock {
 public:
  explicit SettableClock(int64_t unix_ns) : ns_(unix_ns) {}
  int64_t MonotonicNanos() const override { return ns_.load(); }
  int64_t UnixMicros() const override { return ns_.load() / 1000; }
  void Set(int64_t unix_ns) { ns_ = unix_ns; }

 private:
  std::atomic<int64_t> ns_;
};

// 2026-11-02T00:00:00Z.
inline constexpr int64_t kDay0 = 1'793'577'600LL * kNanosPerSecond;

// jsonb keeps object keys sorted by length, then bytes: events built in that order come back equal.
inline void SortLikeJsonb(std::vector<Attribute>& attrs) {
  std::sort(attrs.begin(), attrs.end(), [](const Attribute& a, const Attribute& b) {
    if (a.key.size() != b.key.size()) return a.key.size() < b.key.size();
    return a.key < b.key;
  });
}

// A realistic agent / gateway event of about 550 bytes: repeating services, actions and templates,
// varying ids and numbers.
inline StoredEvent MakeEvent(const std::string& org, int64_t time_ns, uint64_t n) {
  static const char* kServices[] = {"gateway", "agent-runner", "policy", "sandbox", "auth"};
  static const char* kActions[] = {"chat.completion", "tool.call", "file.read", "policy.decide",
                                   "token.issue"};
  static const char* kModels[] = {"gpt-4o", "claude-3-5-sonnet", "llama-3-70b"};
  static const char* kSev[] = {"INFO", "WARN", "ERROR", "DEBUG"};
  static const int kSevNum[] = {9, 13, 17, 5};
  auto h = [](uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
  };
  uint64_t r = h(n + 1);
  StoredEvent s;
  Event& e = s.event;
  e.org = org;
  e.time_unix_nanos = time_ns;
  char id[40];
  std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(h(n ^ 0x55)),
                static_cast<unsigned long long>(r));
  e.id = id;
  e.observed_unix_nanos = time_ns + 1000;
  s.received_ns = time_ns + 2'000'000 + static_cast<int64_t>(r % 1000);
  const char* service = kServices[r % 5];
  const char* action = kActions[(r >> 8) % 5];
  const char* model = kModels[(r >> 16) % 3];
  e.type = (r >> 20) % 7 == 0 ? "audit" : "log";
  int sev = static_cast<int>((r >> 24) % 4);
  e.severity_text = kSev[sev];
  e.severity_number = kSevNum[sev];
  e.body_kind = BodyKind::kString;
  int latency = static_cast<int>((r >> 32) % 5000);
  e.body = std::string("agent ") + service + " completed " + action + " using model " + model + " in " +
           std::to_string(latency) + "ms; request " + std::to_string(n) +
           " tokens_in=" + std::to_string((r >> 40) % 4000) +
           " tokens_out=" + std::to_string((r >> 44) % 2000) + " status=ok route=/v1/chat/completions";
  e.attributes = {
      {"action", "\"" + std::string(action) + "\""},
      {"latency_ms", std::to_string(latency)},
      {"http.status", (r >> 50) % 10 == 0 ? "500" : "200"},
      {"model", "\"" + std::string(model) + "\""},
      {"user.id", "\"user-" + std::to_string((r >> 52) % 200) + "\""},
      {"cached", (r >> 60) % 2 ? "true" : "false"},
      {"tags", "[\"prod\",\"eu-west-1\"]"},
      {"cost.usd", std::to_string((r >> 36) % 1000) + ".25"},
  };
  SortLikeJsonb(e.attributes);
  e.resource_attributes = {{"service.name", "\"" + std::string(service) + "\""},
                           {"host.name", "\"node-" + std::to_string(r % 4) + "\""},
                           {"deployment.environment", "\"production\""}};
  SortLikeJsonb(e.resource_attributes);
  e.service_name = service;
  e.scope_name = "govern.agent";
  e.scope_version = "1.4.2";
  char trace[40], span[24];
  std::snprintf(trace, sizeof trace, "%016llx%016llx", static_cast<unsigned long long>(h(r)),
                static_cast<unsigned long long>(h(r + 7)));
  std::snprintf(span, sizeof span, "%016llx", static_cast<unsigned long long>(h(r + 9)));
  e.trace_id_hex = trace;
  e.span_id_hex = span;
  e.flags = 1;
  e.dropped_attributes_count = static_cast<uint32_t>(n % 3 == 0);
  return s;
}

inline Status EnsurePartition(db::Connection& conn, int64_t time_ns) {
  return conn.Exec(PartitionDdl(PartitionFor(time_ns))).status();
}

// Inserts events with binary COPY, creating their partitions first.
inline Status InsertEvents(db::Connection& conn, const std::vector<StoredEvent>& events) {
  std::set<std::string> made;
  for (const auto& s : events) {
    if (made.insert(PartitionFor(s.event.time_unix_nanos).name).second) {
      GOVERN_RETURN_IF_ERROR(EnsurePartition(conn, s.event.time_unix_nanos));
    }
  }
  auto copy =
      conn.CopyFrom(std::string("COPY telemetry_events (") + kEventColumns + ") FROM STDIN (FORMAT binary)");
  if (!copy.ok()) return copy.status();
  std::string attrs, res;
  for (const auto& s : events) AppendEventRow(*copy, s.event, s.received_ns, &attrs, &res);
  return copy->Finish().status();
}

}  // namespace govern::telemetry::testing
