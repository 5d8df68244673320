// The model stub's answers, checked by parsing them with the gateway's own wire-format parsers.
#include "services/model_stub/stub.h"

#include <gtest/gtest.h>

#include "gateway/anthropic.h"
#include "gateway/openai.h"
#include "gateway/sse.h"
#include "gateway/translate.h"

namespace govern::model_stub {
namespace {

namespace oai = gateway::openai;
namespace ant = gateway::anthropic;
using Json = nlohmann::json;

Reply Post(std::string_view path, const Json& body, Faults f = {}) {
  return Answer("POST", path, body.dump(), f, StubConfig{}, 1700000000);
}

std::vector<gateway::SseEvent> Events(const Reply& r) {
  std::string wire;
  for (const auto& e : r.events) wire += e;
  gateway::SseParser p;
  std::vector<gateway::SseEvent> out;
  EXPECT_TRUE(p.Feed(wire, out).ok());
  EXPECT_FALSE(p.HasPartial());
  return out;
}

const Json kChat = {
    {"model", "stub-gpt"},
    {"messages",
     {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "say  hello\nto me"}}}}};

TEST(ModelStub, CountsWords) {
  EXPECT_EQ(CountWords(""), 0);
  EXPECT_EQ(CountWords("  a b\n\tc  "), 3);
  EXPECT_EQ(StubText(3), "Govern stub reply");
  EXPECT_EQ(StubWords(3), (std::vector<std::string>{"Govern", " stub", " reply"}));
  EXPECT_TRUE(StubWords(0).empty());
}

// The tool-call argument values every API's stub uses, for JSON Schema's and Gemini's type names.
TEST(ModelStub, ValuesForSchemaTypes) {
  EXPECT_EQ(StubValueFor(Json{{"type", "string"}}), "stub");
  EXPECT_EQ(StubValueFor(Json{{"type", "STRING"}}), "stub");
  EXPECT_EQ(StubValueFor(Json{{"type", "NUMBER"}}), 1);
  EXPECT_EQ(StubValueFor(Json{{"type", "boolean"}}), true);
  EXPECT_EQ(StubValueFor(Json{{"type", "ARRAY"}}), Json::array());
  EXPECT_EQ(StubValueFor(Json{{"type", "object"}}), Json::object());
  EXPECT_TRUE(StubValueFor(Json{{"type", "date"}}).is_null());
}

TEST(ModelStub, ChatAnswersWithExactUsage) {
  Reply r = Post("/v1/chat/completions", kChat);
  ASSERT_EQ(r.status, 200);
  auto resp = oai::ParseChatResponse(r.body);
  ASSERT_TRUE(resp.ok()) << r.body;
  EXPECT_EQ(resp->choices[0].content, StubText(16));
  EXPECT_EQ(resp->choices[0].finish_reason, "stop");
  EXPECT_EQ(resp->usage, (oai::Usage{6, 16, 22, 0, 0}));  // "be brief" + "say hello to me"

  Json limited = kChat;
  limited["max_tokens"] = 5;
  resp = oai::ParseChatResponse(Post("/v1/chat/completions", limited, {.cached_tokens = 4}).body);
  EXPECT_EQ(resp->choices[0].content, StubText(5));
  EXPECT_EQ(resp->choices[0].finish_reason, "length");
  EXPECT_EQ(resp->usage, (oai::Usage{6, 5, 11, 4, 0}));
}

// Azure OpenAI's paths answer as OpenAI's: deployments (with api-version), the v1 and dated Responses.
TEST(ModelStub, AzurePathsAnswerAsOpenAI) {
  auto azure = [](std::string_view target, bool key = true, Faults f = {}) {
    auto header = [key](std::string_view name) -> std::string_view {
      return key && name == "api-key" ? "k" : "";
    };
    Json body = target.find("embeddings") != std::string_view::npos ? Json{{"model", "d"}, {"input", "a b"}}
                : target.find("responses") != std::string_view::npos
                    ? Json{{"model", "d"}, {"input", "a b c"}}
                    : kChat;
    EXPECT_TRUE(IsAzurePath(target.substr(0, target.find('?'))));
    return AzureAnswer("POST", target, header, body.dump(), f, StubConfig{}, 1700000000);
  };
  EXPECT_EQ(azure("/openai/deployments/d/chat/completions?api-version=2024-10-21").status, 200);
  EXPECT_EQ(azure("/openai/deployments/d/embeddings?api-version=2024-10-21").status, 200);
  auto v1 = oai::ParseResponsesResponse(azure("/openai/v1/responses").body);
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  ASSERT_TRUE(v1->usage.has_value());
  EXPECT_EQ(v1->usage->input_tokens, 3);
  EXPECT_EQ(azure("/openai/responses?x=1&api-version=2025-04-01-preview").status, 200);
  EXPECT_EQ(azure("/openai/responses").status, 404);  // the dated form needs api-version
  EXPECT_EQ(azure("/openai/deployments/d/chat/completions").status, 404);
  EXPECT_EQ(azure("/openai/deployments//embeddings?api-version=1").status, 404);
  EXPECT_EQ(azure("/openai/v1/chat/completions?api-version=1").status, 404);
  EXPECT_EQ(azure("/openai/v1/responses", false).status, 401);
  EXPECT_EQ(azure("/openai/v1/responses", true, {.status = 503}).status, 503);
  EXPECT_FALSE(IsAzurePath("/v1/responses"));
}

TEST(ModelStub, ChatStreamsTokensAndTheUsageChunk) {
  Json req = kChat;
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  Reply r = Post("/v1/chat/completions", req, {.output_tokens = 3});
  ASSERT_TRUE(r.stream);
  auto events = Events(r);
  ASSERT_EQ(events.size(), 7u);  // role, 3 tokens, finish, usage, [DONE]
  EXPECT_TRUE(events.back().IsDone());
  std::string text;
  std::string finish;
  std::optional<oai::Usage> usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    auto c = oai::ParseChatChunk(events[i].data);
    ASSERT_TRUE(c.ok()) << events[i].data;
    for (const auto& ch : c->choices) {
      text += ch.content.value_or("");
      if (ch.finish_reason) finish = *ch.finish_reason;
    }
    if (c->usage) usage = c->usage;
  }
  EXPECT_EQ(text, "Govern stub reply");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage, (oai::Usage{6, 3, 9, 0, 0}));
  EXPECT_EQ(std::count(r.token_event.begin(), r.token_event.end(), true), 3);

  // Without include_usage: no usage chunk.
  req.erase("stream_options");
  EXPECT_EQ(Events(Post("/v1/chat/completions", req, {.output_tokens = 3})).size(), 6u);
}

TEST(ModelStub, ChatCallsAToolThenAnswersItsResult) {
  Json req = kChat;
  req["tools"] = Json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"parameters",
           {{"type", "object"},
            {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}}}}}}}});
  auto resp = oai::ParseChatResponse(Post("/v1/chat/completions", req).body);
  ASSERT_TRUE(resp.ok());
  ASSERT_EQ(resp->choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(resp->choices[0].tool_calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(resp->choices[0].tool_calls[0].arguments),
            Json::parse(R"({"city":"stub","days":1})"));
  EXPECT_EQ(resp->choices[0].finish_reason, "tool_calls");
  EXPECT_EQ(resp->usage->completion_tokens, 3);  // 24 bytes of arguments in pieces of 8

  req["stream"] = true;
  std::string args;
  for (const auto& e : Events(Post("/v1/chat/completions", req))) {
    if (e.IsDone()) break;
    auto c = oai::ParseChatChunk(e.data);
    ASSERT_TRUE(c.ok());
    for (const auto& ch : c->choices)
      for (const auto& t : ch.tool_calls) args += t.arguments.value_or("");
  }
  EXPECT_EQ(Json::parse(args), Json::parse(R"({"city":"stub","days":1})"));

  req["stream"] = false;
  req["messages"].push_back({{"role", "assistant"},
                             {"content", nullptr},
                             {"tool_calls",
                              {{{"id", "c1"},
                                {"type", "function"},
                                {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}}}});
  req["messages"].push_back({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}});
  resp = oai::ParseChatResponse(Post("/v1/chat/completions", req).body);
  EXPECT_TRUE(resp->choices[0].tool_calls.empty());
  EXPECT_EQ(resp->choices[0].finish_reason, "stop");
  EXPECT_EQ(resp->usage->prompt_tokens, 8);  // + "{}" + "sunny"
}

TEST(ModelStub, MessagesStreamAndWhole) {
  Json req = {{"model", "stub-claude"},
              {"max_tokens", 4},
              {"system", "be brief"},
              {"messages", {{{"role", "user"}, {"content", "say hello"}}}}};
  auto resp = ant::ParseMessagesResponse(Post("/v1/messages", req, {.cached_tokens = 1}).body);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->content[0].text, StubText(4));
  EXPECT_EQ(resp->stop_reason, "max_tokens");
  EXPECT_EQ(resp->usage, (ant::Usage{3, 4, 0, 1}));

  req["stream"] = true;
  req["max_tokens"] = 100;
  auto events = Events(Post("/v1/messages", req, {.output_tokens = 2}));
  std::vector<std::string> names;
  std::string text;
  Json final_usage;
  for (const auto& e : events) {
    auto ev = ant::ParseStreamEvent(e.data);
    ASSERT_TRUE(ev.ok()) << e.data;
    EXPECT_EQ(ev->name(), e.event);
    names.push_back(e.event);
    if (ev->type == ant::StreamEvent::Type::kContentBlockDelta) text += ev->delta_text;
    if (ev->type == ant::StreamEvent::Type::kMessageDelta) {
      EXPECT_EQ(ev->stop_reason, "end_turn");
      final_usage = ev->usage;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "ping",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(text, "Govern stub");
  EXPECT_EQ(final_usage["output_tokens"], 2);
  EXPECT_EQ(final_usage["input_tokens"], 4);
}

TEST(ModelStub, ResponsesWholeAndStreamed) {
  Json req = {{"model", "stub-gpt"}, {"input", "one two three"}, {"instructions", "be brief"}};
  auto resp = oai::ParseResponsesResponse(Post("/v1/responses", req, {.output_tokens = 2}).body);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->OutputText(), "Govern stub");
  EXPECT_EQ(resp->usage, (oai::ResponsesUsage{5, 2, 7, 0, 0}));
  req["stream"] = true;
  std::string text;
  std::optional<oai::ResponsesUsage> usage;
  int64_t seq = 0;
  for (const auto& e : Events(Post("/v1/responses", req, {.output_tokens = 2}))) {
    auto ev = oai::ParseResponsesEvent(e.data);
    ASSERT_TRUE(ev.ok());
    EXPECT_EQ(ev->type, e.event);
    EXPECT_EQ(ev->body["sequence_number"], seq++);
    if (ev->type == "response.output_text.delta") text += ev->body["delta"].get<std::string>();
    if (ev->type == "response.completed") usage = ev->response->usage;
  }
  EXPECT_EQ(text, "Govern stub");
  EXPECT_EQ(usage, (oai::ResponsesUsage{5, 2, 7, 0, 0}));
}

TEST(ModelStub, EmbeddingsAndModels) {
  auto e = oai::ParseEmbeddingsResponse(
      Post("/v1/embeddings",
           {{"model", "e"}, {"input", {"a b", "c"}}, {"encoding_format", "base64"}, {"dimensions", 4}})
          .body);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->data.size(), 2u);
  EXPECT_EQ(e->data[0].size(), 4u);
  EXPECT_EQ(e->prompt_tokens, 3);
  auto again = oai::ParseEmbeddingsResponse(
      Post("/v1/embeddings", {{"model", "e"}, {"input", {"a b", "c"}}, {"dimensions", 4}}).body);
  EXPECT_EQ(again->data, e->data);  // same vectors as floats and as base64
  auto models = oai::ParseModelsList(Answer("GET", "/v1/models", "", {}, StubConfig{}, 0).body);
  ASSERT_TRUE(models.ok());
  EXPECT_EQ((*models)[0].id, "stub-gpt");
}

TEST(ModelStub, AnswersWithTheGivenTextInPieces) {
  Faults f;
  f.text = "key AKIAIOSFODNN7EXAMPLE now";
  Json stream = kChat;
  stream["stream"] = true;
  std::string text;
  size_t pieces = 0;
  for (const auto& e : Events(Post("/v1/chat/completions", stream, f))) {
    if (e.IsDone()) continue;
    auto c = oai::ParseChatChunk(e.data);
    ASSERT_TRUE(c.ok()) << e.data;
    for (const auto& ch : c->choices) {
      if (ch.content && !ch.content->empty()) {
        EXPECT_LE(ch.content->size(), 8u);
        text += *ch.content;
        ++pieces;
      }
    }
  }
  EXPECT_EQ(text, f.text);
  EXPECT_EQ(pieces, 4u);
  Json msgs = {
      {"model", "stub-claude"}, {"max_tokens", 100}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  auto whole = ant::ParseMessagesResponse(Post("/v1/messages", msgs, f).body);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->content.at(0).text, f.text);
  EXPECT_EQ(whole->usage.output_tokens, 4);
}

TEST(ModelStub, FaultsAndErrorsSpeakTheProvidersFormat) {
  Reply r = Post("/v1/messages", {{"model", "m"}}, {.status = 529});
  EXPECT_EQ(r.status, 529);
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "overloaded_error");
  r = Post("/v1/chat/completions", kChat, {.status = 503});
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "server_error");
  r = Post("/v1/messages", {{"model", "m"}, {"messages", Json::array()}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json::parse(r.body)["error"]["message"], "max_tokens is required");
  r = Post("/v1/chat/completions", Json::array());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "invalid_request_error");
  EXPECT_EQ(Post("/v2/nothing", kChat).status, 404);

  Json req = kChat;
  req["stream"] = true;
  auto events = Events(Post("/v1/chat/completions", req, {.error_after = 2}));
  ASSERT_EQ(events.size(), 3u);  // two chunks, the error, and no [DONE]
  EXPECT_EQ(Json::parse(events[2].data)["error"]["message"], "injected stream error");
  EXPECT_EQ(Post("/v1/chat/completions", req, {.cut_after = 3}).truncate_at, 3);

  auto h = FaultsFrom([](std::string_view n) -> std::string_view {
    if (n == "x-stub-status") return "502";
    if (n == "x-stub-delay-ms") return "abc";
    if (n == "x-stub-cut-after") return "4";
    if (n == "x-stub-fail-call") return "3";
    return {};
  });
  EXPECT_EQ(h.status, 502);
  EXPECT_EQ(h.delay_ms, 0);
  EXPECT_EQ(h.cut_after, 4);
  EXPECT_EQ(h.fail_call, 3);
}

// The gateway's translation in miniature: an OpenAI client's request translated for an Anthropic provider
// (the stub), its answer and its stream translated back, must equal what an OpenAI provider says; and
// the other way round.
TEST(ModelStub, TranslatedAnswersMatchTheOtherFormat) {
  Json tools = Json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "f"},
          {"parameters", {{"type", "object"}, {"properties", {{"q", {{"type", "string"}}}}}}}}}}});
  for (bool with_tools : {false, true}) {
    Json chat_json = kChat;
    if (with_tools) chat_json["tools"] = tools;
    auto chat = oai::ChatRequestFromJson(chat_json);
    ASSERT_TRUE(chat.ok());
    auto direct = oai::ParseChatResponse(Post("/v1/chat/completions", chat_json).body);
    ASSERT_TRUE(direct.ok());

    // Whole answers: OpenAI -> Anthropic request -> stub -> OpenAI response.
    auto m = gateway::ChatToMessagesRequest(*chat);
    ASSERT_TRUE(m.ok());
    auto a = ant::ParseMessagesResponse(Post("/v1/messages", ant::ToJson(*m)).body);
    ASSERT_TRUE(a.ok());
    oai::ChatResponse via = gateway::MessagesToChatResponse(*a, 0);
    EXPECT_EQ(via.choices[0].content, direct->choices[0].content);
    EXPECT_EQ(via.choices[0].finish_reason, direct->choices[0].finish_reason);
    ASSERT_EQ(via.choices[0].tool_calls.size(), direct->choices[0].tool_calls.size());
    if (with_tools) {
      EXPECT_EQ(via.choices[0].tool_calls[0].arguments, direct->choices[0].tool_calls[0].arguments);
    }
    EXPECT_EQ(via.usage, direct->usage);

    // Streams: the Anthropic stream translated chunk by chunk into OpenAI chunks.
    m->stream = true;
    gateway::MessagesToChatStream to_chat(/*include_usage=*/true, 0);
    std::vector<Json> chunks;
    for (const auto& e : Events(Post("/v1/messages", ant::ToJson(*m)))) {
      auto ev = ant::ParseStreamEvent(e.data);
      ASSERT_TRUE(ev.ok());
      to_chat.Feed(*ev, chunks);
    }
    EXPECT_TRUE(to_chat.done());
    std::string text, args, finish;
    std::optional<oai::Usage> usage;
    for (const Json& j : chunks) {
      auto c = oai::ParseChatChunk(j.dump());
      ASSERT_TRUE(c.ok());
      if (c->usage) usage = c->usage;
      for (const auto& ch : c->choices) {
        text += ch.content.value_or("");
        for (const auto& t : ch.tool_calls) args += t.arguments.value_or("");
        if (ch.finish_reason) finish = *ch.finish_reason;
      }
    }
    EXPECT_EQ(text, direct->choices[0].content.value_or(""));
    if (with_tools) {
      EXPECT_EQ(args, direct->choices[0].tool_calls[0].arguments);
    }
    EXPECT_EQ(finish, direct->choices[0].finish_reason);
    EXPECT_EQ(usage, direct->usage);

    // And an OpenAI stream translated into Anthropic events equals the stub's own Anthropic answer.
    Json stream_json = chat_json;
    stream_json["stream"] = true;
    stream_json["stream_options"] = {{"include_usage", true}};
    gateway::ChatToMessagesStream to_messages;
    std::vector<ant::StreamEvent> events;
    for (const auto& e : Events(Post("/v1/chat/completions", stream_json))) {
      if (e.IsDone()) {
        to_messages.Finish(events);
        break;
      }
      auto c = oai::ParseChatChunk(e.data);
      ASSERT_TRUE(c.ok());
      to_messages.Feed(*c, events);
    }
    EXPECT_TRUE(to_messages.finished());
    std::string atext, ajson, stop;
    for (const auto& ev : events) {
      if (ev.type == ant::StreamEvent::Type::kContentBlockDelta)
        (ev.delta_type == "text_delta" ? atext : ajson) += ev.delta_text;
      if (ev.type == ant::StreamEvent::Type::kMessageDelta) stop = ev.stop_reason.value_or("");
    }
    EXPECT_EQ(atext, a->content[0].type == ant::Block::Type::kText ? a->content[0].text : "");
    if (with_tools) {
      EXPECT_EQ(Json::parse(ajson), a->content[0].input);
    }
    EXPECT_EQ(stop, a->stop_reason);
    EXPECT_EQ(to_messages.usage(), a->usage);
  }
}

}  // namespace
}  // namespace govern::model_stub
