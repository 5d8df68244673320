// The stub as Bedrock: its SigV4 check (requests signed here with objstore's signer, then altered one
// way at a time), and its Converse answers and ConverseStream frames.
#include "services/model_stub/bedrock_stub.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "gateway/eventstream.h"
#include "storage/objstore/sigv4.h"

namespace govern::model_stub {
namespace {

using Json = nlohmann::json;
namespace sigv4 = objstore::sigv4;

constexpr int64_t kNow = 1796072400;  // 2026-11-30T21:00:00Z
constexpr const char* kPath = "/model/anthropic.claude-v2%3A1/converse";

struct Signed {
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body = R"({"messages":[{"role":"user","content":[{"text":"one two three"}]}]})";
  std::function<std::string_view(std::string_view)> Lookup() const {
    return [this](std::string_view name) -> std::string_view {
      auto it = headers.find(std::string(name));
      return it == headers.end() ? std::string_view() : std::string_view(it->second);
    };
  }
};

// A request as a client signs it: the canonical URI is the path encoded once more.
Signed Sign(std::string_view secret, std::string_view service = "bedrock", int64_t at = kNow,
            std::string token = "", std::string canonical_uri = "/model/anthropic.claude-v2%253A1/converse") {
  Signed s;
  s.headers["host"] = "127.0.0.1:7760";
  s.headers["content-type"] = "application/json";
  s.headers["x-amz-date"] = sigv4::AmzDate(at * 1000000);
  if (!token.empty()) s.headers["x-amz-security-token"] = token;
  sigv4::Request req;
  req.method = "POST";
  req.canonical_uri = canonical_uri;
  for (const auto& [k, v] : s.headers) req.headers.emplace_back(k, v);
  req.payload_sha256_hex = crypto::HexEncode(crypto::Sha256(s.body).value());
  auto sig = sigv4::Sign(req, {"AKIDEXAMPLE", std::string(secret), token}, "us-east-1", service,
                         s.headers["x-amz-date"]);
  s.headers["authorization"] = sig.value().authorization;
  return s;
}

StubConfig Config() {
  StubConfig c;
  c.aws_access_key_id = "AKIDEXAMPLE";
  c.aws_secret_access_key = "secret-1";
  c.aws_region = "us-east-1";
  return c;
}

std::string Check(const Signed& s, const StubConfig& c = Config(), std::string_view path = kPath) {
  return BedrockSignatureError("POST", path, s.Lookup(), s.body, c, kNow);
}

TEST(BedrockStubTest, SignatureIsRecomputedAndEveryChangeRefused) {
  EXPECT_EQ(Check(Sign("secret-1")), "");
  EXPECT_NE(Check(Sign("secret-2")).find("signature we calculated does not match"), std::string::npos);
  Signed body = Sign("secret-1");
  body.body += " ";
  EXPECT_NE(Check(body).find("does not match"), std::string::npos);
  // The path signed as sent, not encoded again (right for S3 only), is refused; so is another path.
  EXPECT_NE(Check(Sign("secret-1", "bedrock", kNow, "", kPath)).find("does not match"), std::string::npos);
  EXPECT_NE(
      Check(Sign("secret-1"), Config(), "/model/anthropic.claude-v2%3A2/converse").find("does not match"),
      std::string::npos);
  Signed host = Sign("secret-1");
  host.headers["host"] = "evil:1";
  EXPECT_NE(Check(host).find("does not match"), std::string::npos);
  EXPECT_NE(Check(Sign("secret-1", "s3")).find("not for service bedrock"), std::string::npos);
  EXPECT_NE(Check(Sign("secret-1", "bedrock", kNow - 600)).find("expired"), std::string::npos);
  Signed none = Sign("secret-1");
  none.headers.erase("authorization");
  EXPECT_NE(Check(none).find("Authorization"), std::string::npos);
  StubConfig region = Config();
  region.aws_region = "eu-west-1";
  EXPECT_NE(Check(Sign("secret-1"), region).find("another region"), std::string::npos);
  StubConfig with_token = Config();
  with_token.aws_session_token = "tok";
  EXPECT_NE(Check(Sign("secret-1"), with_token).find("security token"), std::string::npos);
  EXPECT_EQ(Check(Sign("secret-1", "bedrock", kNow, "tok"), with_token), "");
  // Through BedrockAnswer: 403 with Bedrock's {"message"} body.
  Signed bad = Sign("wrong");
  Reply r = BedrockAnswer("POST", kPath, bad.Lookup(), bad.body, Faults{}, Config(), kNow);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(Json::parse(r.body)["message"].get<std::string>().find("does not match"), std::string::npos);
}

TEST(BedrockStubTest, ConverseAnswersAndStreams) {
  StubConfig c;  // no secret: any request
  Signed s;
  auto h = s.Lookup();
  Reply r = BedrockAnswer("POST", kPath, h, s.body, Faults{}, c, kNow);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["output"]["message"]["content"][0]["text"], StubText(16));
  EXPECT_EQ(j["stopReason"], "end_turn");
  EXPECT_EQ(j["usage"]["inputTokens"], 3);
  EXPECT_EQ(j["usage"]["outputTokens"], 16);

  Reply st = BedrockAnswer("POST", "/model/m/converse-stream", h, s.body, Faults{}, c, kNow);
  ASSERT_TRUE(st.stream);
  EXPECT_EQ(st.content_type, "application/vnd.amazon.eventstream");
  gateway::eventstream::Decoder d;
  std::vector<gateway::eventstream::Message> msgs;
  for (const auto& e : st.events) ASSERT_TRUE(d.Feed(e, msgs).ok());
  ASSERT_EQ(msgs.size(), 16u + 4u);
  EXPECT_EQ(msgs.front().StringHeader(":event-type"), "messageStart");
  std::string text;
  for (const auto& m : msgs) {
    if (m.StringHeader(":event-type") == "contentBlockDelta")
      text += Json::parse(m.payload)["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(text, StubText(16));
  EXPECT_EQ(msgs.back().StringHeader(":event-type"), "metadata");
  EXPECT_EQ(Json::parse(msgs.back().payload)["usage"]["outputTokens"], 16);

  Faults f;
  f.error_after = 2;
  Reply ex = BedrockAnswer("POST", "/model/m/converse-stream", h, s.body, f, c, kNow);
  ASSERT_EQ(ex.events.size(), 3u);
  msgs.clear();
  gateway::eventstream::Decoder d2;
  ASSERT_TRUE(d2.Feed(ex.events[2], msgs).ok());
  EXPECT_EQ(msgs[0].StringHeader(":message-type"), "exception");
  f = Faults{};
  f.status = 429;
  EXPECT_EQ(BedrockAnswer("POST", kPath, h, s.body, f, c, kNow).status, 429);
  EXPECT_EQ(
      BedrockAnswer("POST", "/model/m/invoke-with-response-stream", h, s.body, Faults{}, c, kNow).status,
      404);
  EXPECT_EQ(BedrockAnswer("POST", kPath, h, "{}", Faults{}, c, kNow).status, 400);
  EXPECT_TRUE(IsBedrockPath(kPath));
  EXPECT_FALSE(IsBedrockPath("/v1/chat/completions"));
}

}  // namespace
}  // namespace govern::model_stub
