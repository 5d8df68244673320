// CopyEncoder: bytes out for known rows, and refusal of malformed rows.
#include "db/copy_encoder.h"

#include <gtest/gtest.h>

#include <string>

namespace govern::db {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

const std::string kHeader =
    Bytes({'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0, 0, 0, 0, 0, 0, 0, 0, 0});

TEST(CopyEncoderTest, EmptyStreamIsHeaderAndTrailer) {
  CopyEncoder e;
  e.Finish();
  EXPECT_EQ(e.buffer(), kHeader + Bytes({0xff, 0xff}));
  EXPECT_TRUE(e.status().ok());
}

TEST(CopyEncoderTest, EncodesEachTypeBigEndian) {
  struct Case {
    const char* what;
    void (*write)(CopyEncoder&);
    std::string field;  // length + value
  };
  const Case cases[] = {
      {"null", [](CopyEncoder& e) { e.Null(); }, Bytes({0xff, 0xff, 0xff, 0xff})},
      {"int2", [](CopyEncoder& e) { e.Int16(-2); }, Bytes({0, 0, 0, 2, 0xff, 0xfe})},
      {"int4", [](CopyEncoder& e) { e.Int32(0x01020304); }, Bytes({0, 0, 0, 4, 1, 2, 3, 4})},
      {"int8", [](CopyEncoder& e) { e.Int64(-1); },
       Bytes({0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
      {"float8", [](CopyEncoder& e) { e.Float8(1.0); }, Bytes({0, 0, 0, 8, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0})},
      {"bool", [](CopyEncoder& e) { e.Bool(true); }, Bytes({0, 0, 0, 1, 1})},
      {"text", [](CopyEncoder& e) { e.Text("hé"); }, Bytes({0, 0, 0, 3, 'h', 0xc3, 0xa9})},
      {"bytea", [](CopyEncoder& e) { e.Bytea(std::string("\0\1", 2)); }, Bytes({0, 0, 0, 2, 0, 1})},
      // 2000-01-01T00:00:00.000001Z is PostgreSQL's 1.
      {"timestamptz", [](CopyEncoder& e) { e.TimestampUnixMicros(946684800000001); },
       Bytes({0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1})},
      {"jsonb", [](CopyEncoder& e) { e.Jsonb("{}"); }, Bytes({0, 0, 0, 3, 1, '{', '}'})},
  };
  for (const Case& c : cases) {
    CopyEncoder e;
    e.Row(1);
    c.write(e);
    e.Finish();
    EXPECT_EQ(e.buffer(), kHeader + Bytes({0, 1}) + c.field + Bytes({0xff, 0xff})) << c.what;
    EXPECT_TRUE(e.status().ok()) << c.what;
    EXPECT_EQ(e.rows(), 1);
  }
}

TEST(CopyEncoderTest, RefusesTooFewAndTooManyFields) {
  CopyEncoder few;
  few.Row(2).Int32(1);
  few.Finish();
  EXPECT_EQ(few.status().code(), Code::kInvalidArgument);

  CopyEncoder many;
  many.Row(1).Int32(1).Int32(2);
  EXPECT_EQ(many.status().code(), Code::kInvalidArgument);
}

TEST(CopyEncoderTest, RefusesNulInText) {
  CopyEncoder e;
  e.Row(1).Text(std::string("a\0b", 3));
  EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
}

TEST(CopyEncoderTest, TakeHandsOverBytesAndKeepsEncoding) {
  CopyEncoder e;
  std::string out;
  e.Take(&out);
  EXPECT_EQ(out, kHeader);
  EXPECT_TRUE(e.buffer().empty());
  e.Row(1).Int16(7);
  e.Finish();
  EXPECT_EQ(e.buffer(), Bytes({0, 1, 0, 0, 0, 2, 0, 7, 0xff, 0xff}));
}

}  // namespace
}  // namespace govern::db
