// Parquet's metadata structures (parquet-format's parquet.thrift), only the fields Govern writes or
// reads, with their Thrift compact encoding. Field ids and enum values follow parquet.thrift exactly.
// Decoding checks required fields and wire types and returns DataLoss for anything malformed; fields
// this code does not know are skipped, as Thrift intends. Plain values; not synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace govern::parquet::format {

// enum Type
enum PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};

// enum FieldRepetitionType
enum Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

// enum ConvertedType (the ones we use)
enum ConvertedType : int32_t { kUtf8 = 0, kTimestampMillis = 9, kTimestampMicros = 10 };

// enum Encoding
enum Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};

// enum CompressionCodec
enum Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,
  kZstd = 6,
  kLz4Raw = 7,
};

// enum PageType
enum PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

struct Statistics {
  std::optional<std::string> max;  // deprecated signed-order fields: read, never written
  std::optional<std::string> min;
  std::optional<int64_t> null_count;
  std::optional<int64_t> distinct_count;
  std::optional<std::string> max_value;
  std::optional<std::string> min_value;
  std::optional<bool> is_max_value_exact;
  std::optional<bool> is_min_value_exact;
};

// The LogicalType union, reduced to what Govern distinguishes.
struct LogicalType {
  enum Kind { kNone, kString, kTimestamp, kOther };
  Kind kind = kNone;
  bool timestamp_utc = false;
  int timestamp_unit = -1;  // TimeUnit field id - 1: 0 millis, 1 micros, 2 nanos
};

struct SchemaElement {
  std::optional<int32_t> type;
  std::optional<int32_t> type_length;
  std::optional<int32_t> repetition_type;
  std::string name;
  std::optional<int32_t> num_children;
  std::optional<int32_t> converted_type;
  LogicalType logical_type;
};

struct KeyValue {
  std::string key;
  std::optional<std::string> value;
};

struct ColumnMetaData {
  int32_t type = 0;
  std::vector<int32_t> encodings;
  std::vector<std::string> path_in_schema;
  int32_t codec = 0;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
  std::optional<Statistics> statistics;
};

struct ColumnChunk {
  std::optional<std::string> file_path;
  int64_t file_offset = 0;
  std::optional<ColumnMetaData> meta_data;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0;
  int64_t num_rows = 0;
  std::optional<int64_t> file_offset;
  std::optional<int64_t> total_compressed_size;
};

struct FileMetaData {
  int32_t version = 1;
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<KeyValue> key_value_metadata;
  std::optional<std::string> created_by;
  // Written as TYPE_ORDER for every leaf column; when reading, only their number is kept.
  size_t column_orders = 0;
};

struct DataPageHeader {
  int32_t num_values = 0;
  int32_t encoding = 0;
  int32_t definition_level_encoding = 0;
  int32_t repetition_level_encoding = 0;
  std::optional<Statistics> statistics;
};

struct DictionaryPageHeader {
  int32_t num_values = 0;
  int32_t encoding = 0;
  std::optional<bool> is_sorted;
};

struct PageHeader {
  int32_t type = 0;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  std::optional<int32_t> crc;
  std::optional<DataPageHeader> data_page_header;
  std::optional<DictionaryPageHeader> dictionary_page_header;
};

void EncodeFileMetaData(const FileMetaData& meta, std::string* out);
void EncodePageHeader(const PageHeader& header, std::string* out);

Status DecodeFileMetaData(const uint8_t* data, size_t size, FileMetaData* meta);
// Decodes the header at the start of [data, data+size) and sets *consumed to its encoded length.
Status DecodePageHeader(const uint8_t* data, size_t size, PageHeader* header, size_t* consumed);

}  // namespace govern::parquet::format
