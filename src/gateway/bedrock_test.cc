// Bedrock Converse behind the OpenAI format: the request mapping, answers, and ConverseStream frames to
// OpenAI chunks in any chunking, with tool calls, exceptions, cut streams and corrupt frames.
#include "gateway/bedrock.h"

#include <gtest/gtest.h>

#include "gateway/sse.h"

namespace govern::gateway::bedrock {
namespace {

using Json = nlohmann::json;

TEST(BedrockTest, RequestMapsRolesToolsAndInferenceConfig) {
  auto chat = openai::ParseChatRequest(R"({
    "model": "claude",
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "developer", "content": "and kind"},
      {"role": "user", "content": [{"type": "text", "text": "weather in "}, {"type": "text", "text": "Oslo?"}]},
      {"role": "assistant", "content": "Looking.",
       "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
                      {"id": "call_2", "type": "function", "function": {"name": "time", "arguments": ""}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "{\"c\":4}"},
      {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
      {"role": "user", "content": "thanks"}
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "description": "d", "parameters": {"type": "object"}}},
              {"type": "function", "function": {"name": "time"}}],
    "tool_choice": "required", "max_completion_tokens": 50, "max_tokens": 9, "temperature": 0.5, "top_p": 0.9,
    "stop": ["END"], "user": "u1", "seed": 3})");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  auto b = FromChatRequest(*chat);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Json want = Json::parse(R"({
    "messages": [
      {"role": "user", "content": [{"text": "weather in Oslo?"}]},
      {"role": "assistant", "content": [{"text": "Looking."},
        {"toolUse": {"toolUseId": "call_1", "name": "weather", "input": {"city": "Oslo"}}},
        {"toolUse": {"toolUseId": "call_2", "name": "time", "input": {}}}]},
      {"role": "user", "content": [
        {"toolResult": {"toolUseId": "call_1", "content": [{"text": "{\"c\":4}"}]}},
        {"toolResult": {"toolUseId": "call_2", "content": [{"text": "noon"}]}},
        {"text": "thanks"}]}
    ],
    "system": [{"text": "be brief"}, {"text": "and kind"}],
    "toolConfig": {"tools": [
      {"toolSpec": {"name": "weather", "description": "d", "inputSchema": {"json": {"type": "object"}}}},
      {"toolSpec": {"name": "time", "inputSchema": {"json": {"type": "object", "properties": {}}}}}],
      "toolChoice": {"any": {}}},
    "inferenceConfig": {"maxTokens": 50, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]}})");
  EXPECT_EQ(*b, want) << b->dump(2);
}

TEST(BedrockTest, ToolChoiceAndWhatCannotBeSent) {
  auto body = [](std::string_view json) {
    auto chat = openai::ParseChatRequest(json);
    EXPECT_TRUE(chat.ok()) << chat.status().ToString();
    return FromChatRequest(*chat);
  };
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])";
  auto auto_choice = body(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + tools +
                          R"(,"tool_choice":"auto"})");
  EXPECT_EQ((*auto_choice)["toolConfig"]["toolChoice"], Json::parse(R"({"auto":{}})"));
  auto named = body(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + tools +
                    R"(,"tool_choice":{"type":"function","function":{"name":"f"}}})");
  EXPECT_EQ((*named)["toolConfig"]["toolChoice"], Json::parse(R"({"tool":{"name":"f"}})"));
  // "none" has no Converse counterpart: no tools are offered at all ...
  auto none = body(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + tools +
                   R"(,"tool_choice":"none"})");
  EXPECT_FALSE(none->contains("toolConfig")) << none->dump();
  // ... unless the conversation already uses them (Converse then requires toolConfig).
  auto none_history = body(
      R"({"model":"m","messages":[{"role":"user","content":"hi"},
          {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
          {"role":"tool","tool_call_id":"c1","content":"ok"}],)" +
      tools + R"(,"tool_choice":"none"})");
  ASSERT_TRUE(none_history->contains("toolConfig"));
  EXPECT_FALSE((*none_history)["toolConfig"].contains("toolChoice"));

  auto image = body(
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})");
  EXPECT_EQ(image.status().code(), Code::kInvalidArgument);
  EXPECT_NE(image.status().message().find("messages[0]"), std::string::npos);
  auto role = body(R"({"model":"m","messages":[{"role":"function","content":"x"}]})");
  EXPECT_FALSE(role.ok());
}

TEST(BedrockTest, AnswersBecomeChatCompletions) {
  auto r = ToChatResponse(R"({
    "output": {"message": {"role": "assistant", "content": [
      {"reasoningContent": {"reasoningText": {"text": "hmm"}}},
      {"text": "It is "}, {"text": "4 degrees."},
      {"toolUse": {"toolUseId": "tooluse_1", "name": "log", "input": {"n": 1}}}]}},
    "stopReason": "tool_use",
    "usage": {"inputTokens": 10, "outputTokens": 7, "totalTokens": 17, "cacheReadInputTokens": 5,
              "cacheWriteInputTokens": 2},
    "metrics": {"latencyMs": 120}})",
                          "claude", 1700000000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->choices.size(), 1u);
  EXPECT_EQ(r->choices[0].content, "It is 4 degrees.");
  ASSERT_EQ(r->choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(r->choices[0].tool_calls[0].id, "tooluse_1");
  EXPECT_EQ(r->choices[0].tool_calls[0].name, "log");
  EXPECT_EQ(r->choices[0].tool_calls[0].arguments, R"({"n":1})");
  EXPECT_EQ(r->choices[0].finish_reason, "tool_calls");
  EXPECT_EQ(r->model, "claude");
  EXPECT_EQ(r->created, 1700000000);
  ASSERT_TRUE(r->usage);
  EXPECT_EQ(r->usage->prompt_tokens, 17);  // 10 + cache read 5 + cache write 2
  EXPECT_EQ(r->usage->cached_tokens, 5);
  EXPECT_EQ(r->usage->completion_tokens, 7);
  EXPECT_EQ(r->usage->total_tokens, 24);

  struct Stop {
    const char* bedrock;
    const char* openai;
  };
  for (const Stop& s :
       {Stop{"end_turn", "stop"}, Stop{"stop_sequence", "stop"}, Stop{"max_tokens", "length"},
        Stop{"guardrail_intervened", "content_filter"}, Stop{"content_filtered", "content_filter"}}) {
    Json j = {{"output", {{"message", {{"role", "assistant"}, {"content", {{{"text", "x"}}}}}}}},
              {"stopReason", s.bedrock}};
    auto a = ToChatResponse(j.dump(), "m", 0);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->choices[0].finish_reason, s.openai) << s.bedrock;
  }

  for (const char* bad : {"[]", "{", R"({"output":[]})", R"({"output":{"message":{"content":{}}}})",
                          R"({"output":{"message":{"content":[{"text":3}]}}})",
                          R"({"output":{"message":{"content":[{"toolUse":{"name":"x"}}]}}})",
                          R"({"usage":{"inputTokens":-1}})"}) {
    EXPECT_EQ(ToChatResponse(bad, "m", 0).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ErrorMessage(R"({"message":"The security token included in the request is invalid."})"),
            "The security token included in the request is invalid.");
  EXPECT_EQ(ErrorMessage(R"({"Message":"Too many requests"})"), "Too many requests");
  EXPECT_EQ(ErrorMessage("plain"), "plain");
}

// ---- ConverseStream ----

std::string Frame(std::string_view event_type, const Json& payload, std::string_view message_type = "event") {
  eventstream::Message m;
  if (message_type == "event") {
    m.headers.push_back(eventstream::Header::String(":event-type", std::string(event_type)));
  } else {
    m.headers.push_back(eventstream::Header::String(":exception-type", std::string(event_type)));
  }
  m.headers.push_back(eventstream::Header::String(":content-type", "application/json"));
  m.headers.push_back(eventstream::Header::String(":message-type", std::string(message_type)));
  m.payload = payload.dump();
  return eventstream::Encode(m).value();
}

std::string TextStream() {
  return Frame("messageStart", {{"role", "assistant"}, {"p", "abcd"}}) +
         Frame("contentBlockDelta", {{"delta", {{"text", "Hello"}}}, {"contentBlockIndex", 0}}) +
         Frame("contentBlockDelta", {{"delta", {{"text", " there"}}}, {"contentBlockIndex", 0}}) +
         Frame("contentBlockStop", {{"contentBlockIndex", 0}}) +
         Frame("messageStop", {{"stopReason", "end_turn"}}) +
         Frame("metadata", {{"usage", {{"inputTokens", 4}, {"outputTokens", 2}, {"cacheReadInputTokens", 1}}},
                            {"metrics", {{"latencyMs", 9}}}});
}

// The OpenAI chunks in `sse` (the [DONE] marker as null).
std::vector<Json> Chunks(std::string_view sse) {
  SseParser p;
  std::vector<SseEvent> events;
  EXPECT_TRUE(p.Feed(sse, events).ok());
  std::vector<Json> out;
  for (const auto& e : events) out.push_back(e.IsDone() ? Json(nullptr) : Json::parse(e.data));
  return out;
}

TEST(BedrockTest, StreamBecomesChunksInAnyChunking) {
  const std::string stream = TextStream();
  std::string whole;
  {
    StreamToChat s("claude", 7);
    ASSERT_TRUE(s.Feed(stream, whole).ok());
    EXPECT_TRUE(s.finished());  // the metadata event ends it
    s.Finish(whole);
    EXPECT_EQ(s.usage().prompt_tokens, 5);
    EXPECT_EQ(s.usage().completion_tokens, 2);
  }
  auto chunks = Chunks(whole);
  ASSERT_EQ(chunks.size(), 6u) << whole;
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunks[0]["model"], "claude");
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["content"], "Hello");
  EXPECT_EQ(chunks[2]["choices"][0]["delta"]["content"], " there");
  EXPECT_EQ(chunks[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(chunks[4]["choices"].empty());
  EXPECT_EQ(chunks[4]["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(chunks[4]["usage"]["completion_tokens"], 2);
  EXPECT_EQ(chunks[4]["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  EXPECT_TRUE(chunks[5].is_null());
  for (size_t step : {size_t{1}, size_t{5}, size_t{64}}) {
    StreamToChat s("claude", 7);
    std::string out;
    for (size_t i = 0; i < stream.size(); i += step) ASSERT_TRUE(s.Feed(stream.substr(i, step), out).ok());
    s.Finish(out);
    EXPECT_EQ(out, whole) << step;
  }
}

TEST(BedrockTest, StreamedToolUseBecomesToolCallDeltas) {
  std::string stream =
      Frame("messageStart", {{"role", "assistant"}}) +
      Frame("contentBlockDelta", {{"delta", {{"text", "Let me check."}}}, {"contentBlockIndex", 0}}) +
      Frame("contentBlockStop", {{"contentBlockIndex", 0}}) +
      Frame("contentBlockStart", {{"start", {{"toolUse", {{"toolUseId", "tooluse_9"}, {"name", "weather"}}}}},
                                  {"contentBlockIndex", 1}}) +
      Frame("contentBlockDelta",
            {{"delta", {{"toolUse", {{"input", "{\"city\":"}}}}}, {"contentBlockIndex", 1}}) +
      Frame("contentBlockDelta",
            {{"delta", {{"toolUse", {{"input", "\"Oslo\"}"}}}}}, {"contentBlockIndex", 1}}) +
      Frame("contentBlockStop", {{"contentBlockIndex", 1}}) +
      Frame("messageStop", {{"stopReason", "tool_use"}}) +
      Frame("metadata", {{"usage", {{"inputTokens", 3}, {"outputTokens", 8}}}});
  StreamToChat s("m", 0);
  std::string out;
  ASSERT_TRUE(s.Feed(stream, out).ok());
  auto chunks = Chunks(out);
  ASSERT_EQ(chunks.size(), 8u) << out;
  const Json& start = chunks[2]["choices"][0]["delta"]["tool_calls"][0];
  EXPECT_EQ(start["index"], 0);
  EXPECT_EQ(start["id"], "tooluse_9");
  EXPECT_EQ(start["function"]["name"], "weather");
  EXPECT_EQ(chunks[3]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"], "{\"city\":");
  EXPECT_EQ(chunks[4]["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
  EXPECT_EQ(chunks[5]["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(chunks[6]["usage"]["completion_tokens"], 8);

  // Tool input for a block that never started a tool call cannot be placed.
  StreamToChat bad("m", 0);
  std::string ignored;
  EXPECT_FALSE(bad.Feed(Frame("contentBlockDelta",
                              {{"delta", {{"toolUse", {{"input", "{}"}}}}}, {"contentBlockIndex", 3}}),
                        ignored)
                   .ok());
}

TEST(BedrockTest, ExceptionsCutsAndCorruptFrames) {
  // An exception mid-stream becomes an OpenAI error event and ends the stream.
  {
    StreamToChat s("m", 0);
    std::string out;
    ASSERT_TRUE(
        s.Feed(Frame("messageStart", {{"role", "assistant"}}) +
                   Frame("throttlingException", {{"message", "slow down"}}, "exception") +
                   Frame("contentBlockDelta", {{"delta", {{"text", "late"}}}, {"contentBlockIndex", 0}}),
               out)
            .ok());
    auto chunks = Chunks(out);
    ASSERT_EQ(chunks.size(), 2u) << out;
    EXPECT_EQ(chunks[1]["error"]["message"], "throttlingException: slow down");
    EXPECT_TRUE(s.finished());
  }
  // Cut before messageStop: no finish reason, no [DONE].
  {
    std::string stream = TextStream();
    StreamToChat s("m", 0);
    std::string out;
    size_t stop = stream.find("messageStop");
    ASSERT_NE(stop, std::string::npos);
    ASSERT_TRUE(s.Feed(stream.substr(0, stop - 20), out).ok());
    s.Finish(out);
    EXPECT_EQ(out.find("[DONE]"), std::string::npos);
    EXPECT_EQ(out.find("finish_reason\":\"stop"), std::string::npos);
  }
  // messageStop without metadata: [DONE] at Finish, no usage chunk.
  {
    StreamToChat s("m", 0);
    std::string out;
    ASSERT_TRUE(s.Feed(Frame("messageStart", {{"role", "assistant"}}) +
                           Frame("messageStop", {{"stopReason", "end_turn"}}),
                       out)
                    .ok());
    EXPECT_FALSE(s.finished());
    s.Finish(out);
    auto chunks = Chunks(out);
    ASSERT_EQ(chunks.size(), 3u) << out;
    EXPECT_TRUE(chunks[2].is_null());
  }
  // A corrupt frame, a payload that is not JSON, an unknown message type: errors.
  std::string corrupt = TextStream();
  corrupt[30] ^= 1;
  for (const std::string& bad : {corrupt, Frame("contentBlockDelta", Json("x")),
                                 Frame("messageStart", {{"role", "assistant"}}, "weird")}) {
    StreamToChat s("m", 0);
    std::string out;
    EXPECT_EQ(s.Feed(bad, out).code(), Code::kInvalidArgument);
  }
  // Unknown event types are skipped.
  StreamToChat s("m", 0);
  std::string out;
  EXPECT_TRUE(s.Feed(Frame("somethingNew", {{"x", 1}}), out).ok());
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace govern::gateway::bedrock
