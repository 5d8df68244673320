// The SCIM 2.0 HTTP API (RFC 7644) under /scim/v2: Users and Groups (POST, GET, PUT, PATCH, DELETE,
// GET with filter, POST /.search), Bulk, and the discovery endpoints ServiceProviderConfig,
// ResourceTypes and Schemas.
//
// The organisation comes from the bearer key (gvs_…, `govern scim key create`): an identity provider is
// given the base URL and one key. Resources of another organisation are 404. Answers are
// application/scim+json; errors are SCIM Error bodies with the scimType of RFC 7644 table 9. Work that
// touches PostgreSQL runs on the API's own threads, never on an event loop; when too much waits the
// answer is 503 with Retry-After.
//
// Thread-safe once built; AddRoutes before the server starts; destroy after the server has stopped.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "net/router.h"

namespace govern::service_keys {
class KeyCache;
}  // namespace govern::service_keys

namespace govern::scim_service {

class Store;

struct ApiOptions {
  std::string public_url;  // base URL for meta.location ("https://id.example.com/scim/v2"); empty: from Host
  int threads = 4;         // threads running requests against PostgreSQL
  size_t max_queued = 2000;         // requests waiting for a thread; more: 503 + Retry-After
  int64_t max_results = 1000;       // largest page (count is clamped to it)
  size_t max_body_bytes = 1 << 20;  // largest body of a non-bulk request
  size_t bulk_max_operations = 1000;
  size_t bulk_max_payload = 4 << 20;
};

class Api {
 public:
  Api(Store* store, service_keys::KeyCache* keys, ApiOptions options);
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  void AddRoutes(net::Router& router);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::scim_service
