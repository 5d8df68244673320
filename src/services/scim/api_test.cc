// The SCIM API through a real net::Server on a real socket and a real PostgreSQL: the Okta and Entra
// request bodies end to end, the auth directory written in the same transaction (sign-in refused and
// refresh families revoked on deactivation), uniqueness, ETags, paging, Bulk, and each refusal.
#include "services/scim/api.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "db/connection.h"
#include "db/migrator.h"
#include "db/pool.h"
#include "db/testing.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/auth/schema.h"
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
