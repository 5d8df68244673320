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

TEST(BedrockTest, EmbeddingModelsAndRequests) {
  EXPECT_EQ(EmbeddingModelOf("amazon.titan-embed-text-v2:0").value(), EmbeddingModel::kTitanV2);
  EXPECT_EQ(EmbeddingModelOf("amazon.titan-embed-text-v1").value(), EmbeddingModel::kTitanV1);
  EXPECT_EQ(EmbeddingModelOf("cohere.embed-english-v3").value(), EmbeddingModel::kCohere);
  EXPECT_EQ(EmbeddingModelOf("us.cohere.embed-v4:0").value(), EmbeddingModel::kCohereV4);
  EXPECT_EQ(
      EmbeddingModelOf("arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0").value(),
      EmbeddingModel::kTitanV2);
  EXPECT_NE(
      EmbeddingModelOf("anthropic.claude-3-5-haiku-20241022-v1:0").status().message().find("no embeddings"),
      std::string::npos);

  auto req = openai::ParseEmbeddingsRequest(R"({"model":"e","input":["a b","c"],"dimensions":256})");
  ASSERT_TRUE(req.ok());
  auto titan = FromEmbeddingsRequest(*req, EmbeddingModel::kTitanV2);
  ASSERT_TRUE(titan.ok()) << titan.status().ToString();
  ASSERT_EQ(titan->size(), 2u);  // one call per input
  EXPECT_EQ(Json::parse((*titan)[0]), Json::parse(R"({"inputText":"a b","dimensions":256})"));
  EXPECT_EQ(Json::parse((*titan)[1]), Json::parse(R"({"inputText":"c","dimensions":256})"));
  EXPECT_NE(FromEmbeddingsRequest(*req, EmbeddingModel::kTitanV1).status().message().find("fixed size"),
            std::string::npos);
  EXPECT_NE(FromEmbeddingsRequest(*req, EmbeddingModel::kCohere).status().message().find("fixed size"),
            std::string::npos);
  auto v4 = FromEmbeddingsRequest(*req, EmbeddingModel::kCohereV4);
  ASSERT_TRUE(v4.ok());
  ASSERT_EQ(v4->size(), 1u);  // one call for all texts
  EXPECT_EQ(Json::parse((*v4)[0]),
            Json::parse(R"({"texts":["a b","c"],"input_type":"search_document","output_dimension":256})"));
  auto odd = openai::ParseEmbeddingsRequest(R"({"model":"e","input":"x","dimensions":300})");
  ASSERT_TRUE(odd.ok());
  EXPECT_NE(FromEmbeddingsRequest(*odd, EmbeddingModel::kTitanV2).status().message().find("256, 512, 1024"),
            std::string::npos);
  auto plain = openai::ParseEmbeddingsRequest(R"({"model":"e","input":"x"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(Json::parse(FromEmbeddingsRequest(*plain, EmbeddingModel::kCohere).value()[0]),
            Json::parse(R"({"texts":["x"],"input_type":"search_document"})"));
  // The deployment's cohere_input_type; Titan has none.
  EXPECT_EQ(Json::parse(FromEmbeddingsRequest(*plain, EmbeddingModel::kCohereV4, "search_query").value()[0]),
            Json::parse(R"({"texts":["x"],"input_type":"search_query"})"));
  EXPECT_EQ(Json::parse(FromEmbeddingsRequest(*plain, EmbeddingModel::kTitanV2, "clustering").value()[0]),
            Json::parse(R"({"inputText":"x"})"));
  auto tokens = openai::ParseEmbeddingsRequest(R"({"model":"e","input":[[1,2]]})");
  ASSERT_TRUE(tokens.ok());
  EXPECT_FALSE(FromEmbeddingsRequest(*tokens, EmbeddingModel::kTitanV2).ok());
}

// Cohere takes at most 96 texts a call: 200 are three calls (96, 96, 8), in order.
TEST(BedrockTest, CohereEmbeddingsOverNinetySixTextsAreSplit) {
  Json in = Json::array();
  for (int i = 0; i < 200; ++i) in.push_back("t" + std::to_string(i));
  auto req = openai::ParseEmbeddingsRequest(Json{{"model", "e"}, {"input", in}, {"dimensions", 512}}.dump());
  ASSERT_TRUE(req.ok());
  auto bodies = FromEmbeddingsRequest(*req, EmbeddingModel::kCohereV4);
  ASSERT_TRUE(bodies.ok()) << bodies.status().ToString();
  ASSERT_EQ(bodies->size(), 3u);
  std::vector<std::string> texts;
  for (size_t i = 0; i < bodies->size(); ++i) {
    Json b = Json::parse((*bodies)[i]);
    EXPECT_EQ(b["texts"].size(), i < 2 ? kCohereMaxTexts : 8u);
    EXPECT_EQ(b["output_dimension"], 512);
    EXPECT_EQ(b["input_type"], "search_document");
    for (const auto& t : b["texts"]) texts.push_back(t.get<std::string>());
  }
  EXPECT_EQ(Json(texts), in);
  in.erase(in.begin() + 96, in.end());  // exactly 96: one call
  auto exact = openai::ParseEmbeddingsRequest(Json{{"model", "e"}, {"input", in}}.dump());
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(FromEmbeddingsRequest(*exact, EmbeddingModel::kCohere).value().size(), 1u);
}

TEST(BedrockTest, EmbeddingAnswers) {
  openai::EmbeddingsResponse out;
  auto n = AppendEmbeddings(R"({"embedding":[0.5,-0.5],"inputTextTokenCount":4})", EmbeddingModel::kTitanV2,
                            1, out);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 4);
  auto c = AppendEmbeddings(R"({"id":"x","response_type":"embeddings_floats","texts":["a","b"],
                                "embeddings":[[1,2],[3,4]]})",
                            EmbeddingModel::kCohere, 2, out);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, -1);  // Cohere's body has no count (the header has)
  auto typed = AppendEmbeddings(R"({"embeddings":{"float":[[5,6]]},"response_type":"embeddings_by_type"})",
                                EmbeddingModel::kCohereV4, 1, out);
  ASSERT_TRUE(typed.ok()) << typed.status().ToString();
  ASSERT_EQ(out.data.size(), 4u);
  EXPECT_EQ(out.data[0], (std::vector<float>{0.5f, -0.5f}));
  EXPECT_EQ(out.data[2], (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(out.data[3], (std::vector<float>{5.0f, 6.0f}));
  auto msg = [&](std::string_view body, EmbeddingModel m, size_t sent) {
    return AppendEmbeddings(body, m, sent, out).status().message();
  };
  EXPECT_NE(msg(R"({"embeddings":[[1]]})", EmbeddingModel::kCohere, 2).find("1 vectors for 2 texts"),
            std::string::npos);
  EXPECT_NE(msg(R"({"inputTextTokenCount":1})", EmbeddingModel::kTitanV2, 1).find("embedding is missing"),
            std::string::npos);
  EXPECT_NE(msg(R"({"embedding":[1,"x"]})", EmbeddingModel::kTitanV2, 1).find("must hold numbers"),
            std::string::npos);
  EXPECT_NE(msg(R"({"embeddings":{"int8":[[1]]}})", EmbeddingModel::kCohereV4, 1).find("embeddings.float"),
            std::string::npos);
  EXPECT_FALSE(AppendEmbeddings("not json", EmbeddingModel::kCohere, 1, out).ok());
}

}  // namespace
}  // namespace govern::gateway::bedrock
