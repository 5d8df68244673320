// OpenAI wire formats: bodies written as the OpenAI API reference documents them, parsed and written back.
#include "gateway/openai.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstring>

namespace govern::gateway::openai {
namespace {

constexpr std::string_view kChatRequest = R"({
  "model": "gpt-4o",
  "messages": [
    {"role": "developer", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"},
                                 {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}]},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_abc", "content": "18C, cloudy"}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
             "strict": true}}],
  "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
  "stream": true,
  "stream_options": {"include_usage": true},
  "max_completion_tokens": 256,
  "temperature": 0.2,
  "stop": "END",
  "parallel_tool_calls": false,
  "user": "u-42",
  "seed": 7,
  "response_format": {"type": "text"}
})";

TEST(OpenAiChatRequest, ParsesTheDocumentedShape) {
  auto r = ParseChatRequest(kChatRequest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "gpt-4o");
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, "developer");
  EXPECT_EQ(r->messages[0].content.AllText(), "You are terse.");
  EXPECT_EQ(r->messages[1].content.kind, Content::Kind::kParts);
  EXPECT_EQ(r->messages[1].content.AllText(), "Weather in Paris?");
  EXPECT_EQ(r->messages[2].content.kind, Content::Kind::kNone);
  ASSERT_EQ(r->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r->messages[3].tool_call_id, "call_abc");
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->tools[0].parameters["required"][0], "city");
  EXPECT_EQ(r->tool_choice.mode, ToolChoice::Mode::kFunction);
  EXPECT_EQ(r->tool_choice.function, "get_weather");
  EXPECT_TRUE(r->stream);
  EXPECT_EQ(r->include_usage, true);
  EXPECT_EQ(r->max_completion_tokens, 256);
  EXPECT_EQ(r->stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r->parallel_tool_calls, false);
  EXPECT_EQ(r->user, "u-42");
  EXPECT_EQ(r->extra["seed"], 7);
}

TEST(OpenAiChatRequest, WritesBackEveryField) {
  auto r = ParseChatRequest(kChatRequest);
  ASSERT_TRUE(r.ok());
  Json original = Json::parse(kChatRequest);
  Json written = ToJson(*r);
  EXPECT_EQ(written, original) << written.dump(2);
}

TEST(OpenAiChatRequest, BadBodiesGiveClearErrors) {
  EXPECT_EQ(ParseChatRequest("{").status().message(), "request body: not valid JSON");
  EXPECT_EQ(ParseChatRequest("[]").status().message(), "request body must be a JSON object");
  EXPECT_EQ(ParseChatRequest(R"({"messages":[]})").status().message(), "model is required");
  EXPECT_EQ(ParseChatRequest(R"({"model":"m"})").status().message(), "messages must be an array");
  EXPECT_EQ(ParseChatRequest(R"({"model":"m","messages":[{"content":"x"}]})").status().message(),
            "messages[0].role is required");
  EXPECT_EQ(ParseChatRequest(R"({"model":"m","messages":[],"max_tokens":"9"})").status().message(),
            "max_tokens must be an integer");
  EXPECT_EQ(ParseChatRequest(R"({"model":"m","messages":[],"tool_choice":"sometimes"})").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ParseChatRequest(R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})")
                .status()
                .message(),
            "messages[0].content[0].text must be a string");
}

constexpr std::string_view kChatResponse = R"({
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": null, "refusal": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
            "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
})";

TEST(OpenAiChatResponse, ParsesAndWritesBack) {
  auto r = ParseChatResponse(kChatResponse);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->choices.size(), 1u);
  EXPECT_FALSE(r->choices[0].content.has_value());
  EXPECT_EQ(r->choices[0].finish_reason, "tool_calls");
  ASSERT_EQ(r->choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(r->choices[0].tool_calls[0].name, "get_weather");
  ASSERT_TRUE(r->usage.has_value());
  EXPECT_EQ(r->usage->prompt_tokens, 1117);
  EXPECT_EQ(r->usage->cached_tokens, 1024);
  EXPECT_EQ(r->usage->total_tokens, 1163);
  EXPECT_EQ(ToJson(*r), Json::parse(kChatResponse));
}

TEST(OpenAiChatChunk, ParsesStreamChunks) {
  auto first = ParseChatChunk(
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp",)"
      R"("choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null})");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->choices[0].role, "assistant");
  EXPECT_FALSE(first->usage.has_value());
  auto tool = ParseChatChunk(
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":)"
      R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]})");
  ASSERT_TRUE(tool.ok());
  ASSERT_EQ(tool->choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(tool->choices[0].tool_calls[0].id, "call_1");
  EXPECT_EQ(tool->choices[0].tool_calls[0].arguments, "");
  auto usage = ParseChatChunk(
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],)"
      R"("usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":2}}})");
  ASSERT_TRUE(usage.ok());
  EXPECT_TRUE(usage->choices.empty());
  EXPECT_EQ(usage->usage, (Usage{9, 12, 21, 2, 0}));
  // Written back and parsed again: the same chunk.
  auto again = ParseChatChunk(ToJson(*tool).dump());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->choices[0].tool_calls[0].name, "get_weather");
}

constexpr std::string_view kResponsesRequest = R"({
  "model": "gpt-4.1",
  "instructions": "Be brief.",
  "input": [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_9", "output": "18C"},
    {"role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}
  ],
  "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
            {"type": "web_search_preview"}],
  "stream": true,
  "max_output_tokens": 100,
  "store": false
})";

TEST(OpenAiResponses, ParsesRequest) {
  auto r = ParseResponsesRequest(kResponsesRequest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->instructions, "Be brief.");
  ASSERT_EQ(r->input.size(), 4u);
  EXPECT_EQ(r->input[0].type, ResponseItem::Type::kMessage);
  EXPECT_EQ(r->input[0].text, "What is the weather in Paris?");
  EXPECT_EQ(r->input[1].type, ResponseItem::Type::kFunctionCall);
  EXPECT_EQ(r->input[2].output, "18C");
  EXPECT_EQ(r->input[3].text, "Thanks");
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->other_tools.size(), 1u);
  EXPECT_EQ(r->extra["store"], false);
  auto again = ParseResponsesRequest(ToJson(*r).dump());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->input.size(), 4u);
  EXPECT_EQ(again->other_tools[0]["type"], "web_search_preview");
  auto plain = ParseResponsesRequest(R"({"model":"m","input":"hi"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->input_text, "hi");
}

TEST(OpenAiResponses, ParsesResponseAndEvents) {
  constexpr std::string_view kResp = R"({
    "id": "resp_67ccd2bed1ec8190", "object": "response", "created_at": 1741476542, "status": "completed",
    "model": "gpt-4.1-2025-04-14",
    "output": [
      {"type": "message", "id": "msg_67cc", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "In a peaceful grove...", "annotations": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}", "status": "completed"}
    ],
    "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 87,
              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 123},
    "parallel_tool_calls": true, "temperature": 1.0
  })";
  auto r = ParseResponsesResponse(kResp);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->OutputText(), "In a peaceful grove...");
  EXPECT_EQ(r->usage, (ResponsesUsage{36, 87, 123, 0, 0}));
  EXPECT_EQ(ToJson(*r), Json::parse(kResp));

  auto delta = ParseResponsesEvent(
      R"({"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"})");
  ASSERT_TRUE(delta.ok());
  EXPECT_EQ(delta->type, "response.output_text.delta");
  EXPECT_FALSE(delta->response.has_value());
  auto done =
      ParseResponsesEvent(std::string(R"({"type":"response.completed","sequence_number":9,"response":)") +
                          std::string(kResp) + "}");
  ASSERT_TRUE(done.ok());
  ASSERT_TRUE(done->response.has_value());
  EXPECT_EQ(done->response->usage->output_tokens, 87);
  EXPECT_FALSE(ParseResponsesEvent(R"({"sequence_number":1})").ok());
}

TEST(OpenAiEmbeddings, RequestAndBothEncodings) {
  auto r = ParseEmbeddingsRequest(
      R"({"model":"text-embedding-3-small","input":["a b","c"],"encoding_format":"base64","dimensions":4})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->input.size(), 2u);
  EXPECT_EQ(r->encoding_format, "base64");
  EXPECT_EQ(r->dimensions, 4);
  auto tokens = ParseEmbeddingsRequest(R"({"model":"m","input":[1,2,3]})");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->input_tokens.size(), 1u);
  EXPECT_FALSE(ParseEmbeddingsRequest(R"({"model":"m","input":[{}]})").ok());
  EXPECT_FALSE(ParseEmbeddingsRequest(R"({"model":"m","input":"x","encoding_format":"hex"})").ok());

  EmbeddingsResponse resp{"m", {{0.5f, -1.25f, 3.0f}, {1.0f}}, true, 3, 3};
  auto parsed = ParseEmbeddingsResponse(ToJson(resp).dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->base64);
  EXPECT_EQ(parsed->data, resp.data);
  resp.base64 = false;
  parsed = ParseEmbeddingsResponse(ToJson(resp).dump());
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->base64);
  EXPECT_EQ(parsed->data, resp.data);
  EXPECT_EQ(parsed->prompt_tokens, 3);
}

// EmbeddingsBody: the same document as ToJson, floats written in their shortest float32 form (0.0123,
// not 0.012299999594688416) and read back exactly, whatever the value.
TEST(OpenAiEmbeddings, BodyWritesShortestFloatsThatRoundTrip) {
  EmbeddingsResponse resp{"m\"x", {{0.0123f, -1e-07f, 3.0f}, {}}, false, 4, 4};
  std::string body = EmbeddingsBody(resp);
  EXPECT_EQ(body,
            R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0123,-1e-07,3]},)"
            R"({"object":"embedding","index":1,"embedding":[]}],"model":"m\"x",)"
            R"("usage":{"prompt_tokens":4,"total_tokens":4}})");
  auto read = ParseEmbeddingsResponse(body);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->data, resp.data);
  EXPECT_EQ(read->model, resp.model);
  EXPECT_EQ(read->prompt_tokens, 4);
  resp.base64 = true;  // no numbers: the same document as ToJson's
  EXPECT_EQ(Json::parse(EmbeddingsBody(resp)), ToJson(resp));

  // Many floats (every exponent, random mantissas): each number's text parses back to the same float.
  std::vector<float> v;
  uint32_t s = 12345;
  for (int i = 0; i < 20000; ++i) {
    s = s * 1664525u + 1013904223u;
    float f;
    uint32_t bits = s & 0xff7fffffu;  // exponents below the all-ones one: finite
    std::memcpy(&f, &bits, sizeof f);
    v.push_back(f);
  }
  EmbeddingsResponse many{"m", {v}, false, 0, 0};
  body = EmbeddingsBody(many);
  size_t at = body.find("\"embedding\":[") + 13;
  for (size_t i = 0; i < v.size(); ++i) {
    float back = 0;
    auto [p, ec] = std::from_chars(body.data() + at, body.data() + body.size(), back);
    ASSERT_EQ(ec, std::errc()) << i;
    ASSERT_EQ(std::memcmp(&back, &v[i], sizeof back), 0) << i << " " << v[i];
    at = static_cast<size_t>(p - body.data()) + 1;  // past ',' or ']'
  }
  auto parsed = ParseEmbeddingsResponse(body);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->data[0].size(), v.size());
}

TEST(OpenAiModels, ListRoundTrips) {
  Json list = ModelsListJson({{"gpt-4o", 1715367049, "system"}, {"stub-1", 0, "govern"}});
  EXPECT_EQ(list["object"], "list");
  auto models = ParseModelsList(list.dump());
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].id, "gpt-4o");
  EXPECT_EQ((*models)[0].created, 1715367049);
}

}  // namespace
}  // namespace govern::gateway::openai
