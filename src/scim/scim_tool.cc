// scim_tool: govern_scim's answers for the cross-checks in tests/e2e/scim.
//   scim_tool filter < {"type":"User","resources":[…],"filters":["…",…]}
//     -> [{"ids":[…]} or {"error":"invalidFilter"}, …] (ids of matching resources, in order)
//   scim_tool patch < {"type":"User","cases":[{"resource":{…},"Operations":[…]},…]}
//     -> [{"result":{…}} or {"error":"noTarget"}, …]
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "scim/filter.h"
#include "scim/patch.h"
#include "scim/resource.h"

using govern::scim::Error;
using nlohmann::json;

namespace {

const govern::scim::ResourceType& TypeOf(const json& in) {
  return in.value("type", "User") == "Group" ? govern::scim::GroupResourceType()
                                             : govern::scim::UserResourceType();
}

json Normalized(const govern::scim::ResourceType& type, const json& raw, std::string* error) {
  json out;
  Error e = govern::scim::NormalizeResource(type, raw, &out);
  if (!e.ok()) {
    *error = e.scim_type + ": " + e.detail;
    return json();
  }
  if (raw.contains("id")) out["id"] = raw["id"];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: scim_tool filter|patch < input.json\n");
    return 2;
  }
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  json in = json::parse(text, nullptr, false);
  if (in.is_discarded()) {
    std::fprintf(stderr, "scim_tool: input is not JSON\n");
    return 2;
  }
  const govern::scim::ResourceType& type = TypeOf(in);
  std::string mode = argv[1];
  json out = json::array();
  if (mode == "filter") {
    std::vector<json> resources;
    for (const json& r : in["resources"]) {
      std::string error;
      resources.push_back(Normalized(type, r, &error));
      if (!error.empty()) {
        std::fprintf(stderr, "scim_tool: resource %s: %s\n", r.dump().c_str(), error.c_str());
        return 2;
      }
    }
    for (const json& f : in["filters"]) {
      std::unique_ptr<govern::scim::Filter> filter;
      Error e = govern::scim::ParseFilter(type, f.get<std::string>(), &filter);
      if (!e.ok()) {
        out.push_back({{"error", e.scim_type}, {"detail", e.detail}});
        continue;
      }
      json ids = json::array();
      for (const json& r : resources) {
        if (govern::scim::Matches(*filter, r)) ids.push_back(r["id"]);
      }
      out.push_back({{"ids", ids}});
    }
  } else if (mode == "patch") {
    for (const json& c : in["cases"]) {
      std::string error;
      json resource = Normalized(type, c["resource"], &error);
      if (!error.empty()) {
        std::fprintf(stderr, "scim_tool: resource: %s\n", error.c_str());
        return 2;
      }
      json request = {{"schemas", {govern::scim::kPatchOpSchema}}, {"Operations", c["Operations"]}};
      Error e = govern::scim::ApplyPatch(type, request, &resource);
      if (!e.ok()) {
        out.push_back({{"error", e.scim_type}, {"detail", e.detail}});
      } else {
        out.push_back({{"result", resource}});
      }
    }
  } else {
    std::fprintf(stderr, "scim_tool: unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::cout << out.dump() << "\n";
  return 0;
}
