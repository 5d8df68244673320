// What a telemetry query asks for and what it returns, shared by the PostgreSQL side (recent events),
// the Parquet archive side and the HTTP query API that merges them.
//
// Order: events are ordered by (time_ns, id) ascending ("oldest first") or descending ("newest
// first"); ids are unique per organisation and time, so the order is total and a page boundary is
// one EventKey. Plain values; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "services/telemetry/event.h"

namespace govern::telemetry {

struct EventKey {
  int64_t time_ns = 0;
  std::string id;
  friend auto operator<=>(const EventKey&, const EventKey&) = default;
  friend bool operator==(const EventKey&, const EventKey&) = default;
};

struct EventQuery {
  std::string org;                                        // required: a query never crosses organisations
  int64_t from_ns = std::numeric_limits<int64_t>::min();  // inclusive
  int64_t to_ns = std::numeric_limits<int64_t>::max();    // exclusive
  std::string type;                                       // empty: every type
  // Each must match: the event has an attribute with this key whose value equals value_json (JSON
  // equality: "200" matches 200, "\"GET\"" matches "GET").
  std::vector<Attribute> attributes;
  bool newest_first = true;
  std::optional<EventKey> after;  // only events strictly after this key in the query's order
  size_t limit = 100;
};

// An event as stored: the event plus when intake accepted it.
struct StoredEvent {
  Event event;
  int64_t received_ns = 0;
  EventKey key() const { return {event.time_unix_nanos, event.id}; }
  friend bool operator==(const StoredEvent&, const StoredEvent&) = default;
};

// The archive as the query API sees it (implemented over the manifest and Parquet files).
class ArchiveReader {
 public:
  virtual ~ArchiveReader() = default;
  // Up to query.limit events matching `query`, in its order, from archived files only.
  virtual Result<std::vector<StoredEvent>> Scan(const EventQuery& query) = 0;
};

}  // namespace govern::telemetry
