// Admission: the interface the HTTP layer asks before it runs a handler (load shedding).
//
// net defines the interface and src/limits implements it, so net never depends on limits. An
// implementation must be thread-safe: every event loop calls it concurrently. It must answer at once;
// a refused request is answered 503 with Retry-After immediately, never queued.
#pragma once

#include <cstdint>
#include <string_view>

namespace govern::net {

// What a request is, for shedding: health probes are never shed, interactive work (sign-in, a
// person waiting) keeps headroom, bulk work (batch ingest, exports) gives way first.
//
// kOwnBound: work that bounds itself and must not be shed by the adaptive limit, because it gets
// cheaper per request the more of it waits (appends batched into group commits: the limit would
// read their rising latency as overload and shed most of them). The server never asks Admission
// about such a request; the route's RouteOptions::max_in_flight bounds it instead (over it: 503 +
// Retry-After at once), and the handler may refuse more by its own measure (a queue bound).
enum class RequestClass : uint8_t { kHealth = 0, kInteractive = 1, kNormal = 2, kBulk = 3, kOwnBound = 4 };

// Returned by TryAdmit. Passed back to Release when the request is done; `admitted` false means shed.
struct AdmissionTicket {
  bool admitted = false;
  RequestClass cls = RequestClass::kNormal;
  uint32_t org_slot = 0;    // implementation-defined: which organisation's share this holds
  int64_t start_nanos = 0;  // monotonic time of admission, for the limit's latency samples
};

class Admission {
 public:
  virtual ~Admission() = default;
  // `org` identifies the organisation a request counts against (empty: none known).
  virtual AdmissionTicket TryAdmit(RequestClass cls, std::string_view org) = 0;
  // Called exactly once for every admitted ticket. `ok` is false when the request failed in a way
  // that says the server is overloaded (timeout, 5xx), which the limit treats as a drop.
  virtual void Release(const AdmissionTicket& ticket, bool ok) = 0;
  // Seconds a shed client should wait before retrying (the Retry-After value).
  virtual int RetryAfterSeconds() const { return 1; }
};

}  // namespace govern::net
