#include "gateway/peek.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

TEST(PeekRequest, ReadsTheProxyFields) {
  auto p = PeekRequest(R"({"messages":[{"role":"user","content":"x"}],"model":"gpt-4o","stream":true,
                           "stream_options":{"x":1,"include_usage":false},"tools":[{"a":[1,2,{"b":null}]}]})");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->model, "gpt-4o");
  EXPECT_TRUE(p->stream);
  EXPECT_TRUE(p->has_stream_options);
  EXPECT_EQ(p->include_usage, false);
  auto plain = PeekRequest(R"({"model":"m\u00e9","stream":null})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->model, "m\xC3\xA9");
  EXPECT_FALSE(plain->stream);
  EXPECT_FALSE(plain->include_usage.has_value());
}

TEST(PeekRequest, RefusesWhatCouldMisleadAPolicyCheck) {
  EXPECT_EQ(PeekRequest(R"({"model":"a","model":"b"})").status().message(), "model is given twice");
  EXPECT_EQ(PeekRequest(R"({"model":"a","mod\u0065l":"b"})").status().message(), "model is given twice");
  EXPECT_EQ(PeekRequest(R"({"stream":true,"model":"a","stream":false})").status().message(),
            "stream is given twice");
  EXPECT_EQ(PeekRequest(R"({"model":1})").status().message(), "model must be a string");
  EXPECT_EQ(PeekRequest(R"({"stream":true})").status().message(), "model is required");
  EXPECT_EQ(PeekRequest(R"({"model":"a","stream":"yes"})").status().message(),
            "stream must be true or false");
  EXPECT_EQ(PeekRequest(R"([1])").status().message(), "request body must be a JSON object");
  EXPECT_FALSE(PeekRequest(R"({"model":"a"} {"model":"b"})").ok());
  EXPECT_FALSE(PeekRequest(R"({"model":"a")").ok());
  EXPECT_FALSE(PeekRequest("").ok());
  EXPECT_FALSE(PeekRequest(std::string_view()).ok());
}

TEST(WithIncludeUsage, AsksForUsageOnlyWhereNeeded) {
  std::string body = R"(  {"model":"m","stream":true,"messages":[]})";
  auto p = PeekRequest(body);
  ASSERT_TRUE(p.ok());
  auto out = WithIncludeUsage(body, *p);
  ASSERT_TRUE(out.ok());
  Json j = Json::parse(*out);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  j.erase("stream_options");
  EXPECT_EQ(j, Json::parse(body));

  std::string with_options = R"({"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1}})";
  out = WithIncludeUsage(with_options, *PeekRequest(with_options));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(Json::parse(*out)["stream_options"], Json::parse(R"({"include_usage":true,"x":1})"));

  std::string not_streaming = R"({"model":"m"})";
  EXPECT_EQ(*WithIncludeUsage(not_streaming, *PeekRequest(not_streaming)), not_streaming);
  std::string already = R"({"model":"m","stream":true,"stream_options":{"include_usage":true}})";
  EXPECT_EQ(*WithIncludeUsage(already, *PeekRequest(already)), already);
}

}  // namespace
}  // namespace govern::gateway
