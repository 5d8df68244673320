// Anthropic Messages wire format: bodies and stream events written as the Anthropic API reference shows them.
#include "gateway/anthropic.h"

#include <gtest/gtest.h>

#include "gateway/sse.h"

namespace govern::gateway::anthropic {
namespace {

constexpr std::string_view kRequest = R"({
  "model": "claude-sonnet-4-5",
  "max_tokens": 1024,
  "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
  "messages": [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": [
      {"type": "text", "text": "Let me check."},
      {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"city": "Paris"}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "18C, cloudy"},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}
  ],
  "tools": [{"name": "get_weather", "description": "Weather by city",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
             "cache_control": {"type": "ephemeral"}}],
  "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
  "stop_sequences": ["END"],
  "stream": true,
  "temperature": 0.5,
  "top_k": 40,
  "metadata": {"user_id": "u-42"},
  "thinking": {"type": "enabled", "budget_tokens": 2048}
})";

TEST(AnthropicRequest, ParsesTheDocumentedShape) {
  auto r = ParseMessagesRequest(kRequest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_tokens, 1024);
  EXPECT_EQ(r->system_text, "You are terse.");
  ASSERT_EQ(r->messages.size(), 3u);
  EXPECT_TRUE(r->messages[0].content_is_string);
  EXPECT_EQ(r->messages[0].content[0].text, "What is the weather in Paris?");
  ASSERT_EQ(r->messages[1].content.size(), 2u);
  EXPECT_EQ(r->messages[1].content[1].type, Block::Type::kToolUse);
  EXPECT_EQ(r->messages[1].content[1].input["city"], "Paris");
  EXPECT_EQ(r->messages[2].content[0].type, Block::Type::kToolResult);
  EXPECT_EQ(r->messages[2].content[0].result_text, "18C, cloudy");
  EXPECT_EQ(r->messages[2].content[1].type, Block::Type::kOther);
  EXPECT_EQ(r->tool_choice.mode, ToolChoice::Mode::kAuto);
  EXPECT_EQ(r->tool_choice.disable_parallel_tool_use, true);
  EXPECT_EQ(r->top_k, 40);
  EXPECT_EQ(r->metadata_user_id, "u-42");
  EXPECT_TRUE(r->extra.contains("thinking"));
  EXPECT_EQ(ToJson(*r), Json::parse(kRequest)) << ToJson(*r).dump(2);
}

TEST(AnthropicRequest, BadBodiesGiveClearErrors) {
  EXPECT_EQ(ParseMessagesRequest(R"({"model":"m","messages":[]})").status().message(),
            "max_tokens is required");
  EXPECT_EQ(ParseMessagesRequest(R"({"model":"m","max_tokens":0,"messages":[]})").status().message(),
            "max_tokens must be at least 1");
  EXPECT_EQ(
      ParseMessagesRequest(R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]})")
          .status()
          .message(),
      "messages[0].role must be user or assistant");
  EXPECT_EQ(
      ParseMessagesRequest(
          R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":[]}]}]})")
          .status()
          .message(),
      "messages[0].content[0].input must be an object");
  EXPECT_EQ(
      ParseMessagesRequest(R"({"model":"m","max_tokens":5,"messages":[],"tool_choice":{"type":"maybe"}})")
          .status()
          .code(),
      Code::kInvalidArgument);
}

constexpr std::string_view kResponse = R"({
  "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
  "content": [{"type": "text", "text": "I'll check."},
              {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048, "output_tokens": 91}
})";

TEST(AnthropicResponse, ParsesAndWritesBack) {
  auto r = ParseMessagesResponse(kResponse);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stop_reason, "tool_use");
  EXPECT_EQ(r->usage, (Usage{472, 91, 0, 2048}));
  EXPECT_EQ(ToJson(*r), Json::parse(kResponse));
}

// A tool-use stream as the Messages API sends it (from the streaming reference), SSE framing included.
constexpr std::string_view kStream =
    "event: message_start\n"
    "data: "
    "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_014p7gG3wDgGV9EUtLvnow3U\",\"type\":\"message\","
    "\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"stop_sequence\":null,\"usage\":{\"input_"
    "tokens\":472,"
    "\"output_tokens\":2},\"content\":[],\"stop_reason\":null}}\n\n"
    "event: content_block_start\n"
    "data: "
    "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Okay\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
    "\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
    "\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
    "\"{\\\"location\\\":"
    " \\\"San Fra\"}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
    "\"ncisco\\\"}\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},"
    "\"usage\":{\"output_tokens\":89}}\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n";

TEST(AnthropicStream, ParsesEveryEventAndWritesThemBack) {
  SseParser sse;
  std::vector<SseEvent> events;
  ASSERT_TRUE(sse.Feed(kStream, events).ok());
  ASSERT_EQ(events.size(), 12u);
  std::string json;
  for (const SseEvent& e : events) {
    auto ev = ParseStreamEvent(e.data);
    ASSERT_TRUE(ev.ok()) << e.data << ": " << ev.status().ToString();
    EXPECT_EQ(ev->name(), e.event);
    if (ev->type == StreamEvent::Type::kContentBlockDelta && ev->delta_type == "input_json_delta")
      json += ev->delta_text;
    // What ToJson writes parses to the same event.
    auto again = ParseStreamEvent(ToJson(*ev).dump());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->type, ev->type);
    EXPECT_EQ(again->delta_text, ev->delta_text);
    EXPECT_EQ(again->stop_reason, ev->stop_reason);
  }
  EXPECT_EQ(Json::parse(json), Json::parse(R"({"location":"San Francisco"})"));
  auto start = ParseStreamEvent(events[0].data);
  EXPECT_EQ(start->message.usage.input_tokens, 472);
  auto delta = ParseStreamEvent(events[10].data);
  EXPECT_EQ(delta->usage["output_tokens"], 89);

  auto err =
      ParseStreamEvent(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(err->type, StreamEvent::Type::kError);
  EXPECT_EQ(err->error_type, "overloaded_error");
  EXPECT_EQ(ToJson(*err), ErrorJson("overloaded_error", "Overloaded"));
  EXPECT_FALSE(
      ParseStreamEvent(R"({"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}})").ok());
}

}  // namespace
}  // namespace govern::gateway::anthropic
