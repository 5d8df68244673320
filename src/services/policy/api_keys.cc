// Policy server API keys: its key table and the scope check of a verified key.
#include "services/policy/api_keys.h"

#include <algorithm>

namespace govern::policy_service {

const service_keys::KeyTable& PolicyKeys() {
  static const service_keys::KeyTable table{.table = "policy_api_keys",
                                            .prefix = "gvp",
                                            .scopes = {std::string(kPublishScope), std::string(kFetchScope)},
                                            .log_component = "policy"};
  return table;
}

Result<std::string> OrgWithScope(const Result<service_keys::KeyIdentity>& key,
                                 const std::vector<std::string_view>& scopes) {
  if (!key.ok()) return key.status();
  if (std::find(scopes.begin(), scopes.end(), key->scope) != scopes.end()) return key->org;
  std::string needed;
  for (std::string_view s : scopes) needed += (needed.empty() ? "'" : " or '") + std::string(s) + "'";
  return PermissionDenied("this key has scope '" + key->scope + "'; this needs " + needed);
}

}  // namespace govern::policy_service
