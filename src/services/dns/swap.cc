#include "services/dns/swap.h"

#include <vector>

namespace govern::dns_service {

std::shared_ptr<const dns::ZoneSet> WithZone(const dns::ZoneSet& current, std::string_view apex,
                                             std::shared_ptr<const dns::Zone> replacement) {
  std::vector<std::shared_ptr<const dns::Zone>> zones;
  zones.reserve(current.zones().size() + 1);
  for (const auto& z : current.zones()) {
    if (z->apex() != apex) zones.push_back(z);
  }
  if (replacement) zones.push_back(std::move(replacement));
  return std::make_shared<const dns::ZoneSet>(std::move(zones));
}

}  // namespace govern::dns_service
