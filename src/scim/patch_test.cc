// PATCH engine properties that a table of cases states poorly: all-or-nothing, `changed`, limits.
#include "scim/patch.h"

#include <gtest/gtest.h>

#include "scim/resource.h"

namespace govern::scim {
namespace {

using nlohmann::json;

json User() {
  json out;
  Error e = NormalizeResource(UserResourceType(), json::parse(R"({"userName":"bjensen","active":true,
    "emails":[{"value":"b@example.com","type":"work","primary":true}]})"),
                              &out);
  EXPECT_TRUE(e.ok()) << e.detail;
  return out;
}

TEST(ScimPatch, AllOrNothing) {
  json user = User();
  json before = user;
  // The first operation would apply; the second is refused, so neither does.
  json req = json::parse(R"({"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[
    {"op":"replace","path":"displayName","value":"B"},{"op":"replace","path":"meta.created","value":"x"}]})");
  Error e = ApplyPatch(UserResourceType(), req, &user);
  EXPECT_EQ(e.scim_type, "mutability");
  EXPECT_EQ(user, before);
}

TEST(ScimPatch, ChangedSaysWhetherAnythingMoved) {
  json user = User();
  bool changed = true;
  json same = json::parse(R"({"Operations":[{"op":"replace","value":{"active":true}}]})");
  ASSERT_TRUE(ApplyPatch(UserResourceType(), same, &user, &changed).ok());
  EXPECT_FALSE(changed);
  json off = json::parse(R"({"Operations":[{"op":"Replace","path":"active","value":"False"}]})");
  ASSERT_TRUE(ApplyPatch(UserResourceType(), off, &user, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(user["active"], false);
}

TEST(ScimPatch, TooManyOperations) {
  json user = User();
  json ops = json::array();
  for (size_t i = 0; i <= kMaxPatchOperations; ++i)
    ops.push_back({{"op", "add"}, {"path", "title"}, {"value", "t"}});
  Error e = ApplyPatch(UserResourceType(), json{{"Operations", ops}}, &user);
  EXPECT_EQ(e.scim_type, "tooMany");
}

TEST(ScimPatch, WrongSchemasRefused) {
  json user = User();
  Error e = ApplyPatch(UserResourceType(), json::parse(R"({"schemas":["x"],"Operations":[]})"), &user);
  EXPECT_EQ(e.scim_type, "invalidSyntax");
}

}  // namespace
}  // namespace govern::scim
