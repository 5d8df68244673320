// The audit HTTP API (routes under /v1/audit/; docs/audit.md is the reference):
//   POST /v1/audit/{org}/entries                  append one entry or a batch (scope "append")
//   GET  /v1/audit/{org}/entries/{seq}            one entry (scope "read")
//   GET  /v1/audit/{org}/entries?actor=&action=&since=&until=&limit=&before_seq=   newest first, paged
//   GET  /v1/audit/{org}/export                   NDJSON export, verifiable offline (streamed)
//   GET  /v1/audit/{org}/proof/inclusion?seq=&size=
//   GET  /v1/audit/{org}/proof/consistency?old=&new=
//   GET  /v1/audit/{org}/checkpoints/latest
//   POST /v1/audit/{org}/checkpoints              sign the current head now (scope "append")
//   GET  /v1/audit/checkpoint-key                 the verifier key (no key needed)
// Keys are gva_ bearer keys (services/keys) of the organisation in the path. Errors are problem+json:
// 400 bad input, 401 missing or bad key, 403 another organisation's key or the wrong scope, 404 unknown
// organisation or entry, 413 body too large (the server), 503 + Retry-After when PostgreSQL is not
// answering or a bound is reached. Database work runs on the Api's own threads, never on an event loop.
//
// Appends are in the request class kOwnBound: not shed by the adaptive limit, bounded instead by
// max_appends_in_flight requests (the server answers 503 + Retry-After beyond it) and by the Batcher's
// queue of entries (503 + Retry-After). The export streams: it is written while PostgreSQL is read
// page by page from one snapshot, at most export_buffer_bytes ahead of the client; at most
// max_exports run at once (each holds a read thread and a connection while it runs).
//
// Thread-safe once built. Everything passed in must outlive the Api.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "net/router.h"
#include "services/audit/batcher.h"
#include "services/audit/files.h"
#include "services/keys/keys.h"

namespace govern::db {
class Pool;
}  // namespace govern::db

namespace govern::audit_service {

struct ApiOptions {
  size_t max_details_bytes = 64 * 1024;
  size_t max_body_bytes = 8 * 1024 * 1024;
  size_t max_entries_per_request = 1000;
  int read_threads = 4;
  size_t max_queued_reads = 10000;
  size_t max_appends_in_flight = 4096;  // append requests being handled at once per replica; 0: no bound
  int max_exports = 0;                  // exports at once; 0: half the read threads (at least 1)
  size_t export_buffer_bytes = 256 * 1024;
  int export_page_entries = 5000;
  // Called after each export with what it did (tests and metrics); may be empty.
  struct ExportStats {
    bool completed = false;  // false: the client went away or the store failed mid-way
    uint64_t lines = 0;
    uint64_t bytes = 0;
    int pages = 0;             // entry pages read from PostgreSQL
    size_t peak_buffered = 0;  // the most bytes ever waiting for the client
  };
  std::function<void(const ExportStats&)> on_export;
  const Clock* clock = nullptr;
  // Called with each checkpoint made on demand (to write it outside the database); may be empty.
  std::function<void(const std::string& org, uint64_t size, const std::string& note)> on_checkpoint;
};

class Api {
 public:
  Api(db::Pool* pool, Batcher* batcher, service_keys::KeyCache* keys, const CheckpointSigner* signer,
      ApiOptions options);
  ~Api();  // finishes queued reads
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  void AddRoutes(net::Router& router);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::audit_service
