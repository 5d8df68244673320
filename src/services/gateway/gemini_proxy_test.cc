// Google Gemini deployments end to end over real sockets: the gateway in front of the model stub
// speaking Gemini (generateContent, streamGenerateContent, batchEmbedContents; model_stub/gemini_stub.h).
// The OpenAI Responses API (Responses -> chat -> generateContent and back, whole and streamed, tools)
// and embeddings (float, base64, dimensions, usage), metered and recorded, with the provider's errors
// and malformed answers in OpenAI's error shape.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gateway/openai.h"
#include "gateway/sse.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/gateway/stub_proxy_fixture.h"
#include "services/model_stub/server.h"
#include "services/model_stub/stub.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kGeminiKey = "gvg_gemini_test_01";

class GeminiProxyTest : public testing::StubProxyFixture {
 protected:
  GeminiProxyTest() : StubProxyFixture(kGeminiKey) {}
  void SetUp() override {
    StartStub();
    Json routes = Json::array();
    for (const auto& [name, model] :
         {std::pair{"gemini-flash", "gemini-2.5-flash"}, std::pair{"gemini-embed", "text-embedding-004"}})
      routes.push_back({{"model", name},
                        {"deployments",
                         {{{"name", name},
                           {"provider", "gemini"},
                           {"base_url", StubUrl()},
                           {"api_key", "gemini-key"},
                           {"model", model},
                           {"stub_fault_headers", true}}}}});
    file_ = Json{{"routes", routes},
                 {"keys", {{{"key", kGeminiKey}, {"org", "acme"}}}},
                 {"prices",
                  {{"gemini-flash", {{"input", 1.0}, {"output", 4.0}}}, {"gemini-embed", {{"input", 0.5}}}}}};
    StartProxy(file_, 1);
  }

  static std::vector<Json> Events(std::string_view body) {
    std::vector<Json> out;
    for (auto& e : SseEvents(body)) {
      Json j = Json::parse(e.data, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << e.data;
      EXPECT_EQ(e.event, j.value("type", "")) << e.data;
      out.push_back(std::move(j));
    }
    return out;
  }

  Json file_;  // the routes file
};

TEST_F(GeminiProxyTest, ResponsesApiWholeStreamedAndTools) {
  Json body = {{"model", "gemini-flash"}, {"instructions", "be brief"}, {"input", "one two three"}};
  auto r = Post("/v1/responses", body);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["model"], "gemini-flash");
  EXPECT_EQ(j["output"][0]["content"][0]["text"], model_stub::StubText(16));
  EXPECT_EQ(j["usage"]["input_tokens"], 5);  // instructions went as systemInstruction
  EXPECT_EQ(j["usage"]["output_tokens"], 16);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.deployment, "gemini-flash");
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_NEAR(rec.cost, (5 * 1.0 + 16 * 4.0) / 1e6, 1e-12);

  // Streamed (streamGenerateContent, SSE): one Responses text delta per Gemini event.
  body["stream"] = true;
  auto s = Post("/v1/responses", body, {{"x-stub-cached-tokens", "2"}});
  ASSERT_EQ(s.status, 200) << s.body;
  auto events = Events(s.body);
  ASSERT_GE(events.size(), 5u) << s.body;
  EXPECT_EQ(events.front()["type"], "response.created");
  std::string text;
  int deltas = 0;
  for (const Json& e : events) {
    if (e["type"] == "response.output_text.delta") {
      text += e["delta"].get<std::string>();
      ++deltas;
    }
  }
  EXPECT_EQ(text, model_stub::StubText(16));
  EXPECT_EQ(deltas, 16);
  const Json& done = events.back();
  EXPECT_EQ(done["type"], "response.completed") << s.body;
  EXPECT_EQ(done["response"]["usage"]["input_tokens"], 5);
  EXPECT_EQ(done["response"]["usage"]["input_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(done["response"]["usage"]["output_tokens"], 16);
  rec = WaitRecord(2);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_TRUE(rec.stream);
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.cached_tokens, 2);
  EXPECT_EQ(rec.output_tokens, 16);

  // Function tools: the stub calls the declared function; whole and streamed.
  Json tools = {{"model", "gemini-flash"},
                {"input", "weather?"},
                {"tools", Json::parse(R"([{"type":"function","name":"weather",
                   "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}])")}};
  auto t = Post("/v1/responses", tools);
  ASSERT_EQ(t.status, 200) << t.body;
  Json tj = Json::parse(t.body);
  ASSERT_EQ(tj["output"].size(), 1u) << t.body;
  EXPECT_EQ(tj["output"][0]["type"], "function_call");
  EXPECT_EQ(tj["output"][0]["name"], "weather");
  EXPECT_EQ(Json::parse(tj["output"][0]["arguments"].get<std::string>()), Json::parse(R"({"city":"stub"})"));
  tools["stream"] = true;
  auto ts = Post("/v1/responses", tools);
  ASSERT_EQ(ts.status, 200) << ts.body;
  std::string args;
  for (const Json& e : Events(ts.body)) {
    if (e["type"] == "response.function_call_arguments.delta") args += e["delta"].get<std::string>();
  }
  EXPECT_EQ(Json::parse(args), Json::parse(R"({"city":"stub"})")) << ts.body;
  WaitRecord(4);

  // The same stub answers chat clients as before.
  auto chat = Post("/v1/chat/completions",
                   {{"model", "gemini-flash"}, {"messages", {{{"role", "user"}, {"content", "hi there"}}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(Json::parse(chat.body)["usage"]["prompt_tokens"], 2);
}

TEST_F(GeminiProxyTest, ResponsesApiErrors) {
  Json body = {{"model", "gemini-flash"}, {"input", "one two three"}};
  auto throttled = Post("/v1/responses", body, {{"x-stub-status", "429"}});
  EXPECT_EQ(throttled.status, 429) << throttled.body;
  EXPECT_EQ(Json::parse(throttled.body)["error"]["type"], "rate_limit_exceeded");
  auto failed = Post("/v1/responses", body, {{"x-stub-status", "500"}});
  EXPECT_EQ(failed.status, 502) << failed.body;
  EXPECT_EQ(Json::parse(failed.body)["error"]["type"], "api_error");
  EXPECT_NE(failed.body.find("injected status 500"), std::string::npos) << failed.body;
  auto cut = Post("/v1/responses", body, {{"x-stub-cut-after", "0"}});
  EXPECT_EQ(cut.status, 502) << cut.body;
  EXPECT_EQ(WaitRecord(3).status, 502);

  // An in-stream error after three events: the Responses error event ends the stream.
  body["stream"] = true;
  auto ex = Post("/v1/responses", body, {{"x-stub-error-after", "3"}});
  ASSERT_EQ(ex.status, 200);
  auto events = Events(ex.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["type"], "error") << ex.body;
  EXPECT_NE(ex.body.find("injected stream error"), std::string::npos) << ex.body;
  EXPECT_EQ(ex.body.find("response.completed"), std::string::npos) << ex.body;
  UsageRecord rec = WaitRecord(4);
  EXPECT_NE(rec.error.find("injected stream error"), std::string::npos) << rec.error;
}

// DLP on a translated Responses answer: the chat form is screened before it becomes Responses events.
TEST_F(GeminiProxyTest, ResponsesAnswersAreScreenedBeforeTranslation) {
  StopProxy();
  client_.emplace();
  Json file = file_;
  file["dlp"] = {{"orgs", {{"acme", {{"mode", "mask"}}}}}};
  StartProxy(file, 1);
  const std::string secret = "AKIAIOSFODNN7EXAMPLE";
  const std::vector<std::pair<std::string, std::string>> text = {
      {"x-stub-text", "Use the key " + secret + " and rotate it afterwards."}};
  Json body = {{"model", "gemini-flash"}, {"input", "deploy plan"}};
  auto r = Post("/v1/responses", body, text);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find(secret), std::string::npos) << r.body;
  EXPECT_EQ(Json::parse(r.body)["output"][0]["content"][0]["text"],
            "Use the key [REDACTED:aws_access_key_id] and rotate it afterwards.");
  EXPECT_EQ(WaitRecord(1).dlp_action, "masked");
  body["stream"] = true;
  auto s = Post("/v1/responses", body, text);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.body.find(secret), std::string::npos) << s.body;
  std::string streamed;
  for (const Json& e : Events(s.body)) {
    if (e["type"] == "response.output_text.delta") streamed += e["delta"].get<std::string>();
  }
  EXPECT_EQ(streamed, "Use the key [REDACTED:aws_access_key_id] and rotate it afterwards.");
  EXPECT_EQ(Events(s.body).back()["type"], "response.completed");
  UsageRecord rec = WaitRecord(2);
  EXPECT_EQ(rec.dlp_action, "masked");
  EXPECT_EQ(rec.status, 200) << rec.error;
}

TEST_F(GeminiProxyTest, EmbeddingsFloatBase64DimensionsAndUsage) {
  auto e =
      Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", {"a b", "c d e"}}, {"dimensions", 8}});
  ASSERT_EQ(e.status, 200) << e.body;
  auto parsed = openai::ParseEmbeddingsResponse(e.body);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->data.size(), 2u);
  EXPECT_EQ(parsed->data[0], model_stub::StubVector("a b", 8));
  EXPECT_EQ(parsed->data[1], model_stub::StubVector("c d e", 8));
  EXPECT_EQ(parsed->prompt_tokens, 5);
  EXPECT_EQ(Json::parse(e.body)["model"], "gemini-embed");
  EXPECT_EQ(stub_->stats().requests, 1u);  // one batchEmbedContents
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_EQ(rec.api, "embeddings");
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_NEAR(rec.cost, 5 * 0.5 / 1e6, 1e-15);
  EXPECT_FALSE(rec.tokens_estimated);
  EXPECT_EQ(UsageRecordJson(rec).find("tokens_estimated"), std::string::npos);

  auto b =
      Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", "a b"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_TRUE(Json::parse(b.body)["data"][0]["embedding"].is_string()) << b.body;
  auto pb = openai::ParseEmbeddingsResponse(b.body);
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pb->data.at(0), model_stub::StubVector("a b", 16));
  WaitRecord(2);

  // Errors: the provider's 4xx/5xx, a malformed answer, input Gemini cannot take.
  auto throttled =
      Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", "x"}}, {{"x-stub-status", "429"}});
  EXPECT_EQ(throttled.status, 429) << throttled.body;
  auto failed =
      Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", "x"}}, {{"x-stub-status", "500"}});
  EXPECT_EQ(failed.status, 502) << failed.body;
  EXPECT_EQ(Json::parse(failed.body)["error"]["type"], "api_error");
  auto malformed = Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", {"x", "y"}}},
                        {{"x-stub-text", R"({"embeddings":[{"values":[1]}]})"}});
  EXPECT_EQ(malformed.status, 502) << malformed.body;
  EXPECT_NE(malformed.body.find("1 vectors for 2 inputs"), std::string::npos) << malformed.body;
  auto tokens = Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", {{1, 2, 3}}}});
  EXPECT_EQ(tokens.status, 400) << tokens.body;
  EXPECT_NE(tokens.body.find("token arrays"), std::string::npos) << tokens.body;
  rec = WaitRecord(6);
  EXPECT_EQ(rec.status, 400);
}

// The Gemini API's batchEmbedContents answer has no usageMetadata: the request is metered with the
// gateway's estimate, ceil(UTF-8 bytes / 4) per input, and its record says so. The floats come back as
// the provider wrote them (shortest float32 round-trip), not widened to double.
TEST_F(GeminiProxyTest, EmbeddingsWithoutUsageAreEstimatedAndFloatsKeepTheirDigits) {
  auto e = Post("/v1/embeddings", {{"model", "gemini-embed"}, {"input", {"abcdefghi", "h\xc3\xa9llo"}}},
                {{"x-stub-text", R"({"embeddings":[{"values":[0.0123,-1e-07]},{"values":[1,0.1]}]})"}});
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_NE(e.body.find("[0.0123,-1e-07]"), std::string::npos) << e.body;
  EXPECT_NE(e.body.find("[1,0.1]"), std::string::npos) << e.body;
  auto parsed = openai::ParseEmbeddingsResponse(e.body);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->data[0], (std::vector<float>{0.0123f, -1e-07f}));
  EXPECT_EQ(parsed->prompt_tokens, 5);  // 9 bytes: 3; "héllo" 6 bytes: 2
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_TRUE(rec.tokens_estimated);
  EXPECT_EQ(Json::parse(UsageRecordJson(rec))["tokens_estimated"], true);
  EXPECT_NEAR(rec.cost, 5 * 0.5 / 1e6, 1e-15);
}

}  // namespace
}  // namespace govern::gateway
