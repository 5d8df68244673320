// DLP for the Responses and embeddings APIs (dlp_responses.h): request and answer bodies, and a
// Responses stream with the secret cut at every byte position, masked and blocked.
#include "gateway/dlp_responses.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/json_util.h"
#include "gateway/sse.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kResponsesSecret = "AKIAIOSFODNN7EXAMPLE";
constexpr std::string_view kMarker = "[REDACTED:aws_access_key_id]";

std::shared_ptr<const DlpProfile> ProfileOf(std::string_view mode) {
  auto c = ParseDlpConfig(Json::parse(R"({"default": {"mode": ")" + std::string(mode) + R"("}})"));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return (*c)->default_profile;
}

std::string AnswerText() {
  std::string t;
  for (int i = 0; i < 12; ++i) t += "The quick brown fox jumps. ";
  return t + "Use the key " + std::string(kResponsesSecret) + " for the deploy, then rotate it.";
}

std::string MaskedText() {
  std::string t = AnswerText();
  t.replace(t.find(kResponsesSecret), kResponsesSecret.size(), kMarker);
  return t;
}

TEST(DlpResponses, RequestsAreScreenedInEveryTextField) {
  auto mask = ProfileOf("mask");
  const std::string s(kResponsesSecret);
  Json body = {
      {"model", "m"},
      {"instructions", "use " + s},
      {"input",
       {{{"role", "user"}, {"content", "a " + s}},
        {{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "b " + s}}}}},
        {{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{\"k\":\"" + s + "\"}"}},
        {{"type", "function_call_output"}, {"call_id", "c"}, {"output", "out " + s}}}}};
  DlpReport r;
  EXPECT_TRUE(ScreenResponsesRequest(*mask, body, &r));
  EXPECT_EQ(body.dump().find("AKIA"), std::string::npos) << body.dump();
  EXPECT_EQ(body["instructions"], "use " + std::string(kMarker));
  EXPECT_EQ(body["input"][1]["content"][0]["text"], "b " + std::string(kMarker));
  EXPECT_EQ(body["input"][3]["output"], "out " + std::string(kMarker));
  EXPECT_TRUE(r.masked);
  EXPECT_EQ(r.rules, std::vector<std::string>{"aws_access_key_id"});

  Json str = {{"model", "m"}, {"input", "key " + s}};
  DlpReport b;
  EXPECT_FALSE(ScreenResponsesRequest(*ProfileOf("block"), str, &b));
  EXPECT_TRUE(b.blocked);

  Json clean = {{"model", "m"}, {"input", "nothing here"}};
  DlpReport c;
  EXPECT_FALSE(ScreenResponsesRequest(*mask, clean, &c));
  EXPECT_EQ(c.action(), "none");
}

TEST(DlpResponses, EmbeddingsInputsAndResponsesAnswers) {
  auto mask = ProfileOf("mask");
  const std::string s(kResponsesSecret);
  Json emb = {{"model", "e"}, {"input", {"fine", "k " + s}}};
  DlpReport r;
  EXPECT_TRUE(ScreenEmbeddingsRequest(*mask, emb, &r));
  EXPECT_EQ(emb["input"][1], "k " + std::string(kMarker));
  Json tokens = {{"model", "e"}, {"input", {{1, 2, 3}}}};
  DlpReport t;
  EXPECT_FALSE(ScreenEmbeddingsRequest(*ProfileOf("block"), tokens, &t));
  EXPECT_FALSE(t.blocked);
  Json one = {{"model", "e"}, {"input", s}};
  DlpReport b;
  ScreenEmbeddingsRequest(*ProfileOf("block"), one, &b);
  EXPECT_TRUE(b.blocked);

  Json answer = {{"object", "response"},
                 {"output",
                  {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", AnswerText()}}}}},
                   {{"type", "function_call"}, {"arguments", "{\"k\":\"" + s + "\"}"}}}}};
  DlpReport a;
  EXPECT_TRUE(ScreenResponsesAnswer(*mask, answer, &a));
  EXPECT_EQ(answer["output"][0]["content"][0]["text"], MaskedText());
  EXPECT_EQ(answer.dump().find("AKIA"), std::string::npos);

  // Objects where the format has strings: every string inside is screened.
  Json odd = {{"object", "response"},
              {"output",
               {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", {{"v", "k " + s}}}}}}},
                {{"type", "function_call"}, {"arguments", {{"k", {s, 3}}}}}}}};
  DlpReport o;
  EXPECT_TRUE(ScreenResponsesAnswer(*mask, odd, &o));
  EXPECT_EQ(odd.dump().find("AKIA"), std::string::npos) << odd.dump();
  EXPECT_EQ(odd["output"][1]["arguments"]["k"][1], 3);
}

// A Responses stream as OpenAI sends it, the text in the given pieces.
std::vector<SseEvent> Stream(const std::vector<std::string>& pieces) {
  std::vector<Json> evs;
  evs.push_back({{"type", "response.created"}, {"response", {{"id", "r"}, {"output", Json::array()}}}});
  evs.push_back({{"type", "response.output_item.added"},
                 {"output_index", 0},
                 {"item", {{"type", "message"}, {"id", "m"}, {"content", Json::array()}}}});
  evs.push_back({{"type", "response.content_part.added"},
                 {"output_index", 0},
                 {"content_index", 0},
                 {"item_id", "m"},
                 {"part", {{"type", "output_text"}, {"text", ""}}}});
  for (const auto& p : pieces)
    evs.push_back({{"type", "response.output_text.delta"},
                   {"item_id", "m"},
                   {"output_index", 0},
                   {"content_index", 0},
                   {"delta", p}});
  std::string all = AnswerText();
  evs.push_back({{"type", "response.output_text.done"},
                 {"item_id", "m"},
                 {"output_index", 0},
                 {"content_index", 0},
                 {"text", all}});
  evs.push_back({{"type", "response.content_part.done"},
                 {"item_id", "m"},
                 {"output_index", 0},
                 {"content_index", 0},
                 {"part", {{"type", "output_text"}, {"text", all}}}});
  Json item = {{"type", "message"}, {"id", "m"}, {"content", {{{"type", "output_text"}, {"text", all}}}}};
  evs.push_back({{"type", "response.output_item.done"}, {"output_index", 0}, {"item", item}});
  evs.push_back({{"type", "response.completed"},
                 {"response", {{"id", "r"}, {"output", {item}}, {"usage", {{"output_tokens", 9}}}}}});
  std::vector<SseEvent> out;
  for (size_t i = 0; i < evs.size(); ++i) {
    evs[i]["sequence_number"] = i;
    out.push_back({std::string(detail::StrField(evs[i], "type")), evs[i].dump(), "", std::nullopt});
  }
  return out;
}

TEST(DlpResponses, AStreamedSecretCutAnywhereIsMaskedAndTheStreamStaysConsistent) {
  auto mask = ProfileOf("mask");
  const std::string text = AnswerText();
  const size_t at = text.find(kResponsesSecret);
  for (size_t cut = at - 2; cut <= at + kResponsesSecret.size() + 2; ++cut) {
    SCOPED_TRACE(cut);
    // 4-byte pieces, with one cut at `cut`.
    std::vector<std::string> pieces;
    for (size_t pos = 0; pos < text.size();) {
      size_t end = std::min(text.size(), pos + 4);
      if (pos < cut && cut < end) end = cut;
      pieces.push_back(text.substr(pos, end - pos));
      pos = end;
    }
    ResponsesDlpFilter f(*mask);
    std::vector<SseEvent> out;
    for (const auto& ev : Stream(pieces)) ASSERT_TRUE(f.Feed(ev, &out));
    ASSERT_TRUE(f.Finish(&out));
    std::string deltas, done, part, item, final_text;
    int64_t seq = -1;
    for (const auto& e : out) {
      Json j = Json::parse(e.data);
      EXPECT_EQ(e.event, j["type"]);
      EXPECT_EQ(j["sequence_number"].get<int64_t>(), seq + 1);
      seq = j["sequence_number"].get<int64_t>();
      std::string type = j["type"];
      if (type == "response.output_text.delta") {
        deltas += j["delta"].get<std::string>();
        EXPECT_EQ(j["item_id"], "m");
      }
      if (type == "response.output_text.done") done = j["text"];
      if (type == "response.content_part.done") part = j["part"]["text"];
      if (type == "response.output_item.done") item = j["item"]["content"][0]["text"];
      if (type == "response.completed") final_text = j["response"]["output"][0]["content"][0]["text"];
    }
    EXPECT_EQ(deltas, MaskedText());
    EXPECT_EQ(done, MaskedText());
    EXPECT_EQ(part, MaskedText());
    EXPECT_EQ(item, MaskedText());
    EXPECT_EQ(final_text, MaskedText());
    EXPECT_EQ(f.report().action(), "masked");
  }
}

TEST(DlpResponses, ABlockedStreamReleasesOnlyTextBeforeTheSecret) {
  auto block = ProfileOf("block");
  const std::string text = AnswerText();
  std::vector<std::string> pieces;
  for (size_t pos = 0; pos < text.size(); pos += 8) pieces.push_back(text.substr(pos, 8));
  ResponsesDlpFilter f(*block);
  std::vector<SseEvent> out;
  bool blocked = false;
  for (const auto& ev : Stream(pieces)) {
    if (!f.Feed(ev, &out)) {
      blocked = true;
      break;
    }
  }
  EXPECT_TRUE(blocked);
  EXPECT_TRUE(f.blocked());
  std::string released;
  for (const auto& e : out) {
    EXPECT_EQ(e.data.find("AKIA"), std::string::npos) << e.data;
    Json j = Json::parse(e.data);
    if (j["type"] == "response.output_text.delta") released += j["delta"].get<std::string>();
  }
  EXPECT_EQ(released, text.substr(0, released.size()));
  EXPECT_LT(released.size(), text.find(kResponsesSecret));
  std::string ev = ResponsesDlpBlockEvent("response blocked", 7);
  EXPECT_NE(ev.find("event: error"), std::string::npos);
  EXPECT_NE(ev.find("dlp_blocked"), std::string::npos);
  EXPECT_NE(ev.find("\"sequence_number\":7"), std::string::npos);
}

}  // namespace
}  // namespace govern::gateway
