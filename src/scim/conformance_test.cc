// The data-driven SCIM conformance suite: every testdata/*.json file holds cases (request in, expected
// result out) taken from RFC 7643/7644 examples and from the request bodies Okta and Entra document.
//
// A file: {"resources": {"User": [...], "Group": [...]}, "cases": [case...]}; a case has "name", "type"
// (User or Group), "kind" and then:
//   filter:  "filter", "expect_ids" (ids of the file's resources that match, in order) or "expect_error"
//   patch:   "resource" (or "resource_id" of the file's resources), "request", "expect" or "expect_error"
//   create:  "body", "expect" or "expect_error" (NormalizeResource, as POST and PUT use it)
//   project: "resource_id", "attributes", "excludedAttributes", "expect"
//   sort:    "sortBy", "sortOrder", optional "filter", "expect_ids"
// "expect_error" is {"status": 400, "scimType": "invalidFilter"}.
#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "scim/filter.h"
#include "scim/patch.h"
#include "scim/resource.h"

namespace govern::scim {
namespace {

using nlohmann::json;

std::vector<std::string> CaseFiles() {
  std::vector<std::string> out;
  DIR* dir = opendir(GOVERN_SCIM_TESTDATA);
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") out.push_back(name);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

json Load(const std::string& name) {
  std::ifstream in(std::string(GOVERN_SCIM_TESTDATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

const ResourceType& TypeOf(const json& c) {
  return c.value("type", "User") == "Group" ? GroupResourceType() : UserResourceType();
}

std::vector<json> Resources(const json& file, const ResourceType& type) {
  std::vector<json> out;
  if (!file.contains("resources") || !file["resources"].contains(type.name)) return out;
  for (const json& r : file["resources"][type.name]) {
    json n;
    Error e = NormalizeResource(type, r, &n);
    EXPECT_TRUE(e.ok()) << e.detail << " in " << r.dump();
    n["id"] = r["id"];
    if (r.contains("meta")) n["meta"] = r["meta"];
    out.push_back(n);
  }
  return out;
}

void ExpectError(const json& c, const Error& e) {
  ASSERT_FALSE(e.ok()) << "expected an error";
  EXPECT_EQ(e.status, c["expect_error"].value("status", 400)) << e.detail;
  EXPECT_EQ(e.scim_type, c["expect_error"].value("scimType", "")) << e.detail;
}

json Ids(const std::vector<json>& resources) {
  json ids = json::array();
  for (const json& r : resources) ids.push_back(r["id"]);
  return ids;
}

void RunCase(const json& file, const json& c) {
  const ResourceType& type = TypeOf(c);
  std::string kind = c.at("kind");
  std::vector<json> resources = Resources(file, type);
  auto find = [&](const std::string& id) {
    for (const json& r : resources) {
      if (r["id"] == id) return r;
    }
    ADD_FAILURE() << "no resource " << id;
    return json::object();
  };
  if (kind == "filter" || kind == "sort") {
    std::vector<json> selected = resources;
    if (c.contains("filter")) {
      std::unique_ptr<Filter> f;
      Error e = ParseFilter(type, c["filter"].get<std::string>(), &f);
      if (c.contains("expect_error")) return ExpectError(c, e);
      ASSERT_TRUE(e.ok()) << e.detail;
      selected.clear();
      for (const json& r : resources) {
        if (Matches(*f, r)) selected.push_back(r);
      }
    }
    if (kind == "sort") {
      AttrPath by;
      Error e = ParseSortBy(type, c["sortBy"].get<std::string>(), &by);
      if (c.contains("expect_error")) return ExpectError(c, e);
      ASSERT_TRUE(e.ok()) << e.detail;
      SortResources(by, c.value("sortOrder", "ascending") == "descending", &selected);
    }
    EXPECT_EQ(Ids(selected), c["expect_ids"]);
  } else if (kind == "patch") {
    json resource;
    if (c.contains("resource_id")) {
      resource = find(c["resource_id"]);
    } else {
      Error e = NormalizeResource(type, c["resource"], &resource);
      ASSERT_TRUE(e.ok()) << e.detail;
      if (c["resource"].contains("id")) resource["id"] = c["resource"]["id"];
    }
    json before = resource;
    Error e = ApplyPatch(type, c["request"], &resource);
    if (c.contains("expect_error")) {
      ExpectError(c, e);
      EXPECT_EQ(resource, before) << "a refused PATCH must change nothing";
      return;
    }
    ASSERT_TRUE(e.ok()) << e.scim_type << ": " << e.detail;
    json want;
    ASSERT_TRUE(NormalizeResource(type, c["expect"], &want).ok());
    if (c["expect"].contains("id")) want["id"] = c["expect"]["id"];
    if (c["expect"].contains("meta")) want["meta"] = c["expect"]["meta"];
    EXPECT_EQ(resource, want) << "got " << resource.dump(2);
  } else if (kind == "create") {
    json out;
    Error e = NormalizeResource(type, c["body"], &out);
    if (c.contains("expect_error")) return ExpectError(c, e);
    ASSERT_TRUE(e.ok()) << e.detail;
    EXPECT_EQ(out, c["expect"]) << "got " << out.dump(2);
  } else if (kind == "project") {
    json r = find(c["resource_id"]);
    json got = Project(type, r, ParseAttributeList(type, c.value("attributes", "")),
                       ParseAttributeList(type, c.value("excludedAttributes", "")));
    EXPECT_EQ(got, c["expect"]) << "got " << got.dump(2);
  } else {
    FAIL() << "unknown kind " << kind;
  }
}

TEST(ScimConformance, AllFiles) {
  std::vector<std::string> files = CaseFiles();
  ASSERT_FALSE(files.empty());
  size_t cases = 0;
  for (const std::string& name : files) {
    json file = Load(name);
    for (const json& c : file["cases"]) {
      SCOPED_TRACE(name + ": " + c.value("name", "?"));
      RunCase(file, c);
      ++cases;
    }
  }
  EXPECT_GT(cases, 50u);
}

}  // namespace
}  // namespace govern::scim
