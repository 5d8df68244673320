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
  std::string out;
  AttributesObjectJson(attrs, &out);
  return out;
}

// Creates the day partitions the events need, then COPYs them in.
inline Status InsertEvents(db::Connection& conn, const std::vector<StoredEvent>& events) {
  std::set<std::string> made;
  for (const StoredEvent& s : events) {
    Partition p = PartitionFor(s.event.time_unix_nanos);
    if (!made.insert(p.name).second) continue;
    GOVERN_RETURN_IF_ERROR(conn.ExecScript(PartitionDdl(p)));
  }
  GOVERN_ASSIGN_OR_RETURN(db::CopyIn copy, conn.CopyFrom(std::string("COPY telemetry_events (") +
                                                         kEventColumns + ") FROM STDIN (FORMAT binary)"));
  std::string attrs, res;
  for (const StoredEvent& s : events) AppendEventRow(copy, s.event, s.received_ns, &attrs, &res);
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
