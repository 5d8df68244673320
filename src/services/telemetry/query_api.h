// QueryApi: the HTTP face of telemetry queries and of the organisation's DLP policy.
//
//   GET    /v1/query/events?from=&to=&type=&attr=key:json&order=newest|oldest&limit=&cursor=
//   GET    /v1/query/dlp-policy      the organisation's policy (hash key left out), or the default
//   PUT    /v1/query/dlp-policy      replace it (validated and compiled first; 400 names the entry)
//   DELETE /v1/query/dlp-policy      back to the default (built-in detectors, mask)
//
// Every request carries "Authorization: Bearer <key>"; the KeyVerifier turns the key into the
// organisation (only keys with scope "query"). The organisation never comes from the request itself.
// Handlers do no database work on the event loop: parsing happens there, the query, the policy lookup,
// redaction and JSON rendering run on the API's own worker threads, which answer through the
// Responder. A full work queue answers 503 with Retry-After. docs/telemetry-query.md has the formats.
//
// Thread-safety: construct, Register, then start the server; handlers run on any thread. Destroy the
// QueryApi only after the server has stopped (the destructor lets running queries finish, drops the
// queued ones, whose Responders then answer 500, and joins).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "db/pool.h"
#include "net/router.h"
#include "services/telemetry/dlp_policies.h"
#include "services/telemetry/query_types.h"

namespace govern::telemetry {

// Checks a bearer key and calls `done` once, on any thread, with the organisation the key belongs to.
// Errors: Unauthenticated (unknown or revoked key: 401), PermissionDenied (a key without the "query"
// scope: 403), Unavailable (cannot check now: 503).
using KeyVerifier =
    std::function<void(std::string_view bearer_key, std::function<void(Result<std::string /*org*/>)> done)>;

struct QueryApiOptions {
  int workers = 2;          // threads running queries (each holds at most one pooled connection)
  size_t max_queued = 256;  // requests waiting for a worker; beyond it: 503
  std::chrono::nanoseconds default_window = std::chrono::hours(1);
  size_t default_limit = 100;
  size_t max_limit = 1000;
  size_t max_attribute_filters = 16;
  const Clock* clock = &Clock::Real();
  std::chrono::milliseconds policy_recheck = std::chrono::seconds(2);  // DlpPolicyCache
};

// The parameters of GET /v1/query/events, parsed. Exposed for tests and the fuzz target.
struct ParsedQuery {
  EventQuery query;  // org left empty
  std::optional<std::string> cursor;
  bool time_range_given = false;  // from or to was in the request
};
// InvalidArgument naming the parameter ("limit: must be an integer from 1 to 1000"). now_ns: the
// current time, for the default window (the last hour when neither from nor to is given; an hour
// before `to` when only `to` is; no upper bound when only `from` is).
Result<ParsedQuery> ParseQueryParams(const std::vector<std::pair<std::string, std::string>>& params,
                                     int64_t now_ns, const QueryApiOptions& options = {});

// Renders one redacted event as the API's JSON object (appended to *out).
void AppendEventJson(const RedactedEvent& event, std::string* out);

class QueryApi {
 public:
  // pool and archive must outlive the QueryApi; archive may be null (no archive: PostgreSQL only).
  QueryApi(db::Pool* pool, ArchiveReader* archive, QueryApiOptions options = {});
  ~QueryApi();
  QueryApi(const QueryApi&) = delete;
  QueryApi& operator=(const QueryApi&) = delete;

  void Register(net::Router& router, KeyVerifier verify);

  // The rule-set cache the API redacts with (e.g. for a CLI in the same process to Invalidate).
  DlpPolicyCache& policies();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace govern::telemetry
