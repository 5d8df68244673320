// Azure OpenAI deployments end to end over real sockets: the gateway in front of the model stub answering
// Azure's paths (model_stub/stub.h, AzureAnswer). The OpenAI Responses API relayed to the resource's
// Responses URL (the v1 API, or the dated preview one by api_version) with the deployment as the body's
// model, whole and streamed, tools, metered from the Responses usage object; the provider's errors and a
// cut stream in OpenAI's Responses error shapes; embeddings under the deployment.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gateway/openai.h"
#include "gateway/sse.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/gateway/stub_proxy_fixture.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kAzureKey = "gvg_azure_test_01";

class AzureProxyTest : public testing::StubProxyFixture {
 protected:
  AzureProxyTest() : StubProxyFixture(kAzureKey) {}
  void SetUp() override {
    StartStub();
    const std::string base = StubUrl();
    auto route = [&](const char* model, const char* deployment, const char* version) {
      Json d = {{"name", model},
                {"provider", "azure"},
                {"base_url", base},
                {"api_key", "az-key"},
                {"azure_deployment", deployment},
                {"stub_fault_headers", true}};
      if (version != nullptr) d["api_version"] = version;
      return Json{{"model", model}, {"deployments", {d}}};
    };
    Json file = {{"routes",
                  {route("gpt-az", "gpt4o-prod", nullptr),  // the v1 Responses API
                   route("gpt-az-dated", "gpt4o-dated", "2025-04-01-preview")}},
                 {"keys", {{{"key", kAzureKey}, {"org", "acme"}}}},
                 {"prices", {{"gpt-az", {{"input", 1.0}, {"output", 2.0}, {"cached_input", 0.5}}}}}};
    StartProxy(file, 1);
  }

  // The Responses events of a stream, each checked to parse and named by its type.
  static std::vector<openai::ResponsesEvent> Events(std::string_view body) {
    std::vector<openai::ResponsesEvent> out;
    for (const auto& e : SseEvents(body, /*whole=*/true)) {
      auto ev = openai::ParseResponsesEvent(e.data);
      EXPECT_TRUE(ev.ok()) << e.data;
      if (!ev.ok()) continue;
      EXPECT_EQ(e.event, ev->type);
      out.push_back(std::move(*ev));
    }
    return out;
  }
};

const Json kWhole = {{"model", "gpt-az"}, {"instructions", "be brief"}, {"input", "one two three"}};
const Json kStream = {{"model", "gpt-az"}, {"stream", true}, {"input", "one two three"}};

TEST_F(AzureProxyTest, ResponsesWholeIsRelayedToTheDeploymentAndMetered) {
  auto resp = Post("/v1/responses", kWhole, {{"x-stub-cached-tokens", "2"}});
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto r = openai::ParseResponsesResponse(resp.body);
  ASSERT_TRUE(r.ok()) << resp.body;
  EXPECT_EQ(r->OutputText().rfind("Govern stub reply", 0), 0u);
  EXPECT_EQ(r->usage, (openai::ResponsesUsage{5, 16, 21, 2, 0}));
  // Relayed as it came: the stub echoes the model it was sent, the Azure deployment.
  EXPECT_EQ(Json::parse(resp.body)["model"], "gpt4o-prod");

  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200) << rec.error;
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.deployment, "gpt-az");
  EXPECT_FALSE(rec.stream);
  EXPECT_EQ(rec.input_tokens, 5);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_EQ(rec.cached_tokens, 2);
  EXPECT_DOUBLE_EQ(rec.cost, (3 * 1.0 + 2 * 0.5 + 16 * 2.0) / 1e6);

  // The dated preview API (api-version in the query; the stub 404s the dated path without one).
  Json dated = kWhole;
  dated["model"] = "gpt-az-dated";
  auto d = Post("/v1/responses", dated);
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(Json::parse(d.body)["model"], "gpt4o-dated");
  EXPECT_EQ(WaitRecord(2).status, 200);
  EXPECT_EQ(stub_->stats().requests, 2u);
}

TEST_F(AzureProxyTest, ResponsesStreamAndToolCallAreRelayedAndMeteredFromCompleted) {
  auto resp = Post("/v1/responses", kStream);
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_EQ(resp.headers.Get("Content-Type").value_or(""), "text/event-stream");
  auto events = Events(resp.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().type, "response.created");
  ASSERT_EQ(events.back().type, "response.completed");
  std::string text;
  for (const auto& e : events)
    if (e.type == "response.output_text.delta") text += e.body["delta"].get<std::string>();
  EXPECT_EQ(text, events.back().response->OutputText());
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_TRUE(rec.stream);
  EXPECT_EQ(rec.api, "responses");
  EXPECT_EQ(rec.input_tokens, 3);
  EXPECT_EQ(rec.output_tokens, 16);
  EXPECT_TRUE(rec.error.empty()) << rec.error;

  Json tool = {{"model", "gpt-az-dated"},
               {"stream", true},
               {"input", "weather?"},
               {"tools",
                {{{"type", "function"},
                  {"name", "get_weather"},
                  {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}};
  auto t = Post("/v1/responses", tool);
  ASSERT_EQ(t.status, 200) << t.body;
  auto tevents = Events(t.body);
  std::string args;
  for (const auto& e : tevents)
    if (e.type == "response.function_call_arguments.delta") args += e.body["delta"].get<std::string>();
  EXPECT_EQ(args, R"({"city":"stub"})");
  ASSERT_FALSE(tevents.empty());
  ASSERT_TRUE(tevents.back().response.has_value());
  const auto& out = tevents.back().response->output;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, openai::ResponseItem::Type::kFunctionCall);
  EXPECT_EQ(out[0].name, "get_weather");
  rec = WaitRecord(2);
  EXPECT_GT(rec.output_tokens, 0);
  EXPECT_EQ(rec.output_tokens, tevents.back().response->usage->output_tokens);
}

TEST_F(AzureProxyTest, ResponsesErrorsInTheOpenAIShape) {
  // The provider's 4xx as it came; a 5xx as a 502 api_error.
  auto bad = Post("/v1/responses", {{"model", "gpt-az"}, {"input", 7}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_TRUE(Json::parse(bad.body)["error"].is_object()) << bad.body;
  auto failed = Post("/v1/responses", kWhole, {{"x-stub-status", "500"}});
  EXPECT_EQ(failed.status, 502) << failed.body;
  EXPECT_EQ(Json::parse(failed.body)["error"]["type"], "api_error");
  WaitRecord(2);
  // A stream cut after 7 events: the Responses error event, numbered after the last one relayed.
  auto cut = Post("/v1/responses", kStream, {{"x-stub-cut-after", "7"}});
  ASSERT_EQ(cut.status, 200);
  SseParser p;
  std::vector<SseEvent> events;
  ASSERT_TRUE(p.Feed(cut.body, events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "error");
  auto err = Json::parse(events.back().data);
  EXPECT_EQ(err["type"], "error");
  EXPECT_NE(err["message"].get<std::string>().find("cut"), std::string::npos) << events.back().data;
  EXPECT_EQ(err["sequence_number"], 7);
  UsageRecord rec = WaitRecord(3);
  EXPECT_EQ(rec.status, 502);
  EXPECT_EQ(rec.output_tokens, 3);
}

TEST_F(AzureProxyTest, EmbeddingsGoUnderTheDeployment) {
  auto resp =
      Post("/v1/embeddings", {{"model", "gpt-az"}, {"input", {"one two", "three"}}, {"dimensions", 4}});
  ASSERT_EQ(resp.status, 200) << resp.body;
  auto e = openai::ParseEmbeddingsResponse(resp.body);
  ASSERT_TRUE(e.ok()) << resp.body;
  ASSERT_EQ(e->data.size(), 2u);
  EXPECT_EQ(e->data[0].size(), 4u);
  UsageRecord rec = WaitRecord(1);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.api, "embeddings");
  EXPECT_EQ(rec.input_tokens, 3);
}

}  // namespace
}  // namespace govern::gateway
