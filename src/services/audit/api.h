// The audit HTTP API (routes under /v1/audit/; docs/audit.md is the reference):
//   POST /v1/audit/{org}/entries                  append one entry or a batch (scope "append")
//   GET  /v1/audit/{org}/entries/{seq}            one entry (scope "read")
//   GET  /v1/audit/{org}/entries?actor=&action=&since=&until=&limit=&before_seq=   newest first, paged
//   GET  /v1/audit/{org}/export                   NDJSON export, verifiable offline
//   GET  /v1/audit/{org}/proof/inclusion?seq=&size=
//   GET  /v1/audit/{org}/proof/consistency?old=&new=
//   GET  /v1/audit/{org}/checkpoints/latest
//   POST /v1/audit/{org}/checkpoints              sign the current head now (scope "append")
//   GET  /v1/audit/checkpoint-key                 the verifier key (no key needed)
// Keys are gva_ bearer keys (services/keys) of the organisation in the path. Errors are problem+json:
// 400 bad input, 401 missing or bad key, 403 another organisation's key or the wrong scope, 404 unknown
// organisation or entry, 413 body too large (the server), 503 + Retry-After when PostgreSQL is not
// answering. Database work runs on the Api's own threads, never on an event loop.
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
