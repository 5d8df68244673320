// The AWS event-stream framing: AWS's own empty-message vector, a frame encoded independently (Python's
// zlib and struct), every header type, any chunking, and each kind of bad input as a clean error.
#include "gateway/eventstream.h"

#include <gtest/gtest.h>

namespace govern::gateway::eventstream {
namespace {

std::string Be32(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

// A frame around raw header bytes, with correct CRCs, and `total` overriding the length when non-zero.
std::string Frame(std::string_view headers, std::string_view payload, uint32_t total = 0) {
  if (total == 0) total = static_cast<uint32_t>(16 + headers.size() + payload.size());
  std::string f = Be32(total) + Be32(static_cast<uint32_t>(headers.size()));
  f += Be32(Crc32(f));
  f += headers;
  f += payload;
  f += Be32(Crc32(f));
  return f;
}

std::vector<Message> DecodeAll(std::string_view bytes, Status* status = nullptr) {
  Decoder d;
  std::vector<Message> out;
  Status s = d.Feed(bytes, out);
  if (status) *status = s;
  return out;
}

TEST(EventStreamTest, EmptyMessageIsAwsVector) {
  // aws-c-event-stream's "empty_message": total 16, no headers, prelude CRC 05c248eb, message 7d98c8ff.
  const std::string want("\x00\x00\x00\x10\x00\x00\x00\x00\x05\xc2\x48\xeb\x7d\x98\xc8\xff", 16);
  auto bytes = Encode(Message{});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, want);
  Status s;
  auto msgs = DecodeAll(want, &s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_TRUE(msgs[0].headers.empty());
  EXPECT_TRUE(msgs[0].payload.empty());
}

TEST(EventStreamTest, DecodesAFrameEncodedElsewhereInAnyChunking) {
  // Made with Python's struct and zlib.crc32: headers :event-type=messageStart, :message-type=event.
  const std::string frame(
      "\x00\x00\x00\x55\x00\x00\x00\x31\xc4\x0f\x9f\xe8\x0b\x3a\x65\x76\x65\x6e\x74\x2d\x74\x79\x70\x65\x07"
      "\x00"
      "\x0c\x6d\x65\x73\x73\x61\x67\x65\x53\x74\x61\x72\x74\x0d\x3a\x6d\x65\x73\x73\x61\x67\x65\x2d\x74\x79"
      "\x70"
      "\x65\x07\x00\x05\x65\x76\x65\x6e\x74\x7b\x22\x72\x6f\x6c\x65\x22\x3a\x22\x61\x73\x73\x69\x73\x74\x61"
      "\x6e"
      "\x74\x22\x7d\x39\x29\x1b\xc6",
      85);
  const std::string two = frame + frame;
  for (size_t step : {size_t{1}, size_t{3}, size_t{12}, size_t{84}, size_t{85}, size_t{170}}) {
    Decoder d;
    std::vector<Message> out;
    for (size_t i = 0; i < two.size(); i += step) {
      ASSERT_TRUE(d.Feed(std::string_view(two).substr(i, step), out).ok()) << step;
    }
    EXPECT_FALSE(d.partial());
    ASSERT_EQ(out.size(), 2u) << step;
    for (const Message& m : out) {
      EXPECT_EQ(m.StringHeader(":event-type"), "messageStart");
      EXPECT_EQ(m.StringHeader(":message-type"), "event");
      EXPECT_FALSE(m.StringHeader(":content-type").has_value());
      EXPECT_EQ(m.payload, R"({"role":"assistant"})");
    }
  }
  // Our encoder gives the same bytes.
  Message m;
  m.headers = {Header::String(":event-type", "messageStart"), Header::String(":message-type", "event")};
  m.payload = R"({"role":"assistant"})";
  EXPECT_EQ(Encode(m).value(), frame);
}

TEST(EventStreamTest, EveryHeaderTypeRoundTrips) {
  Message m;
  m.headers.push_back({"t", Header::Type::kTrue, 0, ""});
  m.headers.push_back({"f", Header::Type::kFalse, 0, ""});
  m.headers.push_back({"b", Header::Type::kByte, -5, ""});
  m.headers.push_back({"s", Header::Type::kShort, -300, ""});
  m.headers.push_back({"i", Header::Type::kInt, -70000, ""});
  m.headers.push_back({"l", Header::Type::kLong, -5000000000LL, ""});
  m.headers.push_back({"by", Header::Type::kBytes, 0, std::string("\x00\xff", 2)});
  m.headers.push_back({"st", Header::Type::kString, 0, "hello"});
  m.headers.push_back({"ts", Header::Type::kTimestamp, 1764536400000, ""});
  m.headers.push_back({"u", Header::Type::kUuid, 0, std::string(16, '\x07')});
  m.payload = std::string(
      "payload\x00"
      "bytes",
      13);
  auto bytes = Encode(m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Status s;
  auto out = DecodeAll(*bytes, &s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].headers.size(), m.headers.size());
  for (size_t i = 0; i < m.headers.size(); ++i) {
    EXPECT_EQ(out[0].headers[i].name, m.headers[i].name);
    EXPECT_EQ(out[0].headers[i].type, m.headers[i].type) << m.headers[i].name;
    EXPECT_EQ(out[0].headers[i].number, m.headers[i].number) << m.headers[i].name;
    EXPECT_EQ(out[0].headers[i].bytes, m.headers[i].bytes) << m.headers[i].name;
  }
  EXPECT_EQ(out[0].payload, m.payload);
}

TEST(EventStreamTest, CrcMismatchesAreErrorsAndStaySo) {
  std::string good = Encode(Message{{Header::String(":event-type", "x")}, "{}"}).value();
  std::string bad_prelude = good;
  bad_prelude[9] ^= 1;
  Status s;
  EXPECT_TRUE(DecodeAll(bad_prelude, &s).empty());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("prelude CRC mismatch"), std::string::npos) << s.ToString();

  std::string bad_payload = good;
  bad_payload[good.size() - 6] ^= 0x20;  // a payload byte: only the message CRC can tell
  Decoder d;
  std::vector<Message> out;
  s = d.Feed(bad_payload, out);
  EXPECT_NE(s.message().find("message CRC mismatch"), std::string::npos) << s.ToString();
  EXPECT_TRUE(out.empty());
  // Sticky: a good frame after it is refused too (there is nothing to resynchronise on).
  EXPECT_FALSE(d.Feed(good, out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(EventStreamTest, TruncatedFrameWaitsAndIsSeenAsPartial) {
  std::string good = Encode(Message{{Header::String(":event-type", "x")}, "{}"}).value();
  for (size_t cut : {size_t{1}, size_t{11}, size_t{12}, good.size() - 1}) {
    Decoder d;
    std::vector<Message> out;
    ASSERT_TRUE(d.Feed(std::string_view(good).substr(0, cut), out).ok()) << cut;
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(d.partial()) << cut;
    ASSERT_TRUE(d.Feed(std::string_view(good).substr(cut), out).ok());
    EXPECT_EQ(out.size(), 1u);
    EXPECT_FALSE(d.partial());
  }
}

TEST(EventStreamTest, LengthsOutOfBoundsAreRefusedAtThePrelude) {
  struct Case {
    uint32_t total, headers;
    const char* want;
  };
  for (const Case& c :
       {Case{15, 0, "below the minimum"}, Case{0, 0, "below the minimum"},
        Case{(16u << 20) + 1, 0, "over the 16 MiB limit"}, Case{0xffffffffu, 0, "over the 16 MiB"},
        Case{1000, (128u << 10) + 1, "over the 128 KiB limit"},
        Case{100, 85, "does not fit in the message"}}) {
    // Only the prelude: the decoder must not wait for (or buffer) a body it would refuse.
    std::string prelude = Be32(c.total) + Be32(c.headers);
    prelude += Be32(Crc32(prelude));
    Status s;
    EXPECT_TRUE(DecodeAll(prelude, &s).empty());
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.total;
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
  }
}

TEST(EventStreamTest, BadHeadersAreErrors) {
  struct Case {
    std::string headers;
    const char* want;
  };
  const std::vector<Case> cases = {
      {std::string("\x00", 1), "empty name"},
      {std::string("\x05:ab", 4), "overruns"},                  // name longer than the section
      {std::string("\x01x\x07\x00\x09short", 10), "overruns"},  // string length past the end
      {std::string("\x01x\x04\x00\x00", 5), "overruns"},        // int32 cut short
      {std::string("\x01x\x0a", 3), "unknown value type 10"},   // no such type
      {std::string("\x01x\x00\x01x\x01", 6), "appears twice"},  // one name twice
      {std::string("\x01u\x09\x00\x01\x02", 6), "overruns"},    // uuid of 3 bytes
  };
  for (const Case& c : cases) {
    Status s;
    EXPECT_TRUE(DecodeAll(Frame(c.headers, "{}"), &s).empty());
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
  }
}

TEST(EventStreamTest, EncodeRefusesWhatCannotBeFramed) {
  EXPECT_FALSE(Encode(Message{{Header::String(std::string(256, 'n'), "v")}, ""}).ok());
  EXPECT_FALSE(Encode(Message{{Header::String("n", std::string(65536, 'v'))}, ""}).ok());
  EXPECT_FALSE(Encode(Message{{{"u", Header::Type::kUuid, 0, "short"}}, ""}).ok());
  EXPECT_FALSE(Encode(Message{{}, std::string(kMaxMessageBytes, 'x')}).ok());
}

}  // namespace
}  // namespace govern::gateway::eventstream
