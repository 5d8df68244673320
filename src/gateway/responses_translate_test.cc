// The OpenAI Responses API in front of an Anthropic provider: request, whole answer, stream.
#include "gateway/responses_translate.h"

#include <gtest/gtest.h>

#include "gateway/sse.h"
#include "gateway/usage_peek.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

TEST(ResponsesTranslate, RequestToMessages) {
  auto req = openai::ParseResponsesRequest(R"({
    "model":"claude-x","instructions":"be brief","max_output_tokens":300,"temperature":0.5,
    "input":[
      {"role":"developer","content":"use tools"},
      {"role":"user","content":[{"type":"input_text","text":"weather in"},{"type":"input_text","text":" Paris?"}]},
      {"type":"reasoning","id":"rs_1","summary":[]},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
      {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
      {"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Lyon\"}"},
      {"type":"function_call_output","call_id":"call_1","output":"sunny"},
      {"type":"function_call_output","call_id":"call_2","output":"rain"}
    ],
    "tools":[{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object"}}],
    "tool_choice":{"type":"function","name":"get_weather"}})");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  auto m = ResponsesToMessagesRequest(*req);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->model, "claude-x");
  EXPECT_EQ(m->max_tokens, 300);
  EXPECT_EQ(m->system_text, "be brief\n\nuse tools");
  ASSERT_EQ(m->messages.size(), 3u);
  EXPECT_EQ(m->messages[0].role, "user");
  ASSERT_EQ(m->messages[0].content.size(), 1u);
  EXPECT_EQ(m->messages[0].content[0].text, "weather in Paris?");
  EXPECT_EQ(m->messages[1].role, "assistant");  // the text and both calls are one turn
  ASSERT_EQ(m->messages[1].content.size(), 3u);
  EXPECT_EQ(m->messages[1].content[0].text, "Checking.");
  EXPECT_EQ(m->messages[1].content[1].type, anthropic::Block::Type::kToolUse);
  EXPECT_EQ(m->messages[1].content[1].id, "call_1");
  EXPECT_EQ(m->messages[1].content[2].input, Json({{"city", "Lyon"}}));
  EXPECT_EQ(m->messages[2].role, "user");  // both results in one user turn
  ASSERT_EQ(m->messages[2].content.size(), 2u);
  EXPECT_EQ(m->messages[2].content[0].type, anthropic::Block::Type::kToolResult);
  EXPECT_EQ(m->messages[2].content[1].tool_use_id, "call_2");
  EXPECT_EQ(m->messages[2].content[1].result_text, "rain");
  ASSERT_EQ(m->tools.size(), 1u);
  EXPECT_EQ(m->tools[0].name, "get_weather");
  Json body = anthropic::ToJson(*m);
  EXPECT_EQ(body["tool_choice"], Json({{"type", "tool"}, {"name", "get_weather"}})) << body.dump();

  auto plain = openai::ParseResponsesRequest(R"({"model":"c","input":"hi","stream":true})");
  ASSERT_TRUE(plain.ok());
  auto pm = ResponsesToMessagesRequest(*plain);
  ASSERT_TRUE(pm.ok());
  EXPECT_EQ(pm->max_tokens, 4096);
  EXPECT_TRUE(pm->stream);
  ASSERT_EQ(pm->messages.size(), 1u);
  EXPECT_EQ(pm->messages[0].content[0].text, "hi");
}

TEST(ResponsesTranslate, RequestRefusesWhatAnthropicCannotTake) {
  for (const char* body : {
           R"({"model":"c","input":"hi","previous_response_id":"resp_1"})",
           R"({"model":"c","input":"hi","tools":[{"type":"web_search"}]})",
           R"({"model":"c","input":[{"type":"item_reference","id":"x"}]})",
           R"({"model":"c","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]})",
       }) {
    SCOPED_TRACE(body);
    auto req = openai::ParseResponsesRequest(body);
    ASSERT_TRUE(req.ok()) << req.status().ToString();
    auto m = ResponsesToMessagesRequest(*req);
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), Code::kInvalidArgument);
  }
  auto image = openai::ParseResponsesRequest(
      R"({"model":"c","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]})");
  ASSERT_TRUE(image.ok());
  auto m = ResponsesToMessagesRequest(*image);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(anthropic::ToJson(*m)["messages"][0]["content"][0]["type"], "image");
}

TEST(ResponsesTranslate, WholeAnswer) {
  auto resp = anthropic::ParseMessagesResponse(R"({"id":"msg_1","type":"message","role":"assistant",
    "model":"claude-x","content":[{"type":"text","text":"Let me check."},
    {"type":"tool_use","id":"toolu_9","name":"get_weather","input":{"city":"Paris"}}],
    "stop_reason":"tool_use","stop_sequence":null,
    "usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":42}})");
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  openai::ResponsesResponse r = MessagesToResponsesResponse(*resp, 1700000000);
  // Through the wire form, as a client reads it.
  auto back = openai::ParseResponsesResponse(openai::ToJson(r).dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->status, "completed");
  EXPECT_EQ(back->OutputText(), "Let me check.");
  ASSERT_EQ(back->output.size(), 2u);
  EXPECT_EQ(back->output[1].type, openai::ResponseItem::Type::kFunctionCall);
  EXPECT_EQ(back->output[1].call_id, "toolu_9");
  EXPECT_EQ(Json::parse(back->output[1].arguments), Json({{"city", "Paris"}}));
  EXPECT_EQ(back->usage, (openai::ResponsesUsage{25, 42, 67, 5, 0}));
  auto metered = PeekResponsesUsage(openai::ToJson(r).dump());
  ASSERT_TRUE(metered.ok());
  EXPECT_EQ((*metered)->prompt_tokens, 25);

  resp->stop_reason = "max_tokens";
  resp->content.resize(1);
  Json cut = openai::ToJson(MessagesToResponsesResponse(*resp, 0));
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");
}

constexpr std::string_view kAnthropicStream =
    "event: message_start\n"
    R"(data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",)"
    R"("model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}})"
    "\n\n"
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
    "\n\n"
    "event: ping\ndata: {\"type\":\"ping\"}\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}})"
    "\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"get_weather","input":{}}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"Paris\"}"}})"
    "\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: message_delta\n"
    R"(data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}})"
    "\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

std::vector<anthropic::StreamEvent> AnthropicEvents(std::string_view wire) {
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

TEST(ResponsesTranslate, StreamEventByEvent) {
  MessagesToResponsesStream t(1700000000);
  std::vector<Json> out;
  std::vector<std::string> types;
  for (const auto& e : AnthropicEvents(kAnthropicStream)) {
    size_t before = out.size();
    t.Feed(e, out);
    if (e.type == anthropic::StreamEvent::Type::kMessageStart) {
      EXPECT_EQ(t.usage().prompt_tokens, 30);  // metered from the start, for a stream cut short
    }
    for (size_t i = before; i < out.size(); ++i) types.push_back(out[i]["type"]);
  }
  EXPECT_TRUE(t.done());
  EXPECT_FALSE(t.failed());
  EXPECT_EQ(types,
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
                "response.output_text.done", "response.content_part.done", "response.output_item.done",
                "response.output_item.added", "response.function_call_arguments.delta",
                "response.function_call_arguments.delta", "response.function_call_arguments.done",
                "response.output_item.done", "response.completed"}));
  std::string text, args;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i]["sequence_number"], static_cast<int64_t>(i));
    auto ev = openai::ParseResponsesEvent(out[i].dump());
    ASSERT_TRUE(ev.ok()) << out[i].dump();
    if (ev->type == "response.output_text.delta") text += out[i]["delta"].get<std::string>();
    if (ev->type == "response.function_call_arguments.delta") args += out[i]["delta"].get<std::string>();
  }
  EXPECT_EQ(text, "Let me check.");
  EXPECT_EQ(Json::parse(args), Json({{"city", "Paris"}}));
  EXPECT_EQ(t.last_sequence(), static_cast<int64_t>(out.size()) - 1);
  // The item ids of the deltas name the items added.
  EXPECT_EQ(out[4]["item_id"], out[2]["item"]["id"]);
  EXPECT_EQ(out[10]["item_id"], out[9]["item"]["id"]);

  auto done = openai::ParseResponsesEvent(out.back().dump());
  ASSERT_TRUE(done.ok());
  ASSERT_TRUE(done->response.has_value());
  EXPECT_EQ(done->response->OutputText(), "Let me check.");
  ASSERT_EQ(done->response->output.size(), 2u);
  EXPECT_EQ(done->response->output[1].call_id, "toolu_9");
  EXPECT_EQ(done->response->usage, (openai::ResponsesUsage{30, 42, 72, 5, 0}));
  auto peek = PeekResponsesEvent(out.back().dump());
  ASSERT_TRUE(peek.ok());
  EXPECT_TRUE(peek->terminal);
  EXPECT_EQ(peek->usage->completion_tokens, 42);
  EXPECT_EQ(t.usage().completion_tokens, 42);
}

TEST(ResponsesTranslate, StreamErrorAndMaxTokens) {
  MessagesToResponsesStream t(0);
  std::vector<Json> out;
  auto events = AnthropicEvents(kAnthropicStream);
  for (size_t i = 0; i < 4; ++i) t.Feed(events[i], out);
  auto err = anthropic::ParseStreamEvent(
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  ASSERT_TRUE(err.ok());
  t.Feed(*err, out);
  EXPECT_TRUE(t.done());
  EXPECT_TRUE(t.failed());
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back()["type"], "error");
  EXPECT_EQ(out.back()["code"], "overloaded_error");
  EXPECT_EQ(out.back()["error"]["message"], "Overloaded");  // what the OpenAI SDKs raise
  size_t n = out.size();
  t.Feed(events.back(), out);  // nothing after the end
  EXPECT_EQ(out.size(), n);

  MessagesToResponsesStream m(0);
  std::vector<Json> mout;
  for (
      const auto& e : AnthropicEvents(
          "event: message_start\n"
          R"(data: {"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"input_tokens":3,"output_tokens":0}}})"
          "\n\nevent: message_delta\n"
          R"(data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":4}})"
          "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
    m.Feed(e, mout);
  ASSERT_FALSE(mout.empty());
  EXPECT_EQ(mout.back()["type"], "response.incomplete");
  EXPECT_EQ(mout.back()["response"]["status"], "incomplete");
}

// ---- Chat (a Gemini or Bedrock answer, translated by gemini.h / bedrock.h) -> Responses ----

TEST(ResponsesTranslate, ChatAnswerToResponses) {
  auto chat = openai::ParseChatResponse(R"({
    "id":"chatcmpl-g1","object":"chat.completion","created":1,"model":"gem",
    "choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny.",
      "tool_calls":[{"id":"call_0","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},
      "finish_reason":"tool_calls"}],
    "usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19,
             "prompt_tokens_details":{"cached_tokens":4}}})");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  openai::ResponsesResponse r = ChatToResponsesResponse(*chat, 99);
  Json j = openai::ToJson(r);
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["model"], "gem");
  EXPECT_EQ(j["created_at"], 99);
  ASSERT_EQ(j["output"].size(), 2u) << j.dump();
  EXPECT_EQ(j["output"][0]["type"], "message");
  EXPECT_EQ(j["output"][0]["content"][0]["text"], "It is sunny.");
  EXPECT_EQ(j["output"][1]["type"], "function_call");
  EXPECT_EQ(j["output"][1]["call_id"], "call_0");
  EXPECT_EQ(j["output"][1]["name"], "weather");
  EXPECT_EQ(Json::parse(j["output"][1]["arguments"].get<std::string>()), Json::parse(R"({"city":"Oslo"})"));
  EXPECT_EQ(j["usage"]["input_tokens"], 12);  // the chain keeps usage whole
  EXPECT_EQ(j["usage"]["input_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(j["usage"]["output_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], 19);

  auto cut = openai::ParseChatResponse(R"({"id":"x","object":"chat.completion","created":1,"model":"gem",
    "choices":[{"index":0,"message":{"role":"assistant","content":"It is"},"finish_reason":"length"}],
    "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  ASSERT_TRUE(cut.ok());
  Json c = openai::ToJson(ChatToResponsesResponse(*cut, 1));
  EXPECT_EQ(c["status"], "incomplete");
  EXPECT_EQ(c["incomplete_details"]["reason"], "max_output_tokens");
}

// Feeds chat chunk data strings (and "[DONE]") through a ChatToResponsesStream.
std::vector<Json> ChatStreamToResponses(ChatToResponsesStream& t, const std::vector<std::string>& chunks) {
  std::vector<Json> out;
  for (const std::string& data : chunks) {
    if (data == "[DONE]") {
      t.Finish(out);
      continue;
    }
    auto chunk = openai::ParseChatChunk(data);
    EXPECT_TRUE(chunk.ok()) << data;
    if (chunk.ok()) t.Feed(*chunk, out);
  }
  return out;
}

TEST(ResponsesTranslate, ChatStreamToResponsesEvents) {
  ChatToResponsesStream t(7);
  auto events = ChatStreamToResponses(
      t,
      {R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[{"index":0,"delta":{"content":"lo"}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"weather","arguments":"{\"city\""}}]}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"Oslo\"}"}}]}}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})",
       R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":2}}})",
       "[DONE]"});
  ASSERT_FALSE(events.empty());
  std::vector<std::string> types;
  std::string text, args;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], static_cast<int64_t>(i));
    types.push_back(events[i]["type"]);
    if (events[i]["type"] == "response.output_text.delta") text += events[i]["delta"].get<std::string>();
    if (events[i]["type"] == "response.function_call_arguments.delta")
      args += events[i]["delta"].get<std::string>();
  }
  EXPECT_EQ(types.front(), "response.created");
  EXPECT_EQ(types.back(), "response.completed");
  EXPECT_EQ(text, "Hello");
  EXPECT_EQ(args, R"({"city":"Oslo"})");
  const Json& done = events.back()["response"];
  ASSERT_EQ(done["output"].size(), 2u) << done.dump();
  EXPECT_EQ(done["output"][1]["name"], "weather");
  EXPECT_EQ(done["usage"]["input_tokens"], 9);
  EXPECT_EQ(done["usage"]["input_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(done["usage"]["output_tokens"], 5);
  EXPECT_TRUE(t.done());
  EXPECT_FALSE(t.failed());
  EXPECT_EQ(t.usage().prompt_tokens, 9);
  EXPECT_EQ(t.last_sequence(), static_cast<int64_t>(events.size()) - 1);
}

TEST(ResponsesTranslate, ChatStreamErrorBecomesResponsesError) {
  ChatToResponsesStream t(7);
  auto events = ChatStreamToResponses(
      t,
      {R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"gem","choices":[{"index":0,"delta":{"content":"Hi"}}]})",
       R"({"error":{"message":"modelStreamErrorException: boom","type":"api_error"}})"});
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["type"], "error");
  EXPECT_NE(events.back().dump().find("modelStreamErrorException: boom"), std::string::npos)
      << events.back().dump();
  EXPECT_TRUE(t.done());
  EXPECT_TRUE(t.failed());
}

}  // namespace
}  // namespace govern::gateway
