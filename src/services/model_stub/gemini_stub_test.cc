// The stub as Google Gemini (generateContent, streams, embeddings) and as Bedrock InvokeModel for
// embeddings models (Titan, Cohere): the answers the gateway's Gemini and Bedrock tests rely on.
#include "services/model_stub/gemini_stub.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "gateway/sse.h"
#include "services/model_stub/bedrock_stub.h"

namespace govern::model_stub {
namespace {

using Json = nlohmann::json;

std::function<std::string_view(std::string_view)> Headers(std::map<std::string, std::string> h) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(h));
  return [held](std::string_view name) -> std::string_view {
    auto it = held->find(std::string(name));
    return it == held->end() ? std::string_view() : std::string_view(it->second);
  };
}

Reply Gemini(std::string_view path, const Json& body, Faults f = {}) {
  return GeminiAnswer("POST", path, Headers({{"x-goog-api-key", "k"}}), body.dump(), f, StubConfig{});
}

TEST(GeminiStub, GenerateContentWholeAndStreamed) {
  EXPECT_TRUE(IsGeminiPath("/v1beta/models/gemini-2.5-flash:generateContent"));
  EXPECT_FALSE(IsGeminiPath("/v1/models"));
  EXPECT_FALSE(IsGeminiPath("/model/amazon.titan-embed-text-v2%3A0/invoke"));
  Json req = {{"systemInstruction", {{"parts", {{{"text", "be brief"}}}}}},
              {"contents", {{{"role", "user"}, {"parts", {{{"text", "one two three"}}}}}}},
              {"generationConfig", {{"maxOutputTokens", 3}}}};
  Reply r = Gemini("/v1beta/models/g:generateContent", req);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["candidates"][0]["content"]["parts"][0]["text"], StubText(3));
  EXPECT_EQ(j["candidates"][0]["finishReason"], "MAX_TOKENS");
  EXPECT_EQ(j["usageMetadata"]["promptTokenCount"], 5);
  EXPECT_EQ(j["usageMetadata"]["candidatesTokenCount"], 3);

  Reply s = Gemini("/v1beta/models/g:streamGenerateContent", req);
  ASSERT_TRUE(s.stream);
  EXPECT_EQ(s.content_type, "text/event-stream");
  ASSERT_EQ(s.events.size(), 3u);
  gateway::SseParser p;
  std::vector<gateway::SseEvent> events;
  for (const auto& e : s.events) ASSERT_TRUE(p.Feed(e, events).ok());
  ASSERT_EQ(events.size(), 3u);
  Json last = Json::parse(events.back().data);
  EXPECT_EQ(last["candidates"][0]["finishReason"], "MAX_TOKENS");
  EXPECT_EQ(last["usageMetadata"]["totalTokenCount"], 8);
  EXPECT_FALSE(Json::parse(events.front().data).contains("usageMetadata"));

  // A declared function is called (unless the last turn answers it); an in-stream error on request.
  req["tools"] = {
      {{"functionDeclarations",
        {{{"name", "weather"},
          {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}}};
  Json call = Json::parse(Gemini("/v1beta/models/g:generateContent", req).body);
  EXPECT_EQ(call["candidates"][0]["content"]["parts"][0]["functionCall"],
            Json::parse(R"({"name":"weather","args":{"city":"stub"}})"));
  Faults f;
  f.error_after = 1;
  req.erase("tools");
  Reply err = Gemini("/v1beta/models/g:streamGenerateContent", req, f);
  ASSERT_EQ(err.events.size(), 2u);
  EXPECT_NE(err.events[1].find("injected stream error"), std::string::npos);
}

TEST(GeminiStub, EmbeddingsAndErrors) {
  Json batch = {
      {"requests",
       {{{"model", "models/e"}, {"content", {{"parts", {{{"text", "a b"}}}}}}, {"outputDimensionality", 4}},
        {{"model", "models/e"}, {"content", {{"parts", {{{"text", "c"}}}}}}}}}};
  Reply r = Gemini("/v1beta/models/e:batchEmbedContents", batch);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["embeddings"][0]["values"].get<std::vector<float>>(), StubVector("a b", 4));
  EXPECT_EQ(j["embeddings"][1]["values"].size(), 16u);
  EXPECT_EQ(j["usageMetadata"]["promptTokenCount"], 3);
  batch["requests"][1]["model"] = "models/other";
  EXPECT_EQ(Gemini("/v1beta/models/e:batchEmbedContents", batch).status, 400);
  Reply one = Gemini("/v1beta/models/e:embedContent", {{"content", {{"parts", {{{"text", "x"}}}}}}});
  EXPECT_EQ(Json::parse(one.body)["embedding"]["values"].size(), 16u);

  Reply anon = GeminiAnswer("POST", "/v1beta/models/e:embedContent", Headers({}), "{}", {}, StubConfig{});
  EXPECT_EQ(anon.status, 403);
  EXPECT_EQ(Json::parse(anon.body)["error"]["status"], "PERMISSION_DENIED");
  Faults f;
  f.status = 429;
  Reply limited = Gemini("/v1beta/models/g:generateContent", Json::object(), f);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(Json::parse(limited.body)["error"]["status"], "RESOURCE_EXHAUSTED");
}

TEST(BedrockStub, InvokeModelEmbeddings) {
  auto none = Headers({});
  StubConfig cfg;  // no secret: requests are not signature-checked
  Reply t = BedrockAnswer("POST", "/model/amazon.titan-embed-text-v2%3A0/invoke", none,
                          R"({"inputText":"a b c","dimensions":256})", {}, cfg, 0);
  ASSERT_EQ(t.status, 200) << t.body;
  Json tj = Json::parse(t.body);
  EXPECT_EQ(tj["embedding"].get<std::vector<float>>(), StubVector("a b c", 256));
  EXPECT_EQ(tj["inputTextTokenCount"], 3);
  EXPECT_EQ(BedrockAnswer("POST", "/model/amazon.titan-embed-text-v2%3A0/invoke", none,
                          R"({"inputText":"a","dimensions":300})", {}, cfg, 0)
                .status,
            400);
  Reply c = BedrockAnswer("POST", "/model/cohere.embed-english-v3/invoke", none,
                          R"({"texts":["a b","c"],"input_type":"search_document"})", {}, cfg, 0);
  ASSERT_EQ(c.status, 200) << c.body;
  Json cj = Json::parse(c.body);
  EXPECT_EQ(cj["embeddings"].size(), 2u);
  EXPECT_FALSE(cj.contains("inputTextTokenCount"));
  ASSERT_EQ(c.headers.size(), 1u);
  EXPECT_EQ(c.headers[0], (std::pair<std::string, std::string>{"X-Amzn-Bedrock-Input-Token-Count", "3"}));
  EXPECT_EQ(
      BedrockAnswer("POST", "/model/cohere.embed-english-v3/invoke", none, R"({"texts":["a"]})", {}, cfg, 0)
          .status,
      400);  // input_type is required
  EXPECT_EQ(BedrockAnswer("POST", "/model/anthropic.claude-v2/invoke", none, "{}", {}, cfg, 0).status, 400);
}

}  // namespace
}  // namespace govern::model_stub
