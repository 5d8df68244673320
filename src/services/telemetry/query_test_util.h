// Test-only helpers for the query tests and benchmark: schema setup, inserting events the way ingest
// stores them (day partitions, binary COPY), and an in-memory ArchiveReader (a test double for the
// Parquet archive, whose real implementation has its own tests).
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "db/connection.h"
#include "db/migrator.h"
#include "services/telemetry/dlp_policies.h"
#include "services/telemetry/json_text.h"
#include "services/telemetry/query_types.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry::testing {

inline Status ApplySchema(db::Connection& conn) {
  return db::Migrator("telemetry", Migrations()).Apply(conn).status();
}

inline std::string ObjectJson(const std::vector<Attribute>& attrs) {
  std::string out = "{";
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (i > 0) out.push_back(',');
    internal::AppendJsonString(out, attrs[i].key);
    out += ":" + attrs[i].value_json;
  }
  return out + "}";
}

// Creates the day partitions the events need, then COPYs them in.
inline Status InsertEvents(db::Connection& conn, const std::vector<StoredEvent>& events) {
  std::set<std::string> made;
  for (const StoredEvent& s : events) {
    Partition p = PartitionFor(s.event.time_unix_nanos);
    if (!made.insert(p.name).second) continue;
    // Saturated ends of the int64 range are open bounds (as ingest writes them).
    std::string from = p.from_ns == INT64_MIN ? "MINVALUE" : std::to_string(p.from_ns);
    std::string to = p.to_ns == INT64_MAX ? "MAXVALUE" : std::to_string(p.to_ns);
    GOVERN_RETURN_IF_ERROR(conn.ExecScript("CREATE TABLE IF NOT EXISTS " + p.name +
                                           " PARTITION OF telemetry_events FOR VALUES FROM (" + from +
                                           ") TO (" + to + ")"));
  }
  GOVERN_ASSIGN_OR_RETURN(db::CopyIn copy, conn.CopyFrom(std::string("COPY telemetry_events (") +
                                                         kEventColumns + ") FROM STDIN (FORMAT binary)"));
  for (const StoredEvent& s : events) {
    const Event& e = s.event;
    copy.Row(kEventColumnCount)
        .Text(e.org)
        .Int64(e.time_unix_nanos)
        .Text(e.id)
        .Int64(e.observed_unix_nanos)
        .Int64(s.received_ns)
        .Text(e.type)
        .Text(e.severity_text)
        .Int32(e.severity_number)
        .Int16(static_cast<int16_t>(e.body_kind))
        .Text(e.body)
        .Text(ObjectJson(e.attributes))
        .Text(ObjectJson(e.resource_attributes))
        .Text(e.service_name)
        .Text(e.scope_name)
        .Text(e.scope_version)
        .Text(e.trace_id_hex)
        .Text(e.span_id_hex)
        .Int64(e.flags)
        .Int64(e.dropped_attributes_count);
  }
  return copy.Finish().status();
}

inline StoredEvent MakeEvent(std::string org, int64_t time_ns, std::string id, std::string type = "log") {
  StoredEvent s;
  s.event.org = std::move(org);
  s.event.time_unix_nanos = time_ns;
  s.event.observed_unix_nanos = time_ns;
  s.received_ns = time_ns + 1000;
  s.event.id = std::move(id);
  s.event.type = std::move(type);
  s.event.severity_text = "INFO";
  s.event.severity_number = 9;
  s.event.body_kind = BodyKind::kString;
  s.event.body = "hello";
  s.event.service_name = "svc";
  return s;
}

inline bool Before(const EventKey& a, const EventKey& b, bool newest_first) {
  return newest_first ? b < a : a < b;
}

// Whether `e` matches `q` apart from limit and cursor (JSON equality for attributes).
inline bool Matches(const StoredEvent& s, const EventQuery& q) {
  const Event& e = s.event;
  if (e.org != q.org || e.time_unix_nanos < q.from_ns || e.time_unix_nanos >= q.to_ns) return false;
  if (!q.type.empty() && e.type != q.type) return false;
  for (const Attribute& want : q.attributes) {
    bool found = false;
    for (const Attribute& have : e.attributes) {
      if (have.key == want.key &&
          nlohmann::json::parse(have.value_json) == nlohmann::json::parse(want.value_json)) {
        found = true;
      }
    }
    if (!found) return false;
  }
  return true;
}

// Every matching event in the query's order, ignoring limit and cursor: the expected full walk.
inline std::vector<EventKey> ExpectedKeys(const std::vector<StoredEvent>& all, EventQuery q) {
  std::vector<EventKey> keys;
  for (const StoredEvent& s : all) {
    if (Matches(s, q)) keys.push_back(s.key());
  }
  std::sort(keys.begin(), keys.end(),
            [&](const EventKey& a, const EventKey& b) { return Before(a, b, q.newest_first); });
  return keys;
}

class MemoryArchive final : public ArchiveReader {
 public:
  std::vector<StoredEvent> events;
  int scans = 0;
  Result<std::vector<StoredEvent>> Scan(const EventQuery& q) override {
    ++scans;
    std::vector<StoredEvent> out;
    for (const StoredEvent& s : events) {
      if (!Matches(s, q)) continue;
      if (q.after && !Before(*q.after, s.key(), q.newest_first)) continue;
      out.push_back(s);
    }
    std::sort(out.begin(), out.end(), [&](const StoredEvent& a, const StoredEvent& b) {
      return Before(a.key(), b.key(), q.newest_first);
    });
    if (out.size() > q.limit) out.resize(q.limit);
    return out;
  }
};

}  // namespace govern::telemetry::testing
