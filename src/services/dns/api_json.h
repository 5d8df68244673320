// The JSON request bodies of the zone API (POST /v1/dns/zones, PUT .../rrsets/{owner}/{type}), parsed
// strictly and without exceptions escaping: a body that is not what the route takes is an
// InvalidArgument naming the field. Pure functions, thread-safe; fuzzed by dns_api_json_fuzz.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "services/dns/store.h"

namespace govern::dns_service {

// {"name", "dnssec": false, "algorithm": 13|15, "soa": "<SOA rdata>", "ns": ["..."], "dnskey_ttl": 3600,
//  "denial": "nsec3"|"nsec3-optout"|"compact"}
Result<CreateZoneRequest> ParseCreateZoneBody(std::string_view body);

// {"denial": "nsec3"|"nsec3-optout"|"compact"} (PUT /v1/dns/zones/{zone}/denial): the denial.
Result<std::string> ParseDenialBody(std::string_view body);

struct RRsetBody {
  uint32_t ttl = 300;
  std::vector<std::string> rdata;  // presentation form, one per record; never empty
};
// {"ttl": 300, "rdata": ["192.0.2.1", ...]}
Result<RRsetBody> ParseRRsetBody(std::string_view body);

// {"algorithm": 13|15, "propagation_delay": seconds, "parent_delay": seconds}, every field optional:
// an absent one keeps the value `defaults` has. An empty body is {}.
Result<RolloverRequest> ParseRolloverBody(std::string_view body, const RolloverRequest& defaults);

}  // namespace govern::dns_service
