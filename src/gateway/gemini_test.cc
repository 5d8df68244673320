#include "gateway/gemini.h"

#include <gtest/gtest.h>

namespace govern::gateway::gemini {
namespace {

using Json = nlohmann::json;

TEST(GeminiTest, RequestMapsRolesToolsAndSampling) {
  auto chat = openai::ParseChatRequest(R"({
    "model": "gemini-2.5-flash",
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "weather in "}, {"type": "text", "text": "Oslo?"}]},
      {"role": "assistant", "content": null,
       "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "{\"c\":4}"},
      {"role": "user", "content": "thanks"}
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "description": "d", "parameters": {"type": "object"}}}],
    "tool_choice": "required", "max_tokens": 50, "temperature": 0.5, "top_p": 0.9, "stop": ["END"]})");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  auto g = FromChatRequest(*chat);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Json want = Json::parse(R"({
    "contents": [
      {"role": "user", "parts": [{"text": "weather in Oslo?"}]},
      {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}]},
      {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"content": {"c": 4}}}},
                                 {"text": "thanks"}]}
    ],
    "systemInstruction": {"parts": [{"text": "be brief"}]},
    "tools": [{"functionDeclarations": [{"name": "weather", "description": "d", "parameters": {"type": "object"}}]}],
    "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
    "generationConfig": {"maxOutputTokens": 50, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]}})");
  EXPECT_EQ(*g, want) << g->dump(2);

  auto image = openai::ParseChatRequest(
      R"({"model":"g","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})");
  ASSERT_TRUE(image.ok());
  EXPECT_FALSE(FromChatRequest(*image).ok());
  auto orphan = openai::ParseChatRequest(
      R"({"model":"g","messages":[{"role":"tool","tool_call_id":"x","content":"1"}]})");
  ASSERT_TRUE(orphan.ok());
  EXPECT_FALSE(FromChatRequest(*orphan).ok());
}

TEST(GeminiTest, AnswerBecomesAChatCompletion) {
  auto r =
      ToChatResponse(R"({"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"},{"text":"lo"}]},
    "finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"thoughtsTokenCount":3,
    "cachedContentTokenCount":4,"totalTokenCount":12},"responseId":"abc"})",
                     "gem", 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->choices.size(), 1u);
  EXPECT_EQ(r->choices[0].content.value_or(""), "Hello");
  EXPECT_EQ(r->choices[0].finish_reason.value_or(""), "stop");
  ASSERT_TRUE(r->usage);
  EXPECT_EQ(r->usage->prompt_tokens, 7);
  EXPECT_EQ(r->usage->cached_tokens, 4);
  EXPECT_EQ(r->usage->completion_tokens, 5);
  EXPECT_EQ(r->usage->reasoning_tokens, 3);
  EXPECT_EQ(r->id, "chatcmpl-abc");

  auto call =
      ToChatResponse(R"({"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}}}]},
    "finishReason":"STOP"}]})",
                     "gem", 0);
  ASSERT_TRUE(call.ok());
  EXPECT_FALSE(call->choices[0].content);
  ASSERT_EQ(call->choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(call->choices[0].tool_calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(call->choices[0].finish_reason.value_or(""), "tool_calls");

  auto blocked = ToChatResponse(R"({"promptFeedback":{"blockReason":"SAFETY"}})", "gem", 0);
  ASSERT_TRUE(blocked.ok());
  EXPECT_EQ(blocked->choices[0].finish_reason.value_or(""), "content_filter");
  EXPECT_EQ(
      ToChatResponse(R"({"candidates":[{"finishReason":"MAX_TOKENS"}]})", "g", 0)->choices[0].finish_reason,
      "length");

  EXPECT_FALSE(ToChatResponse("[1]", "g", 0).ok());
  EXPECT_FALSE(ToChatResponse(R"({"candidates":{}})", "g", 0).ok());
  EXPECT_FALSE(ToChatResponse(R"({"usageMetadata":{"promptTokenCount":-1}})", "g", 0).ok());
}

constexpr std::string_view kStream =
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}],"
    "\"usageMetadata\":{\"promptTokenCount\":7}}\r\n\r\n"
    "data: "
    "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":"
    "\"STOP\"}],"
    "\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":2}}\r\n\r\n";

std::vector<openai::ChatChunk> Chunks(const std::string& sse, bool* done) {
  SseParser p;
  std::vector<SseEvent> events;
  EXPECT_TRUE(p.Feed(sse, events).ok());
  std::vector<openai::ChatChunk> out;
  *done = false;
  for (const auto& e : events) {
    if (e.IsDone()) {
      *done = true;
      continue;
    }
    auto c = openai::ParseChatChunk(e.data);
    EXPECT_TRUE(c.ok()) << e.data;
    if (c.ok()) out.push_back(*c);
  }
  return out;
}

TEST(GeminiTest, StreamInAnyChunkingBecomesChatChunks) {
  std::string whole;
  for (size_t step : {kStream.size(), size_t{1}, size_t{7}}) {
    StreamToChat s("gem", 5);
    std::string out;
    for (size_t i = 0; i < kStream.size(); i += step) ASSERT_TRUE(s.Feed(kStream.substr(i, step), out).ok());
    s.Finish(out);
    if (whole.empty()) whole = out;
    EXPECT_EQ(out, whole);  // the same bytes whatever the chunking
    bool done = false;
    auto chunks = Chunks(out, &done);
    EXPECT_TRUE(done);
    ASSERT_EQ(chunks.size(), 4u);
    EXPECT_EQ(chunks[0].choices[0].role.value_or(""), "assistant");
    EXPECT_EQ(chunks[0].choices[0].content.value_or(""), "Hel");
    EXPECT_EQ(chunks[1].choices[0].content.value_or(""), "lo");
    EXPECT_EQ(chunks[2].choices[0].finish_reason.value_or(""), "stop");
    ASSERT_TRUE(chunks[3].usage);
    EXPECT_EQ(chunks[3].usage->prompt_tokens, 7);
    EXPECT_EQ(chunks[3].usage->completion_tokens, 2);
  }
  // Cut before the finish reason: no usage chunk, no [DONE].
  StreamToChat cut("gem", 5);
  std::string out;
  ASSERT_TRUE(cut.Feed(kStream.substr(0, kStream.find("\r\n\r\n") + 4), out).ok());
  cut.Finish(out);
  bool done = true;
  EXPECT_EQ(Chunks(out, &done).size(), 1u);
  EXPECT_FALSE(done);
  EXPECT_EQ(cut.usage().prompt_tokens, 7);
  // An error event is passed on; garbage is an error.
  StreamToChat err("gem", 5);
  out.clear();
  ASSERT_TRUE(err.Feed("data: {\"error\":{\"code\":500,\"message\":\"boom\"}}\n\n", out).ok());
  EXPECT_NE(out.find("boom"), std::string::npos);
  StreamToChat bad("gem", 5);
  EXPECT_FALSE(bad.Feed("data: {nope\n\n", out).ok());
}

TEST(GeminiTest, EmbeddingsRequestIsOneBatch) {
  auto req = openai::ParseEmbeddingsRequest(R"({"model":"emb","input":["a b","c"],"dimensions":8})");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  auto body = FromEmbeddingsRequest(*req, "text-embedding-004");
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, Json::parse(R"({"requests":[
    {"model":"models/text-embedding-004","content":{"parts":[{"text":"a b"}]},"outputDimensionality":8},
    {"model":"models/text-embedding-004","content":{"parts":[{"text":"c"}]},"outputDimensionality":8}]})"));
  auto one = openai::ParseEmbeddingsRequest(R"({"model":"emb","input":"hello"})");
  ASSERT_TRUE(one.ok());
  auto b1 = FromEmbeddingsRequest(*one, "m");
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ((*b1)["requests"].size(), 1u);
  EXPECT_FALSE((*b1)["requests"][0].contains("outputDimensionality"));
  auto tokens = openai::ParseEmbeddingsRequest(R"({"model":"emb","input":[[1,2,3]]})");
  ASSERT_TRUE(tokens.ok());
  EXPECT_NE(FromEmbeddingsRequest(*tokens, "m").status().message().find("token arrays"), std::string::npos);
}

// ceil(UTF-8 bytes / 4) per input: "héllo wörld" is 13 bytes (4), "abcd" 4 (1), "abcde" 5 (2), "" 0.
TEST(GeminiTest, EmbeddingTokenEstimate) {
  openai::EmbeddingsRequest req;
  req.input = {"h\xc3\xa9llo w\xc3\xb6rld", "abcd", "abcde", ""};
  EXPECT_EQ(EstimateEmbeddingTokens(req), 7);
  EXPECT_EQ(EstimateEmbeddingTokens(openai::EmbeddingsRequest{}), 0);
}

TEST(GeminiTest, EmbeddingsAnswers) {
  auto r = ToEmbeddingsResponse(
      R"({"embeddings":[{"values":[0.5,-1]},{"values":[0.25,2]}],"usageMetadata":{"promptTokenCount":3}})",
      "emb", 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "emb");
  ASSERT_EQ(r->data.size(), 2u);
  EXPECT_EQ(r->data[1], (std::vector<float>{0.25f, 2.0f}));
  EXPECT_EQ(r->prompt_tokens, 3);
  EXPECT_EQ(r->total_tokens, 3);
  EXPECT_FALSE(r->tokens_estimated);
  // embedContent's single answer; no usage given: the estimate, marked as one.
  auto one = ToEmbeddingsResponse(R"({"embedding":{"values":[1,2,3]}})", "emb", 1, 7);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->data[0].size(), 3u);
  EXPECT_EQ(one->prompt_tokens, 7);
  EXPECT_EQ(one->total_tokens, 7);
  EXPECT_TRUE(one->tokens_estimated);
  // Malformed answers name what is wrong.
  auto msg = [](std::string_view body, size_t n) {
    return ToEmbeddingsResponse(body, "e", n).status().message();
  };
  EXPECT_NE(msg(R"({"embeddings":[{"values":[1]}]})", 2).find("1 vectors for 2 inputs"), std::string::npos);
  EXPECT_NE(msg(R"({"embeddings":[{"values":["x"]}]})", 1).find("embeddings[0].values must hold numbers"),
            std::string::npos);
  EXPECT_NE(msg(R"({"embeddings":{}})", 1).find("embeddings must be an array"), std::string::npos);
  EXPECT_NE(msg("[1]", 1).find("not an object"), std::string::npos);
  EXPECT_FALSE(ToEmbeddingsResponse("{", "e", 1).ok());
  EXPECT_NE(msg(R"({"embeddings":[{"values":[1]}],"usageMetadata":{"promptTokenCount":-1}})", 1)
                .find("promptTokenCount"),
            std::string::npos);
}

}  // namespace
}  // namespace govern::gateway::gemini
