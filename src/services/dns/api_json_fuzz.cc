// Fuzz target for the zone API's JSON bodies and what the API does with them before the database: the
// first byte picks the route (odd: zone creation; 'R': a key rollover start; 'D': a zone's online denial;
// else an RRset PUT); for a PUT
// the first line is "OWNER TYPE" (the URL's path parts) and the rest the body. Accepted input goes on through
// ParseRRset and Zone::Build, as the store would. Nothing may crash or throw; accepted records must be in the
// zone.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dns/wire.h"
#include "dns/zone.h"
#include "services/dns/api_json.h"
#include "services/dns/store.h"

using namespace govern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'R') {
    dns_service::RolloverRequest defaults;
    auto r = dns_service::ParseRolloverBody(in, defaults);
    if (!r.ok()) return 0;
    if ((r->algorithm != 0 && r->algorithm != 13 && r->algorithm != 15) || r->propagation_delay < 0 ||
        r->propagation_delay > 30 * 86400 || r->parent_delay < 0 || r->parent_delay > 90 * 86400)
      std::abort();
    return 0;
  }
  if (data[0] == 'D') {
    auto d = dns_service::ParseDenialBody(in);
    if (d.ok() && !dns_service::ValidateDenial(*d).ok()) std::abort();
    return 0;
  }
  if (data[0] & 1) {
    auto cr = dns_service::ParseCreateZoneBody(in);
    if (!cr.ok()) return 0;
    auto zone = dns_service::NormalizeZoneName(cr->name);
    if (!zone.ok()) return 0;
    std::string soa =
        cr->soa.empty() ? "ns1." + *zone + " hostmaster." + *zone + " 1 3600 600 1209600 300" : cr->soa;
    auto soa_rr = dns_service::ParseRRset(*zone, "@", "SOA", 3600, {soa});
    auto ns_rr = dns_service::ParseRRset(*zone, "@", "NS", 3600,
                                         cr->ns.empty() ? std::vector<std::string>{"ns1." + *zone} : cr->ns);
    if (soa_rr.ok() && ns_rr.ok()) {
      auto records = *soa_rr;
      records.insert(records.end(), ns_rr->begin(), ns_rr->end());
      (void)dns::Zone::Build(*zone, std::move(records));
    }
    return 0;
  }
  size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  std::string_view path = in.substr(0, nl), body = in.substr(nl + 1);
  size_t sp = path.find(' ');
  if (sp == std::string_view::npos) return 0;
  auto rr = dns_service::ParseRRsetBody(body);
  if (!rr.ok()) return 0;
  if (rr->rdata.empty() || rr->ttl > 0x7fffffff) std::abort();
  auto records =
      dns_service::ParseRRset("fuzz.test.", path.substr(0, sp), path.substr(sp + 1), rr->ttl, rr->rdata);
  if (!records.ok()) return 0;
  auto apex = dns::NameFromText("fuzz.test.");
  for (auto& r : *records) {
    std::string owner = r.owner;
    dns::LowerName(owner);
    (void)dns::IsSubdomain(owner, *apex);  // the store refuses owners outside the zone afterwards
  }
  auto soa = dns_service::ParseRRset("fuzz.test.", "@", "SOA", 3600, {"ns1 hm 1 3600 600 1209600 300"});
  if (!soa.ok()) std::abort();
  records->insert(records->end(), soa->begin(), soa->end());
  (void)dns::Zone::Build("fuzz.test.", std::move(*records));
  return 0;
}
