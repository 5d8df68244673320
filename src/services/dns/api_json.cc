#include "services/dns/api_json.h"

#include <nlohmann/json.hpp>

namespace govern::dns_service {
namespace {

Result<nlohmann::json> Object(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("body: not a JSON object");
  return j;
}

// A non-negative integer up to `max` (JSON numbers above INT64_MAX read as negative through int64_t).
Result<int64_t> Count(const nlohmann::json& v, std::string_view field, int64_t max) {
  std::string err = std::string(field) + ": 0 to " + std::to_string(max);
  if (!v.is_number_integer()) return InvalidArgument(err);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)) return InvalidArgument(err);
  int64_t n = v.get<int64_t>();
  if (n < 0 || n > max) return InvalidArgument(err);
  return n;
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
  if (auto it = j.find("dnskey_ttl"); it != j.end()) {
    GOVERN_ASSIGN_OR_RETURN(int64_t t, Count(*it, "dnskey_ttl", 0x7fffffff));
    cr.dnskey_ttl = static_cast<uint32_t>(t);
  }
  if (auto it = j.find("denial"); it != j.end()) {
    if (!it->is_string()) return InvalidArgument("denial: nsec3, nsec3-optout or compact");
    cr.denial = it->get<std::string>();
    GOVERN_RETURN_IF_ERROR(ValidateDenial(cr.denial));
  }
  return cr;
}

Result<std::string> ParseDenialBody(std::string_view body) {
  GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, Object(body));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "denial") return InvalidArgument(it.key() + ": unknown field");
  auto it = j.find("denial");
  if (it == j.end() || !it->is_string()) return InvalidArgument("denial: nsec3, nsec3-optout or compact");
  std::string d = it->get<std::string>();
  GOVERN_RETURN_IF_ERROR(ValidateDenial(d));
  return d;
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

Result<RolloverRequest> ParseRolloverBody(std::string_view body, const RolloverRequest& defaults) {
  RolloverRequest r = defaults;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return r;
  GOVERN_ASSIGN_OR_RETURN(nlohmann::json j, Object(body));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "algorithm" && it.key() != "propagation_delay" && it.key() != "parent_delay" &&
        it.key() != "await_ds")
      return InvalidArgument(it.key() + ": unknown field");
  }
  if (auto it = j.find("algorithm"); it != j.end()) {
    if (!it->is_number_integer() || (it->get<int64_t>() != 13 && it->get<int64_t>() != 15) ||
        (it->is_number_unsigned() && it->get<uint64_t>() > 15))
      return InvalidArgument("algorithm: 13 or 15");
    r.algorithm = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("propagation_delay"); it != j.end()) {
    GOVERN_ASSIGN_OR_RETURN(r.propagation_delay, Count(*it, "propagation_delay", 30 * 86400));
  }
  if (auto it = j.find("parent_delay"); it != j.end()) {
    GOVERN_ASSIGN_OR_RETURN(r.parent_delay, Count(*it, "parent_delay", 90 * 86400));
  }
  if (auto it = j.find("await_ds"); it != j.end()) {
    if (!it->is_boolean()) return InvalidArgument("await_ds: true or false");
    r.await_ds = it->get<bool>();
  }
  return r;
}

}  // namespace govern::dns_service
