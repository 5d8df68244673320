// Translation between OpenAI Chat Completions and Anthropic Messages: requests, responses and streams.
#include "gateway/translate.h"

#include <gtest/gtest.h>

#include "gateway/sse.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

TEST(TranslateRequest, ChatToMessages) {
  auto chat = openai::ParseChatRequest(R"({
    "model": "claude-sonnet-4-5",
    "messages": [
      {"role": "system", "content": "Be terse."},
      {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
      {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
      {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
      {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
      {"role": "user", "content": "And tomorrow?"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
              {"type": "function", "function": {"name": "get_time"}}],
    "tool_choice": "required",
    "parallel_tool_calls": false,
    "max_tokens": 300, "temperature": 1.5, "stop": ["END", "STOP"], "stream": true, "user": "u-1"
  })");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  auto m = ChatToMessagesRequest(*chat);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Json expected = Json::parse(R"({
    "model": "claude-sonnet-4-5", "max_tokens": 300,
    "system": "Be terse.\n\nUse metric units.",
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "Weather?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
      {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "18C"},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "noon"},
        {"type": "text", "text": "And tomorrow?"}]}
    ],
    "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
              {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    "stop_sequences": ["END", "STOP"], "stream": true, "temperature": 1.0, "metadata": {"user_id": "u-1"}
  })");
  EXPECT_EQ(anthropic::ToJson(*m), expected) << anthropic::ToJson(*m).dump(2);

  // No max_tokens from the client: the default; n > 1 and audio cannot be translated.
  auto bare = openai::ParseChatRequest(R"({"model":"c","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(ChatToMessagesRequest(*bare, {.default_max_tokens = 77})->max_tokens, 77);
  auto n2 = openai::ParseChatRequest(R"({"model":"c","n":2,"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(ChatToMessagesRequest(*n2).status().code(), Code::kInvalidArgument);
  auto audio = openai::ParseChatRequest(
      R"({"model":"c","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]})");
  EXPECT_EQ(ChatToMessagesRequest(*audio).status().message(),
            "messages[0]: content part type \"input_audio\" cannot be sent to an Anthropic model");
}

TEST(TranslateRequest, MessagesToChat) {
  auto m = anthropic::ParseMessagesRequest(R"({
    "model": "gpt-4o", "max_tokens": 512, "system": "Be terse.",
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "18C"}]},
        {"type": "text", "text": "Thanks"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}
    ],
    "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
    "stop_sequences": ["END"], "stream": true, "top_k": 5, "metadata": {"user_id": "u-9"}
  })");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto chat = MessagesToChatRequest(*m);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  Json expected = Json::parse(R"({
    "model": "gpt-4o", "max_tokens": 512,
    "messages": [
      {"role": "system", "content": "Be terse."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "toolu_1", "content": "18C"},
      {"role": "user", "content": [{"type": "text", "text": "Thanks"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "parallel_tool_calls": false, "stop": "END", "stream": true, "stream_options": {"include_usage": true},
    "user": "u-9"
  })");
  EXPECT_EQ(openai::ToJson(*chat), expected) << openai::ToJson(*chat).dump(2);

  auto doc = anthropic::ParseMessagesRequest(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]})");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(MessagesToChatRequest(*doc).status().code(), Code::kInvalidArgument);
}

TEST(TranslateResponse, BothWays) {
  auto a = anthropic::ParseMessagesResponse(R"({
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
    "stop_reason": "tool_use", "stop_sequence": null,
    "usage": {"input_tokens": 100, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 2000, "output_tokens": 30}
  })");
  ASSERT_TRUE(a.ok());
  openai::ChatResponse c = MessagesToChatResponse(*a, 1700000000);
  ASSERT_EQ(c.choices.size(), 1u);
  EXPECT_EQ(c.choices[0].content, "Checking.");
  EXPECT_EQ(c.choices[0].finish_reason, "tool_calls");
  ASSERT_EQ(c.choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(c.choices[0].tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(c.usage, (openai::Usage{2110, 30, 2140, 2000, 0}));

  // And back: the same blocks, stop reason and (cache-write folded into input) usage.
  anthropic::MessagesResponse back = ChatToMessagesResponse(c);
  EXPECT_EQ(back.id, "msg_1");
  ASSERT_EQ(back.content.size(), 2u);
  EXPECT_EQ(back.content[1].input, Json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(back.stop_reason, "tool_use");
  EXPECT_EQ(back.usage, (anthropic::Usage{110, 30, 0, 2000}));

  for (auto [stop, finish] :
       std::vector<std::pair<std::string, std::string>>{{"end_turn", "stop"},
                                                        {"max_tokens", "length"},
                                                        {"tool_use", "tool_calls"},
                                                        {"refusal", "content_filter"}}) {
    EXPECT_EQ(FinishReasonFor(stop), finish);
    EXPECT_EQ(StopReasonFor(finish), stop);
  }
  EXPECT_EQ(FinishReasonFor("stop_sequence"), "stop");
}

std::vector<anthropic::StreamEvent> ParseAnthropicStream(std::string_view wire) {
  SseParser p;
  std::vector<SseEvent> events;
  EXPECT_TRUE(p.Feed(wire, events).ok());
  std::vector<anthropic::StreamEvent> out;
  for (const SseEvent& e : events) {
    auto ev = anthropic::ParseStreamEvent(e.data);
    EXPECT_TRUE(ev.ok()) << e.data;
    if (ev.ok()) out.push_back(std::move(*ev));
  }
  return out;
}

// What an OpenAI client assembles from chunks: text, tool calls by index, finish reason, usage.
struct Assembled {
  std::string role, text, finish;
  std::map<int64_t, openai::ToolCall> tools;
  std::optional<openai::Usage> usage;
  int usage_chunks = 0;
};

Assembled AssembleChat(const std::vector<Json>& chunks) {
  Assembled a;
  for (const Json& j : chunks) {
    auto c = openai::ParseChatChunk(j.dump());
    EXPECT_TRUE(c.ok()) << j.dump();
    if (c->usage) {
      a.usage = c->usage;
      ++a.usage_chunks;
    }
    for (const auto& ch : c->choices) {
      if (ch.role) a.role = *ch.role;
      a.text += ch.content.value_or("");
      for (const auto& t : ch.tool_calls) {
        auto& tc = a.tools[t.index];
        if (t.id) tc.id = *t.id;
        if (t.name) tc.name += *t.name;
        if (t.arguments) tc.arguments += *t.arguments;
      }
      if (ch.finish_reason) a.finish = *ch.finish_reason;
    }
  }
  return a;
}

constexpr std::string_view kAnthropicToolStream =
    "event: message_start\n"
    "data: "
    "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
    "\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
    "\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\n"
    "data: "
    "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: ping\ndata: {\"type\":\"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let "
    "me \"}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"check.\"}}"
    "\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\n"
    "data: "
    "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_"
    "9\","
    "\"name\":\"get_weather\",\"input\":{}}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
    "\"{\\\"city\\\":\"}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
    "\" \\\"Paris\\\"}\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},"
    "\"usage\":{\"output_tokens\":42}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

TEST(TranslateStream, AnthropicToOpenAiChunks) {
  MessagesToChatStream t(/*include_usage=*/true, 1700000000);
  std::vector<Json> chunks;
  for (const auto& e : ParseAnthropicStream(kAnthropicToolStream)) t.Feed(e, chunks);
  EXPECT_TRUE(t.done());
  EXPECT_FALSE(t.failed());
  Assembled a = AssembleChat(chunks);
  EXPECT_EQ(a.role, "assistant");
  EXPECT_EQ(a.text, "Let me check.");
  EXPECT_EQ(a.finish, "tool_calls");
  ASSERT_EQ(a.tools.size(), 1u);
  EXPECT_EQ(a.tools[0].id, "toolu_9");
  EXPECT_EQ(a.tools[0].name, "get_weather");
  EXPECT_EQ(Json::parse(a.tools[0].arguments), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(a.usage_chunks, 1);
  EXPECT_EQ(a.usage, (openai::Usage{30, 42, 72, 5, 0}));
  EXPECT_TRUE(chunks.back()["choices"].empty());  // the usage chunk is last and has no choices
  for (const Json& c : chunks) EXPECT_EQ(c["id"], "msg_1");

  // Without include_usage there is no usage chunk, but the translator still knows the usage.
  MessagesToChatStream quiet(false, 0);
  std::vector<Json> out;
  for (const auto& e : ParseAnthropicStream(kAnthropicToolStream)) quiet.Feed(e, out);
  EXPECT_EQ(AssembleChat(out).usage_chunks, 0);
  EXPECT_EQ(quiet.usage().completion_tokens, 42);
}

TEST(TranslateStream, AnthropicErrorBecomesAnOpenAiStreamError) {
  MessagesToChatStream t(true, 0);
  std::vector<Json> chunks;
  auto events = ParseAnthropicStream(
      "event: message_start\ndata: "
      "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"c\",\"content\":[],"
      "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
      "event: error\ndata: "
      "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
  for (const auto& e : events) t.Feed(e, chunks);
  EXPECT_TRUE(t.failed());
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[1]["error"]["type"], "overloaded_error");
  EXPECT_EQ(chunks[1]["error"]["message"], "Overloaded");
  EXPECT_EQ(t.usage().prompt_tokens, 3);  // usage so far, for metering a failed stream
}

// An OpenAI stream with text, then two parallel tool calls, then the usage chunk.
std::vector<openai::ChatChunk> OpenAiToolStream() {
  const char* lines[] = {
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"On "},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"it."},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null})",
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70,"prompt_tokens_details":{"cached_tokens":8}}})",
  };
  std::vector<openai::ChatChunk> out;
  for (const char* l : lines) {
    auto c = openai::ParseChatChunk(l);
    EXPECT_TRUE(c.ok()) << l;
    out.push_back(std::move(*c));
  }
  return out;
}

TEST(TranslateStream, OpenAiToAnthropicEvents) {
  ChatToMessagesStream t;
  std::vector<anthropic::StreamEvent> events;
  for (const auto& c : OpenAiToolStream()) t.Feed(c, events);
  t.Finish(events);
  EXPECT_TRUE(t.finished());
  // Replay the events the way the Anthropic SDK accumulates a message, checking the order rules.
  std::vector<std::string> names;
  for (const auto& e : events) names.emplace_back(e.name());
  std::vector<std::string> expected_names = {
      "message_start",      "content_block_start", "content_block_delta", "content_block_delta",
      "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta",
      "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop",
      "message_delta",      "message_stop"};
  EXPECT_EQ(names, expected_names);
  // Every event written and parsed again gives one assembled message.
  std::string text;
  std::map<int64_t, std::string> json;
  std::map<int64_t, std::string> names_by_block;
  std::string stop_reason;
  Json usage;
  for (const auto& e : events) {
    auto p = anthropic::ParseStreamEvent(anthropic::ToJson(e).dump());
    ASSERT_TRUE(p.ok());
    if (p->type == anthropic::StreamEvent::Type::kContentBlockStart) names_by_block[p->index] = p->block.name;
    if (p->type == anthropic::StreamEvent::Type::kContentBlockDelta) {
      if (p->delta_type == "text_delta")
        text += p->delta_text;
      else
        json[p->index] += p->delta_text;
    }
    if (p->type == anthropic::StreamEvent::Type::kMessageDelta) {
      stop_reason = p->stop_reason.value_or("");
      usage = p->usage;
    }
  }
  EXPECT_EQ(events[0].message.id, "msg_chatcmpl-7");
  EXPECT_EQ(text, "On it.");
  EXPECT_EQ(names_by_block[1], "get_weather");
  EXPECT_EQ(Json::parse(json[1]), Json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(names_by_block[2], "get_time");
  EXPECT_EQ(json[2], "{}");
  EXPECT_EQ(stop_reason, "tool_use");
  EXPECT_EQ(usage, Json::parse(R"({"input_tokens":42,"cache_read_input_tokens":8,"output_tokens":20})"));
  EXPECT_EQ(t.usage(), (anthropic::Usage{42, 20, 0, 8}));
}

TEST(TranslateStream, RoundTripOpenAiThroughAnthropicKeepsTheMessage) {
  ChatToMessagesStream to_anthropic;
  std::vector<anthropic::StreamEvent> events;
  for (const auto& c : OpenAiToolStream()) to_anthropic.Feed(c, events);
  to_anthropic.Finish(events);
  MessagesToChatStream back(true, 1);
  std::vector<Json> chunks;
  for (const auto& e : events) back.Feed(e, chunks);
  Assembled a = AssembleChat(chunks);
  EXPECT_EQ(a.text, "On it.");
  EXPECT_EQ(a.finish, "tool_calls");
  ASSERT_EQ(a.tools.size(), 2u);
  EXPECT_EQ(a.tools[0].id, "call_a");
  EXPECT_EQ(a.tools[1].name, "get_time");
  EXPECT_EQ(a.usage, (openai::Usage{50, 20, 70, 8, 0}));
}

TEST(TranslateStream, CutOpenAiStreamStillEndsTheAnthropicStream) {
  ChatToMessagesStream t;
  std::vector<anthropic::StreamEvent> events;
  auto chunks = OpenAiToolStream();
  for (size_t i = 0; i < 5; ++i) t.Feed(chunks[i], events);  // cut inside the first tool call
  t.Finish(events);
  EXPECT_EQ(events.back().type, anthropic::StreamEvent::Type::kMessageStop);
  EXPECT_EQ(events[events.size() - 3].type, anthropic::StreamEvent::Type::kContentBlockStop);
  // An error chunk from upstream becomes an Anthropic error event.
  ChatToMessagesStream e;
  std::vector<anthropic::StreamEvent> out;
  e.Feed(*openai::ParseChatChunk(R"({"error":{"message":"boom","type":"server_error"}})"), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, anthropic::StreamEvent::Type::kError);
  EXPECT_EQ(out[0].error_message, "boom");
}

}  // namespace
}  // namespace govern::gateway
