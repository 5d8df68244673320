// The SCIM API through a real net::Server on a real socket and a real PostgreSQL: the Okta and Entra
// request bodies end to end, the auth directory written in the same transaction (sign-in refused and
// refresh families revoked on deactivation), uniqueness, ETags, paging, Bulk, and each refusal.
#include "services/scim/api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "policy/cedar.h"
#include "scim/schema.h"
#include "services/auth/form.h"
#include "services/auth/grants.h"
#include "services/auth/schema.h"
#include "services/auth/store.h"
#include "services/keys/keys.h"
#include "services/scim/schema.h"
#include "services/scim/store.h"

namespace govern::scim_service {
namespace {

using json = nlohmann::json;

class ScimApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = db::testing::TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::make_unique<db::testing::TestDatabase>(std::move(*db));
    auto pool = db::Pool::Create({.conninfo = db_->conninfo(), .max_size = 8});
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    pool_ = std::move(*pool);
    ASSERT_TRUE(PrepareAuthTables(*pool_).ok());
    auto applied = db::Migrator("scim", Migrations()).Apply(*pool_);
    ASSERT_TRUE(applied.ok()) << applied.status().message();
    acme_ = *service_keys::CreateKey(Conn(), ScimKeyTable(), "acme", "sync", "okta");
    globex_ = *service_keys::CreateKey(Conn(), ScimKeyTable(), "globex", "sync", "entra");
    keys_ = std::make_unique<service_keys::KeyCache>(pool_.get(), ScimKeyTable());
    store_ = std::make_unique<Store>(pool_.get());
    api_ = std::make_unique<Api>(
        store_.get(), keys_.get(),
        ApiOptions{.threads = 2, .bulk_max_operations = 5, .bulk_max_payload = 64 * 1024});
    net::Router router;
    api_->AddRoutes(router);
    server_ = std::make_unique<net::Server>(net::ServerConfig{.workers = 1}, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
  }

  void TearDown() override {
    server_.reset();
    api_.reset();
    store_.reset();
    keys_.reset();
    lease_.reset();
  }

  db::Connection& Conn() {
    if (!lease_) lease_.emplace(std::move(*pool_->Checkout()));
    return **lease_;
  }

  struct Reply {
    int status = 0;
    json body;
    net::Headers headers;
  };

  Reply Send(net::Method method, const std::string& path, const json& body = nullptr,
             const std::string& key = "", const std::string& if_match = "") {
    net::ClientRequest req;
    req.method = method;
    req.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/scim/v2" + path;
    req.headers.Set("Authorization", "Bearer " + (key.empty() ? acme_ : key));
    if (!if_match.empty()) req.headers.Set("If-Match", if_match);
    if (!body.is_null()) {
      req.body = body.is_string() ? body.get<std::string>() : body.dump();
      req.headers.Set("Content-Type", "application/scim+json");
    }
    auto r = client_.Send(std::move(req));
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return {};
    Reply out{r->status, json::parse(r->body, nullptr, false), r->headers};
    if (!r->body.empty()) {
      EXPECT_EQ(r->headers.Get("Content-Type").value_or(""), "application/scim+json");
    }
    return out;
  }

  std::string CreateUser(const std::string& user_name, const std::string& key = "") {
    Reply r = Send(net::Method::kPost, "/Users",
                   {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:User"}},
                    {"userName", user_name},
                    {"active", true},
                    {"emails", {{{"primary", true}, {"value", user_name}, {"type", "work"}}}}},
                   key);
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body.value("id", "");
  }

  std::optional<bool> Disabled(const std::string& user_id) {
    auto rows = Conn().Exec("SELECT disabled FROM auth_users WHERE user_id = $1", db::Params(user_id));
    if (!rows.ok() || rows->empty()) return std::nullopt;
    return *rows->Bool(0, 0);
  }

  int64_t Count(const std::string& sql, const db::Params& params) {
    auto rows = Conn().Exec(sql, params);
    EXPECT_TRUE(rows.ok()) << rows.status().message();
    return rows.ok() ? *rows->Int64(0, 0) : -1;
  }

  std::unique_ptr<db::testing::TestDatabase> db_;
  std::unique_ptr<db::Pool> pool_;
  std::optional<db::Pool::Lease> lease_;
  std::string acme_, globex_;
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<net::Server> server_;
  net::HttpClient client_;
};

TEST_F(ScimApiTest, OktaCreateSearchAndDeactivate) {
  Reply created = Send(net::Method::kPost, "/Users",
                       json::parse(R"({"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
      "userName":"test.user@okta.local","name":{"givenName":"Test","familyName":"User"},
      "emails":[{"primary":true,"value":"test.user@okta.local","type":"work"}],"displayName":"Test User",
      "locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[],"password":"1mz050nq","active":true})"));
  ASSERT_EQ(created.status, 201) << created.body.dump();
  std::string id = created.body["id"];
  EXPECT_EQ(created.headers.Get("ETag").value_or(""), "W/\"1\"");
  EXPECT_NE(created.headers.Get("Location").value_or("").find("/scim/v2/Users/" + id), std::string::npos);
  EXPECT_FALSE(created.body.contains("password"));
  EXPECT_EQ(Disabled(id), false);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE user_id = $1 AND email = 'test.user@okta.local' AND "
                  "org = 'acme'",
                  db::Params(id)),
            1);

  // Okta's import and its pre-create check: userName eq, matched in any case.
  Reply found = Send(net::Method::kGet,
                     "/Users?filter=userName%20eq%20%22TEST.USER%40okta.local%22&startIndex=1&count=100");
  ASSERT_EQ(found.status, 200);
  EXPECT_EQ(found.body["totalResults"], 1);
  EXPECT_EQ(found.body["Resources"][0]["id"], id);
  EXPECT_EQ(found.body["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:ListResponse");

  // A signed-in session and a refresh family exist for the user.
  ASSERT_TRUE(
      Conn()
          .Exec("INSERT INTO auth_refresh_families (family, client_id, org, subject, expires_at) VALUES "
                "('fam-1', 'app', 'acme', $1, 9999999999)",
                db::Params(id))
          .ok());
  ASSERT_TRUE(
      Conn()
          .Exec(
              "INSERT INTO auth_sessions (session_hash, user_id, auth_time, expires_at) VALUES ('s1', $1, 1, "
              "9999999999)",
              db::Params(id))
          .ok());

  Reply off = Send(net::Method::kPatch, "/Users/" + id,
                   json::parse(R"({"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
      "Operations":[{"op":"replace","value":{"active":false}}]})"));
  ASSERT_EQ(off.status, 200) << off.body.dump();
  EXPECT_EQ(off.body["active"], false);
  EXPECT_EQ(off.headers.Get("ETag").value_or(""), "W/\"2\"");
  EXPECT_EQ(Disabled(id), true);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_refresh_families WHERE family = 'fam-1' AND revoked", {}), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_revocations WHERE kind = 'sid' AND id = 'fam-1'", {}), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_sessions WHERE user_id = $1", db::Params(id)), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(id)), 2);

  // The same PATCH again changes nothing: no new version, no new log row.
  Reply again = Send(net::Method::kPatch, "/Users/" + id,
                     json::parse(R"({"Operations":[{"op":"replace","value":{"active":false}}]})"));
  EXPECT_EQ(again.headers.Get("ETag").value_or(""), "W/\"2\"");
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(id)), 2);

  // Okta AIW: PUT with the whole user turns it back on.
  json put = created.body;
  put["active"] = true;
  put["name"]["givenName"] = "Another";
  Reply replaced = Send(net::Method::kPut, "/Users/" + id, put);
  ASSERT_EQ(replaced.status, 200) << replaced.body.dump();
  EXPECT_EQ(replaced.body["name"]["givenName"], "Another");
  EXPECT_EQ(Disabled(id), false);
}

TEST_F(ScimApiTest, EntraRetryDeactivateAndDelete) {
  json body = json::parse(R"({"schemas":["urn:ietf:params:scim:schemas:core:2.0:User",
      "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],"externalId":"0a21f0f2",
      "userName":"Test_User@testuser.com","active":true,
      "emails":[{"primary":true,"type":"work","value":"Test_User@testuser.com"}],"meta":{"resourceType":"User"},
      "name":{"formatted":"givenName familyName","familyName":"familyName","givenName":"givenName"},"roles":[]})");
  Reply first = Send(net::Method::kPost, "/Users", body, globex_);
  ASSERT_EQ(first.status, 201) << first.body.dump();
  std::string id = first.body["id"];
  // Entra re-sends the POST after a timeout: 409 uniqueness, never a second user.
  body["userName"] = "test_user@TESTUSER.com";
  Reply retry = Send(net::Method::kPost, "/Users", body, globex_);
  EXPECT_EQ(retry.status, 409);
  EXPECT_EQ(retry.body["scimType"], "uniqueness");
  EXPECT_EQ(retry.body["status"], "409");
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE org = 'globex'", {}), 1);

  Reply by_external = Send(net::Method::kGet, "/Users?filter=externalId+eq+%220a21f0f2%22", nullptr, globex_);
  EXPECT_EQ(by_external.body["totalResults"], 1);
  Reply by_email =
      Send(net::Method::kGet,
           "/Users?filter=emails%5Btype%20eq%20%22work%22%5D.value%20eq%20%22Test_User%40testuser.com%22",
           nullptr, globex_);
  EXPECT_EQ(by_email.body["totalResults"], 1);

  Reply off = Send(net::Method::kPatch, "/Users/" + id,
                   json::parse(R"({"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
      "Operations":[{"op":"Replace","path":"active","value":"False"},
                    {"op":"Replace","path":"emails[type eq \"work\"].value","value":"new@testuser.com"}]})"),
                   globex_);
  ASSERT_EQ(off.status, 200) << off.body.dump();
  EXPECT_EQ(Disabled(id), true);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE user_id = $1 AND email = 'new@testuser.com'",
                  db::Params(id)),
            1);

  // Another organisation's key cannot see or touch it.
  EXPECT_EQ(Send(net::Method::kGet, "/Users/" + id).status, 404);
  EXPECT_EQ(Send(net::Method::kDelete, "/Users/" + id).status, 404);

  EXPECT_EQ(Send(net::Method::kDelete, "/Users/" + id, nullptr, globex_).status, 204);
  EXPECT_FALSE(Disabled(id).has_value());
  EXPECT_EQ(Send(net::Method::kGet, "/Users/" + id, nullptr, globex_).status, 404);
}

TEST_F(ScimApiTest, GroupsWriteAuthMemberships) {
  std::string alice = CreateUser("alice@acme.test");
  std::string bob = CreateUser("bob@acme.test");
  Reply g = Send(net::Method::kPost, "/Groups",
                 {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:Group"}},
                  {"displayName", "Engineering"},
                  {"members", {{{"value", alice}}}}});
  ASSERT_EQ(g.status, 201) << g.body.dump();
  std::string gid = g.body["id"];
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme' AND name = 'Engineering'", {}),
            1);

  // Okta adds, Entra removes with a value array.
  Reply add = Send(
      net::Method::kPatch, "/Groups/" + gid,
      json::parse(R"({"Operations":[{"op":"add","path":"members","value":[{"value":")" + bob + R"("}]}]})"));
  ASSERT_EQ(add.status, 204) << add.body.dump();  // members-only PATCH: no body
  EXPECT_EQ(Send(net::Method::kGet, "/Groups/" + gid).body["members"].size(), 2u);
  Reply user = Send(net::Method::kGet, "/Users/" + bob);
  ASSERT_EQ(user.body["groups"].size(), 1u);
  EXPECT_EQ(user.body["groups"][0]["value"], gid);
  Reply remove = Send(net::Method::kPatch, "/Groups/" + gid,
                      json::parse(R"({"Operations":[{"op":"Remove","path":"members","value":[{"value":")" +
                                  alice + R"("}]}]})"));
  ASSERT_EQ(remove.status, 204);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme' AND name = 'Engineering'", {}),
            1);
  // The RFC form.
  Reply remove2 =
      Send(net::Method::kPatch, "/Groups/" + gid,
           json::parse(R"({"Operations":[{"op":"remove","path":"members[value eq \")" + bob + R"(\"]"}]})"));
  ASSERT_EQ(remove2.status, 204);
  // Removing again is not an error, and changes nothing.
  Reply version = Send(net::Method::kGet, "/Groups/" + gid);
  EXPECT_EQ(
      Send(net::Method::kPatch, "/Groups/" + gid,
           json::parse(R"({"Operations":[{"op":"remove","path":"members[value eq \")" + bob + R"(\"]"}]})"))
          .status,
      204);
  EXPECT_EQ(Send(net::Method::kGet, "/Groups/" + gid).headers.Get("ETag"), version.headers.Get("ETag"));
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme'", {}), 0);

  // A rename moves the auth group; members stay.
  Send(net::Method::kPatch, "/Groups/" + gid,
       json::parse(R"({"Operations":[{"op":"add","path":"members","value":[{"value":")" + bob + R"("}]}]})"));
  Reply renamed = Send(net::Method::kPatch, "/Groups/" + gid,
                       json::parse(R"({"Operations":[{"op":"replace","value":{"id":")" + gid +
                                   R"(","displayName":"Eng"}}]})"));
  ASSERT_EQ(renamed.status, 200) << renamed.body.dump();
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme' AND name = 'Eng'", {}), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_groups WHERE org = 'acme' AND name = 'Engineering'", {}), 0);

  // A member that is not a user of this organisation: refused, nothing changed.
  std::string other = CreateUser("carol@globex.test", globex_);
  Reply bad = Send(net::Method::kPatch, "/Groups/" + gid,
                   json::parse(R"({"Operations":[{"op":"add","path":"members","value":[{"value":")" + other +
                               R"("}]}]})"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["scimType"], "invalidValue");
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme'", {}), 1);
  // Also when it comes with a user that is one: nothing of the request applied.
  std::string dave = CreateUser("dave@acme.test");
  Reply mixed = Send(net::Method::kPatch, "/Groups/" + gid,
                     json::parse(R"({"Operations":[{"op":"add","path":"members","value":[{"value":")" + dave +
                                 R"("},{"value":")" + other + R"("}]}]})"));
  EXPECT_EQ(mixed.status, 400);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme'", {}), 1);

  // A members-only PATCH honours If-Match, bumps the version and logs the change once.
  std::string etag(Send(net::Method::kGet, "/Groups/" + gid).headers.Get("ETag").value_or(""));
  int64_t changes = Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(gid));
  json add_dave =
      json::parse(R"({"Operations":[{"op":"add","path":"members","value":[{"value":")" + dave + R"("}]}]})");
  EXPECT_EQ(Send(net::Method::kPatch, "/Groups/" + gid, add_dave, "", "W/\"1\"").status, 412);
  EXPECT_EQ(Send(net::Method::kPatch, "/Groups/" + gid, add_dave, "", etag).status, 204);
  EXPECT_NE(std::string(Send(net::Method::kGet, "/Groups/" + gid).headers.Get("ETag").value_or("")), etag);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(gid)), changes + 1);
  // Users in a list carry their groups (one query for the page), with and without a filter.
  Reply users = Send(net::Method::kGet, "/Users?startIndex=1&count=50");
  ASSERT_EQ(users.status, 200);
  int with_groups = 0;
  for (const json& u : users.body["Resources"]) {
    if (u["id"] == bob || u["id"] == dave) {
      ASSERT_TRUE(u.contains("groups")) << u.dump();
      EXPECT_EQ(u["groups"][0]["value"], gid);
      ++with_groups;
    } else {
      EXPECT_FALSE(u.contains("groups")) << u.dump();
    }
  }
  EXPECT_EQ(with_groups, 2);
  Reply filtered = Send(net::Method::kGet, "/Users?filter=userName%20sw%20%22dave%22");
  ASSERT_EQ(filtered.body["totalResults"], 1) << filtered.body.dump();
  EXPECT_EQ(filtered.body["Resources"][0]["groups"][0]["display"], "Eng");
  Send(net::Method::kPatch, "/Groups/" + gid,
       json::parse(R"({"Operations":[{"op":"remove","path":"members[value eq \")" + dave + R"(\"]"}]})"));

  Reply list =
      Send(net::Method::kGet, "/Groups?filter=displayName%20eq%20%22eng%22&excludedAttributes=members");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body["totalResults"], 1);
  EXPECT_FALSE(list.body["Resources"][0].contains("members"));

  EXPECT_EQ(Send(net::Method::kDelete, "/Groups/" + gid).status, 204);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme'", {}), 0);
}

// RFC 7643 section 4.2: a group's members may be groups. Nesting is typed and referenced in `members`,
// reaches users as indirect `groups`, feeds auth's groups claim (GroupsOf) and policy entities
// transitively, never forms a cycle, and goes when a group goes.
TEST_F(ScimApiTest, NestedGroups) {
  std::string alice = CreateUser("alice@acme.test");
  std::string bob = CreateUser("bob@acme.test");
  std::string carol = CreateUser("carol@acme.test");
  auto group = [&](const std::string& name, const json& members) {
    Reply r = Send(net::Method::kPost, "/Groups",
                   {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:Group"}},
                    {"displayName", name},
                    {"members", members}});
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body.value("id", "");
  };
  auto add = [&](const std::string& gid, const std::string& member, const std::string& key = "") {
    return Send(net::Method::kPatch, "/Groups/" + gid,
                json::parse(R"({"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
      "Operations":[{"op":"add","path":"members","value":[{"value":")" +
                            member + R"(","type":"Group"}]}]})"),
                key);
  };
  std::string sre = group("SRE", {{{"value", carol}}});
  // Made with a group member: the nesting is written with the group.
  std::string platform = group("Platform", {{{"value", bob}}, {{"value", sre}, {"type", "Group"}}});
  std::string eng = group("Eng", {{{"value", alice}}});
  Reply nest = add(eng, platform);
  ASSERT_EQ(nest.status, 200) << nest.body.dump();
  EXPECT_EQ(Count("SELECT count(*) FROM auth_subgroups WHERE org = 'acme'", {}), 2);

  Reply eng_now = Send(net::Method::kGet, "/Groups/" + eng);
  ASSERT_EQ(eng_now.body["members"].size(), 2u) << eng_now.body.dump();
  EXPECT_EQ(eng_now.body["members"][0]["value"], alice);
  EXPECT_EQ(eng_now.body["members"][0]["type"], "User");
  EXPECT_EQ(eng_now.body["members"][1]["value"], platform);
  EXPECT_EQ(eng_now.body["members"][1]["type"], "Group");
  EXPECT_EQ(eng_now.body["members"][1]["display"], "Platform");
  std::string ref = eng_now.body["members"][1]["$ref"];
  EXPECT_NE(ref.find("/scim/v2/Groups/" + platform), std::string::npos) << ref;
  EXPECT_NE(eng_now.body["members"][0]["$ref"].get<std::string>().find("/scim/v2/Users/" + alice),
            std::string::npos);

  // carol is in SRE directly, in Platform and Eng through it.
  Reply c = Send(net::Method::kGet, "/Users/" + carol);
  ASSERT_EQ(c.body["groups"].size(), 3u) << c.body.dump();
  std::map<std::string, std::string> kinds;
  for (const json& g : c.body["groups"]) kinds[g["display"]] = g["type"];
  EXPECT_EQ(kinds, (std::map<std::string, std::string>{
                       {"Eng", "indirect"}, {"Platform", "indirect"}, {"SRE", "direct"}}));
  EXPECT_EQ(auth_service::GroupsOf(Conn(), carol).value(),
            (std::vector<std::string>{"Eng", "Platform", "SRE"}));
  EXPECT_EQ(auth_service::GroupsOf(Conn(), alice).value(), (std::vector<std::string>{"Eng"}));
  // The same in a list page (one query for the page).
  Reply page = Send(net::Method::kGet, "/Users?filter=userName%20eq%20%22carol%40acme.test%22");
  EXPECT_EQ(page.body["Resources"][0]["groups"].size(), 3u);

  // Policy entities: Cedar's `in` follows the parents, so a member of SRE is in Eng.
  json entities;
  ASSERT_TRUE(store_->PolicyEntities("acme", &entities).ok());
  auto policies = policy::PolicySet::Parse(R"(permit (principal in Group::"Eng", action, resource);)");
  ASSERT_TRUE(policies.ok()) << policies.status().message();
  auto loaded = policy::Entities::FromJson(entities.dump());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message() << entities.dump();
  auto decide = [&](const std::string& user) {
    auto req = policy::Request::Make({"User", user}, {"Action", "read"}, {"Doc", "d"}, "");
    EXPECT_TRUE(req.ok());
    return policy::Authorize(*policies, *loaded, *req).decision;
  };
  EXPECT_EQ(decide(carol), policy::Decision::kAllow);
  EXPECT_EQ(decide(alice), policy::Decision::kAllow);
  std::string dave = CreateUser("dave@acme.test");
  ASSERT_TRUE(store_->PolicyEntities("acme", &entities).ok());
  loaded = policy::Entities::FromJson(entities.dump());
  EXPECT_EQ(decide(dave), policy::Decision::kDeny);

  // Filters see typed members.
  Reply nested =
      Send(net::Method::kGet, "/Groups?filter=members%5Btype%20eq%20%22Group%22%5D&sortBy=displayName");
  ASSERT_EQ(nested.status, 200) << nested.body.dump();
  ASSERT_EQ(nested.body["totalResults"], 2);
  EXPECT_EQ(nested.body["Resources"][0]["displayName"], "Eng");
  EXPECT_EQ(nested.body["Resources"][1]["displayName"], "Platform");
  Reply holding = Send(net::Method::kGet, "/Groups?filter=members%5Bvalue%20eq%20%22" + sre + "%22%5D");
  EXPECT_EQ(holding.body["totalResults"], 1);

  // Cycles are refused, whether direct, deep or to itself; nothing is written.
  int64_t changes = Count("SELECT count(*) FROM scim_changes WHERE org = 'acme'", {});
  for (const auto& [into, member] :
       std::vector<std::pair<std::string, std::string>>{{platform, eng}, {sre, eng}, {eng, eng}}) {
    Reply cycle = add(into, member);
    EXPECT_EQ(cycle.status, 400) << cycle.body.dump();
    EXPECT_EQ(cycle.body["scimType"], "invalidValue");
  }
  // Also through PUT.
  json put = Send(net::Method::kGet, "/Groups/" + sre).body;
  put["members"].push_back({{"value", eng}, {"type", "Group"}});
  EXPECT_EQ(Send(net::Method::kPut, "/Groups/" + sre, put).body["scimType"], "invalidValue");
  EXPECT_EQ(Count("SELECT count(*) FROM auth_subgroups WHERE org = 'acme'", {}), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE org = 'acme'", {}), changes);
  // Another organisation's group is no member.
  Reply g2 = Send(net::Method::kPost, "/Groups", {{"displayName", "GlobexTeam"}}, globex_);
  Reply foreign = add(eng, g2.body.value("id", ""));
  EXPECT_EQ(foreign.status, 400);
  EXPECT_EQ(foreign.body["scimType"], "invalidValue");

  // A rename keeps the nesting on both sides.
  Reply renamed =
      Send(net::Method::kPatch, "/Groups/" + platform,
           json::parse(R"({"Operations":[{"op":"replace","path":"displayName","value":"Infra"}]})"));
  ASSERT_EQ(renamed.status, 200) << renamed.body.dump();
  EXPECT_EQ(auth_service::GroupsOf(Conn(), carol).value(), (std::vector<std::string>{"Eng", "Infra", "SRE"}));

  // Both forms of member removal take groups out, each logged once.
  Reply out1 =
      Send(net::Method::kPatch, "/Groups/" + platform,
           json::parse(R"({"Operations":[{"op":"remove","path":"members[value eq \")" + sre + R"(\"]"}]})"));
  EXPECT_EQ(out1.status, 204);
  EXPECT_EQ(auth_service::GroupsOf(Conn(), carol).value(), (std::vector<std::string>{"SRE"}));
  EXPECT_EQ(add(platform, sre).status, 200);
  Reply out2 = Send(net::Method::kPatch, "/Groups/" + platform,
                    json::parse(R"({"Operations":[{"op":"Remove","path":"members","value":[{"value":")" +
                                sre + R"("}]}]})"));
  EXPECT_EQ(out2.status, 204);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_subgroups WHERE org = 'acme'", {}), 1);
  EXPECT_EQ(add(platform, sre).status, 200);

  // Deleting a group takes it out of the groups it was in and drops the groups inside it.
  EXPECT_EQ(Send(net::Method::kDelete, "/Groups/" + platform).status, 204);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_subgroups WHERE org = 'acme'", {}), 0);
  Reply eng_after = Send(net::Method::kGet, "/Groups/" + eng);
  ASSERT_EQ(eng_after.body["members"].size(), 1u);
  EXPECT_EQ(auth_service::GroupsOf(Conn(), carol).value(), (std::vector<std::string>{"SRE"}));
  EXPECT_EQ(Send(net::Method::kGet, "/Users/" + carol).body["groups"].size(), 1u);
}

// Sign-in follows provisioning, through auth's own OAuth provider on the same database: a SCIM user
// signs in and refreshes; once SCIM deactivates them the refresh token fails at once and a new sign-in
// is refused; a deleted user the same. The groups claim carries nested groups.
TEST_F(ScimApiTest, SignInFollowsProvisioning) {
  ManualClock clock;
  int64_t now = clock.UnixMicros() / 1'000'000;
  auto access = std::make_shared<const tokens::KeyRing>(
      *tokens::KeyRing::Create(tokens::Alg::kHS256, tokens::RotationPolicy{}, now));
  auto id_ring = std::make_shared<const tokens::KeyRing>(
      *tokens::KeyRing::Create(tokens::Alg::kES256, tokens::RotationPolicy{}, now));
  tokens::Issuer issuer(tokens::IssuerOptions{"https://auth.test"}, access, id_ring, clock);
  std::vector<tokens::VerifyKey> keys = access->VerifyKeysAt(now).keys();
  tokens::Checker checker(tokens::CheckerOptions{.issuer = "https://auth.test"},
                          std::make_shared<const tokens::KeySet>(keys), clock);
  auth_service::ProviderOptions o;
  o.issuer = "https://auth.test";
  auth_service::Provider provider(o, issuer, checker, clock, nullptr);
  // SCIM makes the organisation with its first user.
  std::string ann = CreateUser("ann@acme.test");
  std::string ben = CreateUser("ben@acme.test");
  const std::string redirect = "http://127.0.0.1:9999/cb";
  const std::string verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  auto app = auth_service::CreateClient(Conn(), "acme", "web", auth_service::ClientKind::kApp, false,
                                        {"openid", "groups"}, {redirect});
  ASSERT_TRUE(app.ok()) << app.status().message();
  const std::string client_id = app->client.client_id;
  auto sign_in = [&](const std::string& user_id) {
    auto code = provider.NewCode(
        Conn(), {client_id, user_id, redirect, "openid groups", "n", auth_service::S256(verifier), 1});
    EXPECT_TRUE(code.ok());
    return provider.Token(Conn(),
                          "grant_type=authorization_code&code=" + *code +
                              "&redirect_uri=" + auth_service::FormEncode(redirect) +
                              "&code_verifier=" + verifier + "&client_id=" + client_id,
                          std::nullopt);
  };
  auto refresh = [&](const std::string& token) {
    return provider.Token(
        Conn(), "grant_type=refresh_token&refresh_token=" + token + "&client_id=" + client_id, std::nullopt);
  };
  auto field = [](const auth_service::Reply& r, const char* name) {
    json j = json::parse(r.body, nullptr, false);
    return j.is_object() ? j.value(name, "") : "";
  };

  Reply inner =
      Send(net::Method::kPost, "/Groups", {{"displayName", "Oncall"}, {"members", {{{"value", ann}}}}});
  Reply outer =
      Send(net::Method::kPost, "/Groups",
           {{"displayName", "Staff"}, {"members", {{{"value", inner.body["id"]}, {"type", "Group"}}}}});
  ASSERT_EQ(outer.status, 201) << outer.body.dump();

  auth_service::Reply ann_tokens = sign_in(ann);
  ASSERT_EQ(ann_tokens.status, 200) << ann_tokens.body;
  auth_service::Reply info = provider.UserInfo(Conn(), field(ann_tokens, "access_token"));
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(json::parse(info.body)["groups"], json({"Oncall", "Staff"}));
  auth_service::Reply rotated = refresh(field(ann_tokens, "refresh_token"));
  ASSERT_EQ(rotated.status, 200) << rotated.body;

  // Okta's deactivation: the current refresh token fails at once, a new sign-in is refused.
  Reply off = Send(net::Method::kPatch, "/Users/" + ann,
                   json::parse(R"({"Operations":[{"op":"replace","value":{"active":false}}]})"));
  ASSERT_EQ(off.status, 200) << off.body.dump();
  EXPECT_EQ(field(refresh(field(rotated, "refresh_token")), "error"), "invalid_grant");
  EXPECT_EQ(field(sign_in(ann), "error"), "invalid_grant");
  // Turned back on (PUT), they may sign in again; the revoked family stays revoked.
  json put = Send(net::Method::kGet, "/Users/" + ann).body;
  put["active"] = true;
  ASSERT_EQ(Send(net::Method::kPut, "/Users/" + ann, put).status, 200);
  EXPECT_EQ(sign_in(ann).status, 200);
  EXPECT_EQ(field(refresh(field(rotated, "refresh_token")), "error"), "invalid_grant");

  // Deleted: the refresh token fails at once and the family is on the revocation list.
  auth_service::Reply ben_tokens = sign_in(ben);
  ASSERT_EQ(ben_tokens.status, 200) << ben_tokens.body;
  ASSERT_EQ(Send(net::Method::kDelete, "/Users/" + ben).status, 204);
  EXPECT_EQ(field(refresh(field(ben_tokens, "refresh_token")), "error"), "invalid_grant");
  EXPECT_EQ(
      Count("SELECT count(*) FROM auth_refresh_families f JOIN auth_revocations r ON r.kind = 'sid' AND "
            "r.id = f.family WHERE f.subject = $1 AND f.revoked",
            db::Params(ben)),
      1);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = $1 AND action = 'delete'", db::Params(ben)),
            1);
}

// Every change writes exactly one scim_changes row (and a refused or empty one none); a user PUT or
// PATCH refused by either unique index (userName in scim_resources, email in auth_users) leaves both
// tables as they were, though both are written by the same statement.
TEST_F(ScimApiTest, ChangesAreWholeAndLogged) {
  std::string id = CreateUser("kim@acme.test");
  std::string other = CreateUser("lee@acme.test");
  auto actions = [&](const std::string& of) {
    auto rows = Conn().Exec("SELECT action || ':' || version FROM scim_changes WHERE id = $1 ORDER BY seq",
                            db::Params(of));
    std::vector<std::string> out;
    for (int i = 0; rows.ok() && i < rows->size(); ++i) out.emplace_back(rows->Text(i, 0));
    return out;
  };
  json put = Send(net::Method::kGet, "/Users/" + id).body;
  put["title"] = "Engineer";
  EXPECT_EQ(Send(net::Method::kPut, "/Users/" + id, put, "", "W/\"9\"").status, 412);
  Reply replaced = Send(net::Method::kPut, "/Users/" + id, put, "", "W/\"1\"");
  ASSERT_EQ(replaced.status, 200) << replaced.body.dump();
  EXPECT_EQ(replaced.headers.Get("ETag").value_or(""), "W/\"2\"");
  // Entra's path-less replace with dotted names.
  Reply dotted = Send(net::Method::kPatch, "/Users/" + id,
                      json::parse(R"({"Operations":[{"op":"Replace","value":{"name.givenName":"Kim",
                      "name.familyName":"Park","displayName":"Kim Park"}}]})"));
  ASSERT_EQ(dotted.status, 200) << dotted.body.dump();
  EXPECT_EQ(dotted.body["name"]["givenName"], "Kim");
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE user_id = $1 AND display_name = 'Kim Park'",
                  db::Params(id)),
            1);
  // The same state again: nothing written.
  EXPECT_EQ(Send(net::Method::kPut, "/Users/" + id, dotted.body).headers.Get("ETag").value_or(""), "W/\"3\"");

  // Taken userName (any case), taken email: 409, nothing of either written.
  Reply name =
      Send(net::Method::kPatch, "/Users/" + id,
           json::parse(R"({"Operations":[{"op":"replace","path":"userName","value":"LEE@acme.test"}]})"));
  EXPECT_EQ(name.status, 409);
  EXPECT_EQ(name.body["scimType"], "uniqueness");
  json taken = dotted.body;
  taken["emails"] = {{{"value", "lee@acme.test"}, {"primary", true}}};
  taken["displayName"] = "Changed";
  Reply email = Send(net::Method::kPut, "/Users/" + id, taken);
  EXPECT_EQ(email.status, 409);
  EXPECT_EQ(email.body["scimType"], "uniqueness");
  Reply after = Send(net::Method::kGet, "/Users/" + id);
  EXPECT_EQ(after.headers.Get("ETag").value_or(""), "W/\"3\"");
  EXPECT_EQ(after.body["displayName"], "Kim Park");
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE user_id = $1 AND email = 'kim@acme.test' AND "
                  "display_name = 'Kim Park'",
                  db::Params(id)),
            1);

  // Another organisation's key: 404 for PUT and PATCH, nothing written.
  EXPECT_EQ(Send(net::Method::kPut, "/Users/" + id, put, globex_).status, 404);
  EXPECT_EQ(Send(net::Method::kPatch, "/Users/" + id,
                 json::parse(R"({"Operations":[{"op":"replace","path":"active","value":false}]})"), globex_)
                .status,
            404);
  EXPECT_EQ(Disabled(id), false);

  // Groups: create, members-only PATCH, PUT, delete; then the user's delete.
  Reply g = Send(net::Method::kPost, "/Groups", {{"displayName", "Team"}});
  std::string gid = g.body["id"];
  EXPECT_EQ(Send(net::Method::kPatch, "/Groups/" + gid,
                 json::parse(R"({"Operations":[{"op":"add","path":"members","value":[{"value":")" + id +
                             R"("}]}]})"))
                .status,
            204);
  json gput = Send(net::Method::kGet, "/Groups/" + gid).body;
  gput["members"] = {{{"value", other}}};
  EXPECT_EQ(Send(net::Method::kPut, "/Groups/" + gid, gput).status, 200);
  EXPECT_EQ(Send(net::Method::kDelete, "/Groups/" + gid, nullptr, "", "W/\"1\"").status, 412);
  EXPECT_EQ(Send(net::Method::kDelete, "/Groups/" + gid).status, 204);
  EXPECT_EQ(Send(net::Method::kDelete, "/Users/" + id).status, 204);
  EXPECT_EQ(actions(id), (std::vector<std::string>{"create:1", "replace:2", "patch:3", "delete:4"}));
  // A group's version is the seq of its latest change row (docs/scim.md, "Versions of groups").
  std::vector<std::string> group_actions;
  auto group_rows = Conn().Exec(
      "SELECT action || ':' || (version = seq)::text FROM scim_changes WHERE id = $1 ORDER BY seq",
      db::Params(gid));
  ASSERT_TRUE(group_rows.ok());
  for (int i = 0; i < group_rows->size(); ++i) group_actions.emplace_back(group_rows->Text(i, 0));
  EXPECT_EQ(group_actions,
            (std::vector<std::string>{"create:true", "patch:true", "replace:true", "delete:true"}));
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE key_id = ''", {}), 0);  // each names its key
}

// User writes read, change in memory and write only the version read: two writers of the same user at
// once each retry instead of overwriting the other (no lost update), and each write is one version and
// one log row.
TEST_F(ScimApiTest, ConcurrentUserWritesLoseNothing) {
  std::string id = CreateUser("busy@acme.test");
  constexpr int kEach = 25;
  auto writer = [&](const char* attr, const char* prefix) {
    for (int i = 0; i < kEach; ++i) {
      json out;
      json patch = {
          {"Operations", {{{"op", "replace"}, {"path", attr}, {"value", prefix + std::to_string(i)}}}}};
      scim::Error err = store_->Patch("acme", scim::UserResourceType(), id, patch, "", "k", &out);
      EXPECT_TRUE(err.ok()) << err.detail;
    }
  };
  std::thread a(writer, "title", "t"), b(writer, "nickName", "n");
  a.join();
  b.join();
  Reply r = Send(net::Method::kGet, "/Users/" + id);
  EXPECT_EQ(r.body["title"], "t" + std::to_string(kEach - 1));
  EXPECT_EQ(r.body["nickName"], "n" + std::to_string(kEach - 1));
  EXPECT_EQ(r.headers.Get("ETag").value_or(""), "W/\"" + std::to_string(1 + 2 * kEach) + "\"");
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(id)), 1 + 2 * kEach);
}

TEST_F(ScimApiTest, ETagsPagingAndProjection) {
  std::string id = CreateUser("u0@acme.test");
  for (int i = 1; i < 5; ++i) CreateUser("u" + std::to_string(i) + "@acme.test");
  Reply stale =
      Send(net::Method::kPatch, "/Users/" + id,
           json::parse(R"({"Operations":[{"op":"add","path":"title","value":"x"}]})"), "", "W/\"7\"");
  EXPECT_EQ(stale.status, 412);
  Reply fresh =
      Send(net::Method::kPatch, "/Users/" + id,
           json::parse(R"({"Operations":[{"op":"add","path":"title","value":"x"}]})"), "", "W/\"1\"");
  EXPECT_EQ(fresh.status, 200);

  Reply page = Send(net::Method::kGet, "/Users?startIndex=2&count=2");
  EXPECT_EQ(page.body["totalResults"], 5);
  EXPECT_EQ(page.body["startIndex"], 2);
  EXPECT_EQ(page.body["itemsPerPage"], 2);
  EXPECT_EQ(page.body["Resources"][0]["userName"], "u1@acme.test");

  Reply sorted = Send(net::Method::kGet,
                      "/Users?filter=userName%20sw%20%22u%22&sortBy=userName&sortOrder=descending&count=1"
                      "&attributes=userName");
  ASSERT_EQ(sorted.status, 200);
  EXPECT_EQ(sorted.body["totalResults"], 5);
  EXPECT_EQ(sorted.body["Resources"][0],
            json::parse(R"({"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
      "id":")" + sorted.body["Resources"][0].value("id", "") +
                        R"(","userName":"u4@acme.test"})"));

  Reply search = Send(net::Method::kPost, "/Users/.search",
                      json::parse(R"({"schemas":["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
      "filter":"title pr","attributes":["title"]})"));
  ASSERT_EQ(search.status, 200);
  EXPECT_EQ(search.body["totalResults"], 1);

  Reply none = Send(net::Method::kGet, "/Users?count=0");
  EXPECT_EQ(none.body["totalResults"], 5);
  EXPECT_EQ(none.body["Resources"].size(), 0u);
}

// A group's ETag moves on every membership change, though the change no longer rewrites the group's
// row (its version is the seq of its latest change row): a stale ETag gets 412 on every kind of write,
// and a PATCH that changes nothing leaves the ETag alone.
TEST_F(ScimApiTest, GroupETagFollowsMembership) {
  std::string u1 = CreateUser("m1@acme.test"), u2 = CreateUser("m2@acme.test"),
              u3 = CreateUser("m3@acme.test");
  Reply g = Send(net::Method::kPost, "/Groups",
                 {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:Group"}}, {"displayName", "Ops"}});
  ASSERT_EQ(g.status, 201) << g.body.dump();
  const std::string gid = g.body["id"], path = "/Groups/" + gid;
  auto add = [](const std::string& id) {
    return json{{"schemas", {"urn:ietf:params:scim:api:messages:2.0:PatchOp"}},
                {"Operations", {{{"op", "add"}, {"path", "members"}, {"value", {{{"value", id}}}}}}}};
  };
  auto remove = [](const std::string& id) {
    return json{{"schemas", {"urn:ietf:params:scim:api:messages:2.0:PatchOp"}},
                {"Operations", {{{"op", "remove"}, {"path", "members[value eq \"" + id + "\"]"}}}}};
  };
  // The ETag header, meta.version and the group's latest change row agree.
  auto etag = [&](Reply* got = nullptr) {
    Reply r = Send(net::Method::kGet, path);
    EXPECT_EQ(r.status, 200);
    std::string e(r.headers.Get("ETag").value_or(""));
    EXPECT_EQ(r.body["meta"]["version"], e);
    EXPECT_EQ(
        e, "W/\"" +
               std::to_string(Count("SELECT max(version) FROM scim_changes WHERE id = $1", db::Params(gid))) +
               "\"");
    if (got != nullptr) *got = r;
    return e;
  };
  Reply r0;
  const std::string e0 = etag(&r0);
  EXPECT_EQ(e0, g.headers.Get("ETag").value_or(""));

  ASSERT_EQ(Send(net::Method::kPatch, path, add(u1)).status, 204);  // no If-Match, as IdPs send it
  Reply r1;
  const std::string e1 = etag(&r1);
  EXPECT_NE(e1, e0) << "a member added must change the group's ETag";
  EXPECT_GE(r1.body["meta"]["lastModified"].get<std::string>(),
            r0.body["meta"]["lastModified"].get<std::string>());
  EXPECT_EQ(r1.body["meta"]["created"], r0.body["meta"]["created"]);

  // The ETag from before the member was added is stale for a members-only PATCH, a PUT and a DELETE.
  Reply stale = Send(net::Method::kPatch, path, add(u2), "", e0);
  EXPECT_EQ(stale.status, 412);
  EXPECT_EQ(
      Send(net::Method::kPut, path,
           {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:Group"}}, {"displayName", "Ops"}}, "", e0)
          .status,
      412);
  EXPECT_EQ(Send(net::Method::kDelete, path, nullptr, "", e0).status, 412);
  EXPECT_EQ(Send(net::Method::kGet, path).body["members"].size(), 1u);  // nothing of them applied
  EXPECT_EQ(etag(), e1);

  // The current one applies, and moves the ETag again; so does a removal.
  ASSERT_EQ(Send(net::Method::kPatch, path, add(u2), "", e1).status, 204);
  const std::string e2 = etag();
  EXPECT_NE(e2, e1);
  EXPECT_EQ(Send(net::Method::kPatch, path, add(u3), "", e1).status, 412);
  ASSERT_EQ(Send(net::Method::kPatch, path, remove(u1), "", e2).status, 204);
  const std::string e3 = etag();
  EXPECT_NE(e3, e2);
  EXPECT_NE(e3, e0);
  EXPECT_EQ(Send(net::Method::kPatch, path, add(u3), "", e2).status, 412);

  // A PATCH that changes nothing (a member already in, one already out) keeps the ETag and logs nothing.
  const int64_t changes = Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(gid));
  ASSERT_EQ(Send(net::Method::kPatch, path, add(u2), "", e3).status, 204);
  ASSERT_EQ(Send(net::Method::kPatch, path, remove(u1)).status, 204);
  EXPECT_EQ(etag(), e3);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(gid)), changes);

  // If-None-Match, lists and a rename see the same version.
  net::ClientRequest cached;
  cached.method = net::Method::kGet;
  cached.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/scim/v2" + path;
  cached.headers.Set("Authorization", "Bearer " + acme_);
  cached.headers.Set("If-None-Match", e3);
  auto not_modified = client_.Send(cached);
  ASSERT_TRUE(not_modified.ok());
  EXPECT_EQ(not_modified->status, 304);
  Reply listed = Send(net::Method::kGet, "/Groups?filter=displayName%20eq%20%22Ops%22");
  ASSERT_EQ(listed.body["Resources"].size(), 1u);
  EXPECT_EQ(listed.body["Resources"][0]["meta"]["version"], e3);
  Reply unfiltered = Send(net::Method::kGet, "/Groups");
  ASSERT_EQ(unfiltered.body["Resources"].size(), 1u);
  EXPECT_EQ(unfiltered.body["Resources"][0]["meta"]["version"], e3);
  Reply renamed = Send(net::Method::kPut, path,
                       {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:Group"}},
                        {"displayName", "Operations"},
                        {"members", {{{"value", u2}}, {{"value", u3}}}}},
                       "", e3);
  ASSERT_EQ(renamed.status, 200) << renamed.body.dump();
  const std::string e4(renamed.headers.Get("ETag").value_or(""));
  EXPECT_NE(e4, e3);
  EXPECT_EQ(renamed.body["meta"]["version"], e4);
  EXPECT_EQ(etag(), e4);
  EXPECT_EQ(Send(net::Method::kDelete, path, nullptr, "", e3).status, 412);
  EXPECT_EQ(Send(net::Method::kDelete, path, nullptr, "", e4).status, 204);
}

// Writers holding ETags race on one group: each reads the group's ETag and adds a member with
// If-Match, retrying on 412, while others add members without If-Match. A PATCH with If-Match may
// apply only when no other change of the group committed since the version it holds: its change row
// must directly follow (in the group's log) the change whose version it held, and no two may apply
// holding the same ETag. Run without and with group commit.
void RaceOnOneGroup(Store& store, const std::function<int64_t(const std::string&, const db::Params&)>& count,
                    db::Connection& conn, const std::string& tag) {
  const auto& users = scim::UserResourceType();
  const auto& groups = scim::GroupResourceType();
  json group;
  ASSERT_TRUE(store.Create("acme", groups, {{"displayName", "race-" + tag}}, "k", &group).ok());
  const std::string gid = group["id"];
  constexpr int kChecked = 4, kPlain = 2, kEach = 12;
  std::vector<std::string> ids;
  for (int i = 0; i < (kChecked + kPlain) * kEach; ++i) {
    json out;
    ASSERT_TRUE(store
                    .Create("acme", users,
                            {{"userName", "race-" + tag + "-" + std::to_string(i) + "@acme.test"}}, "k", &out)
                    .ok());
    ids.push_back(out["id"]);
  }
  auto add = [](const std::string& id) {
    return json{{"Operations", {{{"op", "add"}, {"path", "members"}, {"value", {{{"value", id}}}}}}}};
  };
  auto number = [](const std::string& etag) { return std::stoll(etag.substr(3, etag.size() - 4)); };
  std::mutex mu;
  std::map<std::string, int64_t> held;  // key of each applied If-Match PATCH -> the version it held
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kChecked + kPlain; ++t) {
    threads.emplace_back([&, t] {
      int64_t last_seen = 0;
      for (int i = 0; i < kEach; ++i) {
        const std::string& member = ids[static_cast<size_t>(t * kEach + i)];
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        json none;
        if (t >= kChecked) {
          if (!store.Patch("acme", groups, gid, add(member), "", key, &none).ok()) ++failures;
          continue;
        }
        for (int attempt = 0;; ++attempt) {
          json got;
          if (!store.Get("acme", groups, gid, &got).ok() || attempt > 500) {
            ++failures;
            break;
          }
          const std::string etag = got["meta"]["version"];
          if (number(etag) < last_seen) ++failures;  // a version never goes back
          last_seen = number(etag);
          scim::Error e = store.Patch("acme", groups, gid, add(member), etag, key, &none);
          if (e.status == 412) continue;
          if (!e.ok()) {
            ++failures;
            break;
          }
          std::lock_guard lk(mu);
          held[key] = number(etag);
          break;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << tag;
  const int total = (kChecked + kPlain) * kEach;
  EXPECT_EQ(count("SELECT count(*) FROM auth_memberships WHERE org = 'acme' AND name = $1",
                  db::Params("race-" + tag)),
            total);
  EXPECT_EQ(count("SELECT count(*) FROM scim_changes WHERE id = $1", db::Params(gid)), 1 + total);
  // lastModified never goes back while the version goes forward: a change that waited for the
  // group's lock is timed after the one it waited for (clock_timestamp, not the transaction's now()).
  EXPECT_EQ(count("SELECT count(*) FROM (SELECT at < lag(at) OVER (ORDER BY seq) AS back FROM scim_changes "
                  "WHERE id = $1) t WHERE back",
                  db::Params(gid)),
            0)
      << tag;
  ASSERT_EQ(held.size(), static_cast<size_t>(kChecked * kEach)) << tag;
  std::set<int64_t> distinct;
  for (const auto& [key, version] : held) distinct.insert(version);
  EXPECT_EQ(distinct.size(), held.size()) << tag << ": two PATCHes applied holding the same ETag";
  // The group's log in order: each applied If-Match PATCH directly follows the version it held.
  auto log =
      conn.Exec("SELECT version, key_id FROM scim_changes WHERE id = $1 ORDER BY seq", db::Params(gid));
  ASSERT_TRUE(log.ok());
  int64_t before = -1;
  int checked = 0;
  for (int i = 0; i < log->size(); ++i) {
    auto it = held.find(std::string(log->Text(i, 1)));
    if (it != held.end()) {
      EXPECT_EQ(it->second, before) << tag << ": " << it->first << " applied over a change it had not seen";
      ++checked;
    }
    before = *log->Int64(i, 0);
  }
  EXPECT_EQ(checked, kChecked * kEach) << tag;
  json final;
  ASSERT_TRUE(store.Get("acme", groups, gid, &final).ok());
  EXPECT_EQ(final["meta"]["version"], Store::ETag(before));
}

// A pooled connection keeps the generic plan it made of a statement, and on a fresh database that plan
// is made while the tables are nearly empty. Such plans once looked a resource up by its organisation
// and kind and filtered by id, reading every user of the organisation on each call: a first sync of
// 100,000 users grew quadratic. Here every statement gets its generic plan at its first call, made
// on a near-empty database; then the members-only group PATCH and the user re-sync PATCH must not
// read the (org, kind, ...) indexes of scim_resources for every user there is.
TEST_F(ScimApiTest, LookupsByIdStayOnThePrimaryKeyWithPlansMadeOnEmptyTables) {
  auto pool = db::Pool::Create(
      {.conninfo = db_->conninfo() + " options='-c plan_cache_mode=force_generic_plan'", .max_size = 1});
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  Store store(pool->get());
  const auto& users = scim::UserResourceType();
  const auto& groups = scim::GroupResourceType();
  auto user = [](int i) {
    return json{{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:User"}},
                {"userName", "plan" + std::to_string(i) + "@acme.test"},
                {"emails", {{{"primary", true}, {"value", "plan" + std::to_string(i) + "@acme.test"}}}}};
  };
  auto add = [](const std::string& id) {
    return json{{"schemas", {"urn:ietf:params:scim:api:messages:2.0:PatchOp"}},
                {"Operations", {{{"op", "add"}, {"path", "members"}, {"value", {{{"value", id}}}}}}}};
  };
  auto resync = [](int i) {
    return json{{"schemas", {"urn:ietf:params:scim:api:messages:2.0:PatchOp"}},
                {"Operations", {{{"op", "replace"}, {"path", "title"}, {"value", "T" + std::to_string(i)}}}}};
  };
  json group, out;
  // (The group by the fixture's store: making one holds a connection while it reads the group back.)
  ASSERT_TRUE(store_->Create("acme", groups, {{"displayName", "Plans"}}, "", &group).ok());
  std::vector<std::string> ids;
  auto make = [&](int i) {
    json made;
    ASSERT_TRUE(store.Create("acme", users, user(i), "", &made).ok());
    ids.push_back(made["id"]);
  };
  auto patch = [&](size_t i) {
    json none;
    ASSERT_TRUE(store.Patch("acme", groups, group["id"], add(ids[i]), "", "", &none).ok());
    ASSERT_TRUE(store.Patch("acme", users, ids[i], resync(static_cast<int>(i)), "", "", &none).ok());
  };
  make(0);
  patch(0);  // the plans, made with two resources stored
  for (int i = 1; i <= 300; ++i) make(i);
  // Index tuples read from scim_resources' (org, kind, ...) indexes, as of now: the connection's
  // statistics are flushed first (pg_stat_force_next_flush, at the end of its statement).
  auto read = [&]() -> int64_t {
    auto lease = (*pool)->Checkout();
    EXPECT_TRUE(lease.ok());
    if (!lease.ok()) return -1;
    EXPECT_TRUE((*lease)->Exec("SELECT pg_stat_force_next_flush()").ok());
    auto rows = (*lease)->Exec(
        "SELECT COALESCE(sum(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes WHERE indexrelname IN "
        "('scim_resources_list', 'scim_resources_external')");
    EXPECT_TRUE(rows.ok() && !rows->empty());
    return rows.ok() && !rows->empty() ? *rows->Int64(0, 0) : -1;
  };
  const int64_t before = read();
  for (size_t i = 1; i <= 20; ++i) patch(i);
  const int64_t after = read();
  // Looked up by id, 40 PATCHes read none of these indexes; filtering by id they read ~6,000 entries.
  EXPECT_LT(after - before, 300) << "PATCHes scanned the users of the organisation";
  ASSERT_TRUE(store_->Get("acme", groups, group["id"], &out).ok());
  EXPECT_EQ(out["members"].size(), 21u);
}

TEST_F(ScimApiTest, GroupIfMatchHoldsUnderConcurrentMembershipChanges) {
  auto count = [&](const std::string& sql, const db::Params& p) { return Count(sql, p); };
  RaceOnOneGroup(*store_, count, Conn(), "single");
  Store grouped(pool_.get(), StoreOptions{.group_commit = true});
  RaceOnOneGroup(grouped, count, Conn(), "grouped");
}

TEST_F(ScimApiTest, Refusals) {
  std::string id = CreateUser("x@acme.test");
  EXPECT_EQ(Send(net::Method::kGet, "/Users", nullptr, "gvs_aaaaaaaaaaaa_" + std::string(64, '0')).status,
            401);
  EXPECT_EQ(Send(net::Method::kGet, "/Users", nullptr, "nonsense").status, 401);
  Reply filter = Send(net::Method::kGet, "/Users?filter=userName%20eq");
  EXPECT_EQ(filter.status, 400);
  EXPECT_EQ(filter.body["scimType"], "invalidFilter");
  Reply syntax = Send(net::Method::kPost, "/Users", json("{not json"));
  EXPECT_EQ(syntax.body["scimType"], "invalidSyntax");
  Reply unknown = Send(net::Method::kPost, "/Users", {{"userName", "y"}, {"shoeSize", 9}});
  EXPECT_EQ(unknown.body["scimType"], "invalidSyntax");
  Reply required = Send(net::Method::kPost, "/Users", {{"displayName", "y"}});
  EXPECT_EQ(required.body["scimType"], "invalidValue");
  // A PATCH refused half way changes nothing.
  Reply half =
      Send(net::Method::kPatch, "/Users/" + id,
           json::parse(R"({"Operations":[{"op":"add","path":"title","value":"t"},{"op":"remove"}]})"));
  EXPECT_EQ(half.body["scimType"], "noTarget");
  Reply after = Send(net::Method::kGet, "/Users/" + id);
  EXPECT_FALSE(after.body.contains("title"));
  EXPECT_EQ(after.headers.Get("ETag").value_or(""), "W/\"1\"");
  EXPECT_EQ(Send(net::Method::kGet, "/Users/no-such-id").status, 404);
  // Another user taking x's email: 409 from auth's unique index.
  Reply email =
      Send(net::Method::kPost, "/Users", {{"userName", "other"}, {"emails", {{{"value", "X@acme.test"}}}}});
  EXPECT_EQ(email.status, 409);
  EXPECT_EQ(email.body["scimType"], "uniqueness");
  // The resource row written before auth's index refused the email is gone with it (one transaction).
  EXPECT_EQ(Count("SELECT count(*) FROM scim_resources WHERE org = 'acme' AND name = 'other'", {}), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM scim_changes WHERE org = 'acme' AND action = 'create' AND id NOT IN "
                  "(SELECT id FROM scim_resources)",
                  {}),
            0);
}

TEST_F(ScimApiTest, BulkWithReferencesAndLimits) {
  json bulk = json::parse(R"({"schemas":["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],"Operations":[
    {"method":"POST","path":"/Users","bulkId":"q1","data":{"userName":"bulk1@acme.test"}},
    {"method":"POST","path":"/Users","bulkId":"q2","data":{"userName":"bulk2@acme.test"}},
    {"method":"POST","path":"/Groups","bulkId":"g","data":{"displayName":"Bulk","members":[{"value":"bulkId:q1"},{"value":"bulkId:q2"}]}},
    {"method":"PATCH","path":"/Users/bulkId:q1","data":{"Operations":[{"op":"replace","path":"active","value":false}]}},
    {"method":"POST","path":"/Users","data":{"displayName":"no userName"}}]})");
  Reply r = Send(net::Method::kPost, "/Bulk", bulk);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  ASSERT_EQ(r.body["Operations"].size(), 5u);
  EXPECT_EQ(r.body["Operations"][0]["status"], "201");
  EXPECT_EQ(r.body["Operations"][2]["status"], "201");
  EXPECT_EQ(r.body["Operations"][3]["status"], "200");
  EXPECT_EQ(r.body["Operations"][4]["status"], "400");
  EXPECT_EQ(Count("SELECT count(*) FROM auth_memberships WHERE org = 'acme' AND name = 'Bulk'", {}), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM auth_users WHERE org = 'acme' AND disabled", {}), 1);

  json big = {{"Operations", json::array()}};
  for (int i = 0; i < 6; ++i) big["Operations"].push_back({{"method", "DELETE"}, {"path", "/Users/x"}});
  Reply too_many = Send(net::Method::kPost, "/Bulk", big);
  EXPECT_EQ(too_many.status, 413);
  EXPECT_EQ(too_many.body["status"], "413");
  // Over scim.bulk.max_payload (64 KiB here) with few operations: 413 as well, nothing applied.
  json heavy = {{"Operations",
                 {{{"method", "POST"},
                   {"path", "/Users"},
                   {"data", {{"userName", "heavy@acme.test"}, {"title", std::string(70 * 1024, 'x')}}}}}}};
  Reply too_large = Send(net::Method::kPost, "/Bulk", heavy);
  EXPECT_EQ(too_large.status, 413);
  EXPECT_EQ(too_large.body["status"], "413");
  EXPECT_EQ(too_large.body["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error");
  // A single resource over max_body_bytes (1 MiB): the same SCIM 413.
  Reply big_user = Send(net::Method::kPost, "/Users",
                        {{"userName", "big@acme.test"}, {"title", std::string(1536 * 1024, 'y')}});
  EXPECT_EQ(big_user.status, 413);
  EXPECT_EQ(big_user.body["status"], "413");
  // Malformed JSON and an unknown attribute inside a bulk operation: that operation's error only.
  Reply broken = Send(net::Method::kPost, "/Bulk", json("{\"Operations\": [}"));
  EXPECT_EQ(broken.status, 400);
  EXPECT_EQ(broken.body["scimType"], "invalidSyntax");
  EXPECT_EQ(Count("SELECT count(*) FROM scim_resources WHERE org = 'acme'", {}), 3);
}

TEST_F(ScimApiTest, Discovery) {
  Reply spc = Send(net::Method::kGet, "/ServiceProviderConfig");
  EXPECT_EQ(spc.body["patch"]["supported"], true);
  EXPECT_EQ(spc.body["bulk"]["maxOperations"], 5);
  Reply types = Send(net::Method::kGet, "/ResourceTypes");
  EXPECT_EQ(types.body["totalResults"], 2);
  Reply schemas = Send(net::Method::kGet, "/Schemas");
  EXPECT_EQ(schemas.body["totalResults"], 3);
  Reply user = Send(net::Method::kGet, "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User");
  EXPECT_EQ(user.body["attributes"][0]["name"], "userName");
  EXPECT_EQ(user.body["attributes"][0]["caseExact"], false);
}

}  // namespace
}  // namespace govern::scim_service
