#include "gateway/dlp_screen.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/json_util.h"
#include "gateway/sse.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kSecret = "AKIAIOSFODNN7EXAMPLE";

std::shared_ptr<const DlpProfile> Profile(std::string_view mode) {
  auto c = ParseDlpConfig(Json::parse(R"({"default": {"mode": ")" + std::string(mode) + R"("}})"));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return (*c)->default_profile;
}

// Long enough that text is released before the secret arrives (the hold is 128 bytes).
std::string Text() {
  std::string t;
  for (int i = 0; i < 12; ++i) t += "The quick brown fox jumps. ";
  t += "Use the key ";
  t += kSecret;
  t += " for the deploy, then rotate it.";
  return t;
}

size_t SecretAt() { return Text().find(kSecret); }

std::string Masked(const DlpProfile& p, std::string_view text) {
  std::string out;
  DlpReport r;
  EXPECT_TRUE(ScreenText(p, text, &out, &r));
  return out;
}

// Splits `text` at the given cut points (ascending).
std::vector<std::string> Pieces(std::string_view text, std::vector<size_t> cuts) {
  std::vector<std::string> v;
  size_t pos = 0;
  for (size_t c : cuts) {
    v.emplace_back(text.substr(pos, c - pos));
    pos = c;
  }
  v.emplace_back(text.substr(pos));
  return v;
}

// Every way of cutting the secret into two pieces (one cut anywhere in the text) and three pieces
// (two cuts in and around the secret).
std::vector<std::vector<size_t>> Splits() {
  std::vector<std::vector<size_t>> all;
  std::string t = Text();
  for (size_t i = 0; i <= t.size(); ++i) all.push_back({i});
  size_t s = SecretAt(), e = s + kSecret.size();
  for (size_t i = s - 2; i <= e + 2; ++i)
    for (size_t j = i; j <= e + 2; ++j) all.push_back({i, j});
  return all;
}

std::string Describe(const std::vector<size_t>& cuts) {
  std::string s = "cuts:";
  for (size_t c : cuts) s += " " + std::to_string(c);
  return s;
}

TEST(DlpScreen, WholeTextMaskAndBlock) {
  auto mask = Profile("mask");
  std::string out;
  DlpReport r;
  ASSERT_TRUE(ScreenText(*mask, "mail bob@example.com now", &out, &r));
  EXPECT_EQ(out, "mail [REDACTED:email] now");
  EXPECT_TRUE(r.masked);
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.rules, std::vector<std::string>{"email"});
  EXPECT_EQ(r.action(), "masked");

  auto block = Profile("block");
  DlpReport b;
  EXPECT_FALSE(ScreenText(*block, "mail bob@example.com now", &out, &b));
  EXPECT_TRUE(b.blocked);
  EXPECT_EQ(b.action(), "blocked");
  std::string msg = DlpBlockMessage("request", b);
  EXPECT_NE(msg.find("email"), std::string::npos);
  EXPECT_EQ(msg.find("bob@"), std::string::npos);  // never the matched text

  DlpReport n;
  EXPECT_FALSE(ScreenText(*mask, "nothing to see", &out, &n));
  EXPECT_EQ(n.action(), "none");
  auto off = Profile("off");
  EXPECT_FALSE(ScreenText(*off, "mail bob@example.com", &out, &n));
}

TEST(DlpScreen, StreamMaskGivesTheWholeTextResultForEverySplit) {
  auto p = Profile("mask");
  const std::string text = Text();
  const std::string want = Masked(*p, text);
  ASSERT_EQ(want.find(kSecret), std::string::npos);
  for (const auto& cuts : Splits()) {
    StreamScreener s(*p);
    std::string out;
    for (const auto& piece : Pieces(text, cuts)) ASSERT_TRUE(s.Push(piece, &out)) << Describe(cuts);
    ASSERT_TRUE(s.Finish(&out));
    ASSERT_EQ(out, want) << Describe(cuts);
    EXPECT_EQ(s.report().rules, std::vector<std::string>{"aws_access_key_id"});
    EXPECT_EQ(s.held(), 0u);
  }
}

TEST(DlpScreen, StreamBlockReleasesNothingOfTheSecretForEverySplit) {
  auto p = Profile("block");
  const std::string text = Text();
  const size_t at = SecretAt();
  for (const auto& cuts : Splits()) {
    StreamScreener s(*p);
    std::string out;
    bool ok = true;
    for (const auto& piece : Pieces(text, cuts)) {
      ok = s.Push(piece, &out);
      if (!ok) break;
    }
    if (ok) ok = s.Finish(&out);
    ASSERT_FALSE(ok) << Describe(cuts);
    EXPECT_TRUE(s.blocked());
    // What was released is a prefix of the text that stops before the secret.
    ASSERT_LE(out.size(), at) << Describe(cuts);
    EXPECT_EQ(out, text.substr(0, out.size()));
    std::string more;
    EXPECT_FALSE(s.Push("more", &more));
    EXPECT_TRUE(more.empty());
  }
}

TEST(DlpScreen, StreamHoldsBackLittleAndCutsOnlyAtCharacterBoundaries) {
  auto p = Profile("mask");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "héllo wörld ∑ 😀 ";
  for (size_t step : {1u, 2u, 3u, 5u, 7u}) {
    StreamScreener s(*p);
    std::string all;
    for (size_t i = 0; i < text.size(); i += step) {
      std::string out;
      ASSERT_TRUE(s.Push(text.substr(i, step), &out));
      if (!out.empty()) {
        EXPECT_NE(static_cast<unsigned char>(out[0]) & 0xC0, 0x80);  // starts a character
        all += out;
      }
      EXPECT_LE(s.held(), p->stream.hold + p->stream.step + step);
    }
    std::string out;
    ASSERT_TRUE(s.Finish(&out));
    all += out;
    EXPECT_EQ(all, text);
  }
}

TEST(DlpScreen, AGrowingFindingPastTheLimitBlocksEvenInMaskMode) {
  auto c = ParseDlpConfig(Json::parse(R"({"default": {"mode": "mask", "max_held_bytes": 1024}})"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const DlpProfile& p = *(*c)->default_profile;
  StreamScreener s(p);
  std::string out;
  ASSERT_TRUE(s.Push("here it is:\n-----BEGIN RSA PRIVATE KEY-----\n", &out));
  bool ok = true;
  for (int i = 0; i < 100 && ok; ++i)
    ok = s.Push("MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n", &out);
  EXPECT_FALSE(ok);
  EXPECT_EQ(s.report().rules, std::vector<std::string>{"private_key"});
  EXPECT_EQ(out.find("BEGIN"), std::string::npos);

  // Below the limit the whole block is masked once its END line arrives.
  auto mask = Profile("mask");
  StreamScreener m(*mask);
  std::string o2;
  ASSERT_TRUE(m.Push("key:\n-----BEGIN RSA PRIVATE KEY-----\n", &o2));
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(m.Push("MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n", &o2));
  ASSERT_TRUE(m.Push("-----END RSA PRIVATE KEY-----\nthat was it", &o2));
  ASSERT_TRUE(m.Finish(&o2));
  EXPECT_EQ(o2, "key:\n[REDACTED:private_key]\nthat was it");
}

// ---- the SSE formats ----

std::vector<SseEvent> OpenAIStream(const std::vector<std::string>& deltas) {
  std::vector<SseEvent> evs;
  auto chunk = [](Json delta, Json finish) {
    Json c = {{"id", "chatcmpl-1"},
              {"object", "chat.completion.chunk"},
              {"created", 1},
              {"model", "m"},
              {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
    SseEvent e;
    e.data = c.dump();
    return e;
  };
  evs.push_back(chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
  for (const auto& d : deltas) evs.push_back(chunk({{"content", d}}, nullptr));
  evs.push_back(chunk(Json::object(), "stop"));
  SseEvent usage;
  usage.data =
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})";
  evs.push_back(usage);
  SseEvent done;
  done.data = "[DONE]";
  evs.push_back(done);
  return evs;
}

std::vector<SseEvent> AnthropicStream(const std::vector<std::string>& deltas) {
  std::vector<SseEvent> evs;
  auto ev = [&](std::string name, Json data) {
    SseEvent e;
    e.event = std::move(name);
    e.data = data.dump();
    evs.push_back(std::move(e));
  };
  ev("message_start", {{"type", "message_start"},
                       {"message",
                        {{"id", "msg_1"},
                         {"type", "message"},
                         {"role", "assistant"},
                         {"model", "m"},
                         {"content", Json::array()},
                         {"usage", {{"input_tokens", 1}, {"output_tokens", 0}}}}}});
  ev("content_block_start",
     {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
  for (const auto& d : deltas)
    ev("content_block_delta",
       {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", d}}}});
  ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
  ev("message_delta", {{"type", "message_delta"},
                       {"delta", {{"stop_reason", "end_turn"}}},
                       {"usage", {{"output_tokens", 5}}}});
  ev("message_stop", {{"type", "message_stop"}});
  return evs;
}

// The text the client reads from relayed events, and whether the end (finish / stop) followed all of it.
struct Read {
  std::string text;
  bool ended_after_text = false;
  bool done = false;
};

Read ReadOpenAI(const std::vector<SseEvent>& evs) {
  Read r;
  for (const auto& e : evs) {
    if (e.IsDone()) {
      r.done = true;
      continue;
    }
    Json j = Json::parse(e.data);
    for (const auto& c : j["choices"]) {
      if (c["delta"].contains("content")) {
        EXPECT_FALSE(r.ended_after_text) << "text after the finish chunk";
        r.text += c["delta"]["content"].get<std::string>();
      }
      if (!c["finish_reason"].is_null()) r.ended_after_text = true;
    }
  }
  return r;
}

Read ReadAnthropic(const std::vector<SseEvent>& evs) {
  Read r;
  for (const auto& e : evs) {
    Json j = Json::parse(e.data);
    EXPECT_EQ(j["type"], e.event);
    if (j["type"] == "content_block_delta") {
      EXPECT_FALSE(r.ended_after_text) << "text after the block's stop";
      r.text += j["delta"]["text"].get<std::string>();
    }
    if (j["type"] == "content_block_stop") r.ended_after_text = true;
    if (j["type"] == "message_stop") r.done = true;
  }
  return r;
}

class DlpStreamFormat : public ::testing::TestWithParam<bool> {};

TEST_P(DlpStreamFormat, MaskRewritesTheDeltasForEverySplit) {
  const bool anthropic = GetParam();
  auto p = Profile("mask");
  const std::string text = Text();
  const std::string want = Masked(*p, text);
  for (const auto& cuts : Splits()) {
    auto in = anthropic ? AnthropicStream(Pieces(text, cuts)) : OpenAIStream(Pieces(text, cuts));
    DlpStreamFilter f(*p, anthropic);
    std::vector<SseEvent> out;
    for (const auto& e : in) ASSERT_TRUE(f.Feed(e, &out)) << Describe(cuts);
    ASSERT_TRUE(f.Finish(&out));
    Read r = anthropic ? ReadAnthropic(out) : ReadOpenAI(out);
    ASSERT_EQ(r.text, want) << Describe(cuts);
    EXPECT_TRUE(r.ended_after_text);
    EXPECT_TRUE(r.done);
    EXPECT_EQ(f.report().rules, std::vector<std::string>{"aws_access_key_id"});
    EXPECT_TRUE(f.report().masked);
  }
}

TEST_P(DlpStreamFormat, BlockStopsBeforeAnyByteOfTheSecretForEverySplit) {
  const bool anthropic = GetParam();
  auto p = Profile("block");
  const std::string text = Text();
  for (const auto& cuts : Splits()) {
    auto in = anthropic ? AnthropicStream(Pieces(text, cuts)) : OpenAIStream(Pieces(text, cuts));
    DlpStreamFilter f(*p, anthropic);
    std::vector<SseEvent> out;
    bool ok = true;
    for (const auto& e : in) {
      ok = f.Feed(e, &out);
      if (!ok) break;
    }
    ASSERT_FALSE(ok) << Describe(cuts);
    Read r = anthropic ? ReadAnthropic(out) : ReadOpenAI(out);
    EXPECT_FALSE(r.done);
    ASSERT_LE(r.text.size(), SecretAt()) << Describe(cuts);
    EXPECT_EQ(r.text, text.substr(0, r.text.size()));
    EXPECT_TRUE(f.report().blocked);
    EXPECT_EQ(f.report().rules, std::vector<std::string>{"aws_access_key_id"});
  }
}

// Tool-call arguments stream as JSON text in fragments: screened per call like text.
std::vector<SseEvent> OpenAIToolStream(const std::vector<std::string>& args) {
  std::vector<SseEvent> evs;
  auto chunk = [&](Json delta, Json finish) {
    SseEvent e;
    e.data = Json{{"id", "c"},
                  {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}}
                 .dump();
    evs.push_back(e);
  };
  chunk({{"tool_calls", Json::array({{{"index", 0},
                                      {"id", "call_1"},
                                      {"type", "function"},
                                      {"function", {{"name", "run"}, {"arguments", ""}}}}})}},
        nullptr);
  for (const auto& a : args)
    chunk({{"tool_calls", Json::array({{{"index", 0}, {"function", {{"arguments", a}}}}})}}, nullptr);
  chunk(Json::object(), "tool_calls");
  SseEvent done;
  done.data = "[DONE]";
  evs.push_back(done);
  return evs;
}

std::vector<SseEvent> AnthropicToolStream(const std::vector<std::string>& args) {
  std::vector<SseEvent> evs;
  auto ev = [&](std::string name, Json data) {
    SseEvent e;
    e.event = std::move(name);
    e.data = data.dump();
    evs.push_back(std::move(e));
  };
  ev("content_block_start",
     {{"type", "content_block_start"},
      {"index", 1},
      {"content_block", {{"type", "tool_use"}, {"id", "t"}, {"name", "run"}, {"input", Json::object()}}}});
  for (const auto& a : args)
    ev("content_block_delta", {{"type", "content_block_delta"},
                               {"index", 1},
                               {"delta", {{"type", "input_json_delta"}, {"partial_json", a}}}});
  ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 1}});
  ev("message_stop", {{"type", "message_stop"}});
  return evs;
}

std::string ToolArgs(const std::vector<SseEvent>& evs, bool anthropic) {
  std::string args;
  for (const auto& e : evs) {
    if (e.IsDone()) continue;
    Json j = Json::parse(e.data);
    if (anthropic) {
      if (j["type"] == "content_block_delta") {
        EXPECT_EQ(j["delta"]["type"], "input_json_delta");
        args += j["delta"]["partial_json"].get<std::string>();
      }
    } else {
      for (const auto& c : j["choices"])
        if (c["delta"].contains("tool_calls"))
          for (const auto& t : c["delta"]["tool_calls"])
            args += t["function"]["arguments"].get<std::string>();
    }
  }
  return args;
}

TEST_P(DlpStreamFormat, ToolCallArgumentsAreScreenedForEverySplit) {
  const bool anthropic = GetParam();
  auto mask = Profile("mask");
  auto block = Profile("block");
  const std::string args = R"({"cmd":"deploy --region eu-west-1 --access-key AKIAIOSFODNN7EXAMPLE --yes"})";
  std::string want = args;
  want.replace(want.find(kSecret), kSecret.size(), "[REDACTED:aws_access_key_id]");
  ASSERT_TRUE(Json::accept(want));
  for (size_t i = 0; i <= args.size(); ++i) {
    auto pieces = Pieces(args, {i});
    auto in = anthropic ? AnthropicToolStream(pieces) : OpenAIToolStream(pieces);
    DlpStreamFilter f(*mask, anthropic);
    std::vector<SseEvent> out;
    for (const auto& e : in) ASSERT_TRUE(f.Feed(e, &out)) << i;
    ASSERT_TRUE(f.Finish(&out));
    EXPECT_EQ(ToolArgs(out, anthropic), want) << i;

    DlpStreamFilter b(*block, anthropic);
    std::vector<SseEvent> bout;
    bool ok = true;
    for (const auto& e : in) {
      if (!(ok = b.Feed(e, &bout))) break;
    }
    EXPECT_FALSE(ok) << i;
    EXPECT_EQ(ToolArgs(bout, anthropic).find("AKIA"), std::string::npos) << i;
  }
}

TEST(DlpScreen, StreamCutShortStillReleasesItsScreenedTail) {
  auto p = Profile("mask");
  DlpStreamFilter f(*p, false);
  auto in = OpenAIStream({"short answer mailing bob@example.com"});
  std::vector<SseEvent> out;
  for (size_t i = 0; i < 2; ++i) ASSERT_TRUE(f.Feed(in[i], &out));  // role chunk and the text; then cut
  ASSERT_TRUE(f.Finish(&out));
  EXPECT_EQ(ReadOpenAI(out).text, "short answer mailing [REDACTED:email]");
}

TEST(DlpScreen, OffPassesEventsThrough) {
  auto p = Profile("off");
  DlpStreamFilter f(*p, true);
  auto in = AnthropicStream({"bob@", "example.com"});
  std::vector<SseEvent> out;
  for (const auto& e : in) ASSERT_TRUE(f.Feed(e, &out));
  EXPECT_EQ(out, in);
}

TEST(DlpScreen, OpenAIRequestAndAnswer) {
  auto p = Profile("mask");
  Json body = Json::parse(R"({"model":"m","messages":[
    {"role":"system","content":"mail ops@example.com"},
    {"role":"user","content":[{"type":"text","text":"key AKIAIOSFODNN7EXAMPLE"},{"type":"image_url","image_url":{"url":"x"}}]},
    {"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"to\":\"bob@example.com\"}"}}]},
    {"role":"tool","tool_call_id":"c","content":"sent to bob@example.com"}]})");
  DlpReport r;
  ASSERT_TRUE(ScreenOpenAIChat(*p, body, &r));
  EXPECT_EQ(body["messages"][0]["content"], "mail [REDACTED:email]");
  EXPECT_EQ(body["messages"][1]["content"][0]["text"], "key [REDACTED:aws_access_key_id]");
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"to\":\"[REDACTED:email]\"}");
  EXPECT_EQ(body["messages"][3]["content"], "sent to [REDACTED:email]");
  EXPECT_EQ(r.rules, (std::vector<std::string>{"email", "aws_access_key_id"}));

  Json answer = Json::parse(
      R"({"choices":[{"index":0,"message":{"role":"assistant","content":"it is AKIAIOSFODNN7EXAMPLE"}}]})");
  DlpReport b;
  auto block = Profile("block");
  EXPECT_FALSE(ScreenOpenAIChat(*block, answer, &b));
  EXPECT_TRUE(b.blocked);
}

// Content and arguments that are objects where the format has strings (some OpenAI-compatible servers
// send object arguments): every string inside is screened, nothing passes unread.
TEST(DlpScreen, OpenAINonStringContentAndArgumentsAreScreenedInside) {
  auto p = Profile("mask");
  Json answer = Json::parse(R"({"choices":[{"index":0,"message":{"role":"assistant",
    "content":[{"type":"text","text":{"v":"key AKIAIOSFODNN7EXAMPLE"}}],
    "tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"to":["bob@example.com"],"n":1}}}],
    "function_call":{"name":"g","arguments":{"k":"AKIAIOSFODNN7EXAMPLE"}}}}]})");
  DlpReport r;
  ASSERT_TRUE(ScreenOpenAIChat(*p, answer, &r));
  const Json& m = answer["choices"][0]["message"];
  EXPECT_EQ(m["content"][0]["text"]["v"], "key [REDACTED:aws_access_key_id]");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"]["to"][0], "[REDACTED:email]");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"]["n"], 1);
  EXPECT_EQ(m["function_call"]["arguments"]["k"], "[REDACTED:aws_access_key_id]");
  Json object_content = Json::parse(R"({"choices":[{"message":{"content":{"x":"AKIAIOSFODNN7EXAMPLE"}}}]})");
  DlpReport b;
  EXPECT_FALSE(ScreenOpenAIChat(*Profile("block"), object_content, &b));
  EXPECT_TRUE(b.blocked);
}

TEST(DlpScreen, AnthropicRequestAndAnswer) {
  auto p = Profile("mask");
  Json body = Json::parse(R"({"model":"m","system":[{"type":"text","text":"ops@example.com"}],"messages":[
    {"role":"user","content":"key AKIAIOSFODNN7EXAMPLE"},
    {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"mail","input":{"to":["bob@example.com"],"n":1}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"sent bob@example.com"}]}]}]})");
  DlpReport r;
  ASSERT_TRUE(ScreenAnthropicMessages(*p, body, &r));
  EXPECT_EQ(body["system"][0]["text"], "[REDACTED:email]");
  EXPECT_EQ(body["messages"][0]["content"], "key [REDACTED:aws_access_key_id]");
  EXPECT_EQ(body["messages"][1]["content"][0]["input"]["to"][0], "[REDACTED:email]");
  EXPECT_EQ(body["messages"][1]["content"][0]["input"]["n"], 1);
  EXPECT_EQ(body["messages"][2]["content"][0]["content"][0]["text"], "sent [REDACTED:email]");

  Json answer =
      Json::parse(R"({"type":"message","content":[{"type":"text","text":"mail bob@example.com"}]})");
  DlpReport m;
  ASSERT_TRUE(ScreenAnthropicMessages(*p, answer, &m));
  EXPECT_EQ(answer["content"][0]["text"], "mail [REDACTED:email]");
}

TEST(DlpScreen, ConfigPerOrganisation) {
  auto c = ParseDlpConfig(Json::parse(R"({"default":{"mode":"mask"},"orgs":{
      "acme":{"mode":"block","disabled":["contact"],
              "custom_rules":[{"id":"acme_ref","pattern":"ACME-[0-9]{6}"}]},
      "free":{"mode":"off"}}})"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const DlpConfig& cfg = **c;
  EXPECT_EQ(cfg.For("acme").mode, DlpMode::kBlock);
  EXPECT_EQ(cfg.For("free").mode, DlpMode::kOff);
  EXPECT_EQ(cfg.For("other").mode, DlpMode::kMask);
  std::string out;
  DlpReport r;
  EXPECT_FALSE(ScreenText(cfg.For("acme"), "mail bob@example.com", &out, &r));
  EXPECT_FALSE(r.blocked);  // contact is disabled for acme
  EXPECT_FALSE(ScreenText(cfg.For("acme"), "ref ACME-123456", &out, &r));
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(r.rules, std::vector<std::string>{"acme_ref"});

  auto none = DlpConfigFromRoutesFile(R"({"routes":[]})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->For("x").mode, DlpMode::kOff);

  for (const char* bad : {R"({"default":{"mode":"redact"}})", R"({"orgs":[]})", R"({"other":{}})",
                          R"({"orgs":{"a":{"mode":"mask","custom_rules":[{"id":"x","pattern":"("}]}}})",
                          R"({"orgs":{"a":{"mode":"mask","disabled":["nope"]}}})",
                          R"({"default":{"mode":"mask","hold_bytes":1}})"}) {
    auto e = ParseDlpConfig(Json::parse(bad));
    EXPECT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), Code::kInvalidArgument) << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, DlpStreamFormat, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Anthropic" : "OpenAI"; });

}  // namespace
}  // namespace govern::gateway
