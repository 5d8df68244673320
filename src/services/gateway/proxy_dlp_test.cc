// DLP through the proxy, over real sockets: the model stub streams a secret cut into 8-byte pieces
// (x-stub-text) and the client must never see it (mask: rewritten; block: the stream ends with the
// format's error event), prompts are masked before the provider sees them (a capturing provider) or
// refused in each SDK's error shape, and the usage record names the action and rules, never the text.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "gateway/dlp_screen.h"
#include "gateway/openai.h"
#include "gateway/sse.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/proxy.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kMaskKey = "gvg_dlp_mask_0001";
constexpr const char* kBlockKey = "gvg_dlp_block_0002";
constexpr const char* kOffKey = "gvg_dlp_off_0003";
constexpr std::string_view kSecret = "AKIAIOSFODNN7EXAMPLE";

// Long enough that the screener releases text before the secret comes.
std::string AnswerText() {
  std::string t;
  for (int i = 0; i < 10; ++i) t += "Here is the plan for the deploy. ";
  return t + "Use the key " + std::string(kSecret) + " and rotate it afterwards.";
}

class ProxyDlpTest : public testing::ProxyFixture {
 protected:
  void SetUp() override {
    auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
    ASSERT_TRUE(stub.ok()) << stub.status().ToString();
    stub_ = std::move(*stub);
    std::string base = "http://127.0.0.1:" + std::to_string(stub_->port());

    // A provider that keeps the body it was sent.
    net::Router capture_router;
    capture_router.AddSync(net::Method::kPost, "/v1/chat/completions", [this](net::Request& req) {
      {
        std::lock_guard lock(mu_);
        captured_ = req.body;
        if (!answer_.empty()) return net::Response(200, answer_, "application/json");
      }
      return net::Response(
          200,
          R"({"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})",
          "application/json");
    });
    // The Responses and embeddings APIs, captured likewise.
    capture_router.AddSync(net::Method::kPost, "/v1/responses", [this](net::Request& req) {
      {
        std::lock_guard lock(mu_);
        captured_ = req.body;
      }
      return net::Response(
          200,
          R"({"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","id":"m1","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}})",
          "application/json");
    });
    capture_router.AddSync(net::Method::kPost, "/v1/embeddings", [this](net::Request& req) {
      {
        std::lock_guard lock(mu_);
        captured_ = req.body;
      }
      return net::Response(
          200,
          R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}})",
          "application/json");
    });
    net::ServerConfig csc;
    csc.workers = 1;
    capture_ = std::make_unique<net::Server>(csc, std::move(capture_router));
    ASSERT_TRUE(capture_->Start().ok());

    ProxyConfig c;
    c.routes = {
        {"gpt-stub", base, WireFormat::kOpenAI, ""},
        {"claude-stub", base, WireFormat::kAnthropic, ""},
        {"gpt-capture", "http://127.0.0.1:" + std::to_string(capture_->port()), WireFormat::kOpenAI, ""}};
    for (RouteConfig& r : c.routes) r.stub_fault_headers = true;
    c.keys = {{kMaskKey, "org-mask", 0, 0}, {kBlockKey, "org-block", 0, 0}, {kOffKey, "org-off", 0, 0}};
    auto dlp =
        ParseDlpConfig(Json::parse(R"({"orgs":{"org-mask":{"mode":"mask"},"org-block":{"mode":"block"}}})"));
    ASSERT_TRUE(dlp.ok()) << dlp.status().ToString();
    c.dlp = *dlp;
    StartProxy(std::move(c), 1);
  }

  void TearDown() override {
    StopProxy();
    if (capture_) capture_->Stop();
    if (stub_) stub_->Stop();
  }

  net::ClientResponse Post(std::string_view path, std::string body, std::string_view key,
                           std::string_view stub_text = "") {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + std::string(path);
    r.headers.Set("Content-Type", "application/json");
    if (path == "/v1/messages") {
      r.headers.Set("x-api-key", key);
      r.headers.Set("anthropic-version", "2023-06-01");
    } else {
      r.headers.Set("Authorization", "Bearer " + std::string(key));
    }
    if (!stub_text.empty()) r.headers.Set("x-stub-text", stub_text);
    r.body = std::move(body);
    auto resp = client_->Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  }

  // The text a client reads from a stream of either format, and the error event if any.
  static std::pair<std::string, Json> ReadStream(const std::string& body) {
    SseParser p;
    std::vector<SseEvent> evs;
    EXPECT_TRUE(p.Feed(body, evs).ok());
    std::string text;
    Json error;
    for (const auto& e : evs) {
      if (e.IsDone()) continue;
      Json j = Json::parse(e.data);
      if (j.contains("error")) error = j;
      if (j.contains("choices")) {
        for (const auto& c : j["choices"])
          if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
            text += c["delta"]["content"].get<std::string>();
      }
      if (j.value("type", "") == "content_block_delta" && j["delta"].value("type", "") == "text_delta")
        text += j["delta"]["text"].get<std::string>();
    }
    return {text, error};
  }

  std::unique_ptr<model_stub::StubServer> stub_;
  std::unique_ptr<net::Server> capture_;
  std::string captured_;  // guarded by mu_
  std::string answer_;    // guarded by mu_: when set, the chat answer of the capturing provider
};

const std::string kDlpChatStream =
    R"({"model":"gpt-stub","stream":true,"messages":[{"role":"user","content":"deploy plan"}]})";
const std::string kMessagesStream =
    R"({"model":"claude-stub","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"deploy plan"}]})";

std::string Expected() {
  std::string t = AnswerText();
  t.replace(t.find(kSecret), kSecret.size(), "[REDACTED:aws_access_key_id]");
  return t;
}

TEST_F(ProxyDlpTest, StreamedSecretIsMaskedInEachFormatAndTranslation) {
  struct Case {
    std::string path, body;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", kDlpChatStream},
      {"/v1/messages", kMessagesStream},
      // Translated: an OpenAI client on an Anthropic route, and the reverse.
      {"/v1/chat/completions",
       R"({"model":"claude-stub","stream":true,"messages":[{"role":"user","content":"deploy plan"}]})"},
      {"/v1/messages",
       R"({"model":"gpt-stub","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"deploy plan"}]})"},
  };
  size_t n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body);
    auto resp = Post(c.path, c.body, kMaskKey, AnswerText());
    ASSERT_EQ(resp.status, 200) << resp.body;
    EXPECT_EQ(resp.body.find("AKIA"), std::string::npos) << resp.body;
    auto [text, error] = ReadStream(resp.body);
    EXPECT_EQ(text, Expected());
    EXPECT_TRUE(error.is_null()) << error;
    UsageRecord r = WaitRecord(++n);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.dlp_action, "masked");
    EXPECT_EQ(r.dlp_rules, std::vector<std::string>{"aws_access_key_id"});
    EXPECT_GT(r.output_tokens, 0);
    EXPECT_EQ(UsageRecordJson(r).find("AKIA"), std::string::npos);
  }
}

// Streamed tool calls (the stub's arguments come in 8-byte pieces, all held until the finish): the
// arguments a client assembles are the same with DLP on as off, same format and translated.
TEST_F(ProxyDlpTest, StreamedToolCallsArriveWholeThroughTheScreener) {
  auto args_of = [](const std::string& body) {
    SseParser p;
    std::vector<SseEvent> evs;
    EXPECT_TRUE(p.Feed(body, evs).ok());
    std::string args;
    for (const auto& e : evs) {
      if (e.IsDone()) continue;
      Json j = Json::parse(e.data);
      if (j.contains("choices")) {
        for (const auto& c : j["choices"])
          if (c.contains("delta") && c["delta"].contains("tool_calls"))
            for (const auto& t : c["delta"]["tool_calls"])
              if (t.contains("function") && t["function"].contains("arguments"))
                args += t["function"]["arguments"].get<std::string>();
      }
      if (j.value("type", "") == "content_block_delta" && j["delta"].value("type", "") == "input_json_delta")
        args += j["delta"]["partial_json"].get<std::string>();
    }
    return args;
  };
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}}}])";
  const std::string tools_a =
      R"("tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}}])";
  for (const char* model : {"gpt-stub", "claude-stub"}) {
    std::string chat = std::string(R"({"model":")") + model +
                       R"(","stream":true,"messages":[{"role":"user","content":"weather?"}],)" + tools + "}";
    std::string msgs =
        std::string(R"({"model":")") + model +
        R"(","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"weather?"}],)" + tools_a +
        "}";
    for (const auto& [path, body] :
         {std::pair{"/v1/chat/completions", chat}, std::pair{"/v1/messages", msgs}}) {
      SCOPED_TRACE(std::string(path) + " " + model);
      std::string off = args_of(Post(path, body, kOffKey).body);
      ASSERT_FALSE(off.empty());
      ASSERT_TRUE(Json::accept(off)) << off;
      EXPECT_EQ(args_of(Post(path, body, kMaskKey).body), off);
    }
  }
}

TEST_F(ProxyDlpTest, StreamedSecretEndsTheStreamWithTheFormatsErrorWhenBlocked) {
  auto resp = Post("/v1/chat/completions", kDlpChatStream, kBlockKey, AnswerText());
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_EQ(resp.body.find("AKIA"), std::string::npos) << resp.body;
  EXPECT_EQ(resp.body.find("[DONE]"), std::string::npos);
  auto [text, error] = ReadStream(resp.body);
  EXPECT_EQ(text, AnswerText().substr(0, text.size()));
  EXPECT_LT(text.size(), AnswerText().find(kSecret));
  EXPECT_EQ(error["error"]["code"], "dlp_blocked") << error;
  EXPECT_NE(error["error"]["message"].get<std::string>().find("aws_access_key_id"), std::string::npos);
  UsageRecord r = WaitRecord(1);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.dlp_action, "blocked");
  EXPECT_EQ(r.dlp_rules, std::vector<std::string>{"aws_access_key_id"});

  auto a = Post("/v1/messages", kMessagesStream, kBlockKey, AnswerText());
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body.find("AKIA"), std::string::npos) << a.body;
  EXPECT_EQ(a.body.find("message_stop"), std::string::npos);
  auto [atext, aerror] = ReadStream(a.body);
  EXPECT_EQ(aerror["type"], "error") << aerror;
  EXPECT_EQ(aerror["error"]["type"], "invalid_request_error");
  EXPECT_EQ(WaitRecord(2).dlp_action, "blocked");
}

TEST_F(ProxyDlpTest, WholeAnswersAreScreened) {
  auto resp =
      Post("/v1/chat/completions", R"({"model":"gpt-stub","messages":[{"role":"user","content":"hi"}]})",
           kMaskKey, AnswerText());
  ASSERT_EQ(resp.status, 200) << resp.body;
  Json j = Json::parse(resp.body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], Expected());

  auto blocked =
      Post("/v1/messages",
           R"({"model":"claude-stub","max_tokens":100,"messages":[{"role":"user","content":"hi"}]})",
           kBlockKey, AnswerText());
  EXPECT_EQ(blocked.status, 400) << blocked.body;
  EXPECT_EQ(blocked.body.find("AKIA"), std::string::npos);
  Json e = Json::parse(blocked.body);
  EXPECT_EQ(e["type"], "error");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");

  // Off: relayed as is.
  auto off =
      Post("/v1/chat/completions", R"({"model":"gpt-stub","messages":[{"role":"user","content":"hi"}]})",
           kOffKey, AnswerText());
  EXPECT_NE(off.body.find(kSecret), std::string::npos);
  EXPECT_EQ(WaitRecord(3).dlp_action, "");
}

// With DLP on, an answer in a shape the format does not have (tool-call arguments that are not strings)
// or no JSON at all is refused, never relayed unscreened; with DLP off the same-format answer is relayed
// as it came.
TEST_F(ProxyDlpTest, AnswersTheScreenCannotReadAreRefusedNotRelayed) {
  const std::string request = R"({"model":"gpt-capture","messages":[{"role":"user","content":"hi"}]})";
  {
    std::lock_guard lock(mu_);
    answer_ = R"({"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,)"
              R"("message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function",)"
              R"("function":{"name":"f","arguments":{"key":")" +
              std::string(kSecret) +
              R"("}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,)"
              R"("total_tokens":2}})";
  }
  // Block: the screen reads the strings inside the object and refuses; mask: screened, then refused by
  // the full parse (arguments must be a string), never relayed.
  for (auto [key, status] : {std::pair{kMaskKey, 502}, std::pair{kBlockKey, 400}}) {
    auto resp = Post("/v1/chat/completions", request, key);
    EXPECT_EQ(resp.status, status) << key << ": " << resp.body;
    EXPECT_EQ(resp.body.find("AKIA"), std::string::npos) << key << ": " << resp.body;
  }
  auto off = Post("/v1/chat/completions", request, kOffKey);
  EXPECT_EQ(off.status, 200) << off.body;
  EXPECT_NE(off.body.find(kSecret), std::string::npos) << off.body;
  {
    std::lock_guard lock(mu_);
    answer_ = "not json " + std::string(kSecret);
  }
  auto garbled = Post("/v1/chat/completions", request, kMaskKey);
  EXPECT_EQ(garbled.status, 502) << garbled.body;
  EXPECT_EQ(garbled.body.find("AKIA"), std::string::npos) << garbled.body;
}

TEST_F(ProxyDlpTest, PromptsAreMaskedBeforeTheProviderOrRefused) {
  const std::string body =
      R"({"model":"gpt-capture","messages":[{"role":"user","content":"my key is AKIAIOSFODNN7EXAMPLE"}]})";
  auto resp = Post("/v1/chat/completions", body, kMaskKey);
  ASSERT_EQ(resp.status, 200) << resp.body;
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(captured_.find("AKIA"), std::string::npos) << captured_;
    EXPECT_NE(captured_.find("my key is [REDACTED:aws_access_key_id]"), std::string::npos) << captured_;
    captured_.clear();
  }
  EXPECT_EQ(WaitRecord(1).dlp_action, "masked");

  auto refused = Post("/v1/chat/completions", body, kBlockKey);
  EXPECT_EQ(refused.status, 400);
  Json e = Json::parse(refused.body);
  EXPECT_EQ(e["error"]["code"], "dlp_blocked");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("aws_access_key_id"), std::string::npos);
  EXPECT_EQ(refused.body.find("AKIA"), std::string::npos);
  {
    std::lock_guard lock(mu_);
    EXPECT_TRUE(captured_.empty());  // never reached the provider
  }
  UsageRecord r = WaitRecord(2);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.dlp_action, "blocked");

  auto anthropic = Post(
      "/v1/messages",
      R"({"model":"claude-stub","max_tokens":10,"system":"AKIAIOSFODNN7EXAMPLE","messages":[{"role":"user","content":"hi"}]})",
      kBlockKey);
  EXPECT_EQ(anthropic.status, 400);
  Json a = Json::parse(anthropic.body);
  EXPECT_EQ(a["type"], "error");
  EXPECT_EQ(a["error"]["type"], "invalid_request_error");
  EXPECT_EQ(anthropic.body.find("AKIA"), std::string::npos);

  // A reload swaps the configuration: the block org is now off.
  auto off = ParseDlpConfig(Json::parse(R"({"orgs":{"org-block":{"mode":"off"}}})"));
  ASSERT_TRUE(off.ok());
  proxy_->SetDlp(*off);
  EXPECT_EQ(Post("/v1/chat/completions", body, kBlockKey).status, 200);
}

// The Responses API: prompts (input string, items, instructions) masked before the provider or refused,
// whole answers and streams screened (same format and translated from an Anthropic provider); the
// stream's deltas, its .done events and its final response agree, and its sequence numbers still count
// up by one.
TEST_F(ProxyDlpTest, ResponsesPromptsAnswersAndStreamsAreScreened) {
  const std::string prompt =
      R"({"model":"gpt-capture","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"my key is AKIAIOSFODNN7EXAMPLE"}]}]})";
  auto masked = Post("/v1/responses", prompt, kMaskKey);
  ASSERT_EQ(masked.status, 200) << masked.body;
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(captured_.find("AKIA"), std::string::npos) << captured_;
    EXPECT_NE(captured_.find("my key is [REDACTED:aws_access_key_id]"), std::string::npos) << captured_;
    captured_.clear();
  }
  size_t n = 0;
  EXPECT_EQ(WaitRecord(++n).dlp_action, "masked");
  auto refused =
      Post("/v1/responses", R"({"model":"gpt-capture","input":"AKIAIOSFODNN7EXAMPLE"})", kBlockKey);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(Json::parse(refused.body)["error"]["code"], "dlp_blocked");
  {
    std::lock_guard lock(mu_);
    EXPECT_TRUE(captured_.empty());
  }
  EXPECT_EQ(WaitRecord(++n).dlp_action, "blocked");

  for (const char* model : {"gpt-stub", "claude-stub"}) {
    SCOPED_TRACE(model);
    // Whole: the output text masked; blocked as a 400.
    std::string whole = std::string(R"({"model":")") + model + R"(","input":"deploy plan"})";
    auto w = Post("/v1/responses", whole, kMaskKey, AnswerText());
    ASSERT_EQ(w.status, 200) << w.body;
    EXPECT_EQ(w.body.find("AKIA"), std::string::npos) << w.body;
    EXPECT_NE(w.body.find("[REDACTED:aws_access_key_id]"), std::string::npos) << w.body;
    EXPECT_EQ(WaitRecord(++n).dlp_action, "masked");
    auto wb = Post("/v1/responses", whole, kBlockKey, AnswerText());
    EXPECT_EQ(wb.status, 400) << wb.body;
    EXPECT_EQ(wb.body.find("AKIA"), std::string::npos);
    EXPECT_EQ(WaitRecord(++n).dlp_action, "blocked");

    // Streamed: the deltas (8-byte pieces) assemble to the masked text, which the done events repeat.
    std::string streamed = std::string(R"({"model":")") + model + R"(","stream":true,"input":"deploy plan"})";
    auto st = Post("/v1/responses", streamed, kMaskKey, AnswerText());
    ASSERT_EQ(st.status, 200) << st.body;
    EXPECT_EQ(st.body.find("AKIA"), std::string::npos) << st.body;
    SseParser p;
    std::vector<SseEvent> evs;
    ASSERT_TRUE(p.Feed(st.body, evs).ok());
    std::string text, done_text, final_text;
    int64_t seq = -1;
    bool completed = false;
    for (const auto& e : evs) {
      Json j = Json::parse(e.data);
      if (j.contains("sequence_number")) {
        EXPECT_EQ(j["sequence_number"].get<int64_t>(), seq + 1) << e.data;
        seq = j["sequence_number"].get<int64_t>();
      }
      std::string type = j.value("type", "");
      if (type == "response.output_text.delta") text += j["delta"].get<std::string>();
      if (type == "response.output_text.done") done_text = j["text"].get<std::string>();
      if (type == "response.completed") {
        completed = true;
        for (const auto& item : j["response"]["output"])
          for (const auto& c : item.value("content", Json::array())) final_text += c.value("text", "");
      }
    }
    EXPECT_TRUE(completed);
    EXPECT_EQ(text, Expected());
    EXPECT_EQ(done_text, Expected());
    EXPECT_EQ(final_text, Expected());
    UsageRecord r = WaitRecord(++n);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.dlp_action, "masked");
    EXPECT_GT(r.output_tokens, 0);

    // Blocked mid-stream: the Responses error event (code dlp_blocked), nothing of the secret, no
    // response.completed.
    auto sb = Post("/v1/responses", streamed, kBlockKey, AnswerText());
    ASSERT_EQ(sb.status, 200) << sb.body;
    EXPECT_EQ(sb.body.find("AKIA"), std::string::npos) << sb.body;
    EXPECT_EQ(sb.body.find("response.completed"), std::string::npos);
    EXPECT_NE(sb.body.find("dlp_blocked"), std::string::npos) << sb.body;
    UsageRecord b = WaitRecord(++n);
    EXPECT_EQ(b.status, 400);
    EXPECT_EQ(b.dlp_action, "blocked");
  }
}

// Embeddings: the input text (a string or strings) masked before the provider or refused; token
// arrays pass as they are.
TEST_F(ProxyDlpTest, EmbeddingsInputsAreScreened) {
  auto masked =
      Post("/v1/embeddings", R"({"model":"gpt-capture","input":["fine","my key is AKIAIOSFODNN7EXAMPLE"]})",
           kMaskKey);
  ASSERT_EQ(masked.status, 200) << masked.body;
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(captured_.find("AKIA"), std::string::npos) << captured_;
    EXPECT_NE(captured_.find("my key is [REDACTED:aws_access_key_id]"), std::string::npos) << captured_;
    captured_.clear();
  }
  UsageRecord r = WaitRecord(1);
  EXPECT_EQ(r.dlp_action, "masked");
  EXPECT_EQ(r.dlp_rules, std::vector<std::string>{"aws_access_key_id"});
  auto refused =
      Post("/v1/embeddings", R"({"model":"gpt-capture","input":"AKIAIOSFODNN7EXAMPLE"})", kBlockKey);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(Json::parse(refused.body)["error"]["code"], "dlp_blocked");
  EXPECT_EQ(refused.body.find("AKIA"), std::string::npos);
  {
    std::lock_guard lock(mu_);
    EXPECT_TRUE(captured_.empty());
  }
  EXPECT_EQ(WaitRecord(2).status, 400);
  auto tokens = Post("/v1/embeddings", R"({"model":"gpt-capture","input":[[1,2,3]]})", kBlockKey);
  EXPECT_EQ(tokens.status, 200) << tokens.body;
  EXPECT_EQ(WaitRecord(3).dlp_action, "none");
}

}  // namespace
}  // namespace govern::gateway
