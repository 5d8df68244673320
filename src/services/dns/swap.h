// The ZoneSet after one zone changed: every other zone carried over as the same shared_ptr (so its
// answer and signature caches survive the swap), the changed one replaced, added, or (null) dropped.
// Pure function over immutable snapshots: thread-safe.
#pragma once

#include <memory>
#include <string_view>

#include "dns/zone.h"

namespace govern::dns_service {

// `apex` is lower-case wire form (dns::Zone::apex()).
std::shared_ptr<const dns::ZoneSet> WithZone(const dns::ZoneSet& current, std::string_view apex,
                                             std::shared_ptr<const dns::Zone> replacement);

}  // namespace govern::dns_service
