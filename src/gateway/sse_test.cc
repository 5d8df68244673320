#include "gateway/sse.h"

#include <gtest/gtest.h>

namespace govern::gateway {
namespace {

std::vector<SseEvent> ParseAll(std::string_view bytes, bool* partial = nullptr) {
  SseParser p;
  std::vector<SseEvent> out;
  EXPECT_TRUE(p.Feed(bytes, out).ok());
  if (partial) *partial = p.HasPartial();
  return out;
}

// A stream as OpenAI and Anthropic send it, with the awkward parts of the format mixed in: CRLF, a lone
// CR, comments, multi-line data, a field without a space, id and retry, an event without data.
constexpr std::string_view kStream =
    "\xEF\xBB\xBF: keep-alive\r\n"
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\"}\r\n\r\n"
    "data:{\"a\":1}\n"
    "data: line two\n\n"
    "event: ping\rdata: {\"type\":\"ping\"}\r\r"
    "id: 42\nretry: 1500\ndata: x\n\n"
    "event: lonely\n\n"
    ":comment only\n\n"
    "data\n\n"
    "data: [DONE]\n\n";

TEST(SseParser, ParsesTheFormat) {
  auto events = ParseAll(kStream);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(events[0].data, "{\"type\":\"message_start\"}");
  EXPECT_EQ(events[1].event, "");
  EXPECT_EQ(events[1].data, "{\"a\":1}\nline two");
  EXPECT_EQ(events[2].event, "ping");
  EXPECT_EQ(events[2].data, "{\"type\":\"ping\"}");
  EXPECT_EQ(events[3].id, "42");
  EXPECT_EQ(events[3].retry, 1500u);
  EXPECT_EQ(events[3].data, "x");
  EXPECT_EQ(events[4].data, "");  // "data" with no colon is an empty data line
  EXPECT_EQ(events[4].id, "42");  // the last event id carries on
  EXPECT_TRUE(events[5].IsDone());
}

TEST(SseParser, EverySplitGivesTheSameEvents) {
  const auto whole = ParseAll(kStream);
  const std::string s(kStream);
  // Every single split point, and every pair of split points.
  for (size_t i = 0; i <= s.size(); ++i) {
    for (size_t j = i; j <= s.size(); ++j) {
      SseParser p;
      std::vector<SseEvent> out;
      ASSERT_TRUE(p.Feed(std::string_view(s).substr(0, i), out).ok());
      ASSERT_TRUE(p.Feed(std::string_view(s).substr(i, j - i), out).ok());
      ASSERT_TRUE(p.Feed(std::string_view(s).substr(j), out).ok());
      ASSERT_EQ(out, whole) << "split at " << i << " and " << j;
      EXPECT_FALSE(p.HasPartial());
    }
  }
  // Byte by byte.
  SseParser p;
  std::vector<SseEvent> out;
  for (char c : s) ASSERT_TRUE(p.Feed(std::string_view(&c, 1), out).ok());
  EXPECT_EQ(out, whole);
}

TEST(SseParser, ACutStreamLeavesAPartialEvent) {
  bool partial = false;
  auto events = ParseAll("data: one\n\ndata: tw", &partial);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_TRUE(partial);
  events = ParseAll("data: one\n\ndata: two\n", &partial);
  EXPECT_EQ(events.size(), 1u);  // not dispatched without the blank line
  EXPECT_TRUE(partial);
  events = ParseAll("data: one\n\n", &partial);
  EXPECT_FALSE(partial);
}

TEST(SseParser, OverlongLineIsAnError) {
  SseParser p(64);
  std::vector<SseEvent> out;
  EXPECT_TRUE(p.Feed("data: short\n\n", out).ok());
  EXPECT_FALSE(p.Feed(std::string(100, 'x'), out).ok());
  EXPECT_FALSE(p.Feed("data: more\n\n", out).ok());  // stays failed
  SseParser q(64);
  std::string many;
  for (int i = 0; i < 20; ++i) many += "data: 0123456789\n";
  EXPECT_FALSE(q.Feed(many, out).ok());
}

TEST(SseWriter, RoundTripsThroughTheParser) {
  std::string wire = FormatSseEvent("content_block_delta", "{\"x\":1}");
  EXPECT_EQ(wire, "event: content_block_delta\ndata: {\"x\":1}\n\n");
  wire += FormatSseEvent("", "multi\nline\r\ndata");
  wire += kSseDone;
  auto events = ParseAll(wire);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "content_block_delta");
  EXPECT_EQ(events[1].data, "multi\nline\ndata");
  EXPECT_TRUE(events[2].IsDone());
}

}  // namespace
}  // namespace govern::gateway
