// AWS Bedrock deployments end to end over real sockets: the gateway in front of the model stub speaking
// Converse and ConverseStream (event-stream frames), which recomputes the SigV4 signature of every
// request from the secret the test gave it and refuses a wrong one with 403. Whole and streamed
// answers, OpenAI and Anthropic clients, tool calls, usage metering and cost, faults (throttling, an
// exception mid-stream, a cut stream), credentials from the environment, and bad configuration.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "gateway/openai.h"
#include "gateway/sse.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/bedrock_provider.h"
#include "services/gateway/proxy.h"
#include "services/gateway/stub_proxy_fixture.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kBedrockKey = "gvg_bedrock_test_01";
constexpr const char* kAccessKey = "AKIDEXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr const char* kModelId = "anthropic.claude-3-5-haiku-20241022-v1:0";  // ':' goes as %3A

class BedrockProxyTest : public testing::StubProxyFixture {
 protected:
  BedrockProxyTest() : StubProxyFixture(kBedrockKey) {}
  void SetUp() override {
    model_stub::ServerOptions o;
    o.stub.aws_access_key_id = kAccessKey;
    o.stub.aws_secret_access_key = kSecret;
    o.stub.aws_region = "eu-west-1";
    StartStub(std::move(o));
  }

  Json Deployment(Json extra = Json::object()) {
    Json d = {{"name", "bedrock-eu"},
              {"provider", "bedrock"},
              {"region", "eu-west-1"},
              {"base_url", StubUrl()},
              {"model", kModelId},
              {"aws_access_key_id", kAccessKey},
              {"aws_secret_access_key", kSecret},
              {"stub_fault_headers", true}};
    d.update(extra);
    return d;
  }

  void Start(Json deployment) {
    StartProxy(Json{{"routes", {{{"model", "claude-haiku"}, {"deployments", {std::move(deployment)}}}}},
                    {"keys", {{{"key", kBedrockKey}, {"org", "acme"}}}},
                    {"prices", {{"claude-haiku", {{"input", 1.0}, {"output", 5.0}}}}}},
               1);
  }

  static Json ChatBody(bool stream) {
    Json b = {
        {"model", "claude-haiku"},
        {"messages",
         {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "one two three"}}}}};
    if (stream) {
      b["stream"] = true;
      b["stream_options"] = {{"include_usage", true}};
    }
    return b;
  }

  // The data of each SSE event of a streamed answer.
  static std::vector<std::string> Events(std::string_view body) {
    std::vector<std::string> out;
    for (auto& e : SseEvents(body)) out.push_back(e.data);
    return out;
  }
};

TEST_F(BedrockProxyTest, WholeAndStreamedAnswersAreSignedTranslatedAndMetered) {
  Start(Deployment());
  auto r = Post("/v1/chat/completions", ChatBody(false));
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "claude-haiku");
  EXPECT_EQ(j["choices"][0]["message"]["content"], model_stub::StubText(16));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);  // "be brief" + "one two three"
  EXPECT_EQ(j["usage"]["completion_tokens"], 16);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.deployment, "bedrock-eu");
  EXPECT_EQ(rec.route, StubUrl());
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_NEAR(rec.cost, (5 * 1.0 + 16 * 5.0) / 1e6, 1e-12);
  EXPECT_EQ(stub_->stats().requests, 1u);

  // Streamed: event-stream frames become OpenAI chunks, the usage chunk included.
  auto s = Post("/v1/chat/completions", ChatBody(true), {{"x-stub-cached-tokens", "2"}});
  ASSERT_EQ(s.status, 200) << s.body;
  auto events = Events(s.body);
  ASSERT_GE(events.size(), 4u) << s.body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  Json usage;
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    Json c = Json::parse(e);
    if (c.contains("usage") && !c["usage"].is_null()) usage = c["usage"];
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content"))
      text += c["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, model_stub::StubText(16));
  EXPECT_EQ(usage["prompt_tokens"], 5);
  EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], 2);
  rec = WaitRecord(2);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_TRUE(rec.stream);
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.cached_tokens, 2);
  EXPECT_EQ(rec.output_tokens, 16);
}

TEST_F(BedrockProxyTest, AnthropicClientsAndToolCalls) {
  Start(Deployment());
  // An Anthropic client: Messages -> chat -> Converse, and back.
  Json msg = {{"model", "claude-haiku"},
              {"max_tokens", 4},
              {"messages", {{{"role", "user"}, {"content", "one two three"}}}}};
  auto a = Post("/v1/messages", msg);
  ASSERT_EQ(a.status, 200) << a.body;
  Json aj = Json::parse(a.body);
  EXPECT_EQ(aj["type"], "message");
  EXPECT_EQ(aj["content"][0]["text"], model_stub::StubText(4));
  EXPECT_EQ(aj["stop_reason"], "max_tokens");  // maxTokens reached Bedrock and came back
  EXPECT_EQ(aj["usage"]["output_tokens"], 4);
  EXPECT_EQ(WaitRecord(1).output_tokens, 4);
  msg["stream"] = true;
  auto as = Post("/v1/messages", msg);
  ASSERT_EQ(as.status, 200) << as.body;
  EXPECT_NE(as.body.find("event: message_stop"), std::string::npos) << as.body;
  EXPECT_NE(as.body.find("\"output_tokens\":4"), std::string::npos) << as.body;
  EXPECT_EQ(WaitRecord(2).output_tokens, 4);

  // Tools: the stub calls the offered function; whole and streamed.
  Json tools = ChatBody(false);
  tools["tools"] = Json::parse(
      R"([{"type":"function","function":{"name":"weather",
           "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
  auto t = Post("/v1/chat/completions", tools);
  ASSERT_EQ(t.status, 200) << t.body;
  Json tj = Json::parse(t.body);
  EXPECT_EQ(tj["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(tj["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "weather");
  EXPECT_EQ(
      Json::parse(tj["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
      Json::parse(R"({"city":"stub"})"));
  tools["stream"] = true;
  auto ts = Post("/v1/chat/completions", tools);
  ASSERT_EQ(ts.status, 200) << ts.body;
  std::string args;
  for (const auto& e : Events(ts.body)) {
    if (e == "[DONE]") continue;
    Json c = Json::parse(e);
    if (c["choices"].empty()) continue;
    const Json& d = c["choices"][0]["delta"];
    if (d.contains("tool_calls")) args += d["tool_calls"][0]["function"].value("arguments", "");
  }
  EXPECT_EQ(Json::parse(args), Json::parse(R"({"city":"stub"})")) << ts.body;
  EXPECT_NE(ts.body.find("\"finish_reason\":\"tool_calls\""), std::string::npos);
  EXPECT_GT(WaitRecord(4).output_tokens, 0);
}

TEST_F(BedrockProxyTest, WrongSecretIsRefusedByTheProvider) {
  Start(Deployment({{"aws_secret_access_key", "not-the-secret"}}));
  auto r = Post("/v1/chat/completions", ChatBody(false));
  EXPECT_EQ(r.status, 502) << r.body;  // the gateway's credentials, not the client's fault
  EXPECT_NE(r.body.find("signature we calculated does not match"), std::string::npos) << r.body;
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 502);
  EXPECT_EQ(rec.input_tokens, 0);
  auto s = Post("/v1/chat/completions", ChatBody(true));
  EXPECT_EQ(s.status, 502) << s.body;
}

TEST_F(BedrockProxyTest, SessionTokenFromTheEnvironment) {
  // The stub now insists on the session token too.
  stub_->Stop();
  model_stub::ServerOptions o;
  o.port = 0;
  o.stub.aws_access_key_id = kAccessKey;
  o.stub.aws_secret_access_key = kSecret;
  o.stub.aws_session_token = "session-token-1";
  stub_ = std::move(model_stub::StubServer::Start(std::move(o)).value());
  ::setenv("GOVERN_TEST_BEDROCK_KEY_ID", kAccessKey, 1);
  ::setenv("GOVERN_TEST_BEDROCK_SECRET", kSecret, 1);
  ::setenv("GOVERN_TEST_BEDROCK_TOKEN", "session-token-1", 1);
  Json d = Deployment();
  d.erase("aws_access_key_id");
  d.erase("aws_secret_access_key");
  d["aws_access_key_id_env"] = "GOVERN_TEST_BEDROCK_KEY_ID";
  d["aws_secret_access_key_env"] = "GOVERN_TEST_BEDROCK_SECRET";
  d["aws_session_token_env"] = "GOVERN_TEST_BEDROCK_TOKEN";
  Start(d);
  auto r = Post("/v1/chat/completions", ChatBody(false));
  EXPECT_EQ(r.status, 200) << r.body;
  auto s = Post("/v1/chat/completions", ChatBody(true));
  EXPECT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("[DONE]"), std::string::npos);
}

TEST_F(BedrockProxyTest, ThrottlingExceptionsAndCutStreams) {
  Start(Deployment());
  auto throttled = Post("/v1/chat/completions", ChatBody(false), {{"x-stub-status", "429"}});
  EXPECT_EQ(throttled.status, 429) << throttled.body;
  EXPECT_EQ(WaitRecord(1).status, 429);
  auto invalid = Post("/v1/chat/completions", ChatBody(false), {{"x-stub-status", "400"}});
  EXPECT_EQ(invalid.status, 400) << invalid.body;
  EXPECT_EQ(Json::parse(invalid.body)["error"]["message"], "upstream: injected status 400");
  WaitRecord(2);

  // An exception frame after three events: the client gets the error event.
  auto ex = Post("/v1/chat/completions", ChatBody(true), {{"x-stub-error-after", "3"}});
  ASSERT_EQ(ex.status, 200);
  EXPECT_NE(ex.body.find("modelStreamErrorException: injected stream error"), std::string::npos) << ex.body;
  WaitRecord(3);

  // Cut after four frames (the connection closes mid-body): recorded as a failure with what was seen.
  auto cut = Post("/v1/chat/completions", ChatBody(true), {{"x-stub-cut-after", "4"}});
  ASSERT_EQ(cut.status, 200);
  EXPECT_EQ(cut.body.find("[DONE]"), std::string::npos) << cut.body;
  UsageRecord rec = WaitRecord(4);
  EXPECT_EQ(rec.status, 502);
  EXPECT_NE(rec.error.find("upstream stream cut"), std::string::npos) << rec.error;
  EXPECT_EQ(rec.output_tokens, 3);  // the content chunks seen stand in for output tokens
}

// ---- The OpenAI Responses API and embeddings in front of Bedrock (gw-xlate) ----

// The Responses events of a streamed answer (each event's data is the typed object).
std::vector<Json> ResponsesEvents(std::string_view body) {
  std::vector<Json> out;
  SseParser p;
  std::vector<SseEvent> events;
  EXPECT_TRUE(p.Feed(body, events).ok());
  for (auto& e : events) {
    Json j = Json::parse(e.data, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << e.data;
    EXPECT_EQ(e.event, j.value("type", "")) << e.data;  // the SSE event is named by its type
    out.push_back(std::move(j));
  }
  return out;
}

// The text and function-call arguments of a Responses stream, and its last event.
struct ResponsesStreamSummary {
  std::string text, arguments;
  Json last;
};
ResponsesStreamSummary Summarize(const std::vector<Json>& events) {
  ResponsesStreamSummary s;
  for (const Json& e : events) {
    if (e["type"] == "response.output_text.delta") s.text += e["delta"].get<std::string>();
    if (e["type"] == "response.function_call_arguments.delta") s.arguments += e["delta"].get<std::string>();
  }
  if (!events.empty()) s.last = events.back();
  return s;
}

TEST_F(BedrockProxyTest, ResponsesApiWholeStreamedAndTools) {
  Start(Deployment());
  Json body = {{"model", "claude-haiku"}, {"instructions", "be brief"}, {"input", "one two three"}};
  auto r = Post("/v1/responses", body);
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["model"], "claude-haiku");
  EXPECT_EQ(j["output"][0]["type"], "message");
  EXPECT_EQ(j["output"][0]["content"][0]["text"], model_stub::StubText(16));
  EXPECT_EQ(j["usage"]["input_tokens"], 5);  // the instructions reached Converse as system text
  EXPECT_EQ(j["usage"]["output_tokens"], 16);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.deployment, "bedrock-eu");
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_NEAR(rec.cost, (5 * 1.0 + 16 * 5.0) / 1e6, 1e-12);

  // Streamed: ConverseStream frames -> chat chunks -> Responses events, usage in response.completed.
  body["stream"] = true;
  auto s = Post("/v1/responses", body, {{"x-stub-cached-tokens", "2"}});
  ASSERT_EQ(s.status, 200) << s.body;
  auto events = ResponsesEvents(s.body);
  ASSERT_GE(events.size(), 5u) << s.body;
  EXPECT_EQ(events.front()["type"], "response.created");
  auto sum = Summarize(events);
  EXPECT_EQ(sum.text, model_stub::StubText(16));
  EXPECT_EQ(sum.last["type"], "response.completed") << s.body;
  EXPECT_EQ(sum.last["response"]["usage"]["input_tokens"], 5);
  EXPECT_EQ(sum.last["response"]["usage"]["input_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(sum.last["response"]["usage"]["output_tokens"], 16);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i]["sequence_number"], static_cast<int64_t>(i));
  rec = WaitRecord(2);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_TRUE(rec.stream);
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.cached_tokens, 2);
  EXPECT_EQ(rec.output_tokens, 16);

  // Function tools, whole and streamed: the stub calls the offered function.
  Json tools = {{"model", "claude-haiku"},
                {"input", "weather?"},
                {"tools", Json::parse(R"([{"type":"function","name":"weather",
                   "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}])")}};
  auto t = Post("/v1/responses", tools);
  ASSERT_EQ(t.status, 200) << t.body;
  Json tj = Json::parse(t.body);
  ASSERT_EQ(tj["output"].size(), 1u) << t.body;
  EXPECT_EQ(tj["output"][0]["type"], "function_call");
  EXPECT_EQ(tj["output"][0]["name"], "weather");
  EXPECT_EQ(tj["output"][0]["call_id"], "tooluse_stub0");
  EXPECT_EQ(Json::parse(tj["output"][0]["arguments"].get<std::string>()), Json::parse(R"({"city":"stub"})"));
  tools["stream"] = true;
  auto ts = Post("/v1/responses", tools);
  ASSERT_EQ(ts.status, 200) << ts.body;
  auto tsum = Summarize(ResponsesEvents(ts.body));
  EXPECT_EQ(Json::parse(tsum.arguments), Json::parse(R"({"city":"stub"})")) << ts.body;
  EXPECT_EQ(tsum.last["type"], "response.completed");
  EXPECT_EQ(tsum.last["response"]["output"][0]["type"], "function_call");
  // The call's result goes back as a toolResult; the stub then answers in text.
  Json follow = {{"model", "claude-haiku"},
                 {"input", Json::parse(R"([{"role":"user","content":"weather?"},
                    {"type":"function_call","call_id":"tooluse_stub0","name":"weather","arguments":"{\"city\":\"stub\"}"},
                    {"type":"function_call_output","call_id":"tooluse_stub0","output":"sunny"}])")},
                 {"tools", tools["tools"]},
                 {"max_output_tokens", 4}};
  auto f = Post("/v1/responses", follow);
  ASSERT_EQ(f.status, 200) << f.body;
  Json fj = Json::parse(f.body);
  EXPECT_EQ(fj["output"][0]["content"][0]["text"], model_stub::StubText(4));
  EXPECT_EQ(fj["status"], "incomplete");  // max_output_tokens reached Converse as maxTokens
  EXPECT_EQ(WaitRecord(5).output_tokens, 4);
}

TEST_F(BedrockProxyTest, ResponsesApiErrorsInTheOpenAIShape) {
  Start(Deployment());
  Json body = {{"model", "claude-haiku"}, {"input", "one two three"}};
  auto throttled = Post("/v1/responses", body, {{"x-stub-status", "429"}});
  EXPECT_EQ(throttled.status, 429) << throttled.body;
  EXPECT_EQ(Json::parse(throttled.body)["error"]["type"], "rate_limit_exceeded");
  EXPECT_EQ(WaitRecord(1).status, 429);
  auto failed = Post("/v1/responses", body, {{"x-stub-status", "500"}});
  EXPECT_EQ(failed.status, 502) << failed.body;
  Json fj = Json::parse(failed.body);
  EXPECT_EQ(fj["error"]["type"], "api_error");
  EXPECT_NE(fj["error"]["message"].get<std::string>().find("injected status 500"), std::string::npos);
  EXPECT_EQ(WaitRecord(2).status, 502);
  // A whole answer cut in half: 502.
  auto cut_whole = Post("/v1/responses", body, {{"x-stub-cut-after", "0"}});
  EXPECT_EQ(cut_whole.status, 502) << cut_whole.body;
  EXPECT_TRUE(Json::parse(cut_whole.body).contains("error"));
  WaitRecord(3);

  // An exception frame after three events: the Responses error event, after the text so far.
  body["stream"] = true;
  auto ex = Post("/v1/responses", body, {{"x-stub-error-after", "3"}});
  ASSERT_EQ(ex.status, 200);
  auto events = ResponsesEvents(ex.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["type"], "error") << ex.body;
  EXPECT_NE(ex.body.find("injected stream error"), std::string::npos) << ex.body;
  EXPECT_EQ(ex.body.find("response.completed"), std::string::npos);
  UsageRecord rec = WaitRecord(4);
  EXPECT_NE(rec.error.find("injected stream error"), std::string::npos) << rec.error;

  // Cut after four frames: no response.completed; recorded as a failure with the output seen.
  auto cut = Post("/v1/responses", body, {{"x-stub-cut-after", "4"}});
  ASSERT_EQ(cut.status, 200);
  EXPECT_EQ(cut.body.find("response.completed"), std::string::npos) << cut.body;
  EXPECT_EQ(ResponsesEvents(cut.body).back()["type"], "error") << cut.body;
  rec = WaitRecord(5);
  EXPECT_EQ(rec.status, 502);
  EXPECT_NE(rec.error.find("upstream stream cut"), std::string::npos) << rec.error;
  EXPECT_EQ(rec.output_tokens, 3);
}

class BedrockEmbeddingsTest : public BedrockProxyTest {
 protected:
  void StartEmbeddings() {
    Json routes = Json::array();
    for (const auto& [name, id] :
         {std::pair{"titan", "amazon.titan-embed-text-v2:0"}, std::pair{"cohere", "cohere.embed-english-v3"},
          std::pair{"claude-haiku", kModelId}})
      routes.push_back({{"model", name}, {"deployments", {Deployment({{"name", name}, {"model", id}})}}});
    StartProxy(Json{{"routes", routes},
                    {"keys", {{{"key", kBedrockKey}, {"org", "acme"}}}},
                    {"prices", {{"titan", {{"input", 0.02}}}, {"cohere", {{"input", 0.1}}}}}},
               1);
  }
  static openai::EmbeddingsResponse Parse(const net::ClientResponse& r) {
    auto e = openai::ParseEmbeddingsResponse(r.body);
    EXPECT_TRUE(e.ok()) << e.status().ToString() << " " << r.body;
    return e.ok() ? *e : openai::EmbeddingsResponse{};
  }
};

TEST_F(BedrockEmbeddingsTest, TitanOneCallPerInputAndCohereOneForAll) {
  StartEmbeddings();
  // Titan: an array input is one signed InvokeModel call per element, in order.
  auto t = Post("/v1/embeddings", {{"model", "titan"}, {"input", {"a b", "c d e"}}, {"dimensions", 256}});
  ASSERT_EQ(t.status, 200) << t.body;
  auto te = Parse(t);
  ASSERT_EQ(te.data.size(), 2u);
  EXPECT_EQ(te.data[0], model_stub::StubVector("a b", 256));
  EXPECT_EQ(te.data[1], model_stub::StubVector("c d e", 256));
  EXPECT_EQ(te.prompt_tokens, 5);  // inputTextTokenCount of both calls
  EXPECT_EQ(Json::parse(t.body)["model"], "titan");
  EXPECT_EQ(stub_->stats().requests, 2u);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_EQ(rec.api, "embeddings");
  EXPECT_EQ(rec.deployment, "titan");
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_NEAR(rec.cost, 5 * 0.02 / 1e6, 1e-15);

  // base64: little-endian float32, written by the gateway.
  auto b = Post("/v1/embeddings", {{"model", "titan"}, {"input", "a b"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_TRUE(Json::parse(b.body)["data"][0]["embedding"].is_string()) << b.body;
  EXPECT_EQ(Parse(b).data.at(0), model_stub::StubVector("a b", 16));
  WaitRecord(2);

  // Cohere: one call for every text; tokens from Bedrock's X-Amzn-Bedrock-Input-Token-Count header.
  auto c = Post("/v1/embeddings", {{"model", "cohere"}, {"input", {"a b", "c"}}});
  ASSERT_EQ(c.status, 200) << c.body;
  auto ce = Parse(c);
  ASSERT_EQ(ce.data.size(), 2u);
  EXPECT_EQ(ce.data[1], model_stub::StubVector("c", 16));
  EXPECT_EQ(ce.prompt_tokens, 3);
  EXPECT_EQ(stub_->stats().requests, 4u);
  rec = WaitRecord(3);
  EXPECT_EQ(rec.input_tokens, 3);
  EXPECT_NEAR(rec.cost, 3 * 0.1 / 1e6, 1e-15);
}

// Cohere takes at most 96 texts a call: 200 texts are three InvokeModel calls (96, 96, 8) in order, the
// vectors joined and the header token counts summed; a failing call fails the whole request.
TEST_F(BedrockEmbeddingsTest, CohereOverNinetySixTextsIsSeveralCalls) {
  StartEmbeddings();
  Json texts = Json::array();
  for (int i = 0; i < 200; ++i) texts.push_back("w" + std::to_string(i) + (i % 2 == 0 ? " x" : ""));
  auto c = Post("/v1/embeddings", {{"model", "cohere"}, {"input", texts}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(stub_->stats().requests, 3u);
  auto ce = Parse(c);
  ASSERT_EQ(ce.data.size(), 200u);
  for (size_t i = 0; i < 200; ++i)
    EXPECT_EQ(ce.data[i], model_stub::StubVector(texts[i].get<std::string>(), 16)) << i;
  EXPECT_EQ(ce.prompt_tokens, 300);  // 100 one-word and 100 two-word texts
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_EQ(rec.input_tokens, 300);

  // A provider failure: a 502, no vectors, one call made (the rest never sent).
  auto failed = Post("/v1/embeddings", {{"model", "cohere"}, {"input", texts}}, {{"x-stub-status", "503"}});
  EXPECT_EQ(failed.status, 502) << failed.body;
  EXPECT_EQ(failed.body.find("\"embedding\""), std::string::npos);
  EXPECT_EQ(stub_->stats().requests, 4u);
  EXPECT_EQ(WaitRecord(2).status, 502);
}

// A retried request (a 503 on its second Titan call) is sent again from its first input, but the call
// answered before the failure was billed by AWS: it stays metered. So does it when the request fails.
TEST_F(BedrockEmbeddingsTest, CallsAnsweredBeforeARetryOrAFailureStayMetered) {
  StartProxy(
      Json{{"routes",
            {{{"model", "titan"},
              {"deployments", {Deployment({{"name", "titan"}, {"model", "amazon.titan-embed-text-v2:0"}})}},
              {"retry", {{"retries", 1}, {"backoff_ms", 1}}}},
             {{"model", "titan-once"},
              {"deployments", {Deployment({{"name", "once"}, {"model", "amazon.titan-embed-text-v2:0"}})}},
              {"retry", {{"retries", 0}}}}}},
           {"keys", {{{"key", kBedrockKey}, {"org", "acme"}}}},
           {"prices", {{"titan", {{"input", 0.02}}}}}},
      1);
  Json body = {{"model", "titan"}, {"input", {"a b", "c d e", "f"}}};
  // Calls: 1 "a b" (2 tokens) answered, 2 fails; the retry: 3, 4, 5 (2 + 3 + 1 tokens) answered.
  auto r = Post("/v1/embeddings", body, {{"x-stub-status", "503"}, {"x-stub-fail-call", "2"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(stub_->stats().requests, 5u);
  auto e = Parse(r);
  ASSERT_EQ(e.data.size(), 3u);
  EXPECT_EQ(e.data[2], model_stub::StubVector("f", 16));
  EXPECT_EQ(e.prompt_tokens, 6);  // the client's answer: its own vectors' tokens
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  ASSERT_EQ(rec.attempts.size(), 2u);
  EXPECT_EQ(rec.input_tokens, 8);  // metered: every call AWS answered
  EXPECT_NEAR(rec.cost, 8 * 0.02 / 1e6, 1e-15);

  // No retry: call 7 fails after call 6 ("a b") was answered; the request fails, 2 tokens metered.
  body["model"] = "titan-once";
  auto f = Post("/v1/embeddings", body, {{"x-stub-status", "503"}, {"x-stub-fail-call", "7"}});
  EXPECT_EQ(f.status, 502) << f.body;
  EXPECT_EQ(stub_->stats().requests, 7u);
  rec = WaitRecord(2);
  EXPECT_EQ(rec.status, 502);
  EXPECT_EQ(rec.input_tokens, 2);
}

TEST_F(BedrockEmbeddingsTest, RefusalsAndProviderErrors) {
  StartEmbeddings();
  // What the model cannot take is a 400 before any call.
  auto dims = Post("/v1/embeddings", {{"model", "cohere"}, {"input", "x"}, {"dimensions", 256}});
  EXPECT_EQ(dims.status, 400) << dims.body;
  EXPECT_NE(dims.body.find("fixed size"), std::string::npos) << dims.body;
  auto chat_model = Post("/v1/embeddings", {{"model", "claude-haiku"}, {"input", "x"}});
  EXPECT_EQ(chat_model.status, 400) << chat_model.body;
  EXPECT_NE(chat_model.body.find("no embeddings the gateway knows"), std::string::npos) << chat_model.body;
  EXPECT_EQ(stub_->stats().requests, 0u);
  WaitRecord(2);

  Json body = {{"model", "titan"}, {"input", {"a", "b"}}};
  auto throttled = Post("/v1/embeddings", body, {{"x-stub-status", "429"}});
  EXPECT_EQ(throttled.status, 429) << throttled.body;
  auto failed = Post("/v1/embeddings", body, {{"x-stub-status", "503"}});
  EXPECT_EQ(failed.status, 502) << failed.body;
  EXPECT_EQ(Json::parse(failed.body)["error"]["type"], "api_error");
  auto malformed = Post("/v1/embeddings", body, {{"x-stub-text", "{\"embedding\":\"nope\"}"}});
  EXPECT_EQ(malformed.status, 502) << malformed.body;
  EXPECT_NE(malformed.body.find("upstream answer unreadable: embedding must be an array"), std::string::npos)
      << malformed.body;
  UsageRecord rec = WaitRecord(5);
  EXPECT_EQ(rec.status, 502);
  EXPECT_EQ(rec.input_tokens, 0);
}

TEST(BedrockConfigTest, DeploymentFieldsAreCheckedAtLoad) {
  auto err = [](Json dep) {
    Json file = {{"routes", {{{"model", "m"}, {"deployments", {std::move(dep)}}}}}};
    auto c = ParseProxyConfig(file.dump());
    return c.ok() ? std::string("accepted") : c.status().message();
  };
  auto has = [](const std::string& message, std::string_view want) {
    return message.find(want) != std::string::npos;
  };
  Json ok = {{"provider", "bedrock"},
             {"region", "us-east-1"},
             {"aws_access_key_id", "AK"},
             {"aws_secret_access_key", "s"}};
  EXPECT_PRED2(has, err(ok), "accepted");
  Json no_region = ok;
  no_region.erase("region");
  EXPECT_PRED2(has, err(no_region), "routes[0].deployments[0].region is required for provider bedrock");
  Json bad_region = ok;
  bad_region["region"] = "us east";
  EXPECT_PRED2(has, err(bad_region), "region is required for provider bedrock");
  Json no_secret = ok;
  no_secret.erase("aws_secret_access_key");
  EXPECT_PRED2(has, err(no_secret), "aws_secret_access_key or aws_secret_access_key_env is required");
  Json both = ok;
  both["aws_access_key_id_env"] = "X";
  EXPECT_PRED2(has, err(both), "give aws_access_key_id or aws_access_key_id_env, not both");
  Json unset = ok;
  unset.erase("aws_secret_access_key");
  unset["aws_secret_access_key_env"] = "GOVERN_TEST_SURELY_UNSET_VARIABLE";
  EXPECT_PRED2(has, err(unset), "names `GOVERN_TEST_SURELY_UNSET_VARIABLE`, which is not set");
  Json key_and_creds = ok;
  key_and_creds["api_key"] = "bedrock-api-key";
  EXPECT_PRED2(has, err(key_and_creds), "give api_key (a Bedrock API key) or AWS credentials, not both");
  EXPECT_PRED2(has, err({{"provider", "openai"}, {"base_url", "http://x"}, {"region", "us-east-1"}}),
               "region is for provider bedrock only");
  EXPECT_PRED2(has, err({{"base_url", "http://x"}, {"aws_secret_access_key_env", "S"}}),
               "aws_secret_access_key_env is for provider bedrock only");
  Json version = ok;
  version["api_version"] = "v1";
  EXPECT_PRED2(has, err(version), "api_version is for providers azure and gemini only");
  // cohere_input_type: Cohere's four values only (default search_document), bedrock deployments only.
  for (const char* v : {"search_document", "search_query", "classification", "clustering"}) {
    Json typed = ok;
    typed["cohere_input_type"] = v;
    EXPECT_PRED2(has, err(typed), "accepted");
    Json file = {{"routes", {{{"model", "m"}, {"deployments", {typed}}}}}};
    auto c = ParseProxyConfig(file.dump());
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->models.at(0).deployments.at(0).bedrock->cohere_input_type, v);
  }
  Json untyped = {{"routes", {{{"model", "m"}, {"deployments", {ok}}}}}};
  EXPECT_EQ(ParseProxyConfig(untyped.dump())->models.at(0).deployments.at(0).bedrock->cohere_input_type,
            "search_document");
  Json bad_type = ok;
  bad_type["cohere_input_type"] = "search";
  EXPECT_PRED2(has, err(bad_type),
               "routes[0].deployments[0].cohere_input_type must be search_document, search_query, "
               "classification or clustering");
  EXPECT_PRED2(has, err({{"base_url", "http://x"}, {"cohere_input_type", "search_query"}}),
               "cohere_input_type is for provider bedrock only");
}

TEST(BedrockConfigTest, UrlsAndSigning) {
  Json file = {{"routes",
                {{{"model", "m"},
                  {"deployments",
                   {{{"provider", "bedrock"},
                     {"region", "us-west-2"},
                     {"model", kModelId},
                     {"aws_access_key_id", "AKIDEXAMPLE"},
                     {"aws_secret_access_key", kSecret},
                     {"aws_session_token", "tok"}}}}}}}};
  auto c = ParseProxyConfig(file.dump());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const BedrockDeployment& b = *c->models.at(0).deployments.at(0).bedrock;
  EXPECT_EQ(b.host, "bedrock-runtime.us-west-2.amazonaws.com");
  EXPECT_EQ(b.converse_url,
            "https://bedrock-runtime.us-west-2.amazonaws.com/model/"
            "anthropic.claude-3-5-haiku-20241022-v1%3A0/converse");
  EXPECT_EQ(
      b.stream_url,
      "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/"
      "converse-stream");
  // SigV4 for every service but S3: the path as sent, encoded once more.
  EXPECT_EQ(b.converse_canonical_uri, "/model/anthropic.claude-3-5-haiku-20241022-v1%253A0/converse");

  openai::ChatRequest chat;
  chat.model = "m";
  chat.messages.push_back({"user", openai::Content::Text("hi"), "", {}, "", std::nullopt, Json::object()});
  // 2026-11-30T21:00:00Z
  auto up = BedrockRequest(b, chat, /*stream=*/true, 1796072400LL * 1000000);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->url, b.stream_url);
  EXPECT_EQ(up->headers.Get("x-amz-date"), "20261130T210000Z");
  EXPECT_EQ(up->headers.Get("x-amz-security-token"), "tok");
  EXPECT_EQ(up->headers.Get("Accept"), "application/vnd.amazon.eventstream");
  std::string auth(up->headers.Get("Authorization").value_or(""));
  EXPECT_TRUE(
      auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/us-west-2/bedrock/aws4_request, "
                       "SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token, Signature="))
      << auth;
  EXPECT_EQ(Json::parse(up->body),
            Json::parse(R"({"messages":[{"role":"user","content":[{"text":"hi"}]}]})"));

  // A Bedrock API key instead: a bearer token, nothing signed.
  BedrockDeployment keyed = b;
  keyed.api_key = "ABSK-key";
  auto k = BedrockRequest(keyed, chat, false, 0);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->headers.Get("Authorization"), "Bearer ABSK-key");
  EXPECT_FALSE(k->headers.Has("x-amz-date"));
  EXPECT_EQ(BedrockClientStatus(403), 502);
  EXPECT_EQ(BedrockClientStatus(429), 429);
  EXPECT_EQ(BedrockClientStatus(408), 504);
  EXPECT_EQ(BedrockClientStatus(400), 400);
}

}  // namespace
}  // namespace govern::gateway
