// Thrift compact protocol: bytes in, bytes out, and hostile input.
#include "storage/parquet/thrift.h"

#include <gtest/gtest.h>

#include "storage/parquet/metadata.h"

namespace govern::parquet {
namespace {

using thrift::Decoder;
using thrift::Encoder;
using thrift::WireType;

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

TEST(Thrift, EncodesFieldsAsTheCompactProtocolSpecifies) {
  std::string out;
  Encoder e(&out);
  e.BeginStruct();
  e.FieldI32(1, 1);        // 0x15 (delta 1, i32), zigzag(1) = 2
  e.FieldI64(2, -1);       // 0x16 (delta 1, i64), zigzag(-1) = 1
  e.FieldBool(3, true);    // 0x11
  e.FieldBool(4, false);   // 0x12
  e.FieldBinary(5, "ab");  // 0x18, len 2, "ab"
  e.FieldI32(40, 300);     // long form: 0x05, zigzag(40) = 80 = 0x50, zigzag(300) = 600 = 0xd8 0x04
  e.EndStruct();
  EXPECT_EQ(Hex(out),
            "1502"
            "1601"
            "11"
            "12"
            "18026162"
            "05"
            "50"
            "d804"
            "00");
}

TEST(Thrift, EncodesListHeadersShortAndLong) {
  std::string out;
  Encoder e(&out);
  e.BeginStruct();
  e.FieldList(1, WireType::kI32, 2);
  e.ListI32(1);
  e.ListI32(-1);
  e.FieldList(2, WireType::kBinary, 20);
  for (int i = 0; i < 20; ++i) e.ListBinary("");
  e.EndStruct();
  EXPECT_EQ(Hex(out).substr(0, 14),
            "19250201"
            "19f814");
}

TEST(Thrift, PageHeaderRoundTrips) {
  format::PageHeader h;
  h.type = format::kDataPage;
  h.uncompressed_page_size = 1234;
  h.compressed_page_size = 567;
  h.data_page_header.emplace();
  h.data_page_header->num_values = 99;
  h.data_page_header->encoding = format::kRleDictionary;
  h.data_page_header->definition_level_encoding = format::kRle;
  h.data_page_header->repetition_level_encoding = format::kRle;
  h.data_page_header->statistics.emplace();
  h.data_page_header->statistics->null_count = 3;
  h.data_page_header->statistics->min_value = std::string("a\0b", 3);
  h.data_page_header->statistics->max_value = "zz";
  std::string bytes;
  format::EncodePageHeader(h, &bytes);
  bytes += "trailing page body";
  format::PageHeader back;
  size_t used = 0;
  ASSERT_TRUE(
      format::DecodePageHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &back, &used)
          .ok());
  EXPECT_EQ(used, bytes.size() - 18);
  EXPECT_EQ(back.uncompressed_page_size, 1234);
  EXPECT_EQ(back.compressed_page_size, 567);
  ASSERT_TRUE(back.data_page_header);
  EXPECT_EQ(back.data_page_header->num_values, 99);
  EXPECT_EQ(back.data_page_header->encoding, format::kRleDictionary);
  EXPECT_EQ(*back.data_page_header->statistics->min_value, std::string("a\0b", 3));
  EXPECT_EQ(*back.data_page_header->statistics->null_count, 3);
}

TEST(Thrift, SkipsUnknownFieldsOfEveryType) {
  std::string out;
  Encoder e(&out);
  e.BeginStruct();
  e.FieldI32(1, 0);                     // type
  e.FieldI32(2, 10);                    // uncompressed size
  e.FieldI32(3, 10);                    // compressed size
  e.FieldBinary(20, "unknown binary");  // unknown fields follow
  e.FieldList(21, WireType::kStruct, 1);
  e.BeginStruct();
  e.FieldI64(1, 5);
  e.EndStruct();
  e.FieldStruct(22);
  e.FieldBool(1, true);
  e.EndStruct();
  e.EndStruct();
  format::PageHeader h;
  size_t used = 0;
  Status s = format::DecodePageHeader(reinterpret_cast<const uint8_t*>(out.data()), out.size(), &h, &used);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(used, out.size());
}

Status DecodeHeader(const std::string& bytes) {
  format::PageHeader h;
  size_t used = 0;
  return format::DecodePageHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &h, &used);
}

TEST(Thrift, RejectsHostileInput) {
  // Truncated mid-varint.
  EXPECT_EQ(DecodeHeader("\x15\x80").code(), Code::kDataLoss);
  // A missing required field.
  EXPECT_EQ(DecodeHeader(std::string("\x15\x00\x00", 3)).code(), Code::kDataLoss);
  // A binary longer than the bytes left.
  EXPECT_EQ(DecodeHeader("\x98\xff\xff\xff\x0f"
                         "abc")
                .code(),
            Code::kDataLoss);
  // A list claiming 2^31 elements in 6 bytes: refused before any allocation.
  EXPECT_EQ(DecodeHeader("\x99\xfc\x80\x80\x80\x80\x08").code(), Code::kDataLoss);
  // An eleven-byte varint.
  EXPECT_EQ(DecodeHeader("\x16\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01").code(), Code::kDataLoss);
  // Wrong wire type for a known field (binary where i32 is required).
  EXPECT_EQ(DecodeHeader("\x18\x01x").code(), Code::kDataLoss);
  // Nesting deeper than the limit: struct field 15 inside struct field 15 ...
  std::string deep(10000, '\xfc');
  EXPECT_EQ(DecodeHeader(deep).code(), Code::kDataLoss);
  // Unknown wire type 13.
  EXPECT_EQ(DecodeHeader("\x1d").code(), Code::kDataLoss);
}

TEST(Thrift, FileMetaDataRoundTrips) {
  format::FileMetaData m;
  m.version = 1;
  format::SchemaElement root;
  root.name = "schema";
  root.num_children = 1;
  m.schema.push_back(root);
  format::SchemaElement leaf;
  leaf.name = "time";
  leaf.type = format::kInt64;
  leaf.repetition_type = format::kRequired;
  leaf.converted_type = format::kTimestampMicros;
  leaf.logical_type.kind = format::LogicalType::kTimestamp;
  leaf.logical_type.timestamp_utc = true;
  leaf.logical_type.timestamp_unit = 1;
  m.schema.push_back(leaf);
  m.num_rows = 7;
  format::RowGroup rg;
  rg.num_rows = 7;
  rg.total_byte_size = 100;
  format::ColumnChunk& c = rg.columns.emplace_back();
  c.meta_data.emplace();
  c.meta_data->type = format::kInt64;
  c.meta_data->encodings = {0, 3};
  c.meta_data->path_in_schema = {"time"};
  c.meta_data->codec = format::kZstd;
  c.meta_data->num_values = 7;
  c.meta_data->data_page_offset = 4;
  m.row_groups.push_back(rg);
  m.key_value_metadata.push_back({"k", "v"});
  m.created_by = "govern";
  m.column_orders = 1;
  std::string bytes;
  format::EncodeFileMetaData(m, &bytes);
  format::FileMetaData back;
  ASSERT_TRUE(
      format::DecodeFileMetaData(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &back).ok());
  ASSERT_EQ(back.schema.size(), 2u);
  EXPECT_EQ(back.schema[1].logical_type.kind, format::LogicalType::kTimestamp);
  EXPECT_TRUE(back.schema[1].logical_type.timestamp_utc);
  EXPECT_EQ(back.schema[1].logical_type.timestamp_unit, 1);
  EXPECT_EQ(back.row_groups.at(0).columns.at(0).meta_data->codec, format::kZstd);
  EXPECT_EQ(back.row_groups[0].columns[0].meta_data->encodings, (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(back.key_value_metadata.at(0).value, "v");
  EXPECT_EQ(back.column_orders, 1u);
  EXPECT_EQ(*back.created_by, "govern");
}

}  // namespace
}  // namespace govern::parquet
