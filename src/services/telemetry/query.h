// Telemetry queries: recent events from PostgreSQL, merged with the Parquet archive, one page at a
// time, and the opaque cursor that names the next page.
//
// Pages are keyset pages over the total order (time_ns, id) (query_types.h): a page asks each source
// for `limit` events strictly after the cursor's key and keeps the first `limit` of their merge, so
// walking every page returns each matching event exactly once, with no gap, even while ingest moves
// rows from PostgreSQL to the archive between pages (an event is in one source or the other; a key
// seen in both is returned once). Ids compare as bytes (COLLATE "C"), as EventKey does.
//
// Free functions; thread-safe as far as their arguments are (a Connection is one thread at a time; a
// Pool and an ArchiveReader passed to RunQuery must be thread-safe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "db/connection.h"
#include "db/pool.h"
#include "services/telemetry/query_types.h"

namespace govern::telemetry {

// Up to query.limit events of telemetry_events matching `query`, in its order. One prepared statement
// per query shape (order, cursor or not, type or not, attribute filters or not), with every value
// bound: the primary key index serves the organisation, time range and cursor; (org, type, time_ns)
// serves a type filter; attribute filters are `attributes::jsonb @> $n::jsonb` plus an exact recheck
// per key (so [1] does not match [1,2]). Attribute values are returned as compact JSON, in the order
// stored.
Result<std::vector<StoredEvent>> QueryRecent(db::Connection& conn, const EventQuery& query);

struct QueryPage {
  std::vector<StoredEvent> events;
  std::optional<EventKey> next;  // the last event's key when the page is full (limit events)
};

// Asks PostgreSQL (a connection from `pool`) and `archive` (may be null: no archive yet) for
// query.limit events each, merges them in the query's order, drops duplicate keys (keeping the
// PostgreSQL copy) and keeps the first query.limit.
Result<QueryPage> RunQuery(db::Pool* pool, ArchiveReader* archive, const EventQuery& query);

// The cursor of the page after `last`: base64url of a version byte, the query's time range, a hash of
// its organisation, type, attribute filters (in any order), order and time range, and `last`. Not a
// secret and not signed: it only saves the client from restating the query, and the hash catches a
// cursor reused with other filters (it grants nothing: the organisation always comes from the key).
std::string EncodeCursor(const EventQuery& query, const EventKey& last);

// Applies a cursor to `query`: sets query->after. When the request gave no time range
// (time_range_given false) the cursor's range is used, so paging a default "last hour" does not slide
// with the clock. InvalidArgument when the token is malformed or was made for a different query.
Status ApplyCursor(std::string_view token, bool time_range_given, EventQuery* query);

// Unix nanoseconds as RFC 3339 UTC with nine fraction digits ("2026-11-30T01:02:03.000000042Z").
std::string FormatRfc3339Nanos(int64_t unix_nanos);

}  // namespace govern::telemetry
