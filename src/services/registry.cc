// The list of services this binary holds, in start order.
#include "services/service.h"

namespace govern::services {

const std::vector<Registration>& Registry() {
  static const std::vector<Registration> registry = {};
  return registry;
}

}  // namespace govern::services
