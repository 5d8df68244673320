#include "services/dns/api_json.h"

#include <nlohmann/json.hpp>

namespace govern::dns_service {
namespace {

Result<nlohmann::json> Object(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("body: not a JSON object");
  return j;
}

}  // namespace

Result<CreateZoneRequest> ParseCreateZoneBody(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, Object(body));
  CreateZoneRequest cr;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return InvalidArgument("name: a string is required");
  cr.name = name->get<std::string>();
  if (auto it = j.find("org"); it != j.end()) {
    if (!it->is_string()) return InvalidArgument("org: a string");
    cr.org = it->get<std::string>();
  }
  if (auto it = j.find("dnssec"); it != j.end()) {
    if (!it->is_boolean()) return InvalidArgument("dnssec: true or false");
    cr.dnssec = it->get<bool>();
  }
  if (auto it = j.find("algorithm"); it != j.end()) {
    if (!it->is_number_integer()) return InvalidArgument("algorithm: 13 or 15");
    int64_t a = it->get<int64_t>();
    if (a != 13 && a != 15) return InvalidArgument("algorithm: 13 or 15");
    cr.algorithm = static_cast<int>(a);
  }
  if (auto it = j.find("soa"); it != j.end()) {
    if (!it->is_string()) return InvalidArgument("soa: a string (SOA RDATA)");
    cr.soa = it->get<std::string>();
  }
  if (auto it = j.find("ns"); it != j.end()) {
    if (!it->is_array()) return InvalidArgument("ns: a list of names");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) return InvalidArgument("ns[" + std::to_string(i) + "]: a string");
      cr.ns.push_back((*it)[i].get<std::string>());
    }
  }
  return cr;
}

Result<RRsetBody> ParseRRsetBody(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, Object(body));
  RRsetBody r;
  if (auto it = j.find("ttl"); it != j.end()) {
    if (!it->is_number_integer()) return InvalidArgument("ttl: 0 to 2147483647");
    // Unsigned JSON numbers above INT64_MAX read as negative through int64_t: check both forms.
    if (it->is_number_unsigned() && it->get<uint64_t>() > 0x7fffffffu)
      return InvalidArgument("ttl: 0 to 2147483647");
    int64_t t = it->get<int64_t>();
    if (t < 0 || t > 0x7fffffff) return InvalidArgument("ttl: 0 to 2147483647");
    r.ttl = static_cast<uint32_t>(t);
  }
  auto rd = j.find("rdata");
  if (rd == j.end() || !rd->is_array()) return InvalidArgument("rdata: a list of strings is required");
  for (size_t i = 0; i < rd->size(); ++i) {
    if (!(*rd)[i].is_string()) return InvalidArgument("rdata[" + std::to_string(i) + "]: a string");
    r.rdata.push_back((*rd)[i].get<std::string>());
  }
  if (r.rdata.empty()) return InvalidArgument("rdata: empty (DELETE removes an RRset)");
  return r;
}

}  // namespace govern::dns_service
