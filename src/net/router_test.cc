// Router: patterns, parameters, precedence, 404/405 and registration errors.
#include "net/router.h"

#include <gtest/gtest.h>

namespace govern::net {
namespace {

Response Ok(Request&) { return Response(200, "ok"); }

TEST(Router, MatchesLiteralsAndParameters) {
  Router r;
  r.AddSync(Method::kGet, "/v1/orgs/{org}/events", Ok, {RequestClass::kBulk, 1024, "events"});
  r.AddSync(Method::kGet, "/v1/orgs/me/events", Ok);
  r.AddSync(Method::kGet, "/files/{path...}", Ok);
  ASSERT_TRUE(r.status().ok()) << r.status().ToString();
  std::vector<std::pair<std::string, std::string>> params;

  auto m = r.Find(Method::kGet, "/v1/orgs/acme%20corp/events", &params);
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->options.name, "events");
  EXPECT_EQ(m.route->options.cls, RequestClass::kBulk);
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "org");
  EXPECT_EQ(params[0].second, "acme corp");

  // The literal segment wins over the parameter.
  m = r.Find(Method::kGet, "/v1/orgs/me/events", &params);
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->pattern, "/v1/orgs/me/events");
  EXPECT_TRUE(params.empty());

  m = r.Find(Method::kGet, "/files/a/b/c.txt", &params);
  ASSERT_NE(m.route, nullptr);
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].second, "a/b/c.txt");

  // An empty parameter segment does not match.
  m = r.Find(Method::kGet, "/v1/orgs//events", &params);
  EXPECT_EQ(m.route, nullptr);
  EXPECT_FALSE(m.path_known);
}

TEST(Router, NotFoundAndMethodNotAllowed) {
  Router r;
  r.AddSync(Method::kGet, "/things", Ok);
  r.AddSync(Method::kPost, "/things", Ok);
  std::vector<std::pair<std::string, std::string>> params;
  auto m = r.Find(Method::kDelete, "/things", &params);
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.path_known);
  EXPECT_EQ(m.allow, "GET, HEAD, POST");
  m = r.Find(Method::kGet, "/nothing", &params);
  EXPECT_EQ(m.route, nullptr);
  EXPECT_FALSE(m.path_known);
  // HEAD falls back to GET.
  m = r.Find(Method::kHead, "/things", &params);
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->method, Method::kGet);
}

TEST(Router, RejectsBadPatternsAndDuplicates) {
  {
    Router r;
    r.AddSync(Method::kGet, "no-slash", Ok);
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
  {
    Router r;
    r.AddSync(Method::kGet, "/a/{rest...}/b", Ok);
    EXPECT_FALSE(r.status().ok());
  }
  {
    Router r;
    r.AddSync(Method::kGet, "/a/{}", Ok);
    EXPECT_FALSE(r.status().ok());
  }
  {
    Router r;
    r.AddSync(Method::kGet, "/a", Ok);
    r.AddSync(Method::kGet, "/a", Ok);
    EXPECT_FALSE(r.status().ok());
    EXPECT_NE(r.status().message().find("twice"), std::string::npos);
  }
}

TEST(Request, QueryParametersAreDecoded) {
  Request req;
  req.query = "a=1&b=hello+world&c=%2Fx%zz&a=2&flag";
  EXPECT_EQ(req.QueryParam("a").value_or(""), "1");
  EXPECT_EQ(req.QueryParam("b").value_or(""), "hello world");
  EXPECT_EQ(req.QueryParam("c").value_or(""), "/x%zz");
  EXPECT_EQ(req.QueryParam("flag").value_or("?"), "");
  EXPECT_FALSE(req.QueryParam("missing").has_value());
  EXPECT_EQ(req.QueryParams().size(), 5u);
}

TEST(Headers, LookupIsCaseInsensitive) {
  Headers h;
  h.Add("Content-Type", "text/plain");
  h.Add("X-A", "1");
  h.Add("x-a", "2");
  EXPECT_EQ(h.Get("content-TYPE").value_or(""), "text/plain");
  h.Set("X-A", "3");
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.Get("x-a").value_or(""), "3");
  h.Remove("CONTENT-type");
  EXPECT_FALSE(h.Has("Content-Type"));
}

}  // namespace
}  // namespace govern::net
